"""Scratch: retrieval recall of IDF rules over one index's term counts (diagnosis split only)."""

import json
import sys
import numpy as np
import crag_cli.bm25 as bm25
from crag_cli.index import BM25Index
from crag_cli.match import holds_answer

RULES = {
    "robertson-floor0": lambda df, n: np.log(np.maximum((n - df.astype(np.float64) + 0.5) / (df + 0.5), 1.0)),
    "lucene": lambda df, n: np.log1p((n - df.astype(np.float64) + 0.5) / (df + 0.5)),
    "robertson-floor-1e-3": lambda df, n: np.maximum(np.log((n - df.astype(np.float64) + 0.5) / (df + 0.5)), 1e-3),
}
index_dir, qfile = sys.argv[1], sys.argv[2]
ks = [1, 3, 5, 10]
ix = BM25Index.load(index_dir)
counts = ix.terms.counts()
qs = [json.loads(line) for line in open(qfile) if line.strip()]
local = [q for q in qs if q.get("answer_in_local")]
orig = bm25.idf
for name, rule in RULES.items():
    bm25.idf = rule
    ix.terms = bm25.TermMatrix.from_counts(counts, ix.terms.vocab)
    hit = {k: 0 for k in ks}
    doc = {k: 0 for k in ks}
    for q in local:
        hits = ix.search(q["question"], 10)
        for k in ks:
            hit[k] += any(holds_answer(h.passage.text, q["answers"]) for h in hits[:k])
            doc[k] += q.get("doc_id") is not None and q["doc_id"] in [
                h.passage.doc_id.rsplit(".", 1)[0] for h in hits[:k]
            ]
    print(f"{name:22s} n={len(local)} answer@1,3,5,10: {[hit[k] for k in ks]} doc: {[doc[k] for k in ks]}")
