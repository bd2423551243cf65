"""The HTTP connection to a reader server: what crag sends it and how much of its answers it reads.

:class:`Connection` speaks to the server: bounded retries with backoff on a refused connection, 429 and 5xx,
one clear :class:`~crag_cli.reader.base.ModelError` for everything else (a redirect too: none is followed), the
API key in a header and never in a message. What it reads is bounded (:mod:`.wire`): a JSON body, one line of a
stream, the whole request's time, checked at every step of the reading.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Iterator

from ..errors import shorten
from ..jsonl import BadLine, parse
from .base import ModelError
from .wire import (
    ERROR_BYTES,
    EVENT_BYTES,
    JSON_BYTES,
    Late,
    Redacting,
    WireError,
    as_count,
    as_object,
    clip,
    key_problem,
    lines,
    pieces,
    read_body,
    redact,
    shown_url,
    url_problem,
    url_secrets,
)

KEY_VARIABLE = "CRAG_READER_API_KEY"  # the API key: from the environment only, never a flag or a file
RETRIES = 4  # further attempts after a refused connection, 429 or 5xx
BACKOFF = 0.5  # seconds before the first retry, doubled after each
RETRY_AFTER_MAX = 30.0  # the longest Retry-After crag waits


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
    """What a server said of itself: its kind, its models, the context of one slot, a fingerprint.

    ``llama_cpp``: crag speaks to it as to llama.cpp's server (``/props``, ``/apply-template``, ``/tokenize``,
    prompts as token ids); a server that claims llama.cpp but has no ``/props`` is a chat server here.
    ``windows``: each model's context window where the server lists one (vLLM's ``max_model_len``).
    ``counts``: how crag counts a chat prompt's tokens there: ``"messages"`` (vLLM's ``/tokenize`` of chat
    messages), ``"template"`` (llama.cpp's ``/apply-template`` then ``/tokenize``), ``""`` (it cannot: a bound).
    """

    llama_cpp: bool
    models: list[str]
    slot_ctx: int | None = None
    vocab_type: int | None = None
    fingerprint: str = ""
    counts: str = ""
    windows: dict[str, int] = field(default_factory=dict)

    def window(self, model: str) -> int | None:
        """The context window of one request the server says ``model`` has (``None``: it does not say)."""
        return self.slot_ctx or self.windows.get(model)


class Refused(ModelError):
    """A server's answer of an error status, ``status`` (a redirect included: crag follows none)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Connection:
    """An HTTP connection to a reader server at ``url`` (its root, or its ``/v1``); thread-safe.

    ``api_key`` defaults to the environment's ``CRAG_READER_API_KEY``; ``timeout`` bounds connecting, each read
    and a whole JSON request, ``answer_timeout`` a whole streamed answer (a server that drips its answer, a byte
    at a time or not, is cut there). A password in ``url`` is used, never shown: :attr:`shown` is the URL as crag
    shows and stores it, and every message and answer has the key and the password replaced.
    """

    url: str
    api_key: str | None = None
    timeout: float = 60.0
    answer_timeout: float = 600.0
    _client: object = field(default=None, repr=False)
    _info: ServerInfo | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _noted: set = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        import httpx

        from ..unpack import ACCEPT_ENCODING

        self.root = root_url(self.url)
        self.shown = shown_url(self.root)
        key = self.api_key if self.api_key is not None else os.environ.get(KEY_VARIABLE)
        self._key = key or None
        self._secrets = dict.fromkeys(url_secrets(self.root), "***") | ({key: "[key]"} if key else {})
        problem = url_problem(self.root)
        if problem is not None:
            raise self._problem(f"not a URL crag can send requests to: {problem}")
        if key and key_problem(key):
            raise ModelError(f"{KEY_VARIABLE} {key_problem(key)}: set it to the key alone (the key is not shown)")
        headers = {"Accept-Encoding": ACCEPT_ENCODING} | ({"Authorization": f"Bearer {key}"} if key else {})
        self._client = httpx.Client(
            base_url=self.root, headers=headers, timeout=httpx.Timeout(self.timeout, connect=min(10.0, self.timeout))
        )

    def redact(self, text: str) -> str:
        """``text`` with the API key and the URL's password replaced (``[key]``, ``***``)."""
        return redact(text, self._secrets)

    def redacting(self) -> Redacting:
        """A stream of text with the API key and the URL's password replaced."""
        return Redacting(self._secrets)

    def note(self, what: str) -> None:
        """One ``crag: note:`` line on stderr about this server, once for this connection."""
        line = self._line(what)
        if line in self._noted:  # a race at worst says it twice
            return
        self._noted.add(line)
        sys.stderr.write(f"crag: note: {line}\n")

    def _clip(self, text: str) -> str:
        """The start of ``text`` (what the server sent) as an error shows it, the key and password replaced first."""
        return clip(self.redact(text))

    def _line(self, what: str) -> str:
        return f"reader server {self.shown}: {shorten(self.redact(what))}"

    def _problem(self, what: str) -> ModelError:
        return ModelError(self._line(what))

    def _refused(self, path: str, response, body: str) -> Refused:
        status = response.status_code
        try:
            said = parse(body, check_strings=False).get("error", body)
            said = said.get("message", said) if isinstance(said, dict) else said
        except (BadLine, AttributeError):
            said = body
        said = self._clip(" ".join(str(said).split()))
        what = f"{path}: {status} {response.reason_phrase}"
        if 300 <= status < 400:
            where = response.headers.get("location") or "nowhere"
            return Refused(self._line(f"{what} (a redirect to {where}: give --reader-url the URL it names)"), status)
        if status in (401, 403):
            hint = f" (set {KEY_VARIABLE})" if self._key is None else f" (the key in {KEY_VARIABLE} was refused)"
            return Refused(self._line(f"{what}{hint}"), status)
        return Refused(self._line(what + (f": {said}" if said else "")), status)

    def _send(self, method: str, path: str, body: dict | None, limit: float):
        """``(response, deadline)``: the streamed response to one request, its status below 300, and when reading
        it must end (``limit`` seconds after its try began); retried on a refused connection, 429 and 5xx; raises
        on any other error, a redirect included."""
        import httpx

        delay = BACKOFF
        for attempt in range(RETRIES + 1):
            last = attempt == RETRIES
            deadline = time.monotonic() + limit
            try:
                request = self._client.build_request(method, path, json=body)
                response = self._client.send(request, stream=True)
            except httpx.TransportError as exc:
                if last:
                    raise self._problem(f"{path}: {_transport(exc)} (after {RETRIES + 1} tries)") from None
                time.sleep(delay)
                delay *= 2
                continue
            if response.status_code < 300:
                return response, deadline
            said = _error_text(response, deadline)
            if response.status_code in (429, 500, 502, 503, 504) and not last:
                time.sleep(_retry_after(response.headers.get("retry-after"), delay))
                delay *= 2
                continue
            raise self._refused(path, response, said)
        raise AssertionError("unreachable")

    def json(self, method: str, path: str, body: dict | None = None) -> dict:
        """The JSON object a request answers, read whole within ``timeout`` seconds and :data:`JSON_BYTES`."""

        response, deadline = self._send(method, path, body, self.timeout)
        with self._reading(response, f"{path} gave no complete answer within {self.timeout:g} s", f"{path} answered",
                           f"{path}: the answer broke off"):  # fmt: skip
            raw = read_body(pieces(response, deadline), JSON_BYTES)
        try:
            data = parse(raw)
        except BadLine as exc:
            shown = self._clip(raw.decode("utf-8", errors="replace"))
            raise self._problem(f"{path} answered something that is not JSON ({exc}): {shown!r}") from None
        if not isinstance(data, dict):
            raise self._problem(f"{path} answered JSON that is not an object: {self._clip(raw.decode())!r}")
        return data

    def answer_field(self, method: str, path: str, body: dict | None, key: str, kind: type):
        """Field ``key`` of the JSON object a request answers, which must be a ``kind``."""
        value = self.json(method, path, body).get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise self._problem(f"{path} answered no {key!r} ({kind.__name__})")
        return value

    def events(self, path: str, body: dict, limit: float | None = None) -> Iterator[dict]:
        """The server-sent events of a streamed request, as JSON objects, until ``[DONE]``, within ``limit``
        seconds (default: ``answer_timeout``); a line of the stream is at most :data:`EVENT_BYTES`."""

        limit = limit or self.answer_timeout
        response, deadline = self._send("POST", path, body, limit)
        with self._reading(
            response, f"no complete answer within {limit:g} s", f"{path} streamed", "the answer broke off"
        ):
            for line in lines(pieces(response, deadline), EVENT_BYTES):
                if not line.startswith("data:"):
                    continue
                data = line[len("data:") :].strip()
                if data == "[DONE]":
                    return
                yield self._event(data)
            raise self._problem("the server's stream ended before [DONE]: the answer may be cut")

    @contextlib.contextmanager
    def _reading(self, response, late: str, bad: str, broke: str) -> Iterator[None]:
        """Reading ``response``: past its deadline, a bound broken or the connection lost, one :class:`ModelError`
        (``late``; ``bad`` and what was wrong; ``broke`` and why); the response closed whatever happens."""
        import httpx

        try:
            yield
        except Late:
            raise self._problem(late) from None
        except WireError as exc:
            raise self._problem(f"{bad} {exc}") from None
        except httpx.TransportError as exc:
            raise self._problem(f"{broke}: {_transport(exc)}") from None
        finally:
            response.close()

    def _event(self, data: str) -> dict:
        """One streamed event's JSON object; an error event, or one that is not an object, raises."""
        try:
            event = parse(data)
        except BadLine as exc:
            raise self._problem(f"a streamed event is not JSON ({exc}): {self._clip(data)!r}") from None
        if not isinstance(event, dict):
            raise self._problem(f"a streamed event is not a JSON object: {self._clip(data)!r}")
        if "error" in event:
            error = event["error"]
            raise self._problem(self._clip(str(error.get("message", error) if isinstance(error, dict) else error)))
        return event

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
        entries = [m for m in listed if isinstance(m, dict)]  # anything else in the list is no model
        models = [str(m.get("id")) for m in entries]
        llama = any(m.get("owned_by") == "llamacpp" for m in entries)
        fingerprints = sorted({str(m.get("owned_by", "")) for m in entries})
        windows = {str(m.get("id")): n for m in entries if (n := as_count(m.get("max_model_len")))}
        info = ServerInfo(llama_cpp=llama, models=models, fingerprint=",".join(fingerprints), windows=windows)
        props = self._props() if llama else {}
        if llama and not props:
            self.note("/v1/models says llama.cpp but the server has no /props: spoken to as a chat server")
            info.llama_cpp, info.fingerprint = False, f"llama.cpp without /props {info.fingerprint}"
        if info.llama_cpp:
            meta = as_object(entries[0].get("meta"))
            vocab = meta.get("vocab_type")
            info.vocab_type = vocab if isinstance(vocab, int) else None
            slot = as_count(as_object(props.get("default_generation_settings")).get("n_ctx"))
            info.slot_ctx = slot or as_count(props.get("n_ctx")) or None
            info.fingerprint = f"llama.cpp {props.get('build_info', '')} {meta}"
        else:
            info.counts = self._counts(models[0] if models else "")
        if windows:
            info.fingerprint += " windows " + ",".join(f"{m}={n}" for m, n in sorted(windows.items()))
        return info

    def _props(self) -> dict:
        """A llama.cpp server's ``/props``; none (``{}``) where the server has no such endpoint."""
        try:
            return self.json("GET", "/props")
        except Refused as exc:
            if exc.status in (404, 405):
                return {}
            raise

    def _counts(self, model: str) -> str:
        """How the server counts a chat prompt's tokens (:attr:`ServerInfo.counts`): vLLM's ``/tokenize`` of chat
        messages, llama.cpp's ``/apply-template`` and ``/tokenize``, or not at all (``""``)."""
        hi = [{"role": "user", "content": "hi"}]
        try:
            if isinstance(self.json("POST", "/tokenize", {"model": model, "messages": hi}).get("count"), int):
                return "messages"
        except ModelError:
            pass
        try:
            self.answer_field("POST", "/apply-template", {"messages": hi}, "prompt", str)
            self.answer_field("POST", "/tokenize", {"content": "hi"}, "tokens", list)
        except ModelError:
            return ""
        return "template"


def _error_text(response, deadline: float) -> str:
    """The start of an error answer's body (at most :data:`ERROR_BYTES`, what came before its deadline)."""
    import httpx

    body = bytearray()
    try:
        for piece in pieces(response, deadline):
            body += piece
            if len(body) >= ERROR_BYTES:
                break
    except (WireError, httpx.TransportError):
        pass
    finally:
        response.close()
    return body[:ERROR_BYTES].decode("utf-8", errors="replace")


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
