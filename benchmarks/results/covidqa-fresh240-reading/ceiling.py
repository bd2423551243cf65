"""Gold span held by plain RAG k = 3/5/10 passages and by crag's reader knowledge, local and web-only: python ceiling.py KNOWLEDGE.pkl IX."""

import sys
import pickle
import statistics as st
from crag_cli import build
from crag_cli.match import holds_answer
from crag_cli.settings import Settings
from pathlib import Path

res = pickle.load(open(sys.argv[1], "rb"))
pipe = build.pipeline(Settings(index=Path(sys.argv[2]), web="none"), with_generator=False)


def held(texts, sub):
    """Questions with the span in one of their texts (a span across two texts does not count: the prompt numbers them)."""
    return sum(any(holds_answer(x, q["answers"]) for x in xs) for xs, (q, _) in zip(texts, sub))


def words(texts):
    return st.mean(sum(len(x.split()) for x in xs) for xs in texts)


for place in (True, False):
    sub = [(q, r) for q, r in res if q["answer_in_local"] == place]
    out = [f"{'local' if place else 'web-only'} n={len(sub)}"]
    for k in (3, 5, 10):
        t = [[h.passage.text for h in r.hits[:k]] for q, r in sub]
        out.append(f"k{k}: held {held(t, sub)} words {words(t):.0f}")
    t = [[s.text for s in pipe.reader_strips(r)] for q, r in sub]
    out.append(f"crag: held {held(t, sub)} words {words(t):.0f}")
    print(" | ".join(out))
