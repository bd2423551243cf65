"""Would scoring several questions' passages in one evaluator call be faster? Prints pairs per second.

    python benchmarks/evaluator_batching.py --index INDEX --questions QUESTIONS.jsonl \
        [--evaluator minilm] [--questions-n 40] [-k 10]

For the first N questions, their top-k passages are scored by the evaluator
once question by question (what ``crag batch`` does today: one call of k pairs
per question) and once all together in one call, for several ``--batch-size``
values and 2 and 1 torch threads. One call over many questions sorts more pairs
by length before batching them, so less padding is computed.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--evaluator", default="minilm")
    parser.add_argument("--questions-n", type=int, default=40)
    parser.add_argument("-k", type=int, default=10)
    args = parser.parse_args()

    import torch

    from crag_cli.evaluator import build_evaluator
    from crag_cli.index import BM25Index

    index = BM25Index.load(args.index)
    lines = [x for x in args.questions.read_text().splitlines() if x.strip()][: args.questions_n]
    per_question = [[(q, h.passage.text) for h in index.search(q, args.k)] for q in
                    (json.loads(x)["question"] for x in lines)]  # fmt: skip
    every = [pair for pairs in per_question for pair in pairs]
    for threads in (2, 1):
        torch.set_num_threads(threads)
        for batch_size in (10, 32, 80, 400):
            ev = build_evaluator(args.evaluator, batch_size, 256)
            ev.load()
            ev.score(per_question[0])  # warm up
            start = time.perf_counter()
            for pairs in per_question:
                ev.score(pairs)
            one = time.perf_counter() - start
            start = time.perf_counter()
            ev.score(every)
            together = time.perf_counter() - start
            print(f"threads {threads}, batch size {batch_size}: question by question {len(every) / one:.1f} pairs/s; "
                  f"{len(per_question)} questions in one call {len(every) / together:.1f} pairs/s")


if __name__ == "__main__":
    main()
