"""Is scoring several questions' passages in one evaluator call faster? Prints pairs per second.

    python benchmarks/evaluator_batching.py --index INDEX --questions QUESTIONS.jsonl \
        [--evaluator minilm] [--questions-n 40] [-k 10] [--groups 1,4,8,40]

For the first N questions, their top-k passages are scored by the evaluator in
calls of ``g`` questions' pairs for each group size ``g`` (1: question by
question; ``crag batch`` uses ``crag_cli.batch.GROUP_LINES``), at crag's default
evaluator batch size and at several others, with 2 and 1 torch threads. One
call over many questions sorts more pairs by length before batching them, so
less padding is computed.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
import data  # noqa: E402  (a path under benchmarks/DOMAIN/ is unpacked on demand)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=data.on_demand, required=True)
    parser.add_argument("--evaluator", default="minilm")
    parser.add_argument("--questions-n", type=int, default=40)
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--groups", default="1,4,8,40", help="questions per evaluator call, comma-separated")
    args = parser.parse_args()

    import torch

    from crag_cli.evaluator import build_evaluator
    from crag_cli.index import BM25Index

    index = BM25Index.load(args.index)
    lines = [x for x in args.questions.read_text().splitlines() if x.strip()][: args.questions_n]
    per_question = [
        [(q, h.passage.text) for h in index.search(q, args.k)] for q in (json.loads(x)["question"] for x in lines)
    ]
    every = [pair for pairs in per_question for pair in pairs]
    from crag_cli.settings import Settings

    sizes = [int(g) for g in args.groups.split(",")]
    default = Settings.model_fields["batch_size"].default
    for threads in (2, 1):
        torch.set_num_threads(threads)
        for batch_size in dict.fromkeys((default, 10, 80)):
            ev = build_evaluator(args.evaluator, batch_size, 256, "float")
            ev.load()
            ev.score(per_question[0])  # warm up
            rates = []
            for g in sizes:
                start = time.perf_counter()
                for i in range(0, len(per_question), g):
                    ev.score([pair for pairs in per_question[i : i + g] for pair in pairs])
                rates.append(f"{g} per call {len(every) / (time.perf_counter() - start):.1f}")
            print(
                f"threads {threads}, batch size {batch_size}{' (default)' if batch_size == default else ''}: "
                f"pairs/s with questions " + "; ".join(rates),
                flush=True,
            )


if __name__ == "__main__":
    main()
