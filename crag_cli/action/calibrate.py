"""Choose the action and strip-filter thresholds from an evaluator's scores on questions with gold answers.

Labels come from the data, not from a model: a retrieved passage *holds the
answer* when some gold alias occurs in it as whole words (ignoring case), and a question's
local retrieval holds the answer when any of its top-k passages does.

Because Correct fires when the best score reaches ``upper`` and Incorrect when
the best score stays below ``lower``, both thresholds act on each question's
best score ``m``:

* ``upper`` is the lowest value such that, among questions with ``m >= upper``,
  at least ``correct_precision`` of them hold the answer (Correct is then right that often);
* ``lower`` is the highest value such that, among questions with ``m < lower``,
  at least ``incorrect_precision`` of them do not (Incorrect is then right that often);
* questions in between are Ambiguous. If the two cross, both collapse to the single
  cut with the best action accuracy.

Both targets default to 0.8: a decisive action must be right four times in
five, otherwise crag hedges with Ambiguous (the paper's PopQA setting is
likewise cautious: Incorrect only below -0.99). When no lower threshold reaches
its target, Incorrect fires only when nothing is retrieved.

Action accuracy counts Correct as right when the passages hold the answer,
Incorrect as right when they do not, and Ambiguous (both sources are used, so
the answer is not lost but the cost is paid) as half right.

The strip filter is the score that keeps ``strip_recall`` of the strips that
hold the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .trigger import Action, decide
from .match import holds_answer


@dataclass
class Item:
    """One calibration question: its passage scores and whether its passages hold the answer."""

    scores: list[float]
    holds: bool

    @property
    def best(self) -> float:
        return max(self.scores) if self.scores else float("-inf")


@dataclass
class Calibration:
    upper: float
    lower: float
    filter: float
    action_accuracy: float
    actions: dict[str, int]
    n: int
    holds_rate: float
    targets: tuple[float, float]
    correct_precision: float | None = None
    incorrect_precision: float | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}


def action_accuracy(items: Sequence[Item], upper: float, lower: float) -> tuple[float, dict[str, int]]:
    """Action accuracy (Ambiguous = half right) and the count per action.

    Parameters
    ----------
    items : sequence of Item
    upper, lower : float

    Returns
    -------
    (float, dict)
    """
    right = 0.0
    counts = {a.value: 0 for a in Action}
    for it in items:
        action = decide(it.scores, upper, lower)
        counts[action.value] += 1
        if action is Action.AMBIGUOUS:
            right += 0.5
        elif (action is Action.CORRECT) == it.holds:
            right += 1
    return (right / len(items) if items else 0.0), counts


def _round(x: float) -> float:
    return round(x, 4)


def choose_action_thresholds(
    items: Sequence[Item], correct_precision: float = 0.8, incorrect_precision: float = 0.8, min_share: float = 0.05
):
    """``(upper, lower, notes)`` as described in the module docstring.

    Parameters
    ----------
    items : sequence of Item
    correct_precision, incorrect_precision : float
        Required share of right decisions among Correct and among Incorrect.
    min_share : float
        A threshold must cover at least this share of questions to count.
    """
    scored = sorted((it.best, it.holds) for it in items if it.scores)
    n = len(scored)
    notes: list[str] = []
    if n == 0:
        raise ValueError("no question retrieved any passage: nothing to calibrate on")
    min_count = max(1, int(min_share * len(items)))
    values = [m for m, _ in scored]
    # suffix counts: holds among scored[i:]
    suffix_holds = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix_holds[i] = suffix_holds[i + 1] + scored[i][1]
    upper = None
    for i in range(n):  # lowest cut first
        if i > 0 and values[i] == values[i - 1]:
            continue
        size = n - i
        if size >= min_count and suffix_holds[i] / size >= correct_precision:
            upper = values[i]
            break
    lower = None
    prefix_not = 0
    best_lower = None
    for i in range(n):  # cut before i: scored[:i] are Incorrect
        if i > 0 and values[i] != values[i - 1] and i >= min_count and prefix_not / i >= incorrect_precision:
            best_lower = values[i]
        prefix_not += not scored[i][1]
    lower = best_lower
    if upper is None:
        notes.append(f"no upper threshold reaches precision {correct_precision}: Correct never fires")
        upper = _round(values[-1] + 1e-4)
    if lower is None:
        notes.append(
            f"no lower threshold reaches precision {incorrect_precision}: Incorrect only when nothing is retrieved"
        )
        lower = values[0]
    if lower > upper:
        cut = max(sorted(set(values)), key=lambda t: action_accuracy(items, t, t)[0])
        notes.append("the two thresholds crossed: using the single best cut")
        upper = lower = cut
    return _round(upper), _round(lower), notes


def choose_filter(strip_scores: Sequence[float], strip_holds: Sequence[bool], recall: float = 0.9) -> float:
    """The highest threshold that keeps ``recall`` of the answer-bearing strips.

    Parameters
    ----------
    strip_scores : sequence of float
    strip_holds : sequence of bool
        Whether each strip holds a gold answer.
    recall : float

    Returns
    -------
    float
        The score at the ``1 - recall`` quantile of answer-bearing strips (-1 when there are none).
    """
    good = sorted(s for s, h in zip(strip_scores, strip_holds) if h)
    if not good:
        return -1.0
    k = int((1 - recall) * len(good) + 1e-9)  # floor, robust to 0.1 * 10 = 0.99999...
    return _round(good[min(k, len(good) - 1)])


def calibrate(
    items: Sequence[Item],
    strip_scores: Sequence[float],
    strip_holds: Sequence[bool],
    correct_precision: float = 0.8,
    incorrect_precision: float = 0.8,
    strip_recall: float = 0.9,
) -> Calibration:
    """Choose all three thresholds and report how they do on the same data."""
    upper, lower, notes = choose_action_thresholds(items, correct_precision, incorrect_precision)
    acc, counts = action_accuracy(items, upper, lower)
    correct = [it for it in items if decide(it.scores, upper, lower) is Action.CORRECT]
    incorrect = [it for it in items if decide(it.scores, upper, lower) is Action.INCORRECT]
    return Calibration(
        upper=upper,
        lower=lower,
        filter=choose_filter(strip_scores, strip_holds, strip_recall),
        action_accuracy=round(acc, 4),
        actions=counts,
        n=len(items),
        holds_rate=round(sum(it.holds for it in items) / len(items), 4) if items else 0.0,
        targets=(correct_precision, incorrect_precision),
        correct_precision=round(sum(it.holds for it in correct) / len(correct), 4) if correct else None,
        incorrect_precision=round(sum(not it.holds for it in incorrect) / len(incorrect), 4) if incorrect else None,
        notes=notes,
    )


def collect(
    questions: Sequence[tuple[str, Sequence[str]]],
    retriever,
    evaluator,
    top_k: int,
    strip_mode: str,
    progress=None,
) -> tuple[list[Item], list[float], list[bool]]:
    """Retrieve and score every question, and every strip of its passages.

    Parameters
    ----------
    questions : sequence of (question, gold answers)
    retriever : Retriever
    evaluator : Evaluator
    top_k : int
    strip_mode : str
    progress : callable, optional
        Called with the number of questions done.

    Returns
    -------
    (items, strip scores, strip labels)
    """
    from .refine import decompose

    items: list[Item] = []
    strip_scores: list[float] = []
    strip_holds: list[bool] = []
    for done, (question, answers) in enumerate(questions, 1):
        hits = retriever.search(question, top_k)
        texts = [h.passage.text for h in hits]
        strips = [s for t in texts for s in decompose(t, strip_mode)]
        scores = evaluator.score([(question, t) for t in texts + strips])
        items.append(Item(scores[: len(texts)], any(holds_answer(t, answers) for t in texts)))
        strip_scores.extend(scores[len(texts) :])
        strip_holds.extend(holds_answer(s, answers) for s in strips)
        if progress is not None:
            progress(done)
    return items, strip_scores, strip_holds
