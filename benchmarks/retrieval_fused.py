"""Two retrievers and the fused evaluator, without the reader: the gold span in the top 5 by each, and pair AUC.

    python benchmarks/retrieval_fused.py --set NAME=QUESTIONS@INDEX [--set ...] --cache DIR [--evaluator SPEC]

For each question with gold answers (a gold alias in the passage as whole words) of each set (an index with its
dense part): is the span in BM25's top 5, the dense part's top 5, the fused retrieval's (reciprocal rank) top 5
and top 10, and the first 5 of that top 10 in the fused evaluator's order (what crag reads first; the evaluator's
manifest's ``fused`` fit)? And the pair AUC over the fused top 10 of the cross-encoder's raw logit and of the
fused evaluator's probability. The top 10 and its logits come from ``--cache`` as ``python -m crag_cli.train.fused``
writes it (computed and added when missing); prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from crag_cli.action.evaltest import auc
from crag_cli.evaluator import build_evaluator
from crag_cli.index import BM25Index
from crag_cli.action.match import holds_answer
from crag_cli.train.fused import as_question, cached, nearness, parse_set


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", required=True, help="NAME=QUESTIONS@INDEX")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--evaluator", default="minilm")
    args = parser.parse_args()
    ev = build_evaluator(args.evaluator, batch_size=10, max_length=512, evaluator_precision="float")
    fit = ev.fused
    print("| set | questions | BM25 @5 | dense @5 | fused @5 | fused @10 | fused evaluator @5 | AUC logit / fused |")
    print("|---|---|---|---|---|---|---|---|")
    for spec in args.set:
        name, qfile, ix = parse_set(spec)
        index = BM25Index.load(ix)
        records = cached(name, qfile, ix, ev, args.cache, None, 0)
        answers = {q["id"]: q["answers"] for q in map(json.loads, open(qfile)) if q.get("answers")}
        near = nearness(ev, [r["question"] for r in records])
        counts = np.zeros(5, dtype=int)
        z, p, y = [], [], []
        for record, d in zip(records, near):
            gold = answers[record["id"]]
            held = [lambda hits: any(holds_answer(h.passage.text, gold) for h in hits)]
            q = as_question(name, record, d)
            prob = fit.probabilities(q.rows) if len(q.labels) else []
            order = sorted(range(len(prob)), key=lambda i: -prob[i])
            counts += [
                held[0](index.search(record["question"], 5)),
                held[0](index.dense(record["question"], 5)),
                any(q.labels[:5]),
                any(q.labels),
                any(q.labels[i] for i in order[:5]),
            ]
            z += [c["logit"] for c in record["cands"]]
            p += list(prob)
            y += q.labels
        cells = " | ".join(str(int(c)) for c in counts)
        print(f"| {name} | {len(records)} | {cells} | {auc(z, y):.3f} / {auc(p, y):.3f} |")


if __name__ == "__main__":
    main()
