"""A reader behind an HTTP API: llama.cpp's server (crag's own, in this process, or one the user runs) or any
OpenAI-compatible server (vLLM, Ollama, TGI...).

:class:`~crag_cli.reader.connection.Connection` speaks to the server (:mod:`.connection`);
:class:`ServedReader` is the :class:`~crag_cli.reader.base.Reader` over it.

Documents and web pages are data: their chat control tokens (``<|im_start|>``...) must stay plain text. A
llama.cpp server renders the chat template (``/apply-template``) and tokenizes (``/tokenize``) for crag, which
sends the template's own text with control tokens parsed and every message's content without
(:func:`~crag_cli.reader.template.split_rendered`), then the token ids; the prompt's length is exact. Any
other server gets chat messages whose control-token shapes are broken by a zero-width space (:func:`defuse`),
and a token count from its ``/tokenize`` where it counts chat messages (vLLM) or from its ``/apply-template`` and
``/tokenize`` (llama.cpp's, behind a server that does not say it is one), else a bound on it (:func:`estimate_tokens`).
The window prompts are fitted to is ``--n-ctx``, or the server's own where it says a smaller one (``/props``,
vLLM's ``max_model_len``); where it says none, stderr says once which window crag assumed.
"""

from __future__ import annotations

import json
import math
import re
from contextlib import closing
from typing import Callable

from .base import Generation, ModelError
from .connection import KEY_VARIABLE, Connection, ServerInfo, root_url
from .template import marks, split_rendered
from .wire import answer_bound, as_count, as_object, clip, size

__all__ = ["KEY_VARIABLE", "Connection", "ServedReader", "ServerInfo", "defuse", "estimate_tokens", "root_url"]

VOCAB_BPE = 2  # llama.cpp's LLAMA_VOCAB_TYPE_BPE: pieces tokenized apart give the ids of the whole
BYTES_PER_TOKEN = 1.5  # the bound of an uncounted prompt: tokens <= bytes / this (docs/models.md)
MESSAGE_TOKENS = 8  # and per message, its template's tokens

_CONTROL = re.compile(
    r"<\|[^<>|\n]{1,40}\|>|<｜[^<>｜\n]{1,40}｜>|</?s>|\[/?INST\]|<</?SYS>>|<(?:start|end)_of_turn>"
    r"|<(?:bos|eos|pad|unk|mask)>|\[/?(?:AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS|SYSTEM_PROMPT)\]"
)


def defuse(text: str) -> str:
    """``text`` with every chat control token's shape broken by a zero-width space after its first character.

    Parameters
    ----------
    text : str
        A message's content (a document, a web page, a question).

    Returns
    -------
    str
        The same text, readable, in which no control token of the common chat formats (ChatML, Llama, Mistral,
        Gemma, DeepSeek) survives as such.

    Examples
    --------
    >>> defuse("a <|im_start|>system b") == "a <\\u200b|im_start|>system b"
    True
    """
    return _CONTROL.sub(lambda m: m.group(0)[0] + "\u200b" + m.group(0)[1:], text)


def estimate_tokens(messages: list[dict]) -> int:
    """A bound on the tokens of ``messages`` for a server that cannot count them (no ``/tokenize``).

    Parameters
    ----------
    messages : list of dict
        Chat messages.

    Returns
    -------
    int
        ``bytes / BYTES_PER_TOKEN`` of the contents plus ``MESSAGE_TOKENS`` per message, rounded up.
    """
    size = sum(len(m["content"].encode("utf-8")) for m in messages)
    return math.ceil(size / BYTES_PER_TOKEN) + MESSAGE_TOKENS * len(messages) + MESSAGE_TOKENS


class ServedReader:
    """The :class:`~crag_cli.reader.base.Reader` of a model behind a :class:`Connection`.

    Parameters
    ----------
    connection : Connection
        The server; shared by forks and threads.
    model : str
        The server's name of the model (a llama.cpp server that serves one model takes any name).
    n_ctx : int
        The context window crag fits prompts in (at most the server's slot).
    temperature, seed
        Sampling; 0 is greedy.
    name : str, optional
        The name records give the model (default: ``model``).
    """

    in_process = False  # crag's own engine: no notes on the server, no served model (its name may be a path)

    def __init__(
        self,
        connection: Connection,
        model: str,
        n_ctx: int,
        temperature: float,
        seed: int,
        name: str | None = None,
        answer_timeout: float | None = None,
    ) -> None:
        self.connection, self.served, self.temperature, self.seed = connection, model, temperature, seed
        self.model = name or model
        self.answer_timeout = answer_timeout  # None: the connection's
        self._n_ctx = n_ctx
        self._last: tuple[str, list[int]] | None = None  # the last prompt's key and its token ids
        self._counted: tuple[str, int] | None = None  # a chat server's: the last prompt's key and its count

    def _connection(self) -> Connection:
        return self.connection

    @property
    def n_ctx(self) -> int:
        window = self._connection().info().window(self.served)
        return min(self._n_ctx, window) if window else self._n_ctx

    @property
    def counted_by(self) -> str:
        """How prompts are counted to fit the window: ``"server"`` (its tokenizer) or ``"bound"``."""
        info = self._connection().info()
        return "server" if info.llama_cpp or info.counts else "bound"

    def fork(self, n_ctx: int | None = None) -> "ServedReader":
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__, _n_ctx=n_ctx or self._n_ctx, _last=None, _counted=None)
        return twin

    def load(self) -> None:
        conn = self._connection()
        info = conn.info()
        if self.served not in info.models:
            if not (len(info.models) == 1 and info.llama_cpp):
                listed = clip(conn.redact(", ".join(info.models))) or "none"
                raise ModelError(f"reader server {conn.shown} has no model {self.served!r} (it has: {listed})")
            self.served = info.models[0]  # llama-server serves one model, whatever it is asked for
        window, n = info.window(self.served), self._n_ctx
        if self.in_process:
            return
        if window is None:
            conn.note(f"it does not say its context window: prompts are fitted to --n-ctx {n} tokens")
        elif window < n:
            conn.note(f"its window is {window} tokens a request: prompts are fitted to it, not to --n-ctx {n}")

    def count_tokens(self, messages: list[dict]) -> int:
        self.load()
        conn = self._connection()
        if conn.info().llama_cpp:
            return len(self._tokens(messages))
        counts, key = conn.info().counts, json.dumps(messages)
        if not counts:
            return estimate_tokens(messages)
        if self._counted is not None and self._counted[0] == key:
            return self._counted[1]
        defused = _defused(messages)
        if counts == "messages":
            n = conn.answer_field("POST", "/tokenize", {"model": self.served, "messages": defused}, "count", int)
        else:
            text = conn.answer_field("POST", "/apply-template", {"messages": defused}, "prompt", str)
            body = {"content": text, "add_special": True, "parse_special": True}
            n = len(conn.answer_field("POST", "/tokenize", body, "tokens", list))
        self._counted = (key, n)
        return n

    def _tokens(self, messages: list[dict]) -> list[int]:
        """A llama.cpp server's token ids of the prompt: the template's text with control tokens, contents without."""
        key = json.dumps(messages)
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        conn = self._connection()
        tags = marks(len(messages))
        marked = conn.answer_field(
            "POST", "/apply-template", {"messages": [dict(m, content=k) for m, k in zip(messages, tags)]}, "prompt", str
        )
        whole = conn.answer_field("POST", "/apply-template", {"messages": messages}, "prompt", str)
        pieces = split_rendered(marked, [m["content"] for m in messages], tags)
        if pieces is None or "".join(t for t, _ in pieces) != whole or conn.info().vocab_type != VOCAB_BPE:
            defused = conn.answer_field("POST", "/apply-template", {"messages": _defused(messages)}, "prompt", str)
            pieces = [(defused, True)]
        tokens: list[int] = []
        for i, (text, trusted) in enumerate(pieces):
            if text or i == 0:
                body = {"content": text, "add_special": i == 0, "parse_special": trusted}
                tokens += conn.answer_field("POST", "/tokenize", body, "tokens", list)
        self._last = (key, tokens)
        return tokens

    def generate(
        self, messages: list[dict], max_tokens: int, on_token: Callable[[str], None] | None = None
    ) -> Generation:
        self.load()
        conn = self._connection()
        sampling = {"max_tokens": max_tokens, "temperature": self.temperature, "seed": self.seed, "stream": True}
        sampling |= {"model": self.served, "stream_options": {"include_usage": True}}
        if conn.info().llama_cpp:
            tokens = self._tokens(messages)
            if len(tokens) + max_tokens > self.n_ctx:
                raise ModelError(
                    f"prompt of {len(tokens)} tokens + {max_tokens} to generate exceeds n_ctx {self.n_ctx}"
                )
            path, body, counted = "/v1/completions", {"prompt": tokens, "cache_prompt": True, **sampling}, len(tokens)
        else:
            path, body, counted = "/v1/chat/completions", {"messages": _defused(messages), **sampling}, None
        text, usage, produced, model = self._read(conn.events(path, body, self.answer_timeout), max_tokens, on_token)
        prompt, source = as_count(usage.get("prompt_tokens")), "server"
        if not prompt:
            prompt = counted or self.count_tokens(messages)
            source = "counted" if counted or conn.info().counts else "estimate"
        cached = as_count(as_object(usage.get("prompt_tokens_details")).get("cached_tokens"))
        completion = as_count(usage.get("completion_tokens")) or produced
        served = None if self.in_process else clip(conn.redact(model or self.served), 200)
        return Generation(text, prompt, completion, cached, source, served)

    def _read(self, events, max_tokens: int, on_token: Callable[[str], None] | None) -> tuple[str, dict, int, str]:
        """``(text, usage, pieces, model)`` of a streamed answer: its text with the key and the URL's password
        replaced (streamed so to ``on_token``), the last usage the server gave, how many pieces of text came, the
        last ``model`` its events named (``""``: none).

        An answer whose text passes :func:`~crag_cli.reader.wire.answer_bound` (a server that ignores
        ``max_tokens``) is cut there with a :class:`ModelError`, so that no more of it is read or held.
        """
        conn, bound, read, produced = self._connection(), answer_bound(max_tokens), 0, 0
        stream, shown, usage, model = conn.redacting(), [], {}, ""

        def show(text: str) -> None:
            if text:
                shown.append(text)
                if on_token is not None:
                    on_token(text)

        with closing(events):  # a cut answer's response is closed at once
            for event in events:
                for piece in _texts(event):
                    produced += 1
                    read += len(piece.encode("utf-8"))
                    if read > bound:
                        raise ModelError(
                            f"reader server {conn.shown}: the answer was cut at crag's bound of {size(bound)} of "
                            f"text for {max_tokens} tokens (does the server ignore max_tokens?)"
                        )
                    show(stream.feed(piece))
                usage = as_object(event.get("usage")) or usage
                model = event["model"] if isinstance(event.get("model"), str) else model
        show(stream.end())
        return "".join(shown), usage, produced, model


def _texts(event: dict) -> list[str]:
    """The pieces of text one streamed event holds (a completion's ``text``, a chat's ``delta.content``)."""
    choices = event.get("choices")
    found = []
    for choice in choices if isinstance(choices, list) else []:
        choice = as_object(choice)
        piece = choice.get("text") if "text" in choice else as_object(choice.get("delta")).get("content")
        if isinstance(piece, str) and piece:
            found.append(piece)
    return found


def _defused(messages: list[dict]) -> list[dict]:
    """``messages`` with their contents :func:`defuse`\\ d (roles and the rest as they are)."""
    return [dict(m, content=defuse(m["content"])) for m in messages]
