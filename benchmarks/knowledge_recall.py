"""Where correction loses the answer, without a reader: actions and knowledge recall on a bench folder.

    python benchmarks/knowledge_recall.py --data DIR [--questions FILE] [--sample N] --index IX [--evaluator SPEC]
                                          [--web] [--set SETTING=VALUE ...]

For each question, the pipeline's own steps without the reader: retrieve
(k = 10), score, decide the action, and for a Correct or Ambiguous question
refine the kept passages and keep the strips the reader would get. With
``--web``, ``DIR/web.jsonl`` is served as the web (``benchmarks/webstandin.py``,
on 127.0.0.1) and an Ambiguous or Incorrect question's web strips are fetched
and read as crag reads them; without it no question reaches the web. Prints, for local and web-only questions apart: the actions, and
how often the gold span (whole words, ignoring case) is in the top 1, 3, 5, 7 and 10
retrieved passages (what plain RAG gives the reader), in the passages the
evaluator kept (``--no-refine``; also the first 3 of them in retrieval
order), and in the refined strips that reach the reader
(``internal_knowledge`` and, with ``--web``, the web's strips: the reader's knowledge) and in the first of those
(what the reader judge reads alone), with the words and
web strips it holds on average. An Incorrect question keeps nothing local. IX
is built from ``DIR/docs`` (or ``DIR/corpus.jsonl``) when it does not exist.
``--set strips_correct=5`` (any setting, as in ``crag.toml``) measures another
refinement than the default's.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from popqa import spread_sample  # noqa: E402

from crag_cli import assemble
from crag_cli.action.trigger import Action  # noqa: E402
from crag_cli.action.match import holds_answer  # noqa: E402
from crag_cli.settings import Settings  # noqa: E402
import data  # noqa: E402  (a path under benchmarks/DOMAIN/ is unpacked on demand)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=data.on_demand, required=True)
    ap.add_argument("--questions", type=data.on_demand)
    ap.add_argument("--sample", type=int)
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--evaluator", default=None)
    ap.add_argument(
        "--web", action="store_true", help="serve DIR/web.jsonl as the web: the reader's knowledge includes it"
    )
    ap.add_argument("--set", action="append", default=[], metavar="SETTING=VALUE", help="a setting, as in crag.toml")
    args = ap.parse_args(argv)
    if not args.index.exists():
        from crag_cli.index import build_index

        docs = args.data / "docs"
        build_index(docs if docs.is_dir() else args.data / "corpus.jsonl", args.index)
    lines = [x for x in (args.questions or args.data / "questions.dev.jsonl").read_text().splitlines() if x.strip()]
    questions = [json.loads(x) for x in spread_sample(lines, args.sample)]
    from crag_cli.settings.layers import coerce

    chosen = {name: coerce(name, value, "--set") for name, _, value in (s.partition("=") for s in args.set)}
    if args.web:
        from webstandin import start_in_thread

        _, url = start_in_thread(args.data / "web.jsonl", 0)
        chosen.update(web="searxng", searxng_url=url, allow_private=True, cache=False)
    settings = Settings(index=args.index, **({"evaluator": args.evaluator} if args.evaluator else {}), **chosen)
    pipe = assemble.pipeline(settings, with_reader=False, with_web=True)  # no web stage without --web
    rows: dict[str, Counter] = {}
    for i, q in enumerate(questions, 1):
        place = "local" if q.get("answer_in_local", True) else "web-only"
        gold = q["answers"]
        result = pipe.evaluate(q["question"])
        texts = [h.passage.text for h in result.hits]
        c = rows.setdefault(place, Counter())
        c["n"] += 1
        c[result.action.value] += 1
        for k in (1, 3, 5, 7, 10):
            c[f"top{k}"] += any(holds_answer(t, gold) for t in texts[:k])
        kept = (
            [h.passage.text for h, _ in pipe._kept(result.hits, result.scores, result.action)]
            if result.action is not Action.INCORRECT
            else []
        )
        c["kept"] += any(holds_answer(t, gold) for t in kept)
        c["kept3"] += any(holds_answer(t, gold) for t in kept[:3])  # the first 3 kept, in retrieval order
        strips = pipe.reader_strips(pipe.act(result))  # without --web, the web's knowledge is empty
        c["refined"] += any(holds_answer(s.text, gold) for s in strips)
        c["first"] += bool(strips) and holds_answer(strips[0].text, gold)  # what the reader judge reads alone
        c["words"] += sum(len(s.text.split()) for s in strips)
        c["web_strips"] += sum(s.source.startswith(("http://", "https://")) for s in strips)
        if result.action is Action.CORRECT:
            c["correct_top3"] += any(holds_answer(t, gold) for t in texts[:3])
            c["correct_refined"] += any(holds_answer(s.text, gold) for s in strips)
        if i % 25 == 0:
            print(f"{i}/{len(questions)}", file=sys.stderr)
    print(
        f"{len(questions)} questions of {args.questions or args.data / 'questions.dev.jsonl'}; evaluator "
        f"{settings.evaluator}; thresholds upper {pipe.thresholds.upper:g}, lower {pipe.thresholds.lower:g}; "
        f"{' '.join(args.set) or 'default refinement'}; {'the web stand-in' if args.web else 'no web'}\n"
    )
    print(
        "| questions | n | C/A/I | span in top 1 | top 3 | top 5 | top 7 | top 10 | kept passages | first 3 kept | "
        "refined strips (reader) | the first of them | words to the reader | web strips | Correct: top 3 / refined |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    for place, c in rows.items():
        n = c["n"]
        print(
            f"| {place} | {n} | {c['correct']}/{c['ambiguous']}/{c['incorrect']} | {c['top1'] / n:.1%} | {c['top3'] / n:.1%} | "
            f"{c['top5'] / n:.1%} | {c['top7'] / n:.1%} | {c['top10'] / n:.1%} | {c['kept'] / n:.1%} | {c['kept3'] / n:.1%} | "
            f"{c['refined'] / n:.1%} | {c['first'] / n:.1%} | {c['words'] / n:.0f} | {c['web_strips'] / n:.1f} | "
            f"{c['correct_top3']}/{c['correct_refined']} of {c['correct']} |"
        )


if __name__ == "__main__":
    main()
