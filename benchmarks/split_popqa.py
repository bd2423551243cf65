"""Split the PopQA dev questions into a held-out test part and a part to train the evaluator on.

    python benchmarks/split_popqa.py --data ../shared/bench/popqa --test 200 --out OUTDIR
    python benchmarks/split_popqa.py --data ../shared/bench/popqa --test 200 --folds 3 --out OUTDIR

The test part is exactly the spread sample that ``benchmarks/popqa.py --sample 200``
takes (every len/200-th question, all relations), so a benchmark run with
``--sample 200`` reports only questions the evaluator was neither trained nor
calibrated on. Writes ``OUTDIR/train.jsonl`` (the other questions: ``crag
train-evaluator`` holds out its own validation share of them for calibration)
and ``OUTDIR/test.jsonl``, lines copied unchanged, in file order.

``--folds K`` (K > 1) splits for cross-fitting, so that every dev question is
reported by an evaluator that never saw it: fold 1 is the same held-out part,
the other questions are dealt out in turn to folds 2 to K (each spread over all
relations). ``OUTDIR/fold-I/test.jsonl`` holds fold I, ``OUTDIR/fold-I/train.jsonl``
all the other questions; ``fold-1`` equals the split without ``--folds``.

A training part never asks a question of its test part: a line whose question
(folded text) is also a test line's is left out of training (PopQA's dev set
files four questions twice, under two ids, with the same answers), and said so
on stderr. The test parts are unchanged.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from popqa import spread_sample  # noqa: E402  (the benchmark's own sample: one definition)

from crag_cli.train import question_key  # noqa: E402
import data  # noqa: E402  (a path under benchmarks/DOMAIN/ is unpacked on demand)


def split(lines: list[str], test: int) -> tuple[list[str], list[str]]:
    """``(train, test)``: ``test`` is :func:`popqa.spread_sample` of ``lines``, ``train`` every other line."""
    ((train, held),) = folds(lines, test, 1)
    return train, held


def folds(lines: list[str], test: int, k: int) -> list[tuple[list[str], list[str]]]:
    """``k`` cross-fitting folds of ``lines``, each as ``(train, test)``.

    Parameters
    ----------
    lines : list of str
        The questions, in file order.
    test : int
        Size of fold 1: :func:`popqa.spread_sample` of ``lines``.
    k : int
        Number of folds; the lines outside fold 1 go to folds 2 to ``k`` in turn.

    Returns
    -------
    list of (list of str, list of str)
        Per fold, every line outside it that asks none of its questions
        (``train``) and its own lines (``test``), both in file order. The test
        parts are disjoint and cover ``lines`` (for ``k == 1``: only the
        ``test`` spread lines).
    """
    held = set(spread_sample(list(range(len(lines))), test))
    rest = [i for i in range(len(lines)) if i not in held]
    members = [held] + [set(rest[j :: k - 1]) for j in range(k - 1)]
    keys = [question_key(json.loads(x)["question"]) for x in lines]
    parts = []
    for m in members:
        asked = {keys[i] for i in m}
        parts.append(
            (
                [x for i, x in enumerate(lines) if i not in m and keys[i] not in asked],
                [x for i, x in enumerate(lines) if i in m],
            )
        )
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=data.on_demand, required=True, help="folder with questions.dev.jsonl")
    parser.add_argument("--test", type=int, default=200, help="questions held out (the benchmark's --sample N)")
    parser.add_argument("--folds", type=int, default=1, help="cross-fitting folds (fold 1 is the held-out part)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.folds < 1:
        parser.error("--folds must be at least 1")
    lines = [
        line for line in (args.data / "questions.dev.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    for n, line in enumerate(lines, 1):  # folds() reads each line's question
        try:
            ok = isinstance(json.loads(line).get("question"), str)
        except (ValueError, AttributeError):
            ok = False
        if not ok:
            parser.error(f'questions.dev.jsonl line {n}: not a JSON object with a "question" string')
    parts = folds(lines, args.test, args.folds)
    for i, (train, test) in enumerate(parts, 1):
        folder = args.out / f"fold-{i}" if args.folds > 1 else args.out
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "train.jsonl").write_text("\n".join(train) + "\n", encoding="utf-8")
        (folder / "test.jsonl").write_text("\n".join(test) + "\n", encoding="utf-8")
        twins = len(lines) - len(test) - len(train)
        print(
            f"{folder}: {len(train)} training questions, {len(test)} held out"
            + (f" ({twins} left out of training: they ask a held-out question word for word)" if twins else ""),
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
