"""A reader behind an HTTP API: llama.cpp's server (crag's own, in this process, or one the user runs) or any
OpenAI-compatible server (vLLM, Ollama, TGI...).

:class:`Connection` speaks to the server: bounded retries with backoff on a refused connection, 429 and 5xx,
one clear :class:`~crag_cli.generator.base.ModelError` for everything else, the API key in a header and never in
a message. :class:`ServedGenerator` is the :class:`~crag_cli.generator.base.Generator` over it.

Documents and web pages are data: their chat control tokens (``<|im_start|>``...) must stay plain text. A
llama.cpp server renders the chat template (``/apply-template``) and tokenizes (``/tokenize``) for crag, which
sends the template's own text with control tokens parsed and every message's content without
(:func:`~crag_cli.generator.template.split_rendered`), then the token ids; the prompt's length is exact. Any
other server gets chat messages whose control-token shapes are broken by a zero-width space (:func:`defuse`),
and a token count from its ``/tokenize`` where it has one (vLLM), else a bound on it (:func:`estimate_tokens`).
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

from ..errors import shorten
from .base import Generation, ModelError
from .template import marks, split_rendered

KEY_VARIABLE = "CRAG_READER_API_KEY"  # the API key: from the environment only, never a flag or a file
RETRIES = 4  # further attempts after a refused connection, 429 or 5xx
BACKOFF = 0.5  # seconds before the first retry, doubled after each
RETRY_AFTER_MAX = 30.0  # the longest Retry-After crag waits
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


def root_url(url: str) -> str:
    """The server's root: ``url`` without a trailing ``/`` or ``/v1`` (both spellings are common).

    Examples
    --------
    >>> root_url("http://127.0.0.1:8080/v1/")
    'http://127.0.0.1:8080'
    """
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


@dataclass
class ServerInfo:
    """What a server said of itself: its kind, its models, the context of one slot, a fingerprint."""

    llama_cpp: bool
    models: list[str]
    slot_ctx: int | None = None
    vocab_type: int | None = None
    fingerprint: str = ""
    counts: bool = False  # a vLLM-style /tokenize that counts chat messages


@dataclass
class Connection:
    """An HTTP connection to a reader server at ``url`` (its root, or its ``/v1``); thread-safe.

    ``api_key`` defaults to the environment's ``CRAG_READER_API_KEY``; ``timeout`` bounds connecting and
    each read, ``answer_timeout`` a whole answer (a server that drips its answer is cut there).
    """

    url: str
    api_key: str | None = None
    timeout: float = 60.0
    answer_timeout: float = 600.0
    _client: object = field(default=None, repr=False)
    _info: ServerInfo | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        import httpx

        self.root = root_url(self.url)
        key = self.api_key if self.api_key is not None else os.environ.get(KEY_VARIABLE)
        self._key = key or None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(
            base_url=self.root, headers=headers, timeout=httpx.Timeout(self.timeout, connect=min(10.0, self.timeout))
        )

    def _problem(self, what: str) -> ModelError:
        text = what.replace(self._key, "[key]") if self._key else what
        return ModelError(f"reader server {self.root}: {shorten(text)}")

    def _refused(self, response) -> ModelError:
        status = response.status_code
        body = response.text if not response.is_stream_consumed or response.is_closed else ""
        try:
            said = json.loads(body).get("error", body)
            said = said.get("message", said) if isinstance(said, dict) else said
        except (ValueError, AttributeError):
            said = body
        said = " ".join(str(said).split())
        if status in (401, 403):
            hint = f" (set {KEY_VARIABLE})" if self._key is None else f" (the key in {KEY_VARIABLE} was refused)"
            return self._problem(f"{status} {response.reason_phrase}{hint}")
        return self._problem(f"{status} {response.reason_phrase}" + (f": {said}" if said else ""))

    def _send(self, method: str, path: str, body: dict | None, stream: bool):
        """The response to one request, retried on a refused connection, 429 and 5xx; raises on any other error."""
        import httpx

        delay = BACKOFF
        for attempt in range(RETRIES + 1):
            last = attempt == RETRIES
            try:
                request = self._client.build_request(method, path, json=body)
                response = self._client.send(request, stream=stream)
            except httpx.TransportError as exc:
                if last:
                    raise self._problem(f"{_transport(exc)} (after {RETRIES + 1} tries)") from None
                time.sleep(delay)
                delay *= 2
                continue
            if response.status_code < 400:
                return response
            if stream:
                response.read()
            if response.status_code in (429, 500, 502, 503, 504) and not last:
                wait = _retry_after(response.headers.get("retry-after"), delay)
                response.close()
                time.sleep(wait)
                delay *= 2
                continue
            raise self._refused(response)
        raise AssertionError("unreachable")

    def json(self, method: str, path: str, body: dict | None = None) -> dict:
        """The JSON object a request answers."""
        response = self._send(method, path, body, stream=False)
        try:
            data = response.json()
        except ValueError:
            raise self._problem(f"{path} answered something that is not JSON: {response.text!r}") from None
        if not isinstance(data, dict):
            raise self._problem(f"{path} answered JSON that is not an object: {response.text!r}")
        return data

    def events(self, path: str, body: dict) -> Iterator[dict]:
        """The server-sent events of a streamed request, as JSON objects, until ``[DONE]``."""
        import httpx

        deadline = time.monotonic() + self.answer_timeout
        response = self._send("POST", path, body, stream=True)
        try:
            for line in response.iter_lines():
                if time.monotonic() > deadline:
                    raise self._problem(f"no complete answer within {self.answer_timeout:g} s")
                if not line.startswith("data:"):
                    continue
                data = line[len("data:") :].strip()
                if data == "[DONE]":
                    return
                try:
                    event = json.loads(data)
                except ValueError:
                    raise self._problem(f"a streamed event is not JSON: {data!r}") from None
                if not isinstance(event, dict):
                    raise self._problem(f"a streamed event is not a JSON object: {data!r}")
                if "error" in event:
                    error = event["error"]
                    raise self._problem(str(error.get("message", error) if isinstance(error, dict) else error))
                yield event
        except httpx.TransportError as exc:
            raise self._problem(f"the answer broke off: {_transport(exc)}") from None
        finally:
            response.close()

    def info(self) -> ServerInfo:
        """What the server says of itself (asked once): ``/v1/models``, and a llama.cpp server's ``/props``."""
        with self._lock:
            if self._info is None:
                self._info = self._describe()
            return self._info

    def _describe(self) -> ServerInfo:
        listed = self.json("GET", "/v1/models").get("data")
        if not isinstance(listed, list):
            raise self._problem("/v1/models lists no models")
        models = [str(m.get("id")) for m in listed if isinstance(m, dict)]
        llama = any(isinstance(m, dict) and m.get("owned_by") == "llamacpp" for m in listed)
        fingerprints = sorted({str(m.get("owned_by", "")) for m in listed if isinstance(m, dict)})
        info = ServerInfo(llama_cpp=llama, models=models, fingerprint=",".join(fingerprints))
        if llama:
            meta = listed[0].get("meta") or {}
            info.vocab_type = meta.get("vocab_type")
            props = self.json("GET", "/props")
            info.slot_ctx = (props.get("default_generation_settings") or {}).get("n_ctx")
            info.fingerprint = f"llama.cpp {props.get('build_info', '')} {meta}"
        else:
            info.counts = self._counts(models[0] if models else "")
        return info

    def _counts(self, model: str) -> bool:
        """Whether the server counts chat messages' tokens (vLLM's ``/tokenize``)."""
        try:
            said = self.json("POST", "/tokenize", {"model": model, "messages": [{"role": "user", "content": "hi"}]})
        except ModelError:
            return False
        return isinstance(said.get("count"), int)


def _transport(exc: Exception) -> str:
    """A transport error in a few words."""
    name = type(exc).__name__
    if name == "ConnectError":
        return "connection refused or host unreachable"
    if "Timeout" in name:
        return "no answer in time"
    return f"{name}: {exc}" if str(exc) else name


def _retry_after(header: str | None, default: float) -> float:
    """Seconds to wait before a retry: the server's ``Retry-After`` (bounded) or ``default``."""
    try:
        return min(RETRY_AFTER_MAX, max(0.0, float(header))) if header else default
    except ValueError:
        return default


class ServedGenerator:
    """The :class:`~crag_cli.generator.base.Generator` of a model behind a :class:`Connection`.

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

    def __init__(
        self,
        connection: Connection,
        model: str,
        n_ctx: int,
        temperature: float,
        seed: int,
        name: str | None = None,
    ) -> None:
        self.connection, self.served, self.temperature, self.seed = connection, model, temperature, seed
        self.model = name or model
        self._n_ctx = n_ctx
        self._last: tuple[str, list[int]] | None = None  # the last prompt's key and its token ids

    def _connection(self) -> Connection:
        return self.connection

    @property
    def n_ctx(self) -> int:
        slot = self._connection().info().slot_ctx
        return min(self._n_ctx, slot) if slot else self._n_ctx

    def fork(self, n_ctx: int | None = None) -> "ServedGenerator":
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__, _n_ctx=n_ctx or self._n_ctx, _last=None)
        return twin

    def load(self) -> None:
        info = self._connection().info()
        if self.served not in info.models:
            if len(info.models) == 1 and info.llama_cpp:
                self.served = info.models[0]  # llama-server serves one model, whatever it is asked for
                return
            listed = ", ".join(info.models) or "none"
            raise ModelError(f"reader server {self._connection().root} has no model {self.served!r} (it has: {listed})")

    def count_tokens(self, messages: list[dict]) -> int:
        self.load()
        conn = self._connection()
        if conn.info().llama_cpp:
            return len(self._tokens(messages))
        if conn.info().counts:
            said = conn.json("POST", "/tokenize", {"model": self.served, "messages": _defused(messages)})
            return int(said["count"])
        return estimate_tokens(messages)

    def _tokens(self, messages: list[dict]) -> list[int]:
        """A llama.cpp server's token ids of the prompt: the template's text with control tokens, contents without."""
        key = json.dumps(messages)
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        conn = self._connection()
        tags = marks(len(messages))
        marked = conn.json(
            "POST", "/apply-template", {"messages": [dict(m, content=k) for m, k in zip(messages, tags)]}
        )
        whole = conn.json("POST", "/apply-template", {"messages": messages})["prompt"]
        pieces = split_rendered(marked["prompt"], [m["content"] for m in messages], tags)
        if pieces is None or "".join(t for t, _ in pieces) != whole or conn.info().vocab_type != VOCAB_BPE:
            defused = conn.json("POST", "/apply-template", {"messages": _defused(messages)})["prompt"]
            pieces = [(defused, True)]
        tokens: list[int] = []
        for i, (text, trusted) in enumerate(pieces):
            if text or i == 0:
                body = {"content": text, "add_special": i == 0, "parse_special": trusted}
                tokens += conn.json("POST", "/tokenize", body)["tokens"]
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
            events, counted = (
                conn.events("/v1/completions", {"prompt": tokens, "cache_prompt": True, **sampling}),
                len(tokens),
            )
        else:
            events, counted = conn.events("/v1/chat/completions", {"messages": _defused(messages), **sampling}), None
        pieces: list[str] = []
        usage: dict = {}
        for event in events:
            for choice in event.get("choices") or []:
                piece = choice.get("text") if "text" in choice else (choice.get("delta") or {}).get("content")
                if piece:
                    pieces.append(piece)
                    if on_token is not None:
                        on_token(piece)
            usage = event.get("usage") or usage
        prompt = int(usage.get("prompt_tokens") or counted or self.count_tokens(messages))
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        completion = int(usage.get("completion_tokens") or len(pieces))
        return Generation("".join(pieces), prompt, completion, cached if isinstance(cached, int) else None)


def _defused(messages: list[dict]) -> list[dict]:
    """``messages`` with their contents :func:`defuse`\\ d (roles and the rest as they are)."""
    return [dict(m, content=defuse(m["content"])) for m in messages]
