"""Knowledge recall of refinement variants side by side, each (question, text) pair scored once.

    python benchmarks/ranking_variants.py --data DIR --questions FILE --index IX [--sample N] [--cache FILE]

For each question: retrieve (k = 10), score, decide the action, refine as each
variant would, and keep the strips the reader would get (no reader, no
web). Variants: crag before issue 31 (excerption strips of the passages scoring
at least the lower threshold, ``--ranking evaluator``, no word bound); issue
31's first change (``--ranking fused``, ``--knowledge-words 300``); for the
record, that change over every retrieved passage; whole passages over the
filter threshold for every action (commit 999daa2); cdd39b3's rule (whole
passages, those over the lower threshold when Correct and over the filter
threshold when Ambiguous, fused, 300 words); and crag now (the defaults: lexical
support turns Incorrect into Ambiguous and keeps supported passages for Correct;
without the web here, an Ambiguous question's passages get the whole budget,
where a real run takes them in turn with the web's strips).
Prints per local and web-only questions: the actions, how often the gold span
(whole words) is in the top 3 passages (what plain RAG with k = 3 reads) and
in what the reader gets, the words it gets, and the same for the Correct and
the Ambiguous questions. ``--cache FILE`` keeps the evaluator's scores (a
pickle) so that a second run scores nothing again.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
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

# name -> (settings, which retrieved passages refinement reads: those scoring at least "lower", at least
# "filter", "all", or None: crag's own rule, Pipeline._kept)
OFF = {"lexical_support": 1.0}  # the variants before lexical support (0d3917b)
VARIANTS = {
    "before (strips, ranking evaluator, no word bound)": (
        {"refine": True, "ranking": "evaluator", "knowledge_words": 100000, **OFF},
        "lower",
    ),
    "issue 31 first (strips, ranking fused, 300 words)": ({"refine": True, **OFF}, "lower"),
    "strips fused over every retrieved passage (not shipped)": ({"refine": True, **OFF}, "all"),
    "passages whole, at least filter for every action (999daa2)": (OFF, "filter"),
    "cdd39b3 (passages whole; Correct: at least lower, else filter)": (OFF, None),
    "now (lexical support 0.5; passages only, the web's strips not shown)": ({}, None),
}
KEPT = {
    "lower": lambda pipe: (
        lambda hits, scores, action: [(h, s) for h, s in zip(hits, scores) if s >= pipe.thresholds.lower]
    ),
    "filter": lambda pipe: (
        lambda hits, scores, action: [(h, s) for h, s in zip(hits, scores) if s >= pipe.thresholds.filter]
    ),
    "all": lambda pipe: lambda hits, scores, action: list(zip(hits, scores)),
}


class Memo:
    """The evaluator with its scores remembered (and kept in ``path`` when given)."""

    def __init__(self, evaluator, path: Path | None) -> None:
        self.evaluator, self.path, self.name = evaluator, path, evaluator.name
        self.scores = pickle.loads(path.read_bytes()) if path and path.exists() else {}

    def score(self, pairs):
        missing = [p for p in pairs if p not in self.scores]
        if missing:
            self.scores.update(zip(missing, self.evaluator.score(missing)))
        return [self.scores[p] for p in pairs]

    def save(self) -> None:
        if self.path:
            tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
            tmp.write_bytes(pickle.dumps(self.scores))
            os.replace(tmp, self.path)


def diagnosis_questions(description: str, argv: list[str] | None) -> tuple[argparse.Namespace, Path, list[dict]]:
    """The diagnosis scripts' command line (``--data --questions --index --sample --cache``) and their questions."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--data", type=data.on_demand, required=True)
    ap.add_argument("--questions", type=data.on_demand)
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--sample", type=int)
    ap.add_argument("--cache", type=Path)
    args = ap.parse_args(argv)
    qfile = args.questions or args.data / "questions.dev.jsonl"
    lines = [x for x in qfile.read_text().splitlines() if x.strip()]
    return args, qfile, [json.loads(x) for x in spread_sample(lines, args.sample)]


def main(argv: list[str] | None = None) -> None:
    args, qfile, questions = diagnosis_questions(__doc__.splitlines()[0], argv)
    pipes = {
        name: assemble.pipeline(Settings(index=args.index, **kw), with_reader=False)
        for name, (kw, _) in VARIANTS.items()
    }
    memo = Memo(next(iter(pipes.values())).evaluator, args.cache)
    for name, pipe in pipes.items():
        pipe._scorer.evaluator = memo
        rule = VARIANTS[name][1]
        if rule in KEPT:
            pipe._kept = KEPT[rule](pipe)
    rows: dict[tuple[str, str], Counter] = {}
    for i, q in enumerate(questions, 1):
        place = "local" if q.get("answer_in_local", True) else "web-only"
        gold = q["answers"]
        for name, pipe in pipes.items():
            r = pipe.evaluate(q["question"])
            c = rows.setdefault((place, name), Counter())
            c["n"] += 1
            c[r.action.value] += 1
            top3 = any(holds_answer(h.passage.text, gold) for h in r.hits[:3])
            strips = []
            if r.action is not Action.INCORRECT:
                r.internal_knowledge = pipe._internal(r)
                strips = pipe.reader_strips(r)
            got = any(holds_answer(s.text, gold) for s in strips)
            c["top3"] += top3
            c["reader"] += got
            c["words"] += sum(len(s.text.split()) for s in strips)
            for action in (Action.CORRECT, Action.AMBIGUOUS):
                if r.action is action:
                    c[f"{action.value}_top3"] += top3
                    c[f"{action.value}_reader"] += got
        if i % 50 == 0:
            memo.save()
            print(f"{i}/{len(questions)}", file=sys.stderr)
    memo.save()
    print(f"{len(questions)} questions of {qfile}; evaluator {memo.name}\n")
    print(
        "| questions | variant | C/A/I | top 3 | reader | words | Correct: top 3 / reader | Ambiguous: top 3 / reader |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for (place, name), c in sorted(rows.items(), key=lambda kv: kv[0][0]):
        n = c["n"]
        print(
            f"| {place} | {name} | {c['correct']}/{c['ambiguous']}/{c['incorrect']} | {c['top3'] / n:.1%} | "
            f"{c['reader'] / n:.1%} | {c['words'] / n:.0f} | {c['correct_top3']}/{c['correct_reader']} | "
            f"{c['ambiguous_top3']}/{c['ambiguous_reader']} |"
        )


if __name__ == "__main__":
    main()
