"""Rewriting a question into a web search query: its content words, or the reader's few-shot keyword query."""

from __future__ import annotations

import re

from ..reader import Reader

REWRITES = ("words", "model", "none")  # how the question becomes the query: keyword_query, rewrite_query, itself

_STOPWORDS = set(
    "a an the of in on at to for from by with about as is are was were be been being do does did what who whom "
    "whose which when where why how that this these those it its his her their there here and or not no yes "
    "can could would should will shall may might must has have had i you he she we they me him them my your our "
    "s name named".split()
)

REWRITE_INSTRUCTION = (
    "Rewrite the question into a web search query of at most three keywords or short phrases, "
    "separated by commas. Keep the names and the main intent. Output only the query."
)
# Few-shot examples in the paper's style (question -> keyword query), given as chat turns.
REWRITE_EXAMPLES = (
    ("What is Henry Feilden's occupation?", "Henry Feilden, occupation"),
    ("In what city was Billy Carlson born?", "Billy Carlson, city of birth"),
    ("Who was the director of the film The Beach?", "The Beach, film, director"),
    ("What genre is the album Blue Train?", "Blue Train, album, genre"),
)


def rewrite_messages(question: str) -> list[dict]:
    """The few-shot chat that asks the reader for a keyword query; the question is the last turn."""
    messages = [{"role": "system", "content": REWRITE_INSTRUCTION}]
    for q, a in REWRITE_EXAMPLES:
        messages += [{"role": "user", "content": f"question: {q}"}, {"role": "assistant", "content": a}]
    messages.append({"role": "user", "content": f"question: {question}"})
    return messages


def keyword_query(question: str) -> str:
    """The deterministic fallback query: the question's words minus stop words and punctuation.

    Not ``match.content_words`` (the words an answer is matched on): a search query also drops question words.

    Parameters
    ----------
    question : str

    Returns
    -------
    str
        Content words in their original order and case (the whole stripped
        question if none are left).
    """
    words = re.findall(r"[\w][\w'.-]*", question)
    kept = [w.rstrip(".'").removesuffix("'s") for w in words if w.lower().rstrip(".'") not in _STOPWORDS]
    kept = [w for w in kept if w]
    return " ".join(kept) if kept else question.strip()


def accept_query(raw: str, question: str) -> str | None:
    """A cleaned keyword query from the reader's output, or ``None`` when it is not one.

    Accepted: one line, at most three comma-separated parts of at most six words
    each, twelve words in all, no sentence-ending punctuation, and at least one
    content word shared with the question (an answer alone shares none).
    """
    line = next((ln.strip() for ln in raw.strip().splitlines() if ln.strip()), "")
    line = re.sub(r"^(query|search query|keywords)\s*:\s*", "", line, flags=re.I).strip().strip('"').strip()
    if not line or line.endswith((".", "?", "!")) or len(line) > 150:
        return None
    parts = [p.strip() for p in line.split(",") if p.strip()]
    if not 1 <= len(parts) <= 3 or any(len(p.split()) > 6 for p in parts) or len(line.split()) > 12:
        return None
    qwords = {w.lower() for w in keyword_query(question).split()}
    lwords = {w.lower().strip(".'").removesuffix("'s") for w in re.findall(r"[\w][\w'.-]*", line)}
    if not qwords & lwords:
        return None
    return ", ".join(parts)


def rewrite_query(question: str, reader: Reader | None, max_tokens: int) -> tuple[str, bool, str | None]:
    """``(query, rewritten, note)``: the reader's keyword query, or the content-word fallback."""
    if reader is None:
        return keyword_query(question), False, "no reader: content words used"
    try:
        raw = reader.generate(rewrite_messages(question), max_tokens=max_tokens).text
    except Exception as exc:  # the fallback is always available
        return keyword_query(question), False, f"rewrite failed ({exc}); content words used"
    query = accept_query(raw, question)
    if query is None:
        return (
            keyword_query(question),
            False,
            f"rewrite output {raw.strip()[:60]!r} is not a keyword query; content words used",
        )
    return query, True, None
