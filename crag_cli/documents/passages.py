"""Documents into passages: sentences, paragraphs, and passages of about 100 words with their document's title.

Reading a folder of files into documents is :mod:`crag_cli.documents.folder`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Iterator

from .formats import Document


@dataclass(frozen=True)
class Passage:
    """A retrievable unit of about ``passage_words`` words; keeps its document's id and title."""

    id: str
    doc_id: str
    title: str
    text: str
    source: str = ""
    page: str = ""  # the page ("4") or pages ("4-5") of a paged document it comes from

    @property
    def cite(self) -> str:
        """How knowledge names where it came from: ``report.pdf p. 4`` (``pp. 4-5``), else the passage id."""
        if not self.page:
            return self.id
        return f"{self.source or self.doc_id} {'pp.' if '-' in self.page else 'p.'} {self.page}"

    def to_dict(self) -> dict:
        out = {"id": self.id, "doc_id": self.doc_id, "title": self.title, "text": self.text, "source": self.source}
        if self.page:
            out["page"] = self.page
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Passage":
        return cls(
            d["id"],
            d.get("doc_id", d["id"]),
            d.get("title", ""),
            d["text"],
            d.get("source", ""),
            str(d.get("page") or ""),
        )


# --------------------------------------------------------------------------- text helpers

_ABBREVIATIONS = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "prof",
    "st",
    "jr",
    "sr",
    "vs",
    "etc",
    "e.g",
    "i.e",
    "no",
    "fig",
    "inc",
    "ltd",
    "co",
    "mt",
    "gen",
    "col",
    "lt",
    "sgt",
    "capt",
    "rev",
    "hon",
    "approx",
    "cf",
}
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_WS = re.compile(r"\s+")


def normalize_space(text: str) -> str:
    """Collapse every run of white space to one space and strip the ends."""
    return _WS.sub(" ", text).strip()


def paragraphs(text: str) -> list[str]:
    """Split text at blank lines; each paragraph has its white space collapsed.

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    list of str
        The non-empty paragraphs, in order.
    """
    return list(_paragraphs(text))


_BLANK_LINE = re.compile(r"\n\s*\n")


def _paragraphs(text: str) -> Iterator[str]:
    """:func:`paragraphs`, one at a time (a long text is not copied whole)."""
    start = 0
    for m in _BLANK_LINE.finditer(text):
        if p := normalize_space(text[start : m.start()]):
            yield p
        start = m.end()
    if p := normalize_space(text[start:]):
        yield p


def split_sentences(text: str) -> list[str]:
    """Split text into sentences with a rule-based splitter.

    A sentence ends at ``.``, ``!`` or ``?`` (and any closing quote or bracket)
    followed by white space and an upper-case letter, a digit or an opening
    quote. Paragraph breaks (blank lines) always end a sentence. A split after a
    common abbreviation ("Dr.", "e.g.") or a single initial ("J.") is undone.

    Parameters
    ----------
    text : str
        Any text; white space inside sentences is collapsed.

    Returns
    -------
    list of str
        Sentences in order; joined with spaces they give the normalized text.
    """
    return list(_sentences(text))


def _sentences(text: str) -> Iterator[str]:
    """:func:`split_sentences`, one at a time."""
    for para in _paragraphs(text):
        merged: list[str] = []  # the pieces of a sentence that abbreviations joined (joined once: no quadratic copy)
        for piece in (p for p in (s.strip() for s in _split_keep(para)) if p):
            if merged and not _ends_with_abbreviation(merged[-1]):
                yield " ".join(merged)
                merged = []
            merged.append(piece)
        if merged:
            yield " ".join(merged)


def _split_keep(para: str) -> Iterator[str]:
    start = 0
    for m in _SENTENCE_END.finditer(para):
        yield para[start : m.start()] + para[m.start() : m.end()].rstrip()
        start = m.end()
    yield para[start:]


def _ends_with_abbreviation(sentence: str) -> bool:
    last = sentence.rstrip("\"')]").split(" ")[-1]
    if not last.endswith("."):
        return False
    word = last[:-1].lstrip("(\"'").lower()
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def chunk_sentences(sentences: Iterable[str], max_words: int) -> list[str]:
    """Group consecutive sentences into chunks of at most ``max_words`` words.

    A sentence longer than ``max_words`` on its own is cut into windows of
    ``max_words`` words. Every word of the input appears in exactly one chunk,
    in order.

    Parameters
    ----------
    sentences : iterable of str
        Sentences in document order.
    max_words : int
        The most words a chunk may hold (at least 1).

    Returns
    -------
    list of str
        The chunks.
    """
    if max_words < 1:
        raise ValueError("max_words must be at least 1")
    chunks: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in sentences:
        words = sentence.split()
        if not words:
            continue
        if len(words) > max_words:
            if current:
                chunks.append(" ".join(current))
                current, count = [], 0
            for i in range(0, len(words), max_words):
                chunks.append(" ".join(words[i : i + max_words]))
            continue
        if count + len(words) > max_words and current:
            chunks.append(" ".join(current))
            current, count = [], 0
        current.append(sentence)
        count += len(words)
    if current:
        chunks.append(" ".join(current))
    return chunks


def split_passages(doc: Document, max_words: int = 100) -> list[Passage]:
    """Split a document into passages of about ``max_words`` words at sentence boundaries.

    A document of at most ``max_words`` words is one passage, its white space
    collapsed, without splitting it into sentences first (the same result,
    faster: most documents of a large collection are short). A long one is
    split a paragraph at a time: memory holds its text and its passages, not
    a list of its words. A document whose text is left on disk (``doc.path``,
    a large text file) is split by :func:`crag_cli.documents.bigtext.passages`.
    """
    if doc.path is not None:
        raise ValueError(
            f"{doc.id} is read from {doc.path} piece by piece: split it with crag_cli.documents.bigtext.passages"
        )
    if doc.page_breaks is not None:
        return _split_paged(doc, max_words)
    words = doc.text.split(maxsplit=max_words)  # (all of them when there are no more than max_words)
    if len(words) <= max_words:
        chunks = [" ".join(words)] if words else []
    else:
        chunks = chunk_sentences(_sentences(doc.text), max_words)
    return [
        Passage(id=f"{doc.id}#{i}", doc_id=doc.id, title=doc.title, text=chunk, source=doc.source)
        for i, chunk in enumerate(chunks)
    ]


def _split_paged(doc: Document, max_words: int) -> list[Passage]:
    """:func:`split_passages` of a paged document: sentences are taken page by page, and a passage
    names the page, or the first and last page, its words come from."""
    starts = (0, *doc.page_breaks)
    ends = (*doc.page_breaks, len(doc.text))
    sentences, pages = [], []  # each sentence, and the page of each of its words
    for number, (a, b) in enumerate(zip(starts, ends), 1):
        for sentence in split_sentences(doc.text[a:b]):
            sentences.append(sentence)
            pages += [number] * len(sentence.split())
    out, at = [], 0
    for i, chunk in enumerate(chunk_sentences(sentences, max_words)):
        n = len(chunk.split())  # every word is in exactly one chunk, in order
        first, last = pages[at], pages[at + n - 1]
        at += n
        page = str(first) if first == last else f"{first}-{last}"
        out.append(
            Passage(id=f"{doc.id}#{i}", doc_id=doc.id, title=doc.title, text=chunk, source=doc.source, page=page)
        )
    return out
