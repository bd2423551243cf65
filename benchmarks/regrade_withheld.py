"""Recorded crag answers re-graded as the withholding rule would give them (docs/how-it-works.md, "Withheld").

    python benchmarks/regrade_withheld.py RECORDS.jsonl[.gz] [...]

Out of the evaluator's domain, in crag mode, not Correct and with nothing from the web (no page fetched, no
strip), an answer that :func:`crag_cli.match.is_grounded` says the knowledge it was read from does not state is
withheld as "Not found". Withholding sends no prompt, so applying it to a run's records gives what the rule
would have given in that run: the knowledge read is the record's ``internal_knowledge`` (the passage judged yes,
when the reader judged them), the answer its ``answer`` (or the ``reader_answer`` a withheld answer keeps, so
records made with the rule are graded again by today's rule). Prints, per file, of the answerable questions the
span found (gold alias, whole words) and token F1 before and after, and "Not found" before and after, answerable
and not. For choosing on diagnosis records only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crag_cli.match import holds_answer, is_grounded, token_scores  # noqa: E402


def load(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def withheld_by_rule(record: dict) -> bool:
    """Whether record's answer (as the reader gave it) is withheld by today's rule."""
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
    return not is_grounded(answer, texts, record["question"])


def given(record: dict) -> str | None:
    """The reader's answer: the record's, or the one a withheld answer keeps."""
    if record.get("answer"):
        return record["answer"]
    withheld = record.get("grounded") is False and record.get("reader_answer")
    return record["reader_answer"] if withheld else None


def summary(records: list[dict]) -> dict:
    answerable = [r for r in records if r.get("answers")]
    other = [r for r in records if not r.get("answers")]
    before = {r["id"]: r.get("answer") or None for r in records}
    after = {r["id"]: None if withheld_by_rule(r) else given(r) for r in records}

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
    for path in parser.parse_args().records:
        print(path, json.dumps(summary(load(path))))


if __name__ == "__main__":
    main()
