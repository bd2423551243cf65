"""The cross-encoder's learning curve: pair AUC on sets kept out of training, against training questions.

    python benchmarks/evaluator_curve.py --pairs SQTR/pairs.jsonl --grow sq --sizes 400,1600,6400 \\
        --test covid=Q@IX [--test ...] --work DIR [--drop Q] [--per-set N] [--negatives 4] [--epochs 2] [--out FILE.md]

``--pairs`` is ``benchmarks/squad_pairs.py``'s file (each question's fused top 10, labelled; qids prefixed by a
tag). At each of ``--sizes`` the first N questions tagged ``--grow`` (a seeded sample: each size holds the smaller
ones) and every question of the other tags are kept, each with all its positive passages and its first
``--negatives`` negatives in retrieval order (the hardest), none of the questions in ``--drop``, and ``crag train-evaluator --pairs`` trains
``DIR/ev-N`` (skipped when it is there: the curve resumes). Each evaluator, and the shipped one, is scored on every
``--test`` set (a JSONL of questions with gold ``answers`` and its index): the pair AUC of its raw logit over the
fused top 10 (:func:`crag_cli.train.fused.candidates`, cached under ``DIR/cache-N``), beside BM25's lexical
support alone. Questions without a gold answer among their ten count for nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from crag_cli.action.evaltest import auc
from crag_cli.evaluator import build_evaluator
from crag_cli.train.fused import cached, parse_set


def subset(pairs: Path, grow: str, n: int, negatives: int, out: Path, drop: frozenset[str] = frozenset()) -> int:
    """Write ``out``: the first ``n`` questions tagged ``grow`` and all others but those whose text is in ``drop``,
    negatives cut; return its questions."""
    kept: dict[str, int] = {}  # qid -> negatives kept so far
    grown: list[str] = []
    with open(pairs, encoding="utf-8") as f, open(out, "w", encoding="utf-8") as w:
        for line in f:
            pair = json.loads(line)
            qid = pair["qid"]
            if pair["question"] in drop:
                continue
            if qid not in kept:
                if qid.startswith(grow + "-"):
                    if len(grown) == n:
                        continue
                    grown.append(qid)
                kept[qid] = 0
            if not pair["label"]:
                if kept[qid] == negatives:
                    continue
                kept[qid] += 1
            w.write(line)
    return len(kept)


def scores(spec: str, ev, cache: Path, n: int | None) -> tuple[float | None, float | None, int]:
    """``(logit AUC, support AUC, questions)`` of one ``NAME=QUESTIONS@INDEX`` set (a seeded ``n`` of them)."""
    name, qfile, index = parse_set(spec)
    records = [r for r in cached(name, qfile, index, ev, cache, n, 0) if any(r["labels"])]
    y = [label for r in records for label in r["labels"]]
    logit = auc([c["logit"] for r in records for c in r["cands"]], y)
    support = auc([c["support"] for r in records for c in r["cands"]], y)
    return logit, support, len(records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, required=True)
    parser.add_argument("--grow", required=True, help="the tag whose questions grow with the size")
    parser.add_argument("--sizes", default="400,1600,6400")
    parser.add_argument("--negatives", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--test", action="append", required=True, help="NAME=QUESTIONS@INDEX")
    parser.add_argument("--per-set", type=int, help="at most this many questions of each --test set (seeded)")
    parser.add_argument("--drop", type=Path, help="a JSONL of questions kept out of training (a diagnosis part)")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    names = [parse_set(t)[0] for t in args.test]
    lines = ["| training (grown + others) | minutes | " + " | ".join(names) + " |", "|---" * (len(names) + 2) + "|"]
    support: dict[str, float | None] = {}
    drop = frozenset(json.loads(x)["question"] for x in open(args.drop) if x.strip()) if args.drop else frozenset()
    runs = [("shipped", "minilm")] + [(s, str(args.work / f"ev-{s}")) for s in args.sizes.split(",")]
    for size, ev_path in runs:
        minutes = "–"
        if size != "shipped":
            folder = Path(ev_path)
            if not folder.exists():
                sub = args.work / f"pairs-{size}.jsonl"
                total = subset(args.pairs, args.grow, int(size), args.negatives, sub, drop)
                print(f"{size}: {total} questions in {sub}", file=sys.stderr)
                start = time.time()
                cmd = [
                    "crag",
                    "train-evaluator",
                    "--pairs",
                    str(sub),
                    "--out",
                    str(folder),
                    "--epochs",
                    str(args.epochs),
                ]
                subprocess.run(cmd, check=True)
                (args.work / f"ev-{size}.seconds").write_text(f"{time.time() - start:.0f}\n")
            took = args.work / f"ev-{size}.seconds"
            minutes = f"{int(took.read_text()) / 60:.0f}" if took.exists() else "?"
        row = []
        ev = build_evaluator(ev_path, batch_size=10, max_length=512, evaluator_precision="float")  # once a run
        for spec, name in zip(args.test, names):
            logit, sup, n = scores(spec, ev, args.work / f"cache-{size}", args.per_set)
            support[name] = sup
            row.append(f"{logit:.3f}" if logit is not None else "–")
        lines.append(f"| {size} | {minutes} | " + " | ".join(row) + " |")
        print(lines[-1], file=sys.stderr)
    lines.append("| BM25 support alone | – | " + " | ".join(f"{support[n]:.3f}" for n in names) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
