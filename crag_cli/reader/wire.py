"""What crag reads from a reader server, bounded, and what it keeps out of everything it shows or stores.

A reader server is trusted to answer, not to answer well: a body is read a bounded step at a time (unpacked by
:class:`~crag_cli.unpack.Unpacker`, so gzip that unpacks big is cut too), each step checks the whole
request's deadline (a server that drips one byte at a time is cut there, not when a line ends), a JSON body is
cut at :data:`JSON_BYTES`, one line of a streamed answer at :data:`EVENT_BYTES` and the answer's text at
:func:`answer_bound`. The API key and a password in the server's URL are replaced wherever crag shows or
stores text (:func:`redact`, :class:`Redacting`, :func:`shown_url`).
"""

from __future__ import annotations

import re
import time
from typing import Iterable, Iterator
from urllib.parse import unquote, urlsplit

JSON_BYTES = 4 << 20  # the largest JSON body crag reads from a reader server (/v1/models, /props, /tokenize...)
ERROR_BYTES = 64 << 10  # what is read of an error answer's body (its message is shown shortened)
EVENT_BYTES = 1 << 20  # the longest line of a streamed answer (one server-sent event)
ANSWER_BYTES_PER_TOKEN = 16  # an answer is cut past this many bytes a token asked for (max_tokens)...
ANSWER_BYTES_MIN = 64 << 10  # ... or past this, whichever is more

_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)@")


class WireError(ValueError):
    """What a server sent that crag stops reading: past a byte bound, past the deadline, an unknown encoding."""


class Late(WireError):
    """The whole request's deadline passed while its body was being read."""


def size(n: int) -> str:
    """A byte bound in words.

    Examples
    --------
    >>> size(4 << 20), size(64 << 10), size(1500)
    ('4 MiB', '64 KiB', '1,500 bytes')
    """
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n:,} bytes"


def pieces(response, deadline: float) -> Iterator[bytes]:
    """The body of an httpx streaming ``response``, unpacked, in steps of at most 64 KiB.

    Raises :class:`Late` at the first step after ``deadline`` (a ``time.monotonic()`` value), and
    :class:`WireError` for an encoding crag cannot undo.
    """
    from ..unpack import UnpackError, Unpacker

    try:
        unpacker = Unpacker(response.headers.get("content-encoding", ""))
        for raw in response.iter_raw():
            for piece in unpacker.pieces(raw):
                if time.monotonic() > deadline:
                    raise Late("past the deadline")
                if piece:
                    yield piece
    except UnpackError as exc:
        raise WireError(f"a body crag cannot unpack ({exc})") from None


def read_body(chunks: Iterable[bytes], max_bytes: int) -> bytes:
    """The bytes of ``chunks`` joined; :class:`WireError` as soon as they pass ``max_bytes``.

    Examples
    --------
    >>> read_body([b"ab", b"c"], 3)
    b'abc'
    >>> read_body([b"ab", b"cd"], 3)
    Traceback (most recent call last):
    ...
    crag_cli.reader.wire.WireError: a body over crag's bound of 3 bytes
    """
    body = bytearray()
    for chunk in chunks:
        body += chunk
        if len(body) > max_bytes:
            raise WireError(f"a body over crag's bound of {size(max_bytes)}")
    return bytes(body)


def lines(chunks: Iterable[bytes], max_bytes: int) -> Iterator[str]:
    """The lines of ``chunks`` (LF or CRLF ends, the last line's end optional), decoded as UTF-8.

    Raises :class:`WireError` as soon as a line passes ``max_bytes``, so that no more than that is held.

    Examples
    --------
    >>> list(lines([b"data: a\\r\\nda", b"ta: b\\n\\nlast"], 16))
    ['data: a', 'data: b', '', 'last']
    >>> list(lines([b"x" * 10, b"x" * 10], 16))
    Traceback (most recent call last):
    ...
    crag_cli.reader.wire.WireError: a line over crag's bound of 16 bytes
    """
    held = bytearray()
    for chunk in chunks:
        held += chunk
        *done, rest = held.split(b"\n")
        for line in done:
            if len(line) > max_bytes:
                raise WireError(f"a line over crag's bound of {size(max_bytes)}")
            yield line.removesuffix(b"\r").decode("utf-8", errors="replace")
        if len(rest) > max_bytes:
            raise WireError(f"a line over crag's bound of {size(max_bytes)}")
        held = bytearray(rest)
    if held:
        yield held.removesuffix(b"\r").decode("utf-8", errors="replace")


def answer_bound(max_tokens: int) -> int:
    """The most bytes of text crag reads of an answer of at most ``max_tokens`` tokens (a generous bound).

    Examples
    --------
    >>> answer_bound(8), answer_bound(8192)
    (65536, 131072)
    """
    return max(ANSWER_BYTES_MIN, ANSWER_BYTES_PER_TOKEN * max_tokens)


def clip(text: str, n: int = 300) -> str:
    """The start of ``text`` that an error line shows of what a server sent: at most ``n`` characters.

    Examples
    --------
    >>> clip("busy"), clip("a" * 10, 4)
    ('busy', 'aaaa... (10 characters)')
    """
    return text if len(text) <= n else f"{text[:n]}... ({len(text):,} characters)"


def as_object(value) -> dict:
    """``value`` if it is a JSON object, else an empty one (a field a server filled with something else)."""
    return value if isinstance(value, dict) else {}


def as_count(value) -> int | None:
    """``value`` if it is a count (an integer, not negative), else ``None``.

    Examples
    --------
    >>> as_count(4096), as_count("4096"), as_count(-1), as_count(True)
    (4096, None, None, None)
    """
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def shown_url(url: str) -> str:
    """``url`` as crag shows and stores it: whatever it holds before a ``@`` in its host part (a user name and
    password) is ``***``.

    Examples
    --------
    >>> shown_url("http://user:secret@127.0.0.1:8080/v1")
    'http://***@127.0.0.1:8080/v1'
    >>> shown_url("http://127.0.0.1:8080/v1?a=b@c")
    'http://127.0.0.1:8080/v1?a=b@c'
    """
    return _USERINFO.sub(r"\1***@", url)


def url_secrets(url: str) -> list[str]:
    """What :func:`redact` must replace for ``url``: its user name and password together, the password (the user
    name when there is none), each also percent-decoded, longest first.

    Examples
    --------
    >>> url_secrets("http://me:p%40ss@host/")
    ['me:p%40ss', 'me:p@ss', 'p%40ss', 'p@ss']
    >>> url_secrets("http://host/")
    []
    """
    found = _USERINFO.match(url)
    if found is None:
        return []
    info = found.group(2)
    user, _, password = info.partition(":")
    wanted = {s for part in (info, password or user) for s in (part, unquote(part)) if s}
    return sorted(wanted, key=lambda s: (-len(s), s))


def redact(text: str, secrets: dict[str, str]) -> str:
    """``text`` with each secret (a key of ``secrets``) replaced by its value, the longest first.

    Examples
    --------
    >>> redact("key sk-1 and me:pw", {"sk-1": "[key]", "me:pw": "***", "pw": "***"})
    'key [key] and ***'
    """
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, secrets[secret])
    return text


class Redacting:
    """Streamed text with every secret replaced (:func:`redact`), holding back what could be the start of one.

    What :meth:`feed` returns, then :meth:`end`, joined, is :func:`redact` of the whole.

    Examples
    --------
    >>> stream = Redacting({"sk-123": "[key]"})
    >>> [stream.feed(p) for p in ("the key is sk", "-1", "23.")] + [stream.end()]
    ['the key ', 'is', ' [', 'key].']
    """

    def __init__(self, secrets: dict[str, str]) -> None:
        self.secrets = {s: r for s, r in secrets.items() if s}
        self.hold = max((len(s) for s in self.secrets), default=1) - 1
        self._pending = ""

    def feed(self, piece: str) -> str:
        """What may be shown now of the text so far."""
        text = redact(self._pending + piece, self.secrets)
        cut = max(0, len(text) - self.hold)
        self._pending = text[cut:]
        return text[:cut]

    def end(self) -> str:
        """The rest, at the end of the stream."""
        text, self._pending = redact(self._pending, self.secrets), ""
        return text


def key_problem(key: str) -> str | None:
    """Why ``key`` cannot be sent in an HTTP header (it is not shown), or ``None``.

    Examples
    --------
    >>> key_problem("sk-abc_123") is None, key_problem("sk\\nX-Evil: 1"), key_problem("ключ")[:12]
    (True, 'holds a line break', 'holds a char')
    """
    if any(c in "\r\n" for c in key):
        return "holds a line break"
    if any(not "\x21" <= c <= "\x7e" for c in key):
        return "holds a character an HTTP header cannot carry (a space, a control character or a non-ASCII one)"
    return None


def url_problem(url: str) -> str | None:
    """Why ``url`` is not an http(s) URL crag can send requests to, in a few words, or ``None``.

    Examples
    --------
    >>> url_problem("http://127.0.0.1:8080/v1") is None
    True
    >>> url_problem("http://127.0.0.1:abc"), url_problem("ftp://host")
    ('its port is not a number from 0 to 65535', 'it is not http:// or https://')
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises for a port that is not a number in 0-65535
    except ValueError as exc:
        return "its port is not a number from 0 to 65535" if "port" in str(exc).lower() else f"malformed ({exc})"
    if parts.scheme not in ("http", "https"):
        return "it is not http:// or https://"
    if not parts.hostname:
        return "it names no host"
    import httpx

    try:
        httpx.URL(url)
    except httpx.InvalidURL as exc:
        return f"malformed ({exc})"
    return None
