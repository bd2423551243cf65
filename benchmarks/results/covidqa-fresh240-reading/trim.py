"""Reader knowledge with the kept passages cut to their sentences holding a question word (0 or 1 sentence of context),
against the shipped rule, at several --outside-words budgets: python trim.py KNOWLEDGE.pkl IX (no generation)."""

import sys
import pickle
import copy
import statistics as st
from crag_cli import build
from crag_cli.corpus import split_sentences
from crag_cli.index import TokenizerSettings
from crag_cli.match import holds_answer
from crag_cli.settings import Settings
from crag_cli.refine import Strip
from pathlib import Path

res = pickle.load(open(sys.argv[1], "rb"))
s = Settings(index=Path(sys.argv[2]), web="none")
pipe = build.pipeline(s, with_generator=False)
tok = TokenizerSettings()


def trim(text, qt, ctx):
    sents = split_sentences(text)
    toks = tok.tokenize(sents)
    keep = set()
    for i, t in enumerate(toks):
        if qt & set(t):
            keep.update(range(max(0, i - ctx), min(len(sents), i + ctx + 1)))
    return " ".join(sents[i] for i in sorted(keep))


def variant(r, ctx, W):
    r = copy.copy(r)
    if ctx is not None and r.internal_knowledge:
        qt = set(tok.tokenize([r.question])[0])
        r.internal_knowledge = [
            Strip(t, x.source, x.title, x.position, x.score, x.rank)
            for x in r.internal_knowledge
            if (t := trim(x.text, qt, ctx))
        ]
    pipe.outside_words = W
    return pipe.reader_strips(r)


rows = {}
changed = 0
for q, r in res:
    outside = pipe._outside(r) and r.action.name == "AMBIGUOUS"
    for name, (ctx, W) in {
        "ship700": (None, 700),
        "w500": (None, 500),
        "t0-700": (0, 700),
        "t0-500": (0, 500),
        "t0-400": (0, 400),
        "t0-300": (0, 300),
        "t1-500": (1, 500),
        "t1-400": (1, 400),
    }.items():
        strips = variant(r, ctx, W)
        rows.setdefault(name, []).append(
            (
                outside,
                q["answer_in_local"],
                any(holds_answer(x.text, q["answers"]) for x in strips),
                sum(len(x.text.split()) for x in strips),
            )
        )
for name, v in rows.items():
    o = [x for x in v if x[0]]
    print(
        f"{name:8s} all: held {sum(x[2] for x in v):3d}/{len(v)} words {st.mean(x[3] for x in v):6.1f} | outside-ambig {len(o)}: held {sum(x[2] for x in o)} words {st.mean(x[3] for x in o):6.1f}"
    )
