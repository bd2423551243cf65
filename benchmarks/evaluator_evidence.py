"""What tells a passage that holds the answer from one that does not: the evaluator's logit, BM25's support, the rank.

    python benchmarks/evaluator_evidence.py --set QUESTIONS[@validation],INDEX,TAG [--set ...] [--fit TAG ...]
                                            [--evaluator SPEC] [--cache FILE]
                                            [--correct-precision P [--write EVALUATOR_DIR]]

For each set's questions: the top 10 passages (BM25, as crag retrieves them), each labelled by whether a gold
answer occurs in it (whole words, as ``crag train-evaluator`` labels), and three pieces of evidence: the
evaluator's raw logit (no topic guard), the passage's lexical support (the share of the question's BM25 term
weight it holds, what ``--lexical-support`` reads) and its rank. ``FILE@validation`` takes those of FILE that
the evaluator's manifest lists as its validation questions (the shipped one's 100: ``SPLIT/train.jsonl@validation``
of ``split_popqa.py --test 200``). Prints per set the pair AUC of each (does a
passage that holds the answer score higher?) and the question AUC of its best (does a question whose top 10
holds the answer get a higher best?). With ``--fit``, a logistic regression over the evidence is fitted on the
named sets' pairs (each set weighing the same) and the same AUCs are printed for it on every set: the sets it
was fitted on in-sample, the others out of sample. ``--cache FILE`` keeps the evidence (JSON) so that a second
run scores nothing again.

With ``--correct-precision P`` the threshold of the fitted combination (logit + support + rank) is the lowest
best score at which every fitted set's questions called Correct hold the answer at least ``P`` of the time, and
each set's Correct calls are printed; ``--write DIR`` stores the combination and threshold in the trained
evaluator's manifest as its ``evidence`` (what ``--evidence`` reads: :class:`crag_cli.evaluator.EvidenceFit`).
The shipped ``minilm`` evaluator's was written so, fitted on PopQA validation and SQuAD
(``evidence-issue50/`` in ``benchmarks/results/records.tar.xz``); COVID-QA fits and calibrates nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from crag_cli.action.evaltest import auc
from crag_cli.assemble import evaluator_of
from crag_cli.evaluator import EMBEDDED_EVALUATOR, parse_spec, read_trained
from crag_cli.index import BM25Index
from crag_cli.action.match import holds_answer
from crag_cli.train.data import question_fingerprint, seen_questions

EVIDENCE = ("logit", "support", "rank")


def gather(spec: str, sets: list[tuple[str, str, str]], cache: dict) -> dict:
    """``{tag: [question rows]}``, each row ``{"labels", "logit", "support", "rank"}`` lists over its top 10."""
    evaluator = None
    for qfile, ix, tag in sets:
        if tag in cache:
            continue
        index = BM25Index.load(Path(ix))
        rows, pairs = [], []
        for q in read_questions(qfile, spec):
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
        evaluator = evaluator or evaluator_of(spec)
        logits = evaluator.logits(pairs)
        k = 0
        for row in rows:
            row["logit"] = logits[k : k + len(row["labels"])]
            k += len(row["labels"])
        cache[tag] = rows
    return cache


def read_questions(qfile: str, spec: str) -> list[dict]:
    """The questions of a set: ``FILE``, or ``FILE@validation`` (``@training``): those of FILE that the trained
    evaluator's manifest lists as its validation (training) questions (``data.seen``)."""
    qfile, _, side = qfile.partition("@")
    questions = [json.loads(line) for line in open(qfile) if line.strip()]
    if not side:
        return questions
    _, path = parse_spec(spec)
    seen = seen_questions(read_trained(path or EMBEDDED_EVALUATOR)) or {}
    return [q for q in questions if seen.get(question_fingerprint(q["question"])) == side]


def matrix(rows: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X, y, question)``: one row of evidence per pair, its label, its question's number."""
    x = [[r[e][i] for e in EVIDENCE] for r in rows for i in range(len(r["labels"]))]
    y = [int(v) for r in rows for v in r["labels"]]
    q = [n for n, r in enumerate(rows) for _ in r["labels"]]
    return np.array(x, dtype=float), np.array(y), np.array(q)


def aucs(score: np.ndarray, y: np.ndarray, q: np.ndarray) -> str:
    """Pair AUC and question AUC of the best score, as ``pair P question Q``."""
    best, holds = best_per_question(score, y, q)
    return f"pair {auc(list(score), list(y)):.3f} question {auc(list(best), list(holds)):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", required=True, help="QUESTIONS[@validation],INDEX,TAG")
    parser.add_argument("--fit", action="append", default=[], help="a set's TAG to fit the combination on")
    parser.add_argument("--evaluator", default="minilm")
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--correct-precision", type=float, help="the fitted sets' Correct precision to reach")
    parser.add_argument("--write", type=Path, help="a trained evaluator's folder to store the fit in")
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
    if args.correct_precision is not None:
        threshold(model, data, args.fit, args.correct_precision, args.write)


def best_per_question(combined: np.ndarray, y: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each question's best combined score and whether its top 10 holds the answer."""
    nums = np.unique(q)
    return np.array([combined[q == n].max() for n in nums]), np.array([bool(y[q == n].max()) for n in nums])


def threshold(model, data: dict, fit: list[str], precision: float, write: Path | None) -> None:
    """Print (and with ``write`` store) the lowest threshold at which every fitted set's Correct reaches ``precision``."""
    from crag_cli.evaluator import EvidenceFit, write_evidence

    best = {tag: best_per_question(model.decision_function(x), y, q) for tag, (x, y, q) in data.items()}
    cands = sorted(set(np.concatenate([best[t][0] for t in fit]).round(4)))
    t = next((c for c in cands if all(best[f][1][best[f][0] >= c].mean() >= precision for f in fit)), None)
    if t is None:
        sys.exit(f"no threshold reaches Correct precision {precision} on {', '.join(fit)}")
    print(f"\nCorrect when the best combined score >= {t:.4f} (Correct precision {precision} on each fitted set):")
    for tag, (b, h) in best.items():
        c = b >= t
        print(
            f"  {tag}: Correct {c.sum()} of {len(b)}, holding the answer {h[c].sum()} ({h[c].mean() if c.any() else 0:.2f})"
        )
    if write is not None:
        w = dict(zip(EVIDENCE, (round(float(c), 4) for c in model.coef_[0])))
        ev = EvidenceFit(w["logit"], w["support"], w["rank"], round(float(model.intercept_[0]), 4), float(t))
        write_evidence(
            write, ev, f"benchmarks/evaluator_evidence.py --fit {' --fit '.join(fit)} --correct-precision {precision}"
        )
        print(f"stored in {write}")


if __name__ == "__main__":
    sys.exit(main())
