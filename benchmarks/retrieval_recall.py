"""How often BM25 retrieval finds a question's own document and answer: recall@k over a bench folder.

    python benchmarks/retrieval_recall.py ../shared/bench/covidqa --index IX [--k 1 3 5 10]
    python benchmarks/retrieval_recall.py ../shared/bench/popqa --index IX [--questions Q.jsonl]

The folder holds ``docs/`` or ``corpus.jsonl`` (indexed with ``crag index`` when
IX does not exist yet) and ``questions.dev.jsonl`` (or ``--questions``) whose
lines say whether the answer is local (``answer_in_local``) and may name their
document (``doc_id``: ``docs/<doc_id>.txt``). For the local questions, prints
the share whose top k passages hold a gold answer (whole words, ignoring case)
and, where questions name their document, the share whose document has a
passage among the top k. Retrieval only: no model is loaded.

``--per-document`` measures small folders instead: each local question's
document is indexed alone (a folder of one article, ``IX/<doc_id>``) and the
question searched there, so the table says how well the index ranks within a
folder of a few dozen passages.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from crag_cli.index import BM25Index
from crag_cli.action.match import holds_answer
import data  # noqa: E402  (a path under benchmarks/DOMAIN/ is unpacked on demand)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench", type=data.on_demand)
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--k", type=int, nargs="+", default=[1, 3, 5, 10])
    ap.add_argument(
        "--questions", type=data.on_demand, help="a question file (default: the folder's questions.dev.jsonl)"
    )
    ap.add_argument("--hits", type=Path, help="also write every question's top passage ids here (JSONL)")
    ap.add_argument("--per-document", action="store_true", help="index each question's document alone (docs/)")
    args = ap.parse_args(argv)
    qfile = args.questions or args.bench / "questions.dev.jsonl"
    questions = [json.loads(line) for line in qfile.read_text().splitlines() if line.strip()]
    local = [q for q in questions if q.get("answer_in_local")]
    if args.per_document:
        per_document(args.bench, args.index, local, args.k, qfile)
        return
    if not args.index.exists():
        docs = args.bench / "docs" if (args.bench / "docs").is_dir() else args.bench / "corpus.jsonl"
        subprocess.run([sys.executable, "-m", "crag_cli", "index", str(docs), "--index", str(args.index)], check=True)
    ix = BM25Index.load(args.index)
    if args.hits:
        with args.hits.open("w") as f:
            for q in questions:
                ids = [h.passage.id for h in ix.search(q["question"], max(args.k))]
                f.write(json.dumps({"id": q["id"], "hits": ids}) + "\n")
    top = max(args.k)
    doc_hit = {k: 0 for k in args.k}
    span_hit = {k: 0 for k in args.k}
    for q in local:
        hits = ix.search(q["question"], top)
        docs = [Path(h.passage.doc_id).stem for h in hits]
        for k in args.k:
            doc_hit[k] += q.get("doc_id") in docs[:k]
            span_hit[k] += any(holds_answer(h.passage.text, q["answers"]) for h in hits[:k])
    named = any("doc_id" in q for q in local)
    print(f"{len(local)} local questions of {len(questions)} ({qfile}); index {args.index}")
    print("| k | gold answer in top k |" + (" document in top k |" if named else ""))
    print("|---|---|" + ("---|" if named else ""))
    for k in args.k:
        doc = f" {doc_hit[k] / len(local):.1%} ({doc_hit[k]}) |" if named else ""
        print(f"| {k} | {span_hit[k] / len(local):.1%} ({span_hit[k]}) |" + doc)


def per_document(bench: Path, index_root: Path, local: list[dict], ks: list[int], qfile: Path) -> None:
    """Recall at k of each local question within an index of its own document alone."""
    import shutil
    import tempfile

    from crag_cli.index import build_index

    hit = {k: 0 for k in ks}
    sizes = []
    by_doc: dict[str, list[dict]] = {}
    for q in local:
        by_doc.setdefault(q["doc_id"], []).append(q)
    for doc_id, asked in sorted(by_doc.items()):
        with tempfile.TemporaryDirectory() as folder:
            shutil.copy(bench / "docs" / f"{doc_id}.txt", folder)
            build_index(Path(folder), index_root / doc_id)
        ix = BM25Index.load(index_root / doc_id)
        sizes.append(len(ix.passages))
        for q in asked:
            hits = ix.search(q["question"], max(ks))
            for k in ks:
                hit[k] += any(holds_answer(h.passage.text, q["answers"]) for h in hits[:k])
    sizes.sort()
    print(f"{len(local)} local questions ({qfile}), each searched in a folder of its document alone")
    print(f"{len(sizes)} folders of {sizes[0]} to {sizes[-1]} passages (median {sizes[len(sizes) // 2]})")
    print("| k | gold answer in top k |\n|---|---|")
    for k in ks:
        print(f"| {k} | {hit[k] / len(local):.1%} ({hit[k]}) |")


if __name__ == "__main__":
    main()
