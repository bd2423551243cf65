"""Fit the fused evaluator (:mod:`crag_cli.evaluator.fused`) on questions of several kinds, and store it.

    python -m crag_cli.train.fused --set NAME=QUESTIONS@INDEX [--set ...] --cache DIR --out EVALUATOR \\
        [--questions N] [--folds K] [--precision P] [--seed S] [--decide]

Each ``--set`` is a JSONL file of questions with gold ``answers`` and a crag index (with its dense part) of the
documents they are about. For each question the fused retrieval's top 10 (:class:`crag_cli.index.Retrieval`) are
labelled (a gold answer in the passage, as whole words) and given the evaluator's raw logit: written to
``DIR/NAME.jsonl`` as they come, so a killed run resumes where it stopped (the logits are the slow part, about 10
pairs a second on 2 cores). Up to ``--questions`` of a set's questions are used (a seeded sample; none that the
cross-encoder was trained on, as its manifest lists them). The logistic regression (L2, L-BFGS;
:func:`fit_logistic`) weighs every set alike; the thresholds are the loosest at which every set's questions,
scored by fits on the other ``--folds`` (:func:`out_of_fold`), reach ``--precision`` (:func:`calibrate`); with ``--decide`` they are stored too, and the fit then decides the
action. ``EVALUATOR`` (a trained evaluator's folder: its logits are the ones fitted) gets the fit as its manifest's
``fused`` entry. How the shipped one was made: docs/default-evaluator.md.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..evaluator.fused import FusedFit, features, write_fused
from ..action.match import holds_answer


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
    logits = evaluator.logits([(question, h.passage.text) for h in hits]) if hits else []  # (raw: no topic guard)
    return {
        "cands": [
            {"support": h.support, "cosine": h.cosine, "rank": h.rank, "dense_rank": h.dense_rank, "logit": z}
            for h, z in zip(hits, logits)
        ],
        "labels": [bool(answers) and holds_answer(h.passage.text, answers) for h in hits],
    }


def as_question(name: str, record: dict, domain: float) -> Question:
    """A cache record (:func:`candidates`, with its ``id``) as a :class:`Question`; ``domain``: the question's
    (:func:`crag_cli.evaluator.fused.features`)."""
    c = record["cands"]
    rows = features(
        [x["logit"] for x in c],
        [x["support"] for x in c],
        [x["cosine"] for x in c],
        [x["rank"] for x in c],
        [x["dense_rank"] for x in c],
        domain,
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


def calibrate(scored: Sequence[tuple[str, Sequence[float], Sequence[bool]]], precision: float, keep: int = 3):
    """The loosest ``(upper, lower, keep)`` probabilities at which the questions of all sets together, each set
    weighing alike, reach ``precision``.

    ``scored``: per question, its set, its passages' probabilities and labels (out of fold: :func:`out_of_fold`).
    Correct is right when the passages it reads (the best, and up to ``keep`` at least the keep threshold) hold the
    answer; Incorrect when none of the question's passages does. ``keep`` is the probability at which the passages
    ranked after the best still held the answer ``precision`` of the time.
    """
    ranked = []
    for name, p, labels in scored:
        order = sorted(range(len(p)), key=lambda i: -p[i])
        if order:
            ranked.append((name, [p[i] for i in order], [labels[i] for i in order]))
    count = {name: sum(1 for s, _, _ in ranked if s == name) for name, _, _ in ranked}
    weight = [1.0 / count[s] for s, _, _ in ranked]
    later = [(p, y, w) for (_, ps, ys), w in zip(ranked, weight) for p, y in zip(ps[1:], ys[1:])]
    keep_p = _loosest([p for p, _, _ in later], [y for _, y, _ in later], precision, [w for _, _, w in later])
    best = [ps[0] for _, ps, _ in ranked]
    upper = _loosest(best, [_read(ps, ys, keep_p, keep) for _, ps, ys in ranked], precision, weight)
    lower = _tightest(best, [not any(ys) for _, _, ys in ranked], precision, weight)
    return upper, min(lower, upper), keep_p


def out_of_fold(questions: Sequence[Question], folds: int = 5, l2: float = 1.0) -> list[tuple[str, list, list]]:
    """Each question's probabilities by a fit on the other folds (question ``i`` in fold ``i % folds``)."""
    out = []
    for k in range(folds):
        held = [q for i, q in enumerate(questions) if i % folds == k]
        weights, bias, mean, scale = fit([q for i, q in enumerate(questions) if i % folds != k], l2)
        f = FusedFit(tuple(weights), bias, tuple(mean), tuple(scale))
        out += [(q.set, f.probabilities(q.rows) if len(q.labels) else [], q.labels) for q in held]
    return out


def _read(ps, ys, keep_p, keep) -> bool:
    """Whether a Correct question's read passages (the best, then those at least ``keep_p``) hold the answer."""
    return any(y for i, (p, y) in enumerate(zip(ps[:keep], ys[:keep])) if i == 0 or p >= keep_p)


def _loosest(scores, right, precision, weight=None) -> float:
    """The lowest threshold ``t`` at which the questions scoring at least ``t`` are right ``precision`` of the time,
    by ``weight`` (1.0 when none is; at least 10 questions).

    >>> _loosest([0.9, 0.8, 0.7, 0.6] * 5, [True, True, True, False] * 5, 0.75)
    0.6
    """
    return _threshold(scores, right, precision, weight, high=True)


def _tightest(scores, right, precision, weight=None) -> float:
    """The highest threshold ``t`` at which the questions scoring below ``t`` are right ``precision`` of the time,
    by ``weight`` (0.0 when none is; at least 10 questions)."""
    return _threshold(scores, right, precision, weight, high=False)


def _threshold(scores, right, precision, weight, high: bool) -> float:
    weight = [1.0] * len(scores) if weight is None else weight
    order = sorted(range(len(scores)), key=lambda i: -scores[i] if high else scores[i])
    best, hits, total = (1.0 if high else 0.0), 0.0, 0.0
    for n, i in enumerate(order, 1):
        hits, total = hits + weight[i] * bool(right[i]), total + weight[i]
        if hits / total >= precision and n >= 10:
            best = scores[i] if high else scores[i] + 1e-9
    return best


def fit(questions: Sequence[Question], l2: float = 1.0) -> tuple:
    """Fit on ``questions``, every set weighing alike: ``(weights, bias, mean, scale)``."""
    import numpy as np

    counts = {name: sum(len(q.labels) for q in questions if q.set == name) for name in {q.set for q in questions}}
    x = np.concatenate([q.rows for q in questions if len(q.labels)])
    y = np.array([label for q in questions for label in q.labels])
    w = np.array([1.0 / counts[q.set] for q in questions for _ in q.labels])
    return fit_logistic(x, y, w, l2)


def sample(path: Path, n: int | None, seed: int, trained: set[str], unanswered: bool = False) -> list[dict]:
    """Up to ``n`` of the file's questions with gold answers (a seeded sample), none the cross-encoder was trained on
    (``trained``: their fingerprints; its logits on them are not those a new question gets). ``unanswered``: those
    without gold answers too (every passage labelled as not holding one)."""
    from .data import question_fingerprint

    lines = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    lines = [
        q for q in lines if (unanswered or q.get("answers")) and question_fingerprint(q["question"]) not in trained
    ]
    random.Random(seed).shuffle(lines)
    return lines[:n] if n else lines


def parse_set(spec: str) -> tuple[str, Path, Path]:
    """``(name, questions file, index)`` of a ``NAME=QUESTIONS@INDEX`` set.

    Examples
    --------
    >>> parse_set("covid=q@x.jsonl@ix")
    ('covid', PosixPath('q@x.jsonl'), PosixPath('ix'))
    """
    name, rest = spec.split("=", 1)
    qfile, index = rest.rsplit("@", 1)
    return name, Path(qfile), Path(index)


def cached(
    name: str, qfile: Path, index: Path, evaluator, cache: Path, n: int | None, seed: int, unanswered: bool = False
) -> list[dict]:
    """The set's cache records (:func:`candidates`, with ``id`` and ``question``), computing and appending those
    missing to ``cache/NAME.jsonl``; ``unanswered``: of questions without gold answers too (:func:`sample`)."""
    from ..index import BM25Index, Retrieval

    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{name}.jsonl"
    done = {r["id"]: r for r in map(json.loads, open(path)) if r} if path.exists() else {}
    from ..evaluator import read_trained
    from .data import seen_questions

    seen = seen_questions(read_trained(evaluator.path)) or {}
    wanted = sample(qfile, n, seed, {f for f, side in seen.items() if side == "training"}, unanswered)
    missing = [q for q in wanted if q["id"] not in done]
    if missing:
        retrieval = Retrieval(BM25Index.load(index), "fused")
        with open(path, "a", encoding="utf-8") as f:
            for i, q in enumerate(missing, 1):
                record = {"id": q["id"], **candidates(retrieval, evaluator, q["question"], q.get("answers") or [])}
                f.write(json.dumps(record) + "\n")
                f.flush()
                done[q["id"]] = record
                if i % 50 == 0:
                    print(f"{name}: {i} of {len(missing)} questions", file=sys.stderr)
    return [{**done[q["id"]], "question": q["question"]} for q in wanted]


def nearness(evaluator, questions: Sequence[str]) -> list[float]:
    """Each question's ``domain`` feature: its cosine to the nearest of the evaluator's training questions other
    than itself (a training question's own would be 1: it would teach that its logit is always to be trusted)."""
    out: list[float] = []
    for a in range(0, len(questions), 256):
        out += evaluator.nearness(list(questions[a : a + 256]), others=True) or [0.0] * len(questions[a : a + 256])
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m crag_cli.train.fused", description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", required=True, help="NAME=QUESTIONS@INDEX")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="the trained evaluator's folder")
    parser.add_argument("--questions", type=int, default=None)
    parser.add_argument("--folds", type=int, default=5, help="out-of-fold probabilities calibrate the thresholds")
    parser.add_argument("--precision", type=float, default=0.85)
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--decide", action="store_true", help="store the thresholds: the fit then decides the action")
    args = parser.parse_args(argv)
    from ..evaluator import build_evaluator

    evaluator = build_evaluator(str(args.out), batch_size=10, max_length=512, evaluator_precision="float")
    every: list[Question] = []
    for spec in args.set:
        name, qfile, index = parse_set(spec)
        records = cached(name, qfile, index, evaluator, args.cache, args.questions, args.seed)
        near = nearness(evaluator, [r["question"] for r in records])
        every += [as_question(name, r, d) for r, d in zip(records, near)]
    weights, bias, mean, scale = fit(every, args.l2)
    upper, lower, keep = calibrate(out_of_fold(every, args.folds, args.l2), args.precision)
    final = FusedFit(
        tuple(map(float, weights)),
        bias,
        tuple(map(float, mean)),
        tuple(map(float, scale)),
        *((float(upper), float(lower)) if args.decide else ()),
    )
    write_fused(args.out, final, "python -m crag_cli.train.fused " + " ".join(sys.argv[1:] if argv is None else argv))
    could = {"upper": upper, "lower": lower, "keep": keep, "precision": args.precision}
    print(json.dumps({**final.to_dict(), "questions": len(every), "thresholds_at_precision": could}))


if __name__ == "__main__":
    main()
