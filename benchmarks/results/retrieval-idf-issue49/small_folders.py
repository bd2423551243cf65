"""Scratch: one-article folders (COVID-QA diagnosis questions): answer@k per IDF rule over that article alone."""

import json
import sys
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path
import numpy as np
import crag_cli.bm25 as bm25
from crag_cli.index import BM25Index, build_index
from crag_cli.match import holds_answer

sys.path.insert(0, ".")
from idf_variants_rules import RULES

bench, qfile = Path(sys.argv[1]), sys.argv[2]
ks = [1, 3, 5]
qs = [json.loads(line) for line in open(qfile) if line.strip()]
by_doc = defaultdict(list)
for q in qs:
    if q.get("answer_in_local"):
        by_doc[q["doc_id"]].append(q)
tot = {name: {k: 0 for k in ks} for name in RULES}
n = 0
sizes = []
tmp = Path(tempfile.mkdtemp())
for doc_id, dq in sorted(by_doc.items()):
    d = tmp / doc_id
    d.mkdir()
    shutil.copy(bench / "docs" / f"{doc_id}.txt", d / f"{doc_id}.txt")
    bm25.idf = RULES["lucene"]
    build_index(d, tmp / f"{doc_id}.ix")
    ix = BM25Index.load(tmp / f"{doc_id}.ix")
    counts = ix.terms.counts()
    sizes.append(len(ix.passages))
    for name, rule in RULES.items():
        bm25.idf = rule
        ix.terms = bm25.TermMatrix.from_counts(counts, ix.terms.vocab)
        for q in dq:
            hits = ix.search(q["question"], 5)
            for k in ks:
                tot[name][k] += any(holds_answer(h.passage.text, q["answers"]) for h in hits[:k])
    n += len(dq)
print(
    f"{len(by_doc)} one-article folders ({min(sizes)}-{max(sizes)} passages, median {int(np.median(sizes))}), {n} questions"
)
for name in RULES:
    print(f"{name:22s} answer@1,3,5: {[tot[name][k] for k in ks]}")
