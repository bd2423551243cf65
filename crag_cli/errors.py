"""The one exception type the CLI turns into a one-line error and a non-zero exit."""


class CragError(Exception):
    """A problem the user can fix (bad input, missing file, unusable index or model)."""
