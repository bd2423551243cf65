"""How good is a retrieval evaluator? Pair and action metrics on questions with gold answers.

Labels come from the data, not from a model: a retrieved passage *holds the
answer* when a gold alias occurs in it as whole words
(:func:`crag_cli.action.match.holds_answer`), and a question's retrieval holds the
answer when any of its top-k passages does.

* **pair accuracy**: a passage is judged relevant when its score reaches the
  upper threshold (the point at which it alone makes the action Correct), and
  that judgement is compared with its label;
* **AUC**: the chance that a passage holding the answer outscores one that does
  not (ties count half), over all retrieved pairs; threshold-free;
* **action accuracy**: per question, Correct is right when the retrieval holds
  the answer, Incorrect when it does not, Ambiguous counts half;
* the count per action, a confusion table (label × action) and pairs scored per
  second (evaluator time only).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

from .trigger import Action, Thresholds, decide
from .calibrate import Item, action_accuracy
from .match import holds_answer

if TYPE_CHECKING:
    from ..evaluator import Evaluator
    from ..index import Retriever


def auc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """Area under the ROC curve: P(score of a positive > score of a negative), ties half.

    Computed from average ranks (the Mann-Whitney U statistic divided by the
    number of positive-negative pairs).

    Parameters
    ----------
    scores : sequence of float
    labels : sequence of bool
        Same length as ``scores``.

    Returns
    -------
    float or None
        ``None`` when either class is empty.
    """
    if len(scores) != len(labels):
        raise ValueError("scores and labels differ in length")
    n_pos = sum(1 for y in labels if y)
    n_neg = len(labels) - n_pos
    if not n_pos or not n_neg:
        return None
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):  # average rank over each run of tied scores (ranks start at 1)
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    rank_sum = sum(r for r, y in zip(ranks, labels) if y)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


@dataclass
class Report:
    """What ``crag evaluator-test`` prints (``--json``: this, as one object)."""

    evaluator: str
    n: int
    top_k: int
    thresholds: dict
    pairs: int
    positive_pairs: int
    pair_accuracy: float | None
    auc: float | None
    action_accuracy: float | None
    actions: dict[str, int]
    confusion: dict[str, dict[str, int]]  # "holds" / "does not hold" -> action -> count
    retrieval_holds: float | None
    pairs_per_second: float | None
    seconds: float
    notes: list[str] = field(default_factory=list)
    # of these questions, how many trained / calibrated the evaluator (None: it does not say, or untrained)
    in_sample: dict[str, int] | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        """A short human-readable report."""
        pct = lambda x: "–" if x is None else f"{x:.1%}"  # noqa: E731
        lines = [
            f"evaluator {self.evaluator}: {self.n} questions, top-{self.top_k}, {self.pairs} pairs "
            f"({self.positive_pairs} hold a gold answer); thresholds upper {self.thresholds['upper']}, "
            f"lower {self.thresholds['lower']}",
            f"pair accuracy {pct(self.pair_accuracy)} (relevant = score >= upper); AUC "
            + ("–" if self.auc is None else f"{self.auc:.3f}"),
            f"action accuracy {pct(self.action_accuracy)} (Ambiguous = half right); retrieval holds the answer "
            f"for {pct(self.retrieval_holds)}",
            "actions (the evaluator's alone, without lexical support): "
            + ", ".join(f"{a} {c}" for a, c in self.actions.items()),
            "",
            f"{'':16}" + "".join(f"{a:>11}" for a in self.actions),
        ]
        for label, row in self.confusion.items():
            lines.append(f"{label:16}" + "".join(f"{row[a]:>11}" for a in self.actions))
        rate = "–" if self.pairs_per_second is None else f"{self.pairs_per_second:.1f}"
        lines += ["", f"{rate} pairs scored per second ({self.seconds:.1f} s scoring)"]
        if self.in_sample and any(self.in_sample.values()):
            lines.append(in_sample_note(self.in_sample, self.n))
        return "\n".join(lines)


def in_sample_note(in_sample: dict[str, int], n: int) -> str:
    """The warning for a test on questions the evaluator has seen (``in_sample``: counts per side)."""
    return (
        f"IN-SAMPLE: {in_sample['training']} of these {n} questions trained this evaluator and "
        f"{in_sample['validation']} calibrated it; its figures on them overstate it"
    )


def evaluator_test(
    questions: Sequence[tuple[str, Sequence[str]]],
    retriever: Retriever,
    evaluator: Evaluator,
    thresholds: Thresholds,
    top_k: int,
    progress: Callable[[int], None] | None = None,
) -> Report:
    """Score every retrieved (question, passage) pair and measure the evaluator against the gold labels.

    Parameters
    ----------
    questions : sequence of (question, gold aliases)
    retriever : Retriever
    evaluator : Evaluator
    thresholds : Thresholds
    top_k : int
    progress : callable, optional
        Called with the number of questions done.
    """
    all_scores: list[float] = []
    all_labels: list[bool] = []
    items: list[Item] = []
    seconds = 0.0
    for done, (question, answers) in enumerate(questions, 1):
        hits = retriever.search(question, top_k)
        labels = [holds_answer(h.passage.text, answers) for h in hits]
        start = time.perf_counter()
        scores = evaluator.score([(question, h.passage.text) for h in hits]) if hits else []
        seconds += time.perf_counter() - start
        all_scores += scores
        all_labels += labels
        items.append(Item(scores, any(labels)))
        if progress is not None:
            progress(done)
    accuracy, actions = action_accuracy(items, thresholds.upper, thresholds.lower)
    confusion = {label: {a.value: 0 for a in Action} for label in ("holds", "does not hold")}
    for it in items:
        confusion["holds" if it.holds else "does not hold"][
            decide(it.scores, thresholds.upper, thresholds.lower).value
        ] += 1
    n = len(questions)
    pairs = len(all_scores)
    judged = [s >= thresholds.upper for s in all_scores]
    notes = []
    if not n:
        notes.append("no questions")
    return Report(
        evaluator=evaluator.name,
        n=n,
        top_k=top_k,
        thresholds={k: v for k, v in thresholds.to_dict().items()},
        pairs=pairs,
        positive_pairs=sum(all_labels),
        pair_accuracy=round(sum(j == y for j, y in zip(judged, all_labels)) / pairs, 4) if pairs else None,
        auc=None if (a := auc(all_scores, all_labels)) is None else round(a, 4),
        action_accuracy=round(accuracy, 4) if n else None,
        actions=actions,
        confusion=confusion,
        retrieval_holds=round(sum(it.holds for it in items) / n, 4) if n else None,
        pairs_per_second=round(pairs / seconds, 1) if seconds > 0 else None,
        seconds=round(seconds, 3),
        notes=notes,
    )
