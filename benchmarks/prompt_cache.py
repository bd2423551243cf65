"""``crag`` with a prompt cache: a prompt answered before (same model, messages and token budget) is not asked again.

    PROMPT_CACHE=FILE python benchmarks/prompt_cache.py batch IN.jsonl -o OUT.jsonl --index IX ...

For accuracy benchmarks only (``benchmarks/popqa.py --prompt-cache FILE`` runs its modes so): modes and
settings that send the same prompt (crag with the web off and on, when it reads only the passages; crag and plain
RAG when they read the same passages) are answered once. The reader decodes greedily (temperature 0,
``crag_cli.reader.served``), so the cached reply is the one the reader gives. A cached reply is streamed
whole and takes no time: a run that used the cache has no timings worth reporting. FILE is a JSON line per
reply (its key, the reply, its token counts), appended as replies come.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crag_cli.reader.base import Generation  # noqa: E402
from crag_cli.reader.served import ServedReader  # noqa: E402


def key(model: str, messages: list[dict], max_tokens: int) -> str:
    """The cache key of one generation: a digest of the reader, the model, the messages and the token budget
    (replies of the earlier llama-cpp-python reader, keyed without the reader, are not taken for its)."""
    blob = json.dumps(["llama.cpp-server", model, messages, max_tokens], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def install(path: Path) -> None:
    """Wrap :meth:`ServedReader.generate` so that it answers from, and adds to, the cache at ``path``."""
    cache: dict[str, dict] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # a line cut off by an interruption
                continue
            cache[row["key"]] = row
    generate = ServedReader.generate

    def cached(self, messages, max_tokens, on_token=None):
        k = key(self.model, messages, max_tokens)
        if k in cache:
            row = cache[k]
            if on_token is not None and row["text"]:
                on_token(row["text"])
            return Generation(row["text"], row["prompt_tokens"], row["completion_tokens"])
        gen = generate(self, messages, max_tokens, on_token)
        row = {
            "key": k,
            "text": gen.text,
            "prompt_tokens": gen.prompt_tokens,
            "completion_tokens": gen.completion_tokens,
        }
        cache[k] = row
        with path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        return gen

    ServedReader.generate = cached


if __name__ == "__main__":
    install(Path(os.environ["PROMPT_CACHE"]))
    from crag_cli.cli import run

    run()
