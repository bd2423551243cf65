"""Split the PopQA dev questions into a held-out test part and a part to train the evaluator on.

    python benchmarks/split_popqa.py --data ../shared/bench/popqa --test 200 --out OUTDIR

The test part is exactly the spread sample that ``benchmarks/popqa.py --sample 200``
takes (every len/200-th question, all relations), so a benchmark run with
``--sample 200`` reports only questions the evaluator was neither trained nor
calibrated on. Writes ``OUTDIR/train.jsonl`` (the other questions: ``crag
train-evaluator`` holds out its own validation share of them for calibration)
and ``OUTDIR/test.jsonl``, lines copied unchanged, in file order.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from popqa import spread_sample  # noqa: E402  (the benchmark's own sample: one definition)


def split(lines: list[str], test: int) -> tuple[list[str], list[str]]:
    """``(train, test)``: ``test`` is :func:`popqa.spread_sample` of ``lines``, ``train`` every other line."""
    held = set(spread_sample(list(range(len(lines))), test))
    return [x for i, x in enumerate(lines) if i not in held], [x for i, x in enumerate(lines) if i in held]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder with questions.dev.jsonl")
    parser.add_argument("--test", type=int, default=200, help="questions held out (the benchmark's --sample N)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    lines = [line for line in (args.data / "questions.dev.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    train, test = split(lines, args.test)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "train.jsonl").write_text("\n".join(train) + "\n", encoding="utf-8")
    (args.out / "test.jsonl").write_text("\n".join(test) + "\n", encoding="utf-8")
    print(f"{len(train)} training questions, {len(test)} held out -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
