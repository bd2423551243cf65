"""Knowledge refinement: decompose, filter, recompose (CRAG section 4.4).

Every kept passage (or web page) is decomposed into *strips*; every strip is
scored against the question by the evaluator (batched); the best ``top_k``
strips scoring at least the filter threshold are kept and recomposed in their
original document order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .corpus import split_sentences
from .evaluator import Evaluator

STRIP_MODES = ("excerption", "fixed_num", "selection")


@dataclass(frozen=True)
class KnowledgeSource:
    """A piece of text to refine: a retrieved passage or a fetched web page."""

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class Strip:
    """A small unit of knowledge with its score and where it came from.

    ``position`` is ``(source index, strip index)``: sorting by it restores the
    original document order.
    """

    text: str
    source: str
    title: str
    position: tuple[int, int]
    score: float

    def to_dict(self) -> dict:
        return {"text": self.text, "source": self.source, "title": self.title, "score": round(self.score, 4)}


def excerption(text: str, sentences_per_strip: int = 3, min_fragment_words: int = 5) -> list[str]:
    """Split text into strips of about ``sentences_per_strip`` sentences.

    Sentence fragments of ``min_fragment_words`` words or fewer are merged into
    the previous sentence (or the next one when they come first).

    Parameters
    ----------
    text : str
    sentences_per_strip : int
    min_fragment_words : int

    Returns
    -------
    list of str
        The strips, in order; together they hold every word of ``text``.
    """
    sentences: list[str] = []
    pending = ""
    for s in split_sentences(text):
        if len(s.split()) <= min_fragment_words:
            if sentences:
                sentences[-1] = sentences[-1] + " " + s
            else:
                pending = (pending + " " + s).strip()
            continue
        sentences.append((pending + " " + s).strip() if pending else s)
        pending = ""
    if pending:
        sentences.append(pending)
    return [" ".join(sentences[i : i + sentences_per_strip]) for i in range(0, len(sentences), sentences_per_strip)]


def fixed_num(text: str, window: int = 50, min_tail: int = 10) -> list[str]:
    """Split text into windows of ``window`` words; a tail under ``min_tail`` words joins the previous window.

    Returns
    -------
    list of str
        The strips, in order; together they hold every word of ``text``.
    """
    words = text.split()
    strips = [words[i : i + window] for i in range(0, len(words), window)]
    if len(strips) > 1 and len(strips[-1]) < min_tail:
        strips[-2].extend(strips.pop())
    return [" ".join(s) for s in strips]


def decompose(text: str, mode: str = "excerption") -> list[str]:
    """Decompose one passage into strips with the named mode.

    Parameters
    ----------
    text : str
    mode : {"excerption", "fixed_num", "selection"}
        ``selection`` keeps the whole passage as one strip.
    """
    if mode == "excerption":
        return excerption(text)
    if mode == "fixed_num":
        return fixed_num(text)
    if mode == "selection":
        t = " ".join(text.split())
        return [t] if t else []
    raise ValueError(f"unknown strip mode {mode!r}: choose from {', '.join(STRIP_MODES)}")


def select_strips(strips: Sequence[Strip], top_k: int, threshold: float) -> list[Strip]:
    """Keep the ``top_k`` best strips scoring at least ``threshold``, back in original order.

    Ties in score keep the earlier strip.
    """
    eligible = [s for s in strips if s.score >= threshold]
    best = sorted(eligible, key=lambda s: (-s.score, s.position))[: max(top_k, 0)]
    return sorted(best, key=lambda s: s.position)


def strip_pieces(sources: Sequence[KnowledgeSource], mode: str) -> list[tuple[str, KnowledgeSource, tuple[int, int]]]:
    """Every strip of ``sources`` as ``(text, source, (source index, strip index))``, in order."""
    return [(text, src, (si, ti)) for si, src in enumerate(sources) for ti, text in enumerate(decompose(src.text, mode))]


def refine(
    question: str,
    sources: Sequence[KnowledgeSource],
    evaluator: Evaluator,
    mode: str = "excerption",
    top_k: int = 5,
    threshold: float = -0.5,
) -> list[Strip]:
    """Decompose ``sources``, score every strip against ``question`` in one batched call, and select.

    Returns
    -------
    list of Strip
        At most ``top_k`` strips, in original order.
    """
    pieces = strip_pieces(sources, mode)
    if not pieces:
        return []
    scores = evaluator.score([(question, text) for text, _, _ in pieces])
    strips = [Strip(text, src.id, src.title, pos, score) for (text, src, pos), score in zip(pieces, scores)]
    return select_strips(strips, top_k, threshold)
