"""Local questions: gold span in the first 1/3/5/7 of the 10 BM25 hits reordered by all-MiniLM-L6-v2 cosine (base model, no
fine-tuning; with or without the title), by the default evaluator, or either fused with the BM25 order (RRF, 60): python dense.py KNOWLEDGE.pkl."""

import sys
import pickle
import numpy as np
from crag_cli.match import holds_answer
from crag_cli.evaluator.cosine import MiniLMEvaluator

res = pickle.load(open(sys.argv[1], "rb"))
ev = MiniLMEvaluator()
ev.load()


def rrf(*ranks):
    return sum(1 / (60 + r) for r in ranks)


stats = {}
for q, r in res:
    if not q["answer_in_local"]:
        continue
    texts = [h.passage.text for h in r.hits]
    titles = [h.passage.title for h in r.hits]
    e = ev.embed([q["question"]] + texts)
    cos = e[1:] @ e[0]
    et = ev.embed([f"{t}. {x}" for t, x in zip(titles, texts)])
    cos_t = et @ e[0]
    n = len(texts)
    bm = list(range(n))

    def rk(s):
        return np.argsort(np.argsort(-np.asarray(s)))

    orders = {
        "bm25": bm,
        "cos": list(np.argsort(-cos)),
        "rrf": sorted(bm, key=lambda i: -rrf(i, rk(cos)[i])),
        "cos_t": list(np.argsort(-cos_t)),
        "rrf_t": sorted(bm, key=lambda i: -rrf(i, rk(cos_t)[i])),
        "eval": list(np.argsort(-np.asarray(r.scores))),
        "rrf_eval": sorted(bm, key=lambda i: -rrf(i, rk(r.scores)[i])),
    }
    held = [holds_answer(t, q["answers"]) for t in texts]
    for name, o in orders.items():
        for k in (1, 3, 5, 7):
            stats.setdefault(name, {}).setdefault(k, 0)
            stats[name][k] += any(held[i] for i in o[:k])
for name, d in stats.items():
    print(name, d)
