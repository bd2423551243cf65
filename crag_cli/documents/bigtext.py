"""Plain text too large to hold at once: a ``.txt`` or ``.md`` over :data:`PIECE_BYTES`, read and split piece by piece.

Its passages are those :func:`crag_cli.documents.passages.split_passages` gives for the
whole text (``tests/test_bigtext.py`` compares the two). The text is decoded a
piece at a time and cut where both sides split into the sentences of the whole:
after a paragraph's end, or after a sentence's end (white space before a word
that may start a sentence, after a word that is not an abbreviation). A
sentence longer than a piece is passed on by its words, whole words only, and
cut into passages as :func:`crag_cli.documents.passages.chunk_sentences` cuts it. Memory
holds a piece or two, whatever the file's size.

A run of more than :data:`PIECE_BYTES` characters without a space or a line
break is not text (a whole read would make it one word); such a file is
skipped with that reason.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path
from typing import Iterable, Iterator

from .passages import _SENTENCE_END, Passage, _ends_with_abbreviation, split_passages, split_sentences
from .formats import Document, Unreadable

PIECE_BYTES = 4 << 20  # bytes read and decoded at a time; a .txt or .md larger than this is read so


def text_pieces(path: Path) -> Iterator[str]:
    """A UTF-8 file's text (a byte-order mark at its start dropped), :data:`PIECE_BYTES` bytes at a time.

    Raises
    ------
    UnicodeDecodeError
        Where the bytes stop being UTF-8 (a sequence cut at the end of a piece is completed by the next).
    """
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    with open(path, "rb") as f:
        while block := f.read(PIECE_BYTES):
            if text := decoder.decode(block):
                yield text
        if text := decoder.decode(b"", final=True):
            yield text


def passages(doc: Document, max_words: int = 100) -> list[Passage]:
    """:func:`crag_cli.documents.passages.split_passages`, and for a document left on disk (``doc.path``) the same
    passages read piece by piece (:func:`stream_passages`).

    Raises
    ------
    UnicodeDecodeError, OSError, Unreadable
        When a file read so is not UTF-8, cannot be read, or is not text.
    """
    if doc.path is None:
        return split_passages(doc, max_words)
    return list(stream_passages(text_pieces(doc.path), doc.id, doc.title, doc.source, max_words))


def stream_passages(pieces: Iterable[str], doc_id: str, title: str, source: str, max_words: int) -> Iterator[Passage]:
    """The passages of the text that ``pieces`` make when joined, as :func:`crag_cli.documents.passages.split_passages`
    makes them of ``Document(doc_id, title, text, source)``, holding a piece or two at a time."""
    chunks = _Chunks(max_words)

    def texts() -> Iterator[str]:
        for whole, text in _blocks(pieces):
            if whole:
                for sentence in split_sentences(text):
                    yield from chunks.sentence(sentence)
            else:
                yield from chunks.part(text.split())
        yield from chunks.finish()

    for i, text in enumerate(texts()):
        yield Passage(id=f"{doc_id}#{i}", doc_id=doc_id, title=title, text=text, source=source)


_PARAGRAPH_END = re.compile(r"\n\s*\n\s*")  # a blank line, up to the word after it


def _blocks(pieces: Iterable[str]) -> Iterator[tuple[bool, str]]:
    """``(True, text)``: text whose sentences are whole; ``(False, text)``: the next words of a sentence
    that goes on (one found no end in more than a piece)."""
    buffer = ""
    for piece in pieces:
        buffer += piece
        at = _cut(buffer)
        if at:
            yield True, buffer[:at]
            buffer = buffer[at:]
        if len(buffer) > PIECE_BYTES:
            buffer = _short_space(buffer)
            at = _last_whole_word(buffer)
            if at:
                yield False, buffer[:at]
                buffer = buffer[at:]
            if len(buffer) > 2 * PIECE_BYTES:  # (two words and a space)
                raise Unreadable(f"not text: more than {PIECE_BYTES / (1 << 20):g} MB without a space or a line break")
    if buffer:
        yield True, buffer


def _cut(text: str) -> int:
    """The last place where ``text`` may be cut so that both sides split into the sentences of the whole
    (0: none): after a paragraph's end, or after a sentence's end (before the word that starts the next)."""
    paragraph = 0
    for m in _PARAGRAPH_END.finditer(text, 0, len(text.rstrip())):  # (white space at the end may go on)
        paragraph = m.end()
    tail = max(paragraph, len(text) - (1 << 16))  # the end of the text first: most pieces end a sentence there
    for m in reversed(list(_SENTENCE_END.finditer(text, tail))):
        if _sentence_ends(text, m):
            return m.end()
    last = paragraph
    for m in _SENTENCE_END.finditer(text, paragraph):  # the others, one at a time (not a list of them all)
        if m.start() >= tail:
            break
        if _sentence_ends(text, m):
            last = m.end()
    return last


def _sentence_ends(text: str, m: re.Match) -> bool:
    """Whether a match of the sentence-end pattern ends a sentence: the word before it is no abbreviation."""
    return not _ends_with_abbreviation(_word_before(text, m.start() + len(m.group().rstrip())))


def _word_before(text: str, end: int) -> str:
    """The word (a run without white space) of ``text`` that ends at ``end``."""
    size = 64
    while True:
        before = text[max(0, end - size) : end]
        words = before.split()
        if size >= end or (words and words[-1] != before):
            return words[-1] if words else ""
        size *= 8


def _short_space(text: str) -> str:
    """``text`` with each run of white space longer than two characters shortened to what it means to the
    splitting: two line ends (the end of a paragraph), one, or a space."""
    return _LONG_SPACE.sub(lambda m: "\n" * min(2, m.group().count("\n")) or " ", text)


_LONG_SPACE = re.compile(r"\s{3,}")


def _last_whole_word(text: str) -> int:
    """Where the last word of ``text`` that white space follows starts (0: none, or only the first)."""
    end = len(text.rstrip())
    if end == len(text):  # the text ends in a word that may go on: the one before it
        end = len(text[: end - len(_word_before(text, end))].rstrip())
    return end - len(_word_before(text, end)) if end else 0


class _Chunks:
    """:func:`crag_cli.documents.passages.chunk_sentences` given a sentence at a time, or the words of one that goes on."""

    def __init__(self, max_words: int) -> None:
        if max_words < 1:
            raise ValueError("max_words must be at least 1")
        self.max = max_words
        self.current: list[str] = []  # the sentences of the chunk being filled
        self.count = 0  # their words
        self.open: list[str] = []  # the words so far of a sentence whose end has not come
        self.long = False  # that sentence has more than max_words words: its windows are given as they fill

    def sentence(self, sentence: str) -> Iterator[str]:
        """The chunks that a whole sentence (or the end of the open one) completes."""
        words = sentence.split()
        if self.open or self.long:
            words, long = self.open + words, self.long
            self.open, self.long = [], False
            sentence = " ".join(words)
            if long:
                for i in range(0, len(words), self.max):
                    yield " ".join(words[i : i + self.max])
                return
        if not words:
            return
        if len(words) > self.max:
            yield from self._flush()
            for i in range(0, len(words), self.max):
                yield " ".join(words[i : i + self.max])
            return
        if self.count + len(words) > self.max and self.current:
            yield from self._flush()
        self.current.append(sentence)
        self.count += len(words)

    def part(self, words: list[str]) -> Iterator[str]:
        """The chunks that more words of a sentence that goes on complete."""
        self.open += words
        if not self.long and len(self.open) > self.max:
            yield from self._flush()
            self.long = True
        if self.long:
            whole = len(self.open) // self.max * self.max
            for i in range(0, whole, self.max):
                yield " ".join(self.open[i : i + self.max])
            self.open = self.open[whole:]

    def finish(self) -> Iterator[str]:
        yield from self.sentence("")
        yield from self._flush()

    def _flush(self) -> Iterator[str]:
        if self.current:
            yield " ".join(self.current)
            self.current, self.count = [], 0
