"""The reader as the retrieval evaluator, passage by passage: its yes/no on each of BM25's top N, and the answer.

    python benchmarks/reader_judge.py --index IX --questions FILE [--top N] --out OUT.jsonl

For each question, each of BM25's top N passages is given to the reader alone with
:data:`crag_cli.reader.prompts.JUDGE` ("Does the reference answer the question?"), all N of them (crag stops at the
first yes), and the answer is read from the first passage it says yes to, alone, with docqa's prompt, its first
sentence or the passage's sentence it was drawn from (as crag gives it). One JSON line per question: each
passage's verdict and whether it holds a gold answer, the first yes, the answer and whether it holds a gold
answer. Prints, of the answerable questions, how often the first yes holds the answer and the answer gives it,
and of the others how often no passage is judged to answer. Resumes an unfinished OUT. For choosing on
diagnosis questions only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crag_cli import assemble
from crag_cli.documents.passages import split_sentences  # noqa: E402
from crag_cli.action.match import holds_answer, quote  # noqa: E402
from crag_cli.reader.prompts import JUDGE, KnowledgeItem, build_messages, clean_answer, says_yes  # noqa: E402
from crag_cli.settings import Settings  # noqa: E402
import data  # noqa: E402  (a path under benchmarks/DOMAIN/ is unpacked on demand)


def judge(pipe, row: dict, top: int) -> dict:
    """One question's record: the reader's verdict on each of the top passages, and its answer from the first yes."""
    question, gold = row["question"], row.get("answers") or []
    items = [
        KnowledgeItem(h.passage.text, h.passage.cite, h.passage.title) for h in pipe.retriever.search(question, top)
    ]
    judges = []
    for item in items:
        reply = pipe.reader.generate(build_messages(question, [item], "docqa", JUDGE), 3).text.strip()
        judges.append(
            {"id": item.source, "holds": holds_answer(item.text, gold) if gold else None, "yes": says_yes(reply)}
        )
    first = next((i for i, j in enumerate(judges) if j["yes"]), None)
    answer = None
    if first is not None:
        reply = clean_answer(pipe.reader.generate(build_messages(question, [items[first]], "docqa"), 64).text, "docqa")
        sentence = (split_sentences(reply) or [reply])[0]
        answer = quote(sentence, [items[first].text]) or sentence
    span = holds_answer(answer or "", gold) if gold else None
    return {
        "id": row["id"],
        "answerable": bool(gold),
        "judges": judges,
        "first_yes": first,
        "answer": answer,
        "span": span,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=data.on_demand, required=True)
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    done = [json.loads(line) for line in args.out.read_text().splitlines()] if args.out.exists() else []
    pipe = assemble.pipeline(Settings(index=args.index, task="docqa"), with_reader=True)
    seen = {r["id"] for r in done}
    with args.out.open("a") as out:
        for row in rows:
            if row["id"] not in seen:
                done.append(judge(pipe, row, args.top))
                out.write(json.dumps(done[-1]) + "\n")
                out.flush()
    answerable = [r for r in done if r["answerable"]]
    others = [r for r in done if not r["answerable"]]
    first_holds = sum(r["first_yes"] is not None and r["judges"][r["first_yes"]]["holds"] for r in answerable)
    print(
        f"answerable {len(answerable)}: the first yes holds the answer {first_holds}, the answer gives it "
        f"{sum(bool(r['span']) for r in answerable)}, no yes {sum(r['first_yes'] is None for r in answerable)}"
    )
    print(f"cannot answer {len(others)}: no yes {sum(r['first_yes'] is None for r in others)}")


if __name__ == "__main__":
    main()
