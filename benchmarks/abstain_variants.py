"""Ways for the reader to say "not in the reference", side by side, on the same knowledge.

    python benchmarks/abstain_variants.py --index IX --questions FILE [--mode crag|rag] [--top-k K] --out OUT.jsonl

Each question is answered once by the pipeline with ``docqa``'s prompt, unchecked (crag with the web off, or
plain RAG): its answer, whether that answer is grounded in the knowledge read, whether the knowledge holds a
gold answer. Then, over the same knowledge, the reader is asked again with each instruction of :data:`VARIANTS`
(which let it answer "Not in the reference." itself) in place of docqa's, and with docqa's check
(:data:`crag_cli.reader.prompts.CHECK`, a yes/no question on whether the reference states the answer: ``check-no`` is
what crag ships). The prompts share everything up to the instruction, so llama.cpp reuses the cached prefix and each costs
little more than its reply. Writes one JSON line per question; prints, per way, the answerable and unanswerable
questions it would answer "Not found". For choosing on diagnosis questions only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crag_cli import assemble
from crag_cli.reader import prompts
from crag_cli.action.match import holds_answer  # noqa: E402
from crag_cli.reader.prompts import CHECK, clean_answer  # noqa: E402
from crag_cli.settings import Settings  # noqa: E402
import data  # noqa: E402  (a path under benchmarks/DOMAIN/ is unpacked on demand)

NOT_IN = "Not in the reference."
VARIANTS = {
    "holds": f"If the reference does not hold the answer, answer only: {NOT_IN}",
    "nothing": f"Only if nothing in the reference answers the question, even in other words, answer: {NOT_IN}",
    "unrelated": f"If the reference is about something else entirely, answer only: {NOT_IN}",
}


def abstains(reply: str) -> bool:
    """Whether ``reply``'s first sentence is :data:`NOT_IN` (ignoring case and punctuation)."""
    first = re.split(r"[.!?\n]", reply.strip(), maxsplit=1)[0]
    return bool(first) and re.findall(r"\w+", first.lower()) == re.findall(r"\w+", NOT_IN.lower())


def ask(pipe, question: str, knowledge, instruction: str, max_tokens: int) -> str:
    """The reader's reply to ``question`` over ``knowledge`` with ``instruction`` as the prompt's last line."""
    messages = prompts.build_messages(question, knowledge, "docqa")
    user = messages[-1]["content"]
    messages[-1]["content"] = user[: user.rindex("\n") + 1] + instruction
    return clean_answer(pipe.reader.generate(messages, max_tokens).text, "docqa")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=data.on_demand, required=True)
    parser.add_argument("--mode", default="crag", choices=("crag", "rag"))
    parser.add_argument("--top-k", type=int, default=None)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    settings = Settings(index=args.index, task="docqa", **({"top_k": args.top_k} if args.top_k else {}))
    pipe = assemble.pipeline(settings, with_reader=True)
    shipped = prompts.TASKS["docqa"]
    prompts.TASKS["docqa"] = prompts.Task(**{**shipped.__dict__, "check": None})  # the first answer: unchecked
    ways = ["ungrounded", *VARIANTS, "check-no", "check-no+ungrounded"]
    counts = {w: {"ans": 0, "ans_nf": 0, "unans": 0, "unans_nf": 0} for w in ways}
    with args.out.open("w") as out:
        for row in rows:
            gold = row.get("answers") or []
            result = pipe.run(row["question"], mode=args.mode)
            knowledge = result.knowledge_used
            rec = {
                "id": row["id"],
                "answerable": bool(gold),
                "answer": result.answer,
                "grounded": result.grounded,
                "holds": any(holds_answer(k.text, gold) for k in knowledge) if gold else None,
                "span": holds_answer(result.answer or "", gold) if gold else None,
                "prompt_tokens": result.prompt_tokens,
            }
            if knowledge:
                rec["replies"] = {
                    name: ask(pipe, row["question"], knowledge, f"{shipped.instruction} {text}", 64)
                    for name, text in VARIANTS.items()
                }
                rec["replies"]["check"] = ask(pipe, row["question"], knowledge, CHECK, 4)
            replies = rec.get("replies", {})
            says = {
                "ungrounded": result.grounded is False,
                **{name: abstains(replies.get(name) or "") for name in VARIANTS},
                "check-no": shipped.declines(replies.get("check") or ""),
            }
            says["check-no+ungrounded"] = says["check-no"] and says["ungrounded"]
            rec["abstains"] = says
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print(json.dumps(rec), file=sys.stderr)
            for w in ways:
                c = counts[w]
                kind = "ans" if gold else "unans"
                c[kind] += 1
                c[kind + "_nf"] += bool(says[w])
    prompts.TASKS["docqa"] = shipped
    for w, c in counts.items():
        print(
            f"{w}: answerable Not found {c['ans_nf']} / {c['ans']}; unanswerable Not found {c['unans_nf']} / {c['unans']}"
        )


if __name__ == "__main__":
    main()
