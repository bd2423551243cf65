"""What lexical support does to the actions, without the reader or the web.

    python benchmarks/lexical_support.py --data DIR --questions FILE --index IX [--sample N] [--cache FILE]

For each question: retrieve (k = 10), score with the default evaluator, and
decide the action twice: by the evaluator alone (the paper's rule,
``--lexical-support 1``) and with crag's default lexical support. Prints, for
local and web-only questions: how many, the median best support of their
passages, how many the evaluator alone judges Incorrect (and for how many of
those the top 3 passages hold the gold span, whole words), and how many stay
Incorrect with lexical support. ``--cache FILE`` keeps the evaluator's scores
(``ranking_variants.Memo``).
"""

from __future__ import annotations

import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ranking_variants import Memo, diagnosis_questions  # noqa: E402

from crag_cli import assemble
from crag_cli.action.trigger import Action, decide  # noqa: E402
from crag_cli.action.match import holds_answer  # noqa: E402
from crag_cli.settings import Settings  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    args, qfile, questions = diagnosis_questions(__doc__.splitlines()[0], argv)
    pipe = assemble.pipeline(Settings(index=args.index), with_reader=False)
    memo = Memo(pipe.evaluator, args.cache)
    pipe._scorer.evaluator = memo
    th = pipe.thresholds
    rows: dict[str, Counter] = {}
    best: dict[str, list[float]] = {}
    for i, q in enumerate(questions, 1):
        place = "local" if q.get("answer_in_local", True) else "web-only"
        r = pipe.evaluate(q["question"])
        c = rows.setdefault(place, Counter())
        c["n"] += 1
        best.setdefault(place, []).append(max((h.support or 0.0 for h in r.hits), default=0.0))
        alone = decide(r.scores, th.upper, th.lower)
        if alone is Action.INCORRECT:
            c["incorrect alone"] += 1
            c["of those, top 3 hold the span"] += any(
                holds_answer(h.passage.text, q.get("answers") or []) for h in r.hits[:3]
            )
            c["incorrect with support"] += r.action is Action.INCORRECT
        if i % 50 == 0:
            memo.save()
            print(f"{i}/{len(questions)}", file=sys.stderr)
    memo.save()
    print(
        f"{len(questions)} questions of {qfile}; evaluator {memo.name}; lexical support {pipe.settings.lexical_support}\n"
    )
    print("| questions | n | median best support | Incorrect, evaluator alone | top 3 hold the span | Incorrect now |")
    print("|---|---|---|---|---|---|")
    for place, c in rows.items():
        print(
            f"| {place} | {c['n']} | {statistics.median(best[place]):.2f} | {c['incorrect alone']} | "
            f"{c['of those, top 3 hold the span']} | {c['incorrect with support']} |"
        )


if __name__ == "__main__":
    main()
