"""The fused evaluator: the cross-encoder's logit and both retrievers' evidence, combined by a fitted logistic model.

A cross-encoder trained on one kind of question ranks another kind's passages
barely above chance; BM25's lexical support and the dense cosine still tell
them apart there, and each knows what the other misses. So the default
evaluator scores each retrieved passage by a logistic regression over its
raw logit, its lexical support, its cosine, its rank by each retriever, and
how each compares with the question's best passage (:data:`FEATURES`),
fitted on thousands of questions of several kinds (SQuAD's, PopQA's):
``crag_cli.train.fused`` fits it, docs/default-evaluator.md says how it was made and
what it measured. Its probability that a passage holds the answer orders
the passages the reader reads. A fit that stores action thresholds (``upper``,
``lower``: calibrated out of fold on a mix of kinds) also decides the action by the
best passage's probability, in and out of the cross-encoder's domain (the domain is
one of its features); one without keeps the cross-encoder's action
(docs/default-evaluator.md).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from .base import MANIFEST, EvaluatorError

FEATURES = (
    "logit",  # the cross-encoder's raw logit
    "logit_gap",  # the best passage's logit minus this one's
    "support",  # the share of the question's BM25 term weight the passage holds
    "support_gap",
    "cosine",  # the question's cosine with the passage (the index's dense part)
    "cosine_gap",
    "log_bm25_rank",  # log of its 1-based BM25 rank
    "log_dense_rank",  # log of its 1-based rank by cosine
    "domain",  # the question's cosine to the nearest question the cross-encoder was trained on
    "logit_in_domain",  # logit x domain: how far the logit is to be trusted depends on that
    "logit_gap_in_domain",
)


def features(
    logits: Sequence[float],
    supports: Sequence[float],
    cosines: Sequence[float],
    bm25_ranks: Sequence[int],
    dense_ranks: Sequence[int],
    domain: float,
):
    """Each candidate's :data:`FEATURES`, one row per passage of one question.

    Parameters
    ----------
    logits, supports, cosines : sequence of float
        Per passage, in any order.
    bm25_ranks, dense_ranks : sequence of int
        1-based ranks over the whole index.
    domain : float
        The question's cosine to the nearest of the cross-encoder's training questions
        (:meth:`crag_cli.evaluator.CrossEncoderEvaluator.nearness`).

    Returns
    -------
    numpy.ndarray
        ``(passages, len(FEATURES))`` float64.

    Examples
    --------
    >>> features([1.0, 0.0], [0.5, 1.0], [0.2, 0.4], [1, 2], [2, 1], 0.5).round(3).tolist()
    [[1.0, 0.0, 0.5, 0.5, 0.2, 0.2, 0.0, 0.693, 0.5, 0.5, 0.0], [0.0, 1.0, 1.0, 0.0, 0.4, 0.0, 0.693, 0.0, 0.5, 0.0, 0.5]]
    """
    import numpy as np

    z, s, c = (np.asarray(x, dtype=np.float64) for x in (logits, supports, cosines))
    if not len(z):
        return np.zeros((0, len(FEATURES)))
    br, dr = (np.log(np.maximum(np.asarray(x, dtype=np.float64), 1.0)) for x in (bm25_ranks, dense_ranks))
    gap, d = z.max() - z, np.full(len(z), float(domain))
    return np.stack([z, gap, s, s.max() - s, c, c.max() - c, br, dr, d, z * d, gap * d], axis=1)


@dataclass(frozen=True)
class FusedFit:
    """The fitted combination: ``mean`` and ``scale`` standardise each feature before the weights apply;
    ``upper`` and ``lower``, when stored, are the probabilities at which the best passage triggers Correct and
    Incorrect (:func:`crag_cli.action.trigger.decide`)."""

    weights: tuple[float, ...]
    bias: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    upper: float | None = None
    lower: float | None = None

    @property
    def decides(self) -> bool:
        """Whether the fit decides the action (it stores both thresholds)."""
        return self.upper is not None and self.lower is not None

    def probabilities(self, rows) -> list[float]:
        """Each candidate's probability of holding the answer, from its :func:`features` ``rows``.

        Examples
        --------
        >>> n = len(FEATURES)
        >>> fit = FusedFit((1.0,) + (0.0,) * (n - 1), 0.0, (0.0,) * n, (1.0,) * n)
        >>> [round(p, 3) for p in fit.probabilities(features([0.0, 2.0], [0, 0], [0, 0], [1, 2], [1, 2], 0.3))]
        [0.5, 0.881]
        """
        import numpy as np

        x = (np.asarray(rows, dtype=np.float64) - np.asarray(self.mean)) / np.asarray(self.scale)
        margin = x @ np.asarray(self.weights) + self.bias
        return [float(p) for p in 1.0 / (1.0 + np.exp(-np.clip(margin, -40, 40)))]

    def ranked(self, logits: Sequence[float], evidence: Sequence[tuple[float, float, int, int]], domain: float):
        """One question's passages (their indices) best first by their probability, and those probabilities in that
        order; ``evidence`` is each passage's (support, cosine, BM25 rank, dense rank), ``domain`` the question's
        (:func:`features`). Ties keep their order.

        Examples
        --------
        >>> n = len(FEATURES)
        >>> fit = FusedFit((1.0,) + (0.0,) * (n - 1), 0.0, (0.0,) * n, (1.0,) * n)
        >>> order, p = fit.ranked([0.0, 2.0, 0.0], [(0.1, 0.2, 1, 2), (0.0, 0.1, 2, 1), (0.0, 0.0, 3, 3)], 0.3)
        >>> order, [round(x, 3) for x in p]
        ([1, 0, 2], [0.881, 0.5, 0.5])
        """
        supports, cosines, ranks, dense_ranks = zip(*evidence) if evidence else ((), (), (), ())
        p = self.probabilities(features(logits, supports, cosines, ranks, dense_ranks, domain))
        order = sorted(range(len(p)), key=lambda i: -p[i])
        return order, [p[i] for i in order]

    def to_dict(self) -> dict:
        return {"features": list(FEATURES), **{k: v for k, v in asdict(self).items() if v is not None}}


def read_fused(manifest: dict, where: Path) -> FusedFit | None:
    """The ``fused`` entry of a trained evaluator's manifest, checked; ``None`` when it has none."""
    entry = manifest.get("fused")
    if entry is None:
        return None
    try:
        fit = FusedFit(
            weights=tuple(float(w) for w in entry["weights"]),
            bias=float(entry["bias"]),
            mean=tuple(float(m) for m in entry["mean"]),
            scale=tuple(float(s) for s in entry["scale"]),
            upper=None if entry.get("upper") is None else float(entry["upper"]),
            lower=None if entry.get("lower") is None else float(entry["lower"]),
        )
        bounds = [v for v in (fit.lower, fit.upper) if v is not None]
        ok = (
            list(entry["features"]) == list(FEATURES)
            and len(fit.weights) == len(fit.mean) == len(fit.scale) == len(FEATURES)
            and all(math.isfinite(v) for v in (*fit.weights, *fit.mean, fit.bias))
            and all(math.isfinite(v) and v > 0 for v in fit.scale)
            and (fit.upper is None) == (fit.lower is None)
            and all(0.0 <= v <= 1.0 for v in bounds)
            and bounds == sorted(bounds)
        )
    except (TypeError, KeyError, ValueError):
        ok = False
    if not ok:
        raise EvaluatorError(f"corrupt evaluator manifest {where / MANIFEST}: a bad 'fused' entry")
    return fit


def write_fused(path: Path, fit: FusedFit, how: str) -> None:
    """Store ``fit`` as the ``fused`` entry of the trained evaluator in folder ``path`` (``how``: the command)."""
    file = Path(path) / MANIFEST
    manifest = json.loads(file.read_text(encoding="utf-8"))
    manifest["fused"] = {**fit.to_dict(), "fitted_by": how}
    file.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
