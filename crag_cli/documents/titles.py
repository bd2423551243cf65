"""Titles of plain text: a ``.txt``'s first line when it reads as one, a ``.md``'s first heading.

Each from a whole text, or from the first pieces of one too large to hold
(:mod:`crag_cli.documents.bigtext`), with the same result.
"""

from __future__ import annotations

import re
from typing import Iterable


def markdown_title(text: str) -> str | None:
    """A Markdown text's first line (as :meth:`str.splitlines` has lines) that starts with ``#``, without
    the ``#``; ``None`` when there is none or it is empty.

    Examples
    --------
    >>> markdown_title("Intro\\n## Berlin  \\ntext"), markdown_title("#\\n# Later")
    ('Berlin', None)
    """
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip() or None
    return None


ADORNMENT = re.compile(r"""([=\-~^"'`#*+:._])\1{2,}""")  # a reStructuredText section title's under- or overline


def rst_title(text: str) -> str | None:
    """A reStructuredText text's first section title: the first non-blank line whose next line is a row of one
    punctuation character (``===``, ``---``, ``~~~``...) at least as long; ``None`` when there is none.

    Examples
    --------
    >>> rst_title(".. _tasks:\\n\\n===========\\nTask groups\\n===========\\n\\nA task group ...")
    'Task groups'
    >>> rst_title("Streams\\n-------\\ntext"), rst_title("Short\\n--\\ntext"), rst_title("no title here")
    ('Streams', None, None)
    """
    lines = text.lstrip("\ufeff").splitlines()
    for line, under in zip(lines, lines[1:]):
        title = line.strip()
        if title and not ADORNMENT.fullmatch(title) and ADORNMENT.fullmatch(under.strip()):
            return title if len(under.strip()) >= len(title) else None
    return None


def text_title(text: str, max_words: int = 32) -> str | None:
    """A plain text's first non-blank line when it reads as a title, else ``None``.

    A title has at most ``max_words`` words, one of them a word of letters,
    more text after it, and no ``.``, ``,``, ``;`` or ``:`` at its end (a
    question mark may end one); a line that looks like something else is
    not one: an address (``://``, ``@``), a row of values (a tab, or more
    commas than spaces), a rule of ``=``/``-``/``*``, or a ``#!`` or
    ``-*-`` line.

    Examples
    --------
    >>> text_title("First Genome of a Bovine Coronavirus\\n\\nThe virus ...")
    'First Genome of a Bovine Coronavirus'
    >>> text_title("The virus was sequenced in 2017.\\nIt has 31 kb.") is None
    True
    >>> [text_title(t) for t in ("id,name,value\\n1,a,2", "https://x.org/a b\\ntext", "From: ann@x.org\\nHi")]
    [None, None, None]
    """
    lines = text.lstrip("\ufeff").lstrip().split("\n")
    first = " ".join(lines[0].split())
    rest = "\n".join(lines[1:]).strip()
    words = first.split()
    if not rest or not 1 <= len(words) <= max_words or first.endswith((".", ",", ";", ":")):
        return None
    if not any(re.search(r"[^\W\d_]{3,}", w) for w in words):  # no word of letters: "1", "2024-05-01"
        return None
    if (
        "://" in first
        or "@" in first
        or "\t" in lines[0]
        or first.count(",") > first.count(" ")
        or re.search(r"[=*_~-]{3,}", first)
        or first.startswith(("#!", "-*-"))
    ):
        return None
    return first


def first_line_title(pieces: Iterable[str]) -> tuple[str | None, bool]:
    """:func:`text_title` of the text that ``pieces`` make, from the first ones, and whether it has any text."""
    from .bigtext import PIECE_BYTES

    head, has_text = "", False
    for piece in pieces:
        has_text = has_text or not piece.isspace()
        head += piece
        start = head.lstrip("\ufeff").lstrip()
        if not start:  # byte-order marks and white space: what counts is whether there was white space
            head = " " if head.lstrip("\ufeff") else ""
            continue
        end = start.find("\n")
        if end >= 0 and start[end + 1 :].strip():  # a first line and text after it: the title is the whole's
            return text_title(head), True
        if len(head) > PIECE_BYTES:
            return None, True
    return (text_title(head) if has_text else None), has_text


def first_heading(pieces: Iterable[str]) -> tuple[str | None, bool]:
    """What :func:`markdown_title` finds in the text that ``pieces`` make, from the first pieces that hold it,
    and whether the text has any text (not only white space)."""
    from .bigtext import PIECE_BYTES

    line, has_text, last = None, False, "\n"  # last: the character before the piece
    for piece in pieces:
        has_text = has_text or not piece.isspace()
        if line is None:
            m = _HEADING.search(last + piece)
            last = piece[-1]
            if m is None:
                continue
            line, ended = m.group(), m.end() <= len(piece)
        else:
            end = _LINE_END.search(piece)
            line, ended = line + piece[: end.start() if end else len(piece)], end is not None
        if ended or len(line) > PIECE_BYTES:
            return (line.lstrip("#").strip() or None) if ended else None, True
    return (line.lstrip("#").strip() or None) if line else None, has_text


_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"  # where str.splitlines ends a line
_LINE_END = re.compile(f"[{_BREAKS}]")
_HEADING = re.compile(f"(?<=[{_BREAKS}])#[^{_BREAKS}]*")
