"""Questions in other words: the local reader rewrites gold questions away from their source's wording.

    python benchmarks/paraphrase_questions.py QUESTIONS.jsonl --out PARA.jsonl [--model qwen2.5-coder-1.5b] [--limit N]

A user asks about a folder in their own words; SQuAD's annotators wrote theirs looking at the paragraph, so its
questions share the paragraph's words, and an evaluator trained on them learns the overlap. Each row of
QUESTIONS.jsonl (``id``, ``question``, ``answers``, as ``squad_pairs.py`` writes them) is rewritten by the reader
(temperature 0, seeded; only the question is shown, never the paragraph), and written with the same id and gold
answers and ``original`` (the question as asked). A rewrite is dropped when it is not one question mark-ended
line, repeats the question, or holds a gold answer. Resumable: ids already in ``--out`` are skipped. Counts on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crag_cli.action.match import contains_phrase, fold  # noqa: E402

PROMPT = (
    "Rewrite the question below the way someone who has never seen the source text would ask it. Use other "
    "words and another sentence structure: synonyms, a description instead of the text's terms. Keep every name, "
    "number and date, and keep its meaning. Do not answer it. Reply with the rewritten question only.\n\n"
    "Question: {question}"
)


def rewrite(reply: str, row: dict) -> str | None:
    """The reader's ``reply`` as one rewritten question of ``row``, or ``None`` when it must be dropped.

    >>> rewrite("Who founded the city?", {"question": "Who was the city's founder?", "answers": ["Romulus"]})
    'Who founded the city?'
    >>> rewrite("Was it Romulus who founded it?", {"question": "Who founded Rome?", "answers": ["Romulus"]}) is None
    True
    >>> rewrite("Who founded Rome?", {"question": "Who founded Rome?", "answers": ["Romulus"]}) is None
    True
    """
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    if len(lines) != 1:
        return None
    text = lines[0].removeprefix("Question:").strip().strip('"').strip()
    if not text.endswith("?") or fold(text) == fold(row["question"]):
        return None
    if any(contains_phrase(text, a) for a in row["answers"] if a.strip()):
        return None
    return text


def local_reader(model: str):
    """The local GGUF reader ``model`` at temperature 0, seeded, one slot: a benchmark's question writer."""
    from crag_cli.reader.backends import backend
    from crag_cli.reader.base import ReaderOptions

    options = ReaderOptions(
        n_ctx=1024,
        temperature=0.0,
        seed=0,
        threads=None,
        parallel=1,
        gpu_layers=0,
        reader_url=None,
        reader_timeout=120.0,
    )
    return backend(model).create(model, options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--limit", type=int, help="the first N rows only")
    parser.add_argument("--tokens", type=int, default=48, help="the most tokens a rewrite takes")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.questions.open() if line.strip()][: args.limit]
    done = {json.loads(line)["id"] for line in args.out.open()} if args.out.exists() else set()
    reader = local_reader(args.model)
    kept = dropped = 0
    with args.out.open("a") as out:
        for i, row in enumerate(rows, 1):
            if row["id"] in done:
                continue
            messages = [{"role": "user", "content": PROMPT.format(question=row["question"])}]
            text = rewrite(reader.generate(messages, args.tokens).text, row)
            if text is None:
                dropped += 1
            else:
                kept += 1
                out.write(json.dumps({**row, "question": text, "original": row["question"]}) + "\n")
                out.flush()
            if i % 25 == 0:
                print(f"{i}/{len(rows)}: {kept} kept, {dropped} dropped", file=sys.stderr, flush=True)
    print(f"{len(rows)} rows: {kept} kept, {dropped} dropped, {len(done)} done before", file=sys.stderr)


if __name__ == "__main__":
    main()
