"""Pair two runs' records on the same questions: token F1 and span found, all, local and web-only questions.

    python benchmarks/pair_records.py --questions FILE RECORDS BASELINE [BASELINE ...]

RECORDS and each BASELINE are ``records-MODE.jsonl`` files of ``benchmarks/popqa.py``,
or the same gzipped (``.jsonl.gz``, as some kept records are: benchmarks/README.md, "Records");
FILE holds the questions with their gold answers. Only the questions of RECORDS are paired. The statistics are
``popqa.py``'s: ``paired_f1`` (token F1 difference, bootstrap 95% interval) and
``paired`` (span found as whole words, McNemar).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from popqa import paired, paired_f1, score_records  # noqa: E402
import data  # noqa: E402  (a path under benchmarks/DOMAIN/ is unpacked on demand)


def read_records(path: Path) -> list[dict]:
    """The JSON lines of ``path``, gunzipped first when its name ends in ``.gz``."""
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def scored(path: Path, questions: dict[str, dict]) -> list[dict]:
    """The records of ``path``, scored against their questions' gold answers (``popqa.score_records``)."""
    return score_records(read_records(path), questions)


def points(value: float) -> str:
    return f"{100 * value:+.1f}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=data.on_demand, required=True)
    ap.add_argument("records", type=Path)
    ap.add_argument("baselines", type=Path, nargs="+")
    args = ap.parse_args(argv)
    questions = {q["id"]: q for q in (json.loads(x) for x in args.questions.read_text().splitlines() if x.strip())}
    records = scored(args.records, questions)
    local = {r["id"] for r in records if questions[r["id"]].get("answer_in_local", True)}
    print(f"{args.records} against each baseline, on its {len(records)} questions ({len(local)} local)\n")
    print("| baseline | token F1 (95% interval) | span found (only here / only baseline) | local: F1 | web-only: F1 |")
    print("|---|---|---|---|---|")
    for path in args.baselines:
        by_id = {r["id"]: r for r in scored(path, questions)}
        base = [by_id[r["id"]] for r in records]
        cells = []
        for part in (None, True, False):
            mine = [r for r in records if part is None or (r["id"] in local) == part]
            theirs = [b for r, b in zip(records, base) if part is None or (r["id"] in local) == part]
            if not mine:
                cells.append("–")
                continue
            f1 = paired_f1(mine, theirs)
            lo, hi = f1["ci95"]
            cells.append(f"{points(f1['difference'])} ({points(lo)} to {points(hi)})")
        span = paired(records, base)
        print(
            f"| {path} | {cells[0]} | {points(span['difference'])} ({span['only_mode']} / {span['only_baseline']}) | "
            f"{cells[1]} | {cells[2]} |"
        )


if __name__ == "__main__":
    main()
