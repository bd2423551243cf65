"""Two retrievers and the fused evaluator, without the reader: the gold span in the top 5 by each, and pair AUC.

    python benchmarks/retrieval_fused.py --set NAME=QUESTIONS@INDEX[:N] [--set ...] --cache DIR [--evaluator SPEC] \\
        [--against SPEC --against-cache DIR]

For each question with gold answers (a gold alias in the passage as whole words) of each set (an index with its
dense part): is the span in BM25's top 5, the dense part's top 5, the fused retrieval's (reciprocal rank) top 5
and top 10, and the first 5 of that top 10 in the fused evaluator's order (what crag reads first; the evaluator's
manifest's ``fused`` fit)? And the pair AUC over the fused top 10 of the cross-encoder's raw logit and of the
fused evaluator's probability (``–`` for an evaluator without a fused fit: a freshly trained cross-encoder). The
top 10 and its logits come from ``--cache`` as ``python -m crag_cli.train.fused`` writes it (computed and added when
missing; ``:N``, a seeded sample of N); prints a Markdown table. ``--against``: a second cross-encoder over the
same candidates (its logits in ``--against-cache``), its logit's pair AUC beside the first's, and the difference's
95% interval by a paired bootstrap over questions (:func:`paired_auc`).
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from pathlib import Path

import numpy as np

from crag_cli.action.evaltest import auc
from crag_cli.evaluator import build_evaluator
from crag_cli.index import BM25Index
from crag_cli.action.match import holds_answer
from crag_cli.train.fused import as_question, cached, nearness

from evaluator_features import spec


def paired_auc(
    a: list[list[float]], b: list[list[float]], labels: list[list[bool]], n: int = 500, seed: int = 0
) -> tuple[float, float, float]:
    """Pair AUC of scores ``b`` minus that of ``a`` (per question, over the same labelled candidates), with its 95%
    interval by resampling whole questions ``n`` times (seeded).

    >>> paired_auc([[0.9, 0.1], [0.2, 0.8]], [[0.9, 0.1], [0.8, 0.2]], [[True, False], [False, True]])[0]
    -0.25
    """

    def pair_auc(scores, chosen):
        return auc([z for i in chosen for z in scores[i]], [y for i in chosen for y in labels[i]])

    every = range(len(labels))
    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, len(labels), len(labels)) for _ in range(n)]
    diffs = [d for d in (pair_auc(b, c) - pair_auc(a, c) for c in draws if any(y for i in c for y in labels[i]))]
    low, high = np.percentile(diffs, [2.5, 97.5])
    return pair_auc(b, every) - pair_auc(a, every), float(low), float(high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", required=True, help="NAME=QUESTIONS@INDEX[:N]")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--evaluator", default="minilm")
    parser.add_argument("--against", help="a second cross-encoder: its logit's pair AUC and the difference")
    parser.add_argument("--against-cache", type=Path, help="the second cross-encoder's cache")
    args = parser.parse_args()
    if bool(args.against) != bool(args.against_cache):
        parser.error("--against and --against-cache go together")
    load = partial(build_evaluator, batch_size=10, max_length=512, evaluator_precision="float")
    ev = load(args.evaluator)
    other = load(args.against) if args.against else None
    fit = ev.fused
    against = " | logit AUC, --against | difference (95%)" if other else ""
    print(
        f"| set | questions | BM25 @5 | dense @5 | fused @5 | fused @10 | fused evaluator @5 | AUC logit / fused{against} |"
    )
    print("|---" * (8 + 2 * bool(other)) + "|")
    for text in args.set:
        name, qfile, ix, part = spec(text)
        index = BM25Index.load(ix)
        records = cached(name, qfile, ix, ev, args.cache, part.stop, 0)[part]
        answers = {q["id"]: q["answers"] for q in map(json.loads, open(qfile)) if q.get("answers")}
        near = nearness(ev, [r["question"] for r in records])
        counts = np.zeros(5, dtype=int)
        z, p, y = [], [], []
        for record, d in zip(records, near):
            gold = answers[record["id"]]
            held = [lambda hits: any(holds_answer(h.passage.text, gold) for h in hits)]
            q = as_question(name, record, d)
            prob = fit.probabilities(q.rows) if fit and len(q.labels) else [0.0] * len(q.labels)
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
        cells = " | ".join(str(int(c)) for c in counts[: 5 if fit else 4]) + ("" if fit else " | –")
        line = f"| {name} | {len(records)} | {cells} | {auc(z, y):.3f} / " + (f"{auc(p, y):.3f}" if fit else "–")
        if other:
            theirs = {r["id"]: r for r in cached(name, qfile, ix, other, args.against_cache, part.stop, 0)[part]}
            shared = [r for r in records if r["id"] in theirs]  # neither evaluator trained on them
            z_theirs = [[c["logit"] for c in theirs[r["id"]]["cands"]] for r in shared]
            z_mine = [[c["logit"] for c in r["cands"]] for r in shared]
            labels = [r["labels"] for r in shared]
            diff, low, high = paired_auc(z_mine, z_theirs, labels)
            theirs_auc = auc([v for row in z_theirs for v in row], [v for row in labels for v in row])
            line += f" | {theirs_auc:.3f} | {diff:+.3f} ({low:+.3f} to {high:+.3f})"
        print(line + " |")


if __name__ == "__main__":
    main()
