"""How often BM25 retrieval finds a question's own document: recall@k over a bench folder.

    python benchmarks/retrieval_recall.py ../shared/bench/covidqa --index IX [--k 1 3 5 10]

The folder holds ``docs/`` (indexed with ``crag index`` when IX does not exist
yet) and ``questions.dev.jsonl`` whose lines name their document (``doc_id``:
``docs/<doc_id>.txt``) and say whether it is local (``answer_in_local``). For
the local questions, prints the share whose document has a passage among the
top k, and the share whose top k passages hold the gold answer span (whole
words, ignoring case). Retrieval only: no model is loaded.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from crag_cli.index import BM25Index
from crag_cli.match import holds_answer


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench", type=Path)
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--k", type=int, nargs="+", default=[1, 3, 5, 10])
    args = ap.parse_args(argv)
    if not args.index.exists():
        subprocess.run(
            [sys.executable, "-m", "crag_cli", "index", str(args.bench / "docs"), "--index", str(args.index)],
            check=True,
        )
    ix = BM25Index.load(args.index)
    questions = [
        json.loads(line) for line in (args.bench / "questions.dev.jsonl").read_text().splitlines() if line.strip()
    ]
    local = [q for q in questions if q.get("answer_in_local")]
    top = max(args.k)
    doc_hit = {k: 0 for k in args.k}
    span_hit = {k: 0 for k in args.k}
    for q in local:
        hits = ix.search(q["question"], top)
        docs = [Path(h.passage.doc_id).stem for h in hits]
        for k in args.k:
            doc_hit[k] += q["doc_id"] in docs[:k]
            span_hit[k] += any(holds_answer(h.passage.text, q["answers"]) for h in hits[:k])
    print(f"{len(local)} local questions of {len(questions)}; index {args.index}")
    print("| k | document in top k | gold span in top k |\n|---|---|---|")
    for k in args.k:
        print(
            f"| {k} | {doc_hit[k] / len(local):.1%} ({doc_hit[k]}) | {span_hit[k] / len(local):.1%} ({span_hit[k]}) |"
        )


if __name__ == "__main__":
    main()
