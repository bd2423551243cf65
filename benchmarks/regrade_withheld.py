"""Recorded crag answers re-graded as the withholding rule would give them (docs/how-it-works.md, "Withheld").

    python benchmarks/regrade_withheld.py RECORDS.jsonl[.gz] [...] [--names] [--no-judge | --first-only]

Out of the evaluator's domain, in crag mode, not Correct and with nothing from the web (no page fetched, no
strip), an answer that :func:`crag_cli.action.match.is_grounded` says the knowledge it was read from does not state is
withheld as "Not found". Withholding sends no prompt, so applying it to a run's records gives what the rule
would have given in that run: the knowledge read is the record's ``internal_knowledge`` (the passage judged yes,
when the reader judged them), the answer its ``answer`` (or the ``reader_answer`` a withheld answer keeps, so
records made with the rule are graded again by today's rule). Prints, per file, of the answerable questions the
span found (gold alias, whole words) and token F1 before and after, and "Not found" before and after, answerable
and not. For choosing on diagnosis records only.

Two variants measured against the rule (docs/benchmarks.md, "Tried after docs3qa"): ``--names`` spares a withheld
answer when a name it quotes in backticks is in the knowledge as a phrase (a sentence answer around a stated name);
``--no-judge`` makes "Not found" every answer the reader judge read from one passage (``--no-reader-judge``);
``--first-only`` those it read from a passage after the first (records of prompt version 10 or older, whose
judge asked each passage in turn: what prompt version 11's judge of the first passage alone gives on them).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crag_cli.action.match import contains_phrase, holds_answer, is_grounded, normalise_answer, token_scores  # noqa: E402

NAME = re.compile(r"`([^`]+)`")  # a name the answer quotes (--names)


def load(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def withheld_by_rule(record: dict, names: bool = False) -> bool:
    """Whether record's answer (as the reader gave it) is withheld by today's rule (``names``: unless a name it
    quotes in backticks is in the knowledge)."""
    ext = record.get("external_knowledge") or {}
    unaided = (
        record.get("mode") == "crag"
        and record.get("action") != "correct"
        and record.get("in_domain") in (False, "False")
        and not (ext.get("strips") or ext.get("pages"))
    )
    answer = given(record)
    if not (unaided and answer):
        return False
    items = record.get("internal_knowledge") or []
    yes = {j["source"] for j in record.get("judged") or [] if j["answers"]}
    texts = [k["text"] for k in items if k["source"] in yes] or [k["text"] for k in items]
    if is_grounded(answer, texts, record["question"]):
        return False
    quoted = [normalise_answer(n) for n in NAME.findall(answer)]
    return not (names and any(n and contains_phrase(t, n) for n in quoted for t in texts))


def given(record: dict) -> str | None:
    """The reader's answer: the record's, or the one a withheld answer keeps."""
    if record.get("answer"):
        return record["answer"]
    withheld = record.get("grounded") is False and record.get("reader_answer")
    return record["reader_answer"] if withheld else None


def unjudged(record: dict, judge: bool, first_only: bool) -> bool:
    """Whether the answer the reader judge gave is no answer: with the judge off, or, ``first_only``, when it was
    read from a passage after the first."""
    judged = record.get("judged") or []
    return bool(judged) and (not judge or (first_only and not judged[0]["answers"]))


def summary(records: list[dict], names: bool = False, judge: bool = True, first_only: bool = False) -> dict:
    answerable = [r for r in records if r.get("answers")]
    other = [r for r in records if not r.get("answers")]
    before = {r["id"]: r.get("answer") or None for r in records}
    after = {
        r["id"]: None if withheld_by_rule(r, names) or unjudged(r, judge, first_only) else given(r) for r in records
    }

    def span(answers: dict) -> int:
        return sum(bool(answers[r["id"]]) and holds_answer(answers[r["id"]], r["answers"]) for r in answerable)

    def f1(answers: dict) -> float:
        scores = [token_scores(answers[r["id"]], r["answers"])[0] if answers[r["id"]] else 0.0 for r in answerable]
        return round(100 * sum(scores) / len(scores), 1) if scores else 0.0

    def not_found(answers: dict, rows: list[dict]) -> int:
        return sum(answers[r["id"]] is None for r in rows)

    return {
        "answerable": len(answerable),
        "span": [span(before), span(after)],
        "f1": [f1(before), f1(after)],
        "not_found_answerable": [not_found(before, answerable), not_found(after, answerable)],
        "cannot_answer": len(other),
        "not_found_cannot_answer": [not_found(before, other), not_found(after, other)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("records", type=Path, nargs="+")
    parser.add_argument("--names", action="store_true", help="spare an answer whose quoted name is in the knowledge")
    parser.add_argument("--no-judge", action="store_true", help="answers read by the reader judge become Not found")
    parser.add_argument("--first-only", action="store_true", help="so do those it read from a later passage")
    args = parser.parse_args()
    for path in args.records:
        print(path, json.dumps(summary(load(path), args.names, not args.no_judge, args.first_only)))


if __name__ == "__main__":
    main()
