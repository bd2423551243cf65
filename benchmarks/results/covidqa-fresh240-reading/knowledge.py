"""Evaluate and act (no generation) on each question, the web stand-in served: python knowledge.py Q DATA IX KNOWLEDGE.pkl."""

import json
import sys
import pickle
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from webstandin import start_in_thread
from crag_cli import build
from crag_cli.settings import Settings

qfile, data, index, out = sys.argv[1:5]
qs = [json.loads(line) for line in open(qfile)]
srv, url = start_in_thread(Path(data) / "web.jsonl", 0)
s = Settings(index=Path(index), web="searxng", searxng_url=url, allow_private=True, cache=False)
pipe = build.pipeline(s, with_generator=False, with_web=True)
res = []
for q in qs:
    r = pipe.evaluate(q["question"])
    pipe.act(r)
    res.append((q, r))
pickle.dump(res, open(out, "wb"))
