"""What the reader gets, in which order: kept passages in retrieval order or fused, and the web's strips by ranking.

    python benchmarks/reading_order.py --data DIR --questions FILE --index IX [--sample N] [--cache FILE]

No reader: the web search query is the question's content words (``--rewrite
words``), on the bench folder's web stand-in (``benchmarks/webstandin.py``).

Table 1. For each question: retrieve, score and decide with crag's defaults,
keep the passages, and, when the action reaches the web, search, fetch and
refine the pages as ``crag`` does. Then what the reader would read, two
ways: the kept passages in retrieval order (crag since issue 31's last change)
or ranked by the fused ranking (before). Per local and web-only question: how
often that knowledge holds the gold span (whole words), and how often its
first item does.

Table 2. For every web-only question: the fetched pages' strips, the best 10,
20 or 40 of them by BM25 within the pages scored by the evaluator
(``--strips-scored``), and how often the first 1, 3 and 5 of them hold the
span when ordered by BM25 alone, by the evaluator's score alone, or fused (what
crag does). ``--cache FILE`` keeps the evaluator's scores (a pickle).
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ranking_variants import Memo, diagnosis_questions  # noqa: E402
from webstandin import start_in_thread  # noqa: E402

from crag_cli import assemble
from crag_cli.action.trigger import Action  # noqa: E402
from crag_cli.action.match import holds_answer  # noqa: E402
from crag_cli.action.refine import fuse_ranks, lexical_scores, strip_pieces, strongest_first  # noqa: E402
from crag_cli.settings import Settings  # noqa: E402
from crag_cli.web.rewrite import keyword_query  # noqa: E402
from crag_cli.web.stage import page_sources  # noqa: E402

SCORED = (10, 20, 40)
ORDERS = ("bm25", "evaluator", "fused")


def reader_knowledge(pipe, result, passage_order: str) -> list:
    """The strips the reader would read, the kept passages in retrieval order or fused first."""
    if passage_order == "fused":
        result = replace(result, internal_knowledge=strongest_first(list(result.internal_knowledge or []), "fused"))
    return pipe.reader_strips(result)


def web_strip_hits(pipe, web, question: str, gold: list[str]) -> dict[tuple[int, str], list[bool]]:
    """For each (strips scored, ordering): whether each of the first 5 strips holds the span."""
    sources, _ = page_sources(web._fetch([r.url for r in web._search(keyword_query(question))]))
    pieces = [text for text, _, _ in strip_pieces(sources, pipe.settings.strip_mode)]
    if not pieces:
        return {}
    lexical = lexical_scores(question, pieces)
    by_lexical = sorted(range(len(pieces)), key=lambda i: -lexical[i])[: max(SCORED)]
    scores = pipe._scorer.score([(question, pieces[i]) for i in by_lexical])
    holds = [holds_answer(pieces[i], gold) for i in by_lexical]
    out = {}
    for n in SCORED:
        idx = list(range(min(n, len(by_lexical))))
        fused = fuse_ranks([scores[i] for i in idx], idx)
        orders = {
            "bm25": idx,
            "evaluator": sorted(idx, key=lambda i: -scores[i]),
            "fused": sorted(idx, key=lambda i: -fused[i]),
        }
        for name, order in orders.items():
            out[(n, name)] = [holds[i] for i in order[:5]]
    return out


def main(argv: list[str] | None = None) -> None:
    args, qfile, questions = diagnosis_questions(__doc__.splitlines()[0], argv)
    server, url = start_in_thread(args.data / "web.jsonl")
    try:
        settings = Settings(index=args.index, web="searxng", searxng_url=url, allow_private=True, cache=False)
        pipe = assemble.pipeline(settings, with_reader=False)
        memo = Memo(pipe.evaluator, args.cache)
        pipe._scorer.evaluator = memo
        pipe.web = assemble.web_corrector(settings, memo, None, pipe.thresholds)
        reading: dict[tuple[str, str], Counter] = {}
        strips: dict[tuple[int, str], Counter] = {}
        web_only = 0
        for i, q in enumerate(questions, 1):
            place = "local" if q.get("answer_in_local", True) else "web-only"
            gold = q["answers"]
            r = pipe.evaluate(q["question"])
            if r.action is not Action.INCORRECT:
                r.internal_knowledge = pipe._internal(r)
            if r.action is not Action.CORRECT:
                r.external_knowledge = pipe.web.run(q["question"], {})
            for order in ("retrieval", "fused"):
                got = reader_knowledge(pipe, r, order)
                c = reading.setdefault((place, order), Counter())
                c["n"] += 1
                c[r.action.value] += 1
                c["holds"] += any(holds_answer(s.text, gold) for s in got)
                c["first"] += bool(got) and holds_answer(got[0].text, gold)
                c["words"] += sum(len(s.text.split()) for s in got)
            if place == "web-only":
                web_only += 1
                for key, hits in web_strip_hits(pipe, pipe.web, q["question"], gold).items():
                    for k in (1, 3, 5):
                        strips.setdefault(key, Counter())[k] += any(hits[:k])
            if i % 25 == 0:
                memo.save()
                print(f"{i}/{len(questions)}", file=sys.stderr)
        memo.save()
    finally:
        server.shutdown()
    print(f"{len(questions)} questions of {qfile}; evaluator {memo.name}\n")
    print("| questions | kept passages | C/A/I | knowledge holds span | first item holds it | words |")
    print("|---|---|---|---|---|---|")
    for (place, order), c in sorted(reading.items(), key=lambda kv: kv[0][0]):
        n = c["n"]
        print(
            f"| {place} ({n}) | {order} | {c['correct']}/{c['ambiguous']}/{c['incorrect']} | {c['holds']} | "
            f"{c['first']} | {c['words'] / n:.0f} |"
        )
    print(f"\nWeb-only questions ({web_only}): the web's strips holding the span among the first 1 / 3 / 5\n")
    print("| strips scored | " + " | ".join(ORDERS) + " |")
    print("|---|" + "---|" * len(ORDERS))
    for n in SCORED:
        cells = [" / ".join(str(strips.get((n, o), Counter())[k]) for k in (1, 3, 5)) for o in ORDERS]
        print(f"| {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
