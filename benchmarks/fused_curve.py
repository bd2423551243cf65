"""The fused evaluator's learning curve: pair AUC on sets kept out of training, against training questions.

    python benchmarks/fused_curve.py --train squad=Q@IX --also popqa=Q@IX --test covid=Q@IX [--test ...] \\
        --cache DIR --sizes 100,200,400,800 [--evaluator EV] [--out FILE.md]

The first ``--train`` set is taken at each of ``--sizes`` (the first N of its seeded sample, so each size holds
the smaller ones); the ``--also`` sets whole, at every size. Each fit (:func:`crag_cli.train.fused.fit`, every set
weighing alike) is scored on every ``--test`` set: the pair AUC of the fused top 10 (a gold answer in the passage,
whole words; questions with gold answers), with all features and without the cross-encoder's (its logit, so also
what the evaluator's domain says of it). The candidates and logits come from ``--cache`` as
``python -m crag_cli.train.fused`` writes it (computed and added when missing).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from crag_cli.action.evaltest import auc
from crag_cli.evaluator import build_evaluator
from crag_cli.evaluator.fused import FEATURES
from crag_cli.train.fused import as_question, cached, fit, nearness, parse_set

NO_LOGIT = [i for i, name in enumerate(FEATURES) if "logit" not in name and name != "domain"]


def questions(spec: str, evaluator, cache: Path, n: int | None = None) -> list:
    name, qfile, index = parse_set(spec)
    records = cached(name, qfile, index, evaluator, cache, n, 0)
    return [as_question(name, r, d) for r, d in zip(records, nearness(evaluator, [r["question"] for r in records]))]


def pair_auc(qs: list, weights, bias, mean, scale, cols) -> float:
    rows = [q for q in qs if len(q.labels)]
    x = np.concatenate([q.rows for q in rows])[:, cols]
    y = [label for q in rows for label in q.labels]
    return auc(list((x - mean) / scale @ weights + bias), y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", required=True)
    parser.add_argument("--also", action="append", default=[])
    parser.add_argument("--test", action="append", required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--sizes", default="100,200,400,800")
    parser.add_argument("--evaluator", default="minilm", help="the cross-encoder whose logits are fused")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    ev = build_evaluator(args.evaluator, batch_size=10, max_length=512, evaluator_precision="float")
    sizes = [int(s) for s in args.sizes.split(",")]
    first = questions(args.train, ev, args.cache, max(sizes))
    also = [q for spec in args.also for q in questions(spec, ev, args.cache)]
    tests = {parse_set(spec)[0]: questions(spec, ev, args.cache) for spec in args.test}
    lines = ["| training questions | features | " + " | ".join(tests) + " |", "|---" * (len(tests) + 2) + "|"]
    for n in sizes:
        train = first[:n] + also
        for label, cols in (("all", list(range(len(FEATURES)))), ("no cross-encoder", NO_LOGIT)):
            w, b, mean, scale = fit([_cut(q, cols) for q in train])
            cells = [f"{pair_auc(qs, w, b, mean, scale, cols):.3f}" for qs in tests.values()]
            lines.append(f"| {len(first[:n])} + {len(also)} | {label} | " + " | ".join(cells) + " |")
            print(lines[-1], file=sys.stderr)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


def _cut(q, cols):
    from crag_cli.train.fused import Question

    return Question(q.set, q.id, q.rows[:, cols], q.labels)


if __name__ == "__main__":
    main()
