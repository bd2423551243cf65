"""Summarise reading_rules.py's rows: python summarise.py reading-rules-train304.jsonl"""

import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1])]
for local in (True, False):
    a = [r for r in rows if r["local"] == local and r["action"] == "ambiguous" and r["in_domain"] is False]
    print(
        "local" if local else "web-only",
        "Ambiguous out of the domain",
        len(a),
        "of",
        sum(r["local"] == local for r in rows),
    )
    for v in ("cur", "bm25merge700", "bm25merge850", "p700w4", "all_internal", "all_external"):
        holds, words, web = (sum(r[v][k] for r in a) for k in ("holds", "words", "web"))
        print(f"  {v:14s} holds {holds:4d}  words {words / len(a):6.0f}  web strips {web / len(a):.1f}")
