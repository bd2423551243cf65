"""Action trigger: Correct, Incorrect or Ambiguous from the evaluator's scores.

CRAG (Yan et al. 2024, section 4.3): **Correct** if any passage scores at or
above the upper threshold, **Incorrect** if every passage scores below the
lower threshold (or nothing was retrieved), otherwise **Ambiguous**.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Sequence

from ..errors import CragError


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
        """The evaluator's verdict on one piece of knowledge, in words, as ``crag ask`` shows it.

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

# all-MiniLM-L6-v2 cosine thresholds (--evaluator minilm-cosine), chosen by `crag calibrate` on PopQA's
# questions (docs/how-it-works.md, "Calibration": the command and what it found).
MINILM_UPPER = 0.5445
MINILM_LOWER = 0.1424
MINILM_FILTER = 0.0733


CALIBRATED = "calibrated with the evaluator"  # the source of a trained evaluator's own thresholds
FUSED = "the fused evaluator's, calibrated with it"  # a question's, when its fused fit decided (probabilities)


def decide(scores: Sequence[float], upper: float, lower: float, supported: bool = False) -> Action:
    """The CRAG action for a question's passage scores.

    Parameters
    ----------
    scores : sequence of float
        One evaluator score per retrieved passage.
    upper, lower : float
        Thresholds with ``lower <= upper``.
    supported : bool
        Some passage has lexical support (:func:`supported`): retrieval is then
        not judged Incorrect, since the evaluator and the words disagree.
        ``False`` gives the paper's rule.

    Returns
    -------
    Action
        ``CORRECT`` if ``max(scores) >= upper``; ``INCORRECT`` if every score is
        ``< lower`` (always so when ``scores`` is empty) and not ``supported``;
        else ``AMBIGUOUS``.

    Examples
    --------
    >>> decide([-0.9, -0.8], upper=0.5, lower=-0.6).value
    'incorrect'
    >>> decide([-0.9, -0.8], upper=0.5, lower=-0.6, supported=True).value
    'ambiguous'
    """
    if not scores:
        return Action.INCORRECT
    best = max(scores)
    if best >= upper:
        return Action.CORRECT
    if best < lower and not supported:
        return Action.INCORRECT
    return Action.AMBIGUOUS


def supported(
    scores: Sequence[float], support: Sequence[float | None], filter_threshold: float, lexical_support: float
) -> bool:
    """Whether some passage has lexical support: it holds more than ``lexical_support`` of the question's term
    weight and the evaluator does not reject it outright (its score is at least ``filter_threshold``).

    Parameters
    ----------
    scores : sequence of float
        The evaluator's score of each passage.
    support : sequence of float or None
        Each passage's share of the question's term weight (:attr:`crag_cli.index.Hit.support`;
        ``None``: unknown, never supported).
    filter_threshold : float
    lexical_support : float
        1 (no share exceeds it) turns lexical support off.

    Examples
    --------
    >>> supported([-0.3, -0.95], [0.4, 0.9], filter_threshold=-0.9, lexical_support=0.5)
    False
    >>> supported([-0.3, -0.85], [0.4, 0.9], filter_threshold=-0.9, lexical_support=0.5)
    True
    """
    return any(s >= filter_threshold and sup is not None and sup > lexical_support for s, sup in zip(scores, support))


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
    from ..evaluator import evaluator_family, trained_thresholds

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
        source = CALIBRATED
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
