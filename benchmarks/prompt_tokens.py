"""Do real models get the same prompt token ids now that message contents are tokenized as plain text?

    python benchmarks/prompt_tokens.py [--questions FILE] [--n 60] MODEL [MODEL ...]

For N questions of FILE (default ``../shared/bench/popqa/questions.dev.jsonl``),
builds crag's prompt with three ordinary knowledge items and with none, and
compares ``EngineReader._tokens`` (template pieces with control tokens,
contents as plain text) against the whole rendered prompt tokenized at once
with control tokens parsed (what crag did before). Prints, per model, how
many prompts are identical and the first differences.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from crag_cli.reader import EngineReader, ReaderOptions
from crag_cli.reader.prompts import KnowledgeItem, build_messages
from crag_cli.settings import Settings
import data  # noqa: E402  (a path under benchmarks/DOMAIN/ is unpacked on demand)

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "bench" / "popqa" / "questions.dev.jsonl"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--questions", type=data.on_demand, default=DEFAULT)
    ap.add_argument("--n", type=int, default=60)
    args = ap.parse_args(argv)
    questions = [json.loads(line)["question"] for line in args.questions.read_text().splitlines() if line.strip()]
    for model in args.models:
        gen = EngineReader(model, ReaderOptions.of(Settings(model=model, n_ctx=4096, threads=2)))
        gen.load()
        same = differ = 0
        for question in questions[: args.n]:
            items = [
                KnowledgeItem(
                    f"Passage {j} about {question} with 1,234 and\n new lines.\n\n  indented",
                    "s",
                    f"Title {j}",
                    "high" if j else "",
                )
                for j in range(3)
            ]
            for messages in (build_messages(question, items, "popqa"), build_messages(question, [], "popqa")):
                server = gen._connection()
                rendered = server.json("POST", "/apply-template", {"messages": messages})["prompt"]
                whole = server.json("POST", "/tokenize", {"content": rendered, "add_special": True})["tokens"]
                if gen._tokens(messages) == whole:
                    same += 1
                else:
                    differ += 1
                    if differ <= 2:
                        print(f"  differs: {question!r}")
        print(f"{model}: {same} prompts with the same token ids, {differ} with other ids")


if __name__ == "__main__":
    main()
