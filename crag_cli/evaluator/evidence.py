"""Correct out of the evaluator's domain by combined evidence: its raw logit, BM25's lexical support, the rank.

A cross-encoder trained on one kind of question ranks the passages of another
kind barely above chance, while BM25's own evidence (lexical support, rank)
still tells them apart there. A logistic regression over the three, fitted on
questions of more than one kind, is meant to judge better out of the
evaluator's domain than either (the pair AUCs behind this, and why it is not
the default: docs/benchmarks.md, "What the evaluator knows"). It is stored with the
evaluator (``evidence`` in its manifest), because its weights are in the units
of that evaluator's logit: ``benchmarks/evaluator_evidence.py --fit ...
--correct-precision P --write DIR`` fits it and sets the threshold at which
the fitted sets' Correct calls hold the answer at least ``P`` of the time.
Figures and commands: docs/benchmarks.md.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol, Sequence

from .base import MANIFEST, Evaluator, EvaluatorError, Pair


@dataclass(frozen=True)
class EvidenceFit:
    """The combination ``logit * z + support * s + rank * i / 10 + bias`` and its Correct threshold.

    ``z`` is a passage's raw logit (before any topic guard), ``s`` its lexical
    support (the share of the question's BM25 term weight it holds) and ``i``
    its place in retrieval order, from 0.
    """

    logit: float
    support: float
    rank: float
    bias: float
    threshold: float

    def combined(self, logits: Sequence[float], supports: Sequence[float]) -> list[float]:
        """Each passage's combined evidence, in retrieval order.

        Examples
        --------
        >>> EvidenceFit(1.0, 2.0, -1.0, -0.5, 0.0).combined([0.5, 0.5], [0.25, 0.25])
        [0.5, 0.4]
        """
        return [
            self.logit * z + self.support * s + self.rank * i / 10 + self.bias
            for i, (z, s) in enumerate(zip(logits, supports))
        ]

    def best(self, logits: Sequence[float], supports: Sequence[float | None]) -> float | None:
        """The best passage's combined evidence; ``None`` with no passage or a passage without support."""
        if not logits or any(s is None for s in supports):
            return None
        return max(self.combined(logits, supports))  # type: ignore[arg-type]


class EvidenceEvaluator(Protocol):
    """An evaluator that stores an :class:`EvidenceFit` and gives its raw logits with its scores."""

    @property
    def evidence(self) -> EvidenceFit | None: ...

    def score_logits(self, pairs: Sequence[Pair]) -> tuple[list[float], list[float]]:
        """Scores (what :meth:`~crag_cli.evaluator.Evaluator.score` gives) and raw logits, one forward pass."""
        ...


def read_evidence(manifest: dict, where: Path) -> EvidenceFit | None:
    """The ``evidence`` entry of a trained evaluator's manifest, checked; ``None`` when it has none."""
    entry = manifest.get("evidence")
    if entry is None:
        return None
    try:
        fields = {k: float(entry[k]) for k in ("logit", "support", "rank", "bias", "threshold")}
    except (TypeError, KeyError, ValueError):
        fields = {}
    if not fields or not all(math.isfinite(v) for v in fields.values()):
        raise EvaluatorError(f"corrupt evaluator manifest {where / MANIFEST}: a bad 'evidence' entry")
    return EvidenceFit(**fields)


def write_evidence(path: Path, fit: EvidenceFit, how: str) -> None:
    """Store ``fit`` as the ``evidence`` of the trained evaluator in folder ``path`` (``how``: the command)."""
    file = Path(path) / MANIFEST
    manifest = json.loads(file.read_text(encoding="utf-8"))
    manifest["evidence"] = {**asdict(fit), "fitted_by": how}
    file.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


class Scorer:
    """The evaluator as the pipeline calls it: scores, and raw logits where the evaluator gives them.

    Pairs scored by :meth:`add` (:meth:`crag_cli.pipeline.corrective.Pipeline.score_ahead`)
    are looked up in :attr:`ahead` rather than scored again, their logits too,
    until it is cleared.
    """

    def __init__(self, evaluator: Evaluator | EvidenceEvaluator) -> None:
        self.evaluator = evaluator
        self.ahead: dict[Pair, tuple[float, float | None]] = {}  # pair -> (score, logit or None)
        # by the method alone: reading ``evidence`` (a manifest entry) waits until --evidence asks for it
        self.with_logits = callable(getattr(evaluator, "score_logits", None))

    def _missing(self, pairs: Sequence[Pair]) -> list[Pair]:
        """``pairs`` not scored ahead, each once."""
        return [p for p in dict.fromkeys(pairs) if p not in self.ahead]

    def _compute(self, pairs: Sequence[Pair]) -> list[tuple[float, float | None]]:
        if not pairs:
            return []
        if not self.with_logits:
            return [(s, None) for s in self.evaluator.score(pairs)]
        return list(zip(*self.evaluator.score_logits(pairs)))

    def add(self, pairs: Sequence[Pair]) -> None:
        """Score ``pairs`` now and keep them."""
        missing = self._missing(pairs)
        self.ahead.update(zip(missing, self._compute(missing)))

    def judged(self, pairs: Sequence[Pair]) -> tuple[list[float], list[float] | None]:
        """Scores and raw logits (``None`` when the evaluator gives none) of ``pairs``, looked up or computed."""
        missing = self._missing(pairs)
        computed = dict(zip(missing, self._compute(missing)))
        both = [self.ahead[p] if p in self.ahead else computed[p] for p in pairs]
        logits = [z for _, z in both]
        return [s for s, _ in both], (None if any(z is None for z in logits) else logits)  # type: ignore[misc]

    def score(self, pairs: Sequence[Pair]) -> list[float]:
        """Scores of ``pairs``, looked up or computed (the :class:`~crag_cli.evaluator.Evaluator` seam)."""
        return self.judged(list(pairs))[0]

    @property
    def fit(self) -> EvidenceFit | None:
        """The evaluator's stored :class:`EvidenceFit` (an :class:`EvidenceEvaluator`'s), if it has one."""
        return getattr(self.evaluator, "evidence", None) if self.with_logits else None
