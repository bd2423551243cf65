"""Questions of the docs folders' kind: the local reader writes a user's question about a passage, and its answer.

    python benchmarks/generate_questions.py INDEX --out GEN.jsonl --passages N [--seed S]

INDEX: ``crag index`` over a docs folder no scored set uses. Each of ``--passages`` prose passages (seeded, the
files in turn) is shown to the reader, which picks an answer in it, then asks for it as a user would; the rules
of what is kept: :func:`parse`, :func:`common`. Rows for ``squad_pairs.py --articles 0 --also GEN.jsonl,INDEX,gen``.
Resumable. Why and what it gave: docs/default-evaluator.md.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from paraphrase_questions import local_reader  # noqa: E402

from crag_cli.action.match import contains_phrase, normalise_answer  # noqa: E402

PROMPT = (
    "Below is a passage from a software library's documentation. First pick the answer: one to six words copied "
    "exactly from the passage, such as a function, an option, a setting or a value. Then write the question a user "
    "of the library would ask, in their own words and without having read the passage, that this answers. Reply "
    "in exactly two lines, 'Answer: ' and those words, then 'Question: ' and your question.\n\nPassage: {text}"
)


def prose(text: str) -> bool:
    """At least 40 words, at most 40% of them not words (code, markup)."""
    tokens = text.split()
    words = sum(bool(re.fullmatch(r"[A-Za-z][a-z'-]*[.,;:]?", t)) for t in tokens)
    return len(tokens) >= 40 and words >= 0.6 * len(tokens)


def spread(passages: list[dict], n: int, seed: int) -> list[dict]:
    """``n`` prose passages, seeded, the files in turn."""
    rng = random.Random(seed)
    by_doc: dict[str, list[dict]] = {}
    for p in passages:
        if prose(p["text"]):
            by_doc.setdefault(p["doc_id"], []).append(p)
    queues = [rng.sample(ps, len(ps)) for _, ps in sorted(by_doc.items())]
    out: list[dict] = []
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop())
    return out


def parse(reply: str, passage: str) -> tuple[str, str] | None:
    """The reader's ``reply`` as (question, answer), or ``None`` when it must be dropped."""
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    if len(lines) != 2 or not lines[0].startswith("Answer:") or not lines[1].startswith("Question:"):
        return None
    answer = normalise_answer(lines[0].removeprefix("Answer:"))
    question = lines[1].removeprefix("Question:").strip()
    if not question.endswith("?") or not 1 <= len(answer.split()) <= 6 or not re.search("[A-Za-z]", answer):
        return None
    if not contains_phrase(passage, answer) or contains_phrase(question, answer):
        return None
    return question, answer


def common(answer: str, texts: list[str], share: float = 0.01) -> bool:
    """Whether ``answer`` is in over ``share`` of the ``texts`` as whole words ("pytest", "run": positives everywhere)."""
    return sum(contains_phrase(text, answer) for text in texts) > share * len(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("index", type=Path, help="crag index over a docs folder that no scored set uses")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--passages", type=int, required=True, help="passages shown to the reader")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with open(args.index / "passages.jsonl") as f:
        passages = [json.loads(line) for line in f]
    chosen = spread(passages, args.passages, args.seed)
    texts = [p["text"] for p in passages]
    rows = [json.loads(line) for line in args.out.open()] if args.out.exists() else []
    done = max((int(r["id"].removeprefix("gen-")) for r in rows), default=0)  # passages 1..done were shown
    reader = local_reader("qwen2.5-coder-1.5b")
    kept = dropped = 0
    with args.out.open("a") as out:
        for i, p in enumerate(chosen, 1):
            if i <= done:
                continue
            messages = [{"role": "user", "content": PROMPT.format(text=p["text"])}]
            got = parse(reader.generate(messages, 64).text, p["text"])
            if got is None or common(got[1], texts):
                dropped += 1
            else:
                kept += 1
                row = {"id": f"gen-{i:05d}", "question": got[0], "answers": [got[1]], "passage": p["id"]}
                out.write(json.dumps(row) + "\n")
                out.flush()
            if i % 25 == 0:
                print(f"{i}/{len(chosen)}: {kept} kept, {dropped} dropped", file=sys.stderr, flush=True)
    print(f"{len(chosen)} passages: {kept} kept, {dropped} dropped, {done} shown before", file=sys.stderr)


if __name__ == "__main__":
    main()
