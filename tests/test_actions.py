import pytest

from crag_cli.action.trigger import Action, PRESETS, decide, resolve_thresholds
from crag_cli.errors import CragError


@pytest.mark.parametrize(
    "scores, expected",
    [
        ([0.59, -1.0], Action.CORRECT),  # at the upper threshold counts
        ([0.58, -0.5], Action.AMBIGUOUS),
        ([-0.99, -0.995], Action.AMBIGUOUS),  # at the lower threshold is not "below"
        ([-0.991, -1.0], Action.INCORRECT),
        ([], Action.INCORRECT),
    ],
)
def test_decide_with_popqa_preset(scores, expected):
    upper, lower = PRESETS["popqa"]
    assert decide(scores, upper, lower) is expected


def test_paper_presets():
    assert PRESETS == {"popqa": (0.59, -0.99), "pubqa": (0.5, -0.91), "arc": (0.5, -0.91), "bio": (0.95, -0.91)}


def test_resolution_order():
    t5 = resolve_thresholds("t5:/x")
    assert (t5.upper, t5.lower, t5.filter) == (0.59, -0.99, -0.5)
    bio = resolve_thresholds("t5:/x", preset="bio", lower=-0.5)
    assert (bio.upper, bio.lower) == (0.95, -0.5)
    mini = resolve_thresholds("minilm")
    assert -1 <= mini.lower <= mini.upper <= 1
    with pytest.raises(CragError, match="unknown threshold preset"):
        resolve_thresholds("minilm", preset="nope")
    with pytest.raises(CragError, match="above upper"):
        resolve_thresholds("minilm", upper=0.1, lower=0.2)
