"""A chat template's rendered text cut into the template's own pieces (trusted) and the messages' contents."""

from __future__ import annotations

PLAIN_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)  # for a model without a chat template


def marks(n: int) -> list[str]:
    """``n`` placeholders, one per message: text no real content contains."""
    return [f"\x00crag-content-{i}\x00" for i in range(n)]


def split_rendered(prompt: str, contents: list[str], marks: list[str]) -> list[tuple[str, bool]] | None:
    """Cut a prompt rendered with placeholders into ``(text, trusted)`` pieces, the contents put back.

    Parameters
    ----------
    prompt : str
        The chat template's output for messages whose contents were ``marks``.
    contents : list of str
        The real contents, in message order.
    marks : list of str
        The placeholders.

    Returns
    -------
    list of (str, bool) or None
        The template's text (trusted: may hold control tokens) alternating with
        the contents (untrusted: plain text); ``None`` when a placeholder does
        not appear exactly once, in order (the template changed a content).

    Examples
    --------
    >>> split_rendered("<s>A[M0]</s>", ["hi"], ["[M0]"])
    [('<s>A', True), ('hi', False), ('</s>', True)]
    """
    pieces: list[tuple[str, bool]] = []
    rest = prompt
    for content, mark in zip(contents, marks):
        if prompt.count(mark) != 1:
            return None
        before, found, rest = rest.partition(mark)
        if not found:
            return None
        pieces += [(before, True), (content, False)]
    pieces.append((rest, True))
    return pieces
