"""Action trigger: Correct, Incorrect or Ambiguous from the evaluator's scores.

CRAG (Yan et al. 2024, section 4.3): **Correct** if any passage scores at or
above the upper threshold, **Incorrect** if every passage scores below the
lower threshold (or nothing was retrieved), otherwise **Ambiguous**.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Sequence

from .errors import CragError


class Action(str, enum.Enum):
    CORRECT = "correct"
    INCORRECT = "incorrect"
    AMBIGUOUS = "ambiguous"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Thresholds:
    """Upper and lower action thresholds plus the strip filter threshold."""

    upper: float
    lower: float
    filter: float
    source: str = ""

    def __post_init__(self) -> None:
        if self.lower > self.upper:
            raise CragError(f"lower threshold {self.lower} is above upper threshold {self.upper}")

    def to_dict(self) -> dict:
        return {"upper": self.upper, "lower": self.lower, "filter": self.filter, "source": self.source}

    def relevance(self, score: float) -> str:
        """The evaluator's verdict on one piece of knowledge, in words, for the generator's prompt.

        ``high`` at or above ``upper`` (enough for Correct on its own), ``medium``
        at or above ``lower``, ``low`` below it.
        """
        return "high" if score >= self.upper else "medium" if score >= self.lower else "low"


# Thresholds the paper used for its T5-large evaluator (CRAG repository, scripts).
PRESETS: dict[str, tuple[float, float]] = {
    "popqa": (0.59, -0.99),
    "pubqa": (0.5, -0.91),
    "arc": (0.5, -0.91),
    "bio": (0.95, -0.91),
}
T5_FILTER = -0.5

# all-MiniLM-L6-v2 cosine thresholds (--evaluator minilm-cosine), measured with
#   crag calibrate ../shared/bench/popqa/questions.dev.jsonl --index <index of corpus.jsonl>
# (see docs/how-it-works.md, "Calibration"). Cosines of this model lie in about [-0.1, 0.9].
# Result on the 700 dev questions: Correct 497, Ambiguous 202, Incorrect 1; Correct is right 80.1%;
# no lower threshold reached the 0.8 target, so lower is the smallest best-score seen.
MINILM_UPPER = 0.5445
MINILM_LOWER = 0.1424
MINILM_FILTER = 0.0733


def decide(
    scores: Sequence[float],
    upper: float,
    lower: float,
    support: Sequence[float | None] | None = None,
    lexical_support: float | None = None,
) -> Action:
    """The CRAG action for a question's passage scores.

    Parameters
    ----------
    scores : sequence of float
        One evaluator score per retrieved passage.
    upper, lower : float
        Thresholds with ``lower <= upper``.
    support : sequence of float or None, optional
        Each passage's lexical support (:attr:`crag_cli.index.Hit.support`).
    lexical_support : float, optional
        Retrieval is judged Incorrect only when the evaluator and the words agree:
        a passage holding at least this share of the question's term weight turns
        Incorrect into Ambiguous (its passages go to the reader beside the web's).
        ``None``: the evaluator alone, as in the paper.

    Returns
    -------
    Action
        ``CORRECT`` if ``max(scores) >= upper``; ``INCORRECT`` if every score is
        ``< lower`` (always so when ``scores`` is empty) and no passage has the
        lexical support; else ``AMBIGUOUS``.

    Examples
    --------
    >>> decide([-0.9, -0.8], upper=0.5, lower=-0.6).value
    'incorrect'
    >>> decide([-0.9, -0.8], upper=0.5, lower=-0.6, support=[0.3, 0.8], lexical_support=0.7).value
    'ambiguous'
    """
    if not scores:
        return Action.INCORRECT
    best = max(scores)
    if best >= upper:
        return Action.CORRECT
    if best < lower and not supported(support, lexical_support):
        return Action.INCORRECT
    return Action.AMBIGUOUS


def supported(support: Sequence[float | None] | None, lexical_support: float | None) -> bool:
    """Whether some passage holds at least ``lexical_support`` of the question's term weight (``None``: no)."""
    if lexical_support is None or not support:
        return False
    return any(s is not None and s >= lexical_support for s in support)


def resolve_thresholds(
    evaluator: str,
    preset: str | None = None,
    upper: float | None = None,
    lower: float | None = None,
    filter_threshold: float | None = None,
) -> Thresholds:
    """The thresholds in force: explicit values > preset > the evaluator's defaults.

    A trained evaluator (``crag train-evaluator``, the embedded ``minilm`` among
    them) defaults to the thresholds stored with it, calibrated on its validation
    questions; the T5 evaluator to the ``popqa`` preset and a strip filter of -0.5;
    the cosine evaluator to its measured cosine thresholds.
    """
    from .evaluator import evaluator_family, trained_thresholds

    family = evaluator_family(evaluator)
    if preset is not None:
        if preset not in PRESETS:
            raise CragError(f"unknown threshold preset {preset!r}: choose from {', '.join(PRESETS)}")
        base_upper, base_lower = PRESETS[preset]
        base_filter = T5_FILTER
        source = f"preset {preset}"
    elif family == "t5":
        (base_upper, base_lower), base_filter, source = PRESETS["popqa"], T5_FILTER, "t5 default (preset popqa)"
    elif family == "trained":
        stored = trained_thresholds(evaluator)
        base_upper, base_lower, base_filter = stored["upper"], stored["lower"], stored["filter"]
        source = "calibrated with the evaluator"
    else:
        base_upper, base_lower, base_filter, source = MINILM_UPPER, MINILM_LOWER, MINILM_FILTER, "minilm-cosine default"
    if upper is not None or lower is not None or filter_threshold is not None:
        source += " with overrides"
    return Thresholds(
        upper=base_upper if upper is None else upper,
        lower=base_lower if lower is None else lower,
        filter=base_filter if filter_threshold is None else filter_threshold,
        source=source,
    )
