"""The one exception type the CLI turns into a one-line error and a non-zero exit."""

import re


class CragError(Exception):
    """A problem the user can fix (bad input, missing file, unusable index or model)."""


LONG_RUN = 160  # characters of a run without spaces that an error line shows whole
_LONG = re.compile(r"\S{%d,}" % (LONG_RUN + 1))


def shorten(text: str) -> str:
    """Cut every run of more than :data:`LONG_RUN` non-space characters (a path, an echoed value) to its ends.

    Examples
    --------
    >>> line = shorten("no such file: " + "a" * 300)
    >>> len(line), line.endswith("aaa (300 characters)")
    (180, True)
    >>> shorten("short words stay")
    'short words stay'
    """
    head, tail = LONG_RUN * 2 // 3, LONG_RUN // 4

    def cut(match: re.Match) -> str:
        text = match[0]
        start, end = len(text) - len(text.lstrip("'\"(")), len(text.rstrip(":;,.'\")"))
        run = text[start:end]  # the quotes and punctuation around a value stay outside the note
        return f"{text[:start]}{run[:head]}...{run[-tail:]} ({len(run):,} characters){text[end:]}"

    return _LONG.sub(cut, text)


def one_line(message: object) -> str:
    """The first non-empty line of a message (a library's error can run to many lines), long runs shortened."""
    for line in str(message).splitlines():
        if line.strip():
            return shorten(line.strip())
    return type(message).__name__ if isinstance(message, BaseException) else ""


def os_problem(exc: OSError) -> str:
    """One line for an operating-system error: what went wrong, and the path it names (shortened)."""
    what = exc.strerror or str(exc) or type(exc).__name__
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    return one_line(f"{what[:1].lower()}{what[1:]}: {' -> '.join(paths)}" if paths else what)
