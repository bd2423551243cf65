"""Fit the fused evaluator (:mod:`crag_cli.evaluator.fused`) on questions of several kinds, and store it.

    python -m crag_cli.train.fused --set NAME=QUESTIONS@INDEX [--set ...] --cache DIR --out EVALUATOR \\
        [--questions N] [--validate SHARE] [--precision P] [--seed S]

Each ``--set`` is a JSONL file of questions with gold ``answers`` and a crag index (with its dense part) of the
documents they are about. For each question the fused retrieval's top 10 (:class:`crag_cli.index.Retrieval`) are
labelled (a gold answer in the passage, as whole words) and given the evaluator's raw logit: written to
``DIR/NAME.jsonl`` as they come, so a killed run resumes where it stopped (the logits are the slow part, about 10
pairs a second on 2 cores). Up to ``--questions`` of a set's questions are used (a seeded sample), ``--validate``
of them held back to calibrate the thresholds. The logistic regression (L2, L-BFGS; :func:`fit_logistic`) weighs
every set alike; the thresholds are the loosest at which every set's validation questions reach ``--precision``
(:func:`calibrate`). ``EVALUATOR`` (a trained evaluator's folder: its logits are the ones fitted) gets the fit as
its manifest's ``fused`` entry. How the shipped one was made: docs/default-evaluator.md.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..evaluator.fused import FEATURES, FusedFit, features, write_fused
from ..match import holds_answer


@dataclass
class Question:
    """One question's candidates: their features (rows) and whether each holds a gold answer."""

    set: str
    id: str
    rows: "object"  # numpy (passages, len(FEATURES))
    labels: list[bool]


def candidates(retrieval, evaluator, question: str, answers: Sequence[str], k: int = 10) -> dict:
    """A question's fused top ``k``, labelled, with the evidence :func:`features` reads (a cache record)."""
    hits = retrieval.search(question, k)
    _, logits = evaluator.score_logits([(question, h.passage.text) for h in hits]) if hits else ([], [])
    return {
        "cands": [
            {"support": h.support, "cosine": h.cosine, "rank": h.rank, "dense_rank": h.dense_rank, "logit": z}
            for h, z in zip(hits, logits)
        ],
        "labels": [bool(answers) and holds_answer(h.passage.text, answers) for h in hits],
    }


def as_question(name: str, record: dict) -> Question:
    """A cache record (:func:`candidates`, with its ``id``) as a :class:`Question`."""
    c = record["cands"]
    rows = features(
        [x["logit"] for x in c],
        [x["support"] for x in c],
        [x["cosine"] for x in c],
        [x["rank"] for x in c],
        [x["dense_rank"] for x in c],
    )
    return Question(name, record["id"], rows, list(record["labels"]))


def fit_logistic(x, y, weight=None, l2: float = 1.0):
    """L2-regularised logistic regression by L-BFGS on standardised features: ``(weights, bias, mean, scale)``.

    Minimises ``sum(w_i * logloss_i) / sum(w_i) + l2 * |weights|^2 / (2 n)``, the bias unpenalised (as
    scikit-learn's ``LogisticRegression(C=1/l2)`` does with ``sample_weight`` normalised to mean 1). Deterministic.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([0, 0, 1, 1])
    >>> w, b, mean, scale = fit_logistic(x, y, l2=0.1)
    >>> bool(w[0] > 0), mean.tolist()
    (True, [1.5])
    """
    import numpy as np
    from scipy.optimize import minimize

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    weight = np.ones(len(y)) if weight is None else np.asarray(weight, dtype=np.float64)
    weight = weight / weight.mean()
    mean, scale = x.mean(0), x.std(0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    n = len(y)

    def loss(theta):
        w, b = theta[:-1], theta[-1]
        m = z @ w + b
        per = np.logaddexp(0.0, m) - y * m
        p = 1.0 / (1.0 + np.exp(-m))
        grad_m = weight * (p - y)
        value = (weight * per).sum() + 0.5 * l2 * (w @ w)
        return value / n, np.append(z.T @ grad_m + l2 * w, grad_m.sum()) / n

    theta = minimize(loss, np.zeros(z.shape[1] + 1), jac=True, method="L-BFGS-B").x
    return theta[:-1], float(theta[-1]), mean, scale


def calibrate(questions: Sequence[Question], fit: FusedFit, precision: float, keep: int = 3):
    """The loosest ``(upper, lower, keep)`` probabilities at which every set's questions reach ``precision``.

    Correct is right when the passages it reads (the best, and up to ``keep`` at least the keep threshold) hold the
    answer; Incorrect when none of the question's passages does. ``keep`` is the probability at which the passages
    ranked after the best still held the answer ``precision`` of the time, over every set.
    """
    sets = sorted({q.set for q in questions})
    scored = [(q, fit.probabilities(q.rows)) for q in questions]

    def best_first(q, p):
        order = sorted(range(len(p)), key=lambda i: -p[i])
        return [p[i] for i in order], [q.labels[i] for i in order]

    ranked = [(q.set, *best_first(q, p)) for q, p in scored if len(p)]
    later = sorted(((p, y) for _, ps, ys in ranked for p, y in zip(ps[1:], ys[1:])), reverse=True)
    keep_p = _loosest([p for p, _ in later], [y for _, y in later], precision)
    per_set = [[(ps, ys) for s, ps, ys in ranked if s == name] for name in sets]
    upper = max(
        _loosest([ps[0] for ps, _ in qs], [_read(ps, ys, keep_p, keep) for ps, ys in qs], precision) for qs in per_set
    )
    lower = min(_tightest([ps[0] for ps, _ in qs], [not any(ys) for _, ys in qs], precision) for qs in per_set)
    return upper, min(lower, upper), keep_p


def _read(ps, ys, keep_p, keep) -> bool:
    """Whether a Correct question's read passages (the best, then those at least ``keep_p``) hold the answer."""
    return any(y for i, (p, y) in enumerate(zip(ps[:keep], ys[:keep])) if i == 0 or p >= keep_p)


def _loosest(scores, right, precision) -> float:
    """The lowest threshold ``t`` at which the questions scoring at least ``t`` are right ``precision`` of the time
    (1.0 when none is)."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    best, hits = 1.0, 0
    for n, i in enumerate(order, 1):
        hits += bool(right[i])
        if hits / n >= precision and n >= 10:
            best = scores[i]
    return best


def _tightest(scores, right, precision) -> float:
    """The highest threshold ``t`` at which the questions scoring below ``t`` are right ``precision`` of the time
    (0.0 when none is)."""
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    best, hits = 0.0, 0
    for n, i in enumerate(order, 1):
        hits += bool(right[i])
        if hits / n >= precision and n >= 10:
            best = scores[i] + 1e-9
    return best


def fit(questions: Sequence[Question], l2: float = 1.0) -> tuple:
    """Fit on ``questions``, every set weighing alike: ``(weights, bias, mean, scale)``."""
    import numpy as np

    counts = {name: sum(len(q.labels) for q in questions if q.set == name) for name in {q.set for q in questions}}
    x = np.concatenate([q.rows for q in questions if len(q.labels)])
    y = np.array([label for q in questions for label in q.labels])
    w = np.array([1.0 / counts[q.set] for q in questions for _ in q.labels])
    return fit_logistic(x, y, w, l2)


def _sample(path: Path, n: int | None, seed: int) -> list[dict]:
    lines = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    lines = [q for q in lines if q.get("answers")]
    random.Random(seed).shuffle(lines)
    return lines[:n] if n else lines


def _cached(name: str, qfile: Path, index: Path, evaluator, cache: Path, n: int | None, seed: int) -> list[dict]:
    """The set's cache records, computing (and appending) those missing."""
    from ..index import BM25Index, Retrieval

    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{name}.jsonl"
    done = {r["id"]: r for r in map(json.loads, open(path)) if r} if path.exists() else {}
    wanted = _sample(qfile, n, seed)
    missing = [q for q in wanted if q["id"] not in done]
    if missing:
        retrieval = Retrieval(BM25Index.load(index), "fused")
        with open(path, "a", encoding="utf-8") as f:
            for i, q in enumerate(missing, 1):
                record = {"id": q["id"], **candidates(retrieval, evaluator, q["question"], q["answers"])}
                f.write(json.dumps(record) + "\n")
                f.flush()
                done[q["id"]] = record
                if i % 50 == 0:
                    print(f"{name}: {i} of {len(missing)} questions", file=sys.stderr)
    return [done[q["id"]] for q in wanted]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m crag_cli.train.fused", description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", required=True, help="NAME=QUESTIONS@INDEX")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="the trained evaluator's folder")
    parser.add_argument("--questions", type=int, default=None)
    parser.add_argument("--validate", type=float, default=0.2)
    parser.add_argument("--precision", type=float, default=0.85)
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from ..evaluator import build_evaluator

    evaluator = build_evaluator(str(args.out), batch_size=10, max_length=512, evaluator_precision="float")
    train, validate = [], []
    for spec in args.set:
        name, rest = spec.split("=", 1)
        qfile, index = rest.rsplit("@", 1)
        records = _cached(name, Path(qfile), Path(index), evaluator, args.cache, args.questions, args.seed)
        cut = int(len(records) * (1 - args.validate))
        train += [as_question(name, r) for r in records[:cut]]
        validate += [as_question(name, r) for r in records[cut:]]
    weights, bias, mean, scale = fit(train, args.l2)
    raw = FusedFit(tuple(map(float, weights)), bias, tuple(map(float, mean)), tuple(map(float, scale)), 1.0, 0.0, 1.0)
    upper, lower, keep = calibrate(validate, raw, args.precision)
    final = FusedFit(raw.weights, raw.bias, raw.mean, raw.scale, upper, lower, keep)
    write_fused(args.out, final, "python -m crag_cli.train.fused " + " ".join(sys.argv[1:] if argv is None else argv))
    print(json.dumps({"features": list(FEATURES), **final.to_dict(), "train": len(train), "validate": len(validate)}))


if __name__ == "__main__":
    main()
