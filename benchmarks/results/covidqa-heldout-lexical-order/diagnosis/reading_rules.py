"""Diagnosis only: what the reader would read under reading rules, for local and web-only questions (no generation).

Run at c346e9a (``cur``: the rule before lexical order) from the repository root, the index built by
``crag index ../shared/bench/covidqa/docs --index IX``:

    python benchmarks/results/covidqa-heldout-lexical-order/diagnosis/reading_rules.py SPLIT/train.jsonl OUT.jsonl IX

For an Ambiguous question: ``bm25merge700`` is the shipped rule (the kept passages and the web's strips by
their BM25 among them, within --outside-words 700), ``bm25merge850`` the same within 850 words, ``p700w4``
the passages within 700 words then 4 web strips, ``all_internal`` / ``all_external`` one source whole.
"""

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "benchmarks"))

from webstandin import start_in_thread  # noqa: E402

from crag_cli import build  # noqa: E402
from crag_cli.actions import Action  # noqa: E402
from crag_cli.match import holds_answer  # noqa: E402
from crag_cli.refine import distinct, lexical_scores, strongest_first, within_words  # noqa: E402
from crag_cli.settings import Settings  # noqa: E402


def is_web(strip) -> bool:
    return str(strip.source).startswith("http")


def summary(strips, gold) -> dict:
    return {
        "holds": any(holds_answer(x.text, gold) for x in strips),
        "words": sum(len(x.text.split()) for x in strips),
        "n": len(strips),
        "web": sum(is_web(x) for x in strips),
    }


def main() -> None:
    questions = [json.loads(line) for line in open(sys.argv[1])]
    out = open(sys.argv[2], "w")
    _, url = start_in_thread(ROOT.parent / "shared" / "bench" / "covidqa" / "web.jsonl", 0)
    settings = Settings(index=Path(sys.argv[3]), web="searxng", searxng_url=url, allow_private=True, cache=False)
    pipe = build.pipeline(settings, with_generator=False)
    pipe.web = build.web_corrector(settings, pipe.evaluator, None, pipe.thresholds)
    for q in questions:
        start, gold = time.perf_counter(), q["answers"]
        r = pipe.evaluate(q["question"])
        if r.action in (Action.CORRECT, Action.AMBIGUOUS):
            r.internal_knowledge = pipe._internal(r)
        if r.action in (Action.INCORRECT, Action.AMBIGUOUS):
            r.external_knowledge = pipe._external(r)
        cur = pipe.reader_strips(r)
        row = {
            "id": q["id"],
            "local": q["answer_in_local"],
            "action": r.action.value,
            "in_domain": r.in_domain,
            "lead": "L" if cur and not is_web(cur[0]) else "W",
            "cur": summary(cur, gold),
        }
        if r.action is Action.AMBIGUOUS:
            internal = list(r.internal_knowledge or [])
            external = strongest_first(list(r.external_knowledge.strips), pipe.ranking)
            both = distinct(internal + external)
            scores = lexical_scores(q["question"], [x.text for x in both])
            order = [both[i] for i in sorted(range(len(both)), key=lambda i: -scores[i])]
            for words in (700, 850):
                row[f"bm25merge{words}"] = summary(within_words(order, words), gold)
            first = within_words(distinct(internal), 700)
            rest = distinct(first + external)[len(first) :]
            row["p700w4"] = summary(first + within_words(rest[:4], 300), gold)
            row["all_internal"], row["all_external"] = summary(internal, gold), summary(external, gold)
        row["secs"] = round(time.perf_counter() - start, 2)
        out.write(json.dumps(row) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
