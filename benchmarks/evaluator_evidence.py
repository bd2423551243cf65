"""What tells a passage that holds the answer from one that does not: the evaluator's logit, BM25's support, the rank.

    python benchmarks/evaluator_evidence.py --set QUESTIONS,INDEX,TAG [--set ...] [--fit TAG ...]
                                            [--evaluator SPEC] [--cache FILE]

For each set's questions: the top 10 passages (BM25, as crag retrieves them), each labelled by whether a gold
answer occurs in it (whole words, as ``crag train-evaluator`` labels), and three pieces of evidence: the
evaluator's raw logit (no topic guard), the passage's lexical support (the share of the question's BM25 term
weight it holds, what ``--lexical-support`` reads) and its rank. Prints per set the pair AUC of each (does a
passage that holds the answer score higher?) and the question AUC of its best (does a question whose top 10
holds the answer get a higher best?). With ``--fit``, a logistic regression over the evidence is fitted on the
named sets' pairs (each set weighing the same) and the same AUCs are printed for it on every set: the sets it
was fitted on in-sample, the others out of sample. Nothing here is shipped; it measures what a decision could
be built from. ``--cache FILE`` keeps the evidence (JSON) so that a second run scores nothing again.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from crag_cli.evaltest import auc
from crag_cli.evaluator import build_evaluator
from crag_cli.index import BM25Index
from crag_cli.match import holds_answer

EVIDENCE = ("logit", "support", "rank")


def gather(spec: str, sets: list[tuple[str, str, str]], cache: dict) -> dict:
    """``{tag: [question rows]}``, each row ``{"labels", "logit", "support", "rank"}`` lists over its top 10."""
    evaluator = None
    for qfile, ix, tag in sets:
        if tag in cache:
            continue
        index = BM25Index.load(Path(ix))
        rows, pairs = [], []
        for line in open(qfile):
            if not line.strip():
                continue
            q = json.loads(line)
            hits = index.search(q["question"], 10)
            rows.append(
                {
                    "id": q.get("id"),
                    "labels": [holds_answer(h.passage.text, q["answers"]) for h in hits],
                    "support": [h.support for h in hits],
                    "rank": [i / 10 for i in range(len(hits))],
                }
            )
            pairs += [(q["question"], h.passage.text) for h in hits]
        evaluator = evaluator or build_evaluator(spec)
        logits = evaluator.logits(pairs)
        k = 0
        for row in rows:
            row["logit"] = logits[k : k + len(row["labels"])]
            k += len(row["labels"])
        cache[tag] = rows
    return cache


def matrix(rows: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X, y, question)``: one row of evidence per pair, its label, its question's number."""
    x = [[r[e][i] for e in EVIDENCE] for r in rows for i in range(len(r["labels"]))]
    y = [int(v) for r in rows for v in r["labels"]]
    q = [n for n, r in enumerate(rows) for _ in r["labels"]]
    return np.array(x, dtype=float), np.array(y), np.array(q)


def aucs(score: np.ndarray, y: np.ndarray, q: np.ndarray) -> str:
    """Pair AUC and question AUC of the best score, as ``pair P question Q``."""
    nums = np.unique(q)
    best = [score[q == n].max() for n in nums]
    holds = [bool(y[q == n].max()) for n in nums]
    return f"pair {auc(list(score), list(y)):.3f} question {auc(best, holds):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", required=True, help="QUESTIONS,INDEX,TAG")
    parser.add_argument("--fit", action="append", default=[], help="a set's TAG to fit the combination on")
    parser.add_argument("--evaluator", default="minilm")
    parser.add_argument("--cache", type=Path)
    args = parser.parse_args()
    sets = [tuple(s.split(",")) for s in args.set]
    cache = json.loads(args.cache.read_text()) if args.cache and args.cache.exists() else {}
    cache = gather(args.evaluator, sets, cache)
    if args.cache:
        args.cache.write_text(json.dumps(cache))
    data = {tag: matrix(cache[tag]) for _, _, tag in sets}
    print(f"evaluator {args.evaluator}; top 10 per question")
    for tag, (x, y, q) in data.items():
        print(f"{tag}: {len(np.unique(q))} questions, {len(y)} pairs, {y.sum()} holding the answer")
        for i, name in enumerate(EVIDENCE):
            if name == "rank":  # a lower rank is the stronger evidence; every question's best rank is the first
                print(f"  {name:8s} pair {auc(list(-x[:, i]), list(y)):.3f}")
            else:
                print(f"  {name:8s} {aucs(x[:, i], y, q)}")
    if not args.fit:
        return
    from sklearn.linear_model import LogisticRegression

    fit = [data[t] for t in args.fit]
    x = np.vstack([f[0] for f in fit])
    y = np.concatenate([f[1] for f in fit])
    weight = np.concatenate([np.full(len(f[1]), len(y) / (len(fit) * len(f[1]))) for f in fit])
    print(f"\nlogistic regression fitted on {', '.join(args.fit)} (each set weighing the same):")
    for cols in ([0, 1], [0, 1, 2]):
        model = LogisticRegression().fit(x[:, cols], y, sample_weight=weight)
        terms = " + ".join(f"{c:.2f} {EVIDENCE[i]}" for c, i in zip(model.coef_[0], cols))
        print(f"  {terms} {model.intercept_[0]:+.2f}")
        for tag, (xt, yt, qt) in data.items():
            where = "fitted on" if tag in args.fit else "out of sample"
            print(f"    {tag} ({where}): {aucs(model.decision_function(xt[:, cols]), yt, qt)}")


if __name__ == "__main__":
    sys.exit(main())
