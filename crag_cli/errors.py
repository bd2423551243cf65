"""The one exception type the CLI turns into a one-line error and a non-zero exit."""


class CragError(Exception):
    """A problem the user can fix (bad input, missing file, unusable index or model)."""


def one_line(message: object) -> str:
    """The first non-empty line of a message (a library's error can run to many lines)."""
    for line in str(message).splitlines():
        if line.strip():
            return line.strip()
    return type(message).__name__ if isinstance(message, BaseException) else ""
