"""The reader knowledge grid: --outside-words 700/600/500 and 2/1/0 web strips (--strips 5/4/3): python grid.py KNOWLEDGE.pkl IX."""

import sys
import pickle
import statistics as st
from crag_cli import build
from crag_cli.match import holds_answer
from crag_cli.settings import Settings
from crag_cli.actions import Action
from pathlib import Path

res = pickle.load(open(sys.argv[1], "rb"))
pipe = build.pipeline(Settings(index=Path(sys.argv[2]), web="none"), with_generator=False)
for W in (700, 600, 500):
    for strips in (5, 4, 3):
        pipe.outside_words = W
        pipe.strips = strips
        rows = []
        for q, r in res:
            if not (pipe._outside(r) and r.action is Action.AMBIGUOUS):
                continue
            x = pipe.reader_strips(r)
            rows.append(
                (
                    q["answer_in_local"],
                    any(holds_answer(s.text, q["answers"]) for s in x),
                    sum(len(s.text.split()) for s in x),
                )
            )
        loc = [x for x in rows if x[0]]
        web = [x for x in rows if not x[0]]
        print(
            W,
            strips - 3,
            "web strips: held",
            sum(x[1] for x in rows),
            "local",
            sum(x[1] for x in loc),
            "/",
            len(loc),
            "web",
            sum(x[1] for x in web),
            "/",
            len(web),
            "words",
            round(st.mean(x[2] for x in rows)),
        )
