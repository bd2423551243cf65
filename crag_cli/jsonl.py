"""The one parser of JSON text from outside: every JSON line crag reads goes through :func:`parse`.

A line of JSON can fail in more ways than :class:`json.JSONDecodeError`: an
integer of thousands of digits (``ValueError``), nesting deeper than Python's
recursion limit (``RecursionError``), bytes that are not UTF-8, or a string
holding a lone UTF-16 surrogate (``"\\ud800"``) that decodes but cannot be
written, tokenized or printed later. :func:`parse` turns each into one
:class:`BadLine` with a short reason, so that a caller reports the line (an
error record, a skipped line, one ``crag: error:`` line) and goes on.
"""

from __future__ import annotations

import json
from typing import IO, Any, Iterator

STEP = 64 << 10  # the bytes read at a time past a line's bound, skipping to its end


class BadLine(ValueError):
    """A line that is not usable JSON; ``str()`` is the reason, fit for an error record."""


def decode(raw: bytes | str, first: bool = False) -> str:
    """``raw`` as text: UTF-8 (with a byte-order mark allowed on a file's first line).

    Raises
    ------
    BadLine
        When the bytes are not UTF-8, or the text holds a lone surrogate.
    """
    if isinstance(raw, bytes):
        try:
            return raw.decode("utf-8-sig" if first else "utf-8")
        except UnicodeDecodeError:
            raise BadLine("line is not UTF-8") from None
    if has_surrogate(raw):
        raise BadLine("line is not valid Unicode (a lone surrogate)")
    return raw


def bounded_lines(f: IO[bytes], max_bytes: int) -> Iterator[bytes | None]:
    """The lines of the binary file ``f`` (their ends included), each read only up to ``max_bytes`` before its end
    of line: a longer line is ``None``, read past to its end :data:`STEP` bytes at a time and never held.

    Examples
    --------
    >>> import io
    >>> list(bounded_lines(io.BytesIO(b"abcd\\n" + b"x" * 10 + b"\\ncd"), 4))
    [b'abcd\\n', None, b'cd']
    """
    while True:
        line = f.readline(max_bytes + 1)
        if not line:
            return
        if len(line) <= max_bytes or line.endswith(b"\n"):
            yield line
            continue
        while line and not line.endswith(b"\n"):
            line = f.readline(STEP)
        yield None


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a UTF-16 surrogate code point (U+D800-U+DFFF), which UTF-8 cannot encode.

    Examples
    --------
    >>> has_surrogate("caf\\u00e9"), has_surrogate("a \\ud800 b")
    (False, True)
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def parse(raw: bytes | str, first: bool = False, check_strings: bool = True) -> Any:
    """Decode one JSON value from a line of bytes or text.

    Parameters
    ----------
    raw : bytes or str
        The line (its end of line may be included).
    first : bool
        Whether it is a file's first line (a UTF-8 byte-order mark is then allowed).
    check_strings : bool
        Refuse the whole value when any string in it holds a lone surrogate
        escape. ``False`` leaves that to a caller that takes only some of its
        strings and checks those with :func:`valid_unicode` (one bad row of a
        search answer drops that row, not the answer).

    Returns
    -------
    Any
        The value; every string in it (keys included) is valid Unicode (with ``check_strings``).

    Raises
    ------
    BadLine
        With the reason: not UTF-8, malformed JSON (with the column), a number
        too long to read, nesting too deep, a lone surrogate escape, or a line
        too large to hold in memory.
    """
    text = decode(raw, first)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadLine(f"malformed JSON: {exc.msg} (column {exc.colno})") from None
    except RecursionError:
        raise BadLine("malformed JSON: nested too deeply") from None
    except MemoryError:
        raise BadLine("line too large to read") from None
    except ValueError as exc:  # an integer past Python's digit limit for int() (4,300 digits)
        raise BadLine(f"malformed JSON: a number too long to read ({str(exc).split(':')[0]})") from None
    if check_strings and not valid_unicode(value):
        raise BadLine("line holds an invalid Unicode escape (a lone surrogate such as \\ud800)")
    return value


def valid_unicode(value: Any) -> bool:
    """Whether every string in a decoded JSON value (keys included) can be encoded as UTF-8.

    Walks the value without recursion, so any nesting depth that :func:`json.loads`
    accepted is checked.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if has_surrogate(item):
                return False
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True
