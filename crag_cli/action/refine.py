"""Knowledge refinement: decompose, filter, recompose (CRAG section 4.4).

Every kept passage (or web page) is decomposed into *strips*; every strip is
scored against the question by the evaluator (batched); the best ``top_k``
strips scoring at least the filter threshold are kept and recomposed in their
original document order.

"Best" is a ranking (``RANKINGS``). ``evaluator`` is the paper's: the
evaluator's score alone. ``fused`` joins it with the retrieval side's own order
by reciprocal rank fusion (Cormack et al. 2009, with their constant 60): a
local strip's retrieval rank is its passage's BM25 rank (then its place in the
passage), a web strip's its BM25 rank among the strips of the fetched pages. An
evaluator trained on one kind of text ranks another kind worse than BM25 does;
fusion keeps what retrieval found near the top when the evaluator is unsure
of a domain, and lets the evaluator reorder when it agrees.

Long pages are bounded: at most ``max_scored`` strips of a call are scored by
the evaluator, the best by BM25 within the pages (a cheap first pass).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..documents.passages import split_sentences
from ..evaluator import Evaluator
from .match import fold
from ..index.search import RRF_CONSTANT

STRIP_MODES = ("excerption", "fixed_num", "selection")
RANKINGS = ("fused", "evaluator")

# given the texts of the strips about to be scored: True when none of them can be read, whatever its score
Unread = Callable[[list[str]], bool]


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
    original document order. ``rank`` is the strip's place on the retrieval
    side (0 = first): the order of its passage and of the strip in it, or its
    BM25 rank among the strips of the fetched pages. ``support`` is the share
    of the question's term weight it holds, weighed by the index
    (:meth:`crag_cli.index.Retriever.text_support`), set before reading.
    """

    text: str
    source: str
    title: str
    position: tuple[int, int]
    score: float
    rank: int = 0
    support: float | None = None  # share of the question's term weight it holds (the index's weights); None: unknown

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


def fuse_ranks(scores: Sequence[float], ranks: Sequence[int], constant: int = RRF_CONSTANT) -> list[float]:
    """Reciprocal rank fusion of an evaluator's scores with a retrieval order.

    Parameters
    ----------
    scores : sequence of float
        Higher is better; ties are ranked in input order.
    ranks : sequence of int
        The retrieval side's order of the same items, 0 = first.
    constant : int
        RRF's k: each list adds ``1 / (k + rank)`` with 1-based ranks.

    Returns
    -------
    list of float
        The fused value of each item (higher is better).

    Examples
    --------
    The item second by score but first by retrieval comes first:

    >>> fused = fuse_ranks([0.9, 0.5, 0.1], [2, 0, 1])
    >>> sorted(range(3), key=lambda i: -fused[i])
    [1, 0, 2]
    """
    by_score = sorted(range(len(scores)), key=lambda i: -scores[i])
    score_rank = {i: r for r, i in enumerate(by_score)}
    return [1 / (constant + score_rank[i] + 1) + 1 / (constant + ranks[i] + 1) for i in range(len(scores))]


def strongest_first(strips: Sequence[Strip], ranking: str) -> list[Strip]:
    """``strips`` from the strongest: by the evaluator's score, or fused with their retrieval rank.

    A stable order: ties keep the input order.
    """
    if ranking == "evaluator":
        return sorted(strips, key=lambda s: -s.score)
    if ranking != "fused":
        raise ValueError(f"unknown ranking {ranking!r}: choose from {', '.join(RANKINGS)}")
    fused = fuse_ranks([s.score for s in strips], [s.rank for s in strips])
    return [strips[i] for i in sorted(range(len(strips)), key=lambda i: -fused[i])]


def distinct(strips: Sequence[Strip]) -> list[Strip]:
    """``strips`` without repeats: a strip whose text (spacing and case aside) an earlier one has is dropped.

    A folder often holds the same paragraph in two files; the copy tells the
    reader nothing new and takes the place of another strip.

    Examples
    --------
    >>> s = [Strip("A  b", "x", "", (0, 0), 0.9), Strip("a b", "y", "", (1, 0), 0.8), Strip("c", "y", "", (1, 1), 0.1)]
    >>> [x.source for x in distinct(s)]
    ['x', 'y']
    """
    seen: set[str] = set()
    kept = []
    for strip in strips:
        key = fold(strip.text)
        if key not in seen:
            seen.add(key)
            kept.append(strip)
    return kept


def within_words(strips: Sequence[Strip], max_words: int | None) -> list[Strip]:
    """The longest prefix of ``strips`` holding at most ``max_words`` words, and never less than the first strip.

    Parameters
    ----------
    strips : sequence of Strip
        In reading order.
    max_words : int or None
        ``None``: no bound.

    Examples
    --------
    >>> s = [Strip("a b c", "x", "", (0, 0), 0.9), Strip("d e", "x", "", (0, 1), 0.5), Strip("f", "x", "", (0, 2), 0.1)]
    >>> [x.text for x in within_words(s, 5)], [x.text for x in within_words(s, 2)]
    (['a b c', 'd e'], ['a b c'])
    """
    kept, words = [], 0
    for strip in strips:
        n = len(strip.text.split())
        if kept and max_words is not None and words + n > max_words:
            break
        kept.append(strip)
        words += n
    return kept


def select_strips(strips: Sequence[Strip], top_k: int, threshold: float, ranking: str) -> list[Strip]:
    """Keep the ``top_k`` strongest strips scoring at least ``threshold``, back in original order.

    Ties keep the earlier strip.
    """
    eligible = sorted((s for s in strips if s.score >= threshold), key=lambda s: s.position)
    return sorted(strongest_first(eligible, ranking)[: max(top_k, 0)], key=lambda s: s.position)


def lexical_scores(question: str, texts: Sequence[str]) -> np.ndarray:
    """BM25 of ``question`` against ``texts`` taken as their own collection (bm25s, crag's tokenizer).

    Lucene's variant (bm25s's default): its IDF, ``log(1 + (N - n + 0.5) / (n + 0.5))``,
    stays positive in a collection as small as a few pages, where Okapi's turns
    negative for a term in more than half of them.

    Parameters
    ----------
    question : str
    texts : sequence of str

    Returns
    -------
    numpy.ndarray
        One score per text; 0 where no query term occurs (and for every text
        when none has a term).
    """
    import bm25s

    from ..index import TokenizerSettings

    tokenizer = TokenizerSettings()
    corpus = tokenizer.tokenize(texts)
    query = tokenizer.tokenize([question])[0]
    if not query or not any(corpus):
        return np.zeros(len(texts))
    model = bm25s.BM25(method="lucene")
    model.index(corpus, show_progress=False)
    return np.asarray(model.get_scores(query), dtype=float)


def strip_pieces(sources: Sequence[KnowledgeSource], mode: str) -> list[tuple[str, KnowledgeSource, tuple[int, int]]]:
    """Every strip of ``sources`` as ``(text, source, (source index, strip index))``, in order."""
    return [
        (text, src, (si, ti)) for si, src in enumerate(sources) for ti, text in enumerate(decompose(src.text, mode))
    ]


def refine(
    question: str,
    sources: Sequence[KnowledgeSource],
    evaluator: Evaluator,
    mode: str,
    top_k: int,
    threshold: float,
    ranking: str,
    max_scored: int | None = None,
    lexical_rank: bool = False,
    unread: Unread | None = None,
) -> list[Strip]:
    """Decompose ``sources``, score their strips against ``question`` in one batched call, and select.

    Parameters
    ----------
    ranking : {"fused", "evaluator"}
        How the strongest strips are chosen (see :func:`strongest_first`).
    max_scored : int, optional
        Score at most this many strips: those with the best BM25 within
        ``sources`` (the others are dropped unscored).
    lexical_rank : bool
        The strips' retrieval rank is their BM25 order within ``sources`` (web
        pages) rather than their order in ``sources`` (retrieved passages, best first).
    unread : callable, optional
        Given the texts of the strips about to be scored, ``True`` when none of
        them can be read whatever its score: then none is scored and none kept.

    Returns
    -------
    list of Strip
        At most ``top_k`` strips, in original order.
    """
    pieces = strip_pieces(sources, mode)
    if not pieces:
        return []
    ranks = list(range(len(pieces)))
    if lexical_rank or (max_scored is not None and len(pieces) > max_scored):
        lexical = lexical_scores(question, [text for text, _, _ in pieces])
        by_lexical = sorted(range(len(pieces)), key=lambda i: -lexical[i])
        if lexical_rank:
            ranks = [0] * len(pieces)
            for r, i in enumerate(by_lexical):
                ranks[i] = r
        if max_scored is not None and len(pieces) > max_scored:
            chosen = sorted(by_lexical[:max_scored])  # in document order
            pieces, ranks = [pieces[i] for i in chosen], [ranks[i] for i in chosen]
    if unread is not None and unread([text for text, _, _ in pieces]):
        return []
    scores = evaluator.score([(question, text) for text, _, _ in pieces])
    strips = [
        Strip(text, src.id, src.title, pos, score, rank) for (text, src, pos), score, rank in zip(pieces, scores, ranks)
    ]
    return select_strips(strips, top_k, threshold, ranking)
