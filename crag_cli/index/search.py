"""Searching an index: BM25 scores of the query's terms over the memory-mapped term matrix."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from .bm25 import TermMatrix
from ..documents.passages import Passage


if TYPE_CHECKING:  # numpy is imported where it is used (a CLI that only parses flags never loads it)
    pass


from .dense import RETRIEVALS
from .format import Hit, IndexUnusableError, TokenizerSettings, corrupt
from .load import load_index


def top_k(scores, k: int) -> list[int]:
    """Indices of the ``k`` highest ``scores``, highest first, ties in index order.

    The same as ``np.argsort(-scores, kind="stable")[:k]`` without sorting every
    score: the k-th highest is found by partition (linear time), and only the
    scores at or above it are sorted.

    Parameters
    ----------
    scores : numpy.ndarray
        One score per passage.
    k : int

    Returns
    -------
    list of int
    """
    import numpy as np

    n = len(scores)
    k = min(k, n)
    if k <= 0:
        return []
    if k == n:
        return [int(i) for i in np.argsort(-scores, kind="stable")]
    kth = np.partition(scores, n - k)[n - k]  # the k-th highest score
    candidates = np.flatnonzero(scores >= kth)  # in index order; ties at kth beyond k are cut below
    order = np.argsort(-scores[candidates], kind="stable")[:k]
    return [int(i) for i in candidates[order]]


FUSED_DEPTH = 50  # each retriever's passages that the fusion ranks


RRF_CONSTANT = 60  # Cormack, Clarke and Buettcher (SIGIR 2009): reciprocal rank fusion's k, not tuned here


def fuse(rankings: Sequence[Sequence[int]], k: int, constant: int = RRF_CONSTANT) -> list[int]:
    """Reciprocal-rank fusion: items by the sum of ``1 / (constant + rank)`` over the rankings that hold them.

    Ties keep the order in which the items first appear (the first ranking first).

    Examples
    --------
    >>> fuse([[1, 2, 3], [3, 4, 1]], 3)
    [1, 3, 2]
    """
    total: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            total[item] = total.get(item, 0.0) + 1.0 / (constant + rank)
    return sorted(total, key=lambda item: -total[item])[:k]


class BM25Index:
    """A loaded index: passages (read on demand), the memory-mapped term matrix and, where it has one, the dense
    part's vectors (searched by :meth:`fused` and :meth:`dense`; ``encoder`` embeds the question)."""

    def __init__(
        self, path: Path, manifest: dict, passages: Sequence[Passage], terms: TermMatrix, vectors=None, encoder=None
    ) -> None:
        self.path = Path(path)
        self.manifest = manifest
        self.passages = passages
        self.terms = terms
        self.term_id = {t: i for i, t in enumerate(terms.vocab)}
        self.tokenizer = TokenizerSettings(**manifest["tokenizer"])
        self.vectors = vectors
        self._encoder = encoder

    @property
    def has_dense(self) -> bool:
        """Whether the index has a dense part."""
        return self.vectors is not None

    @classmethod
    def load(cls, path: Path, encoder=None) -> "BM25Index":
        """Load an index written by :func:`build_index`; a clear :class:`IndexUnusableError` if it is not usable.

        The term matrix and the passage offsets are memory-mapped, the passages
        read when asked for: loading takes about the same time at any size, but
        for the checks of the arrays (bounds, order, finiteness: a pass over the
        term matrix, some 45 ms for a million passages). A rebuild that replaces
        the index meanwhile is no error: the load gets the old index or the new
        one, whole (:func:`.load.load_index`).
        """
        loaded = load_index(Path(path))
        index = cls(path, loaded.manifest, loaded.passages, loaded.terms, loaded.vectors, encoder)
        if len(index.term_id) != len(loaded.terms.vocab):
            loaded.passages.close()
            raise corrupt(index.path, "a term is twice in the vocabulary")
        return index

    def matched(self, query: str):
        """The passages that hold a query term, ascending, and their BM25 scores for ``query``.

        Only the term matrix's columns of the query's terms are read (a term
        asked twice counts twice, as in rank-bm25) and added per passage in
        float32, term after term (as bm25s adds them): the work grows with how
        many passages hold the terms, not with the size of the collection.

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            Passage indices (int64, ascending) and their scores (float32).
        """
        return self._matched(self.tokenizer.tokenize([query])[0])

    def _matched(self, tokens: Sequence[str]):
        """:meth:`matched` of a query's tokens."""
        import numpy as np

        ids = [self.term_id[t] for t in tokens if t in self.term_id]
        if not ids:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        indptr, indices, data = self.terms.indptr, self.terms.indices, self.terms.weights
        spans = [(int(indptr[t]), int(indptr[t + 1])) for t in ids]
        held = sum(b - a for a, b in spans)
        if held > len(self.passages) // 4:  # many: one dense array beats sorting them
            dense = np.zeros(len(self.passages), dtype=np.float32)
            for a, b in spans:  # a passage holds a term once: no index repeats within one +=
                dense[indices[a:b]] += data[a:b]
            hit = np.flatnonzero(dense)  # (a score that sums to exactly 0 is dropped by search anyway)
            return hit, dense[hit]
        hit = np.unique(np.concatenate([indices[a:b] for a, b in spans])).astype(np.int64)
        val = np.zeros(len(hit), dtype=np.float32)
        for a, b in spans:
            val[np.searchsorted(hit, indices[a:b])] += data[a:b]
        return hit, val

    def support(self, query: str, passages: Sequence[int]):
        """How much of ``query``'s term weight each of ``passages`` (indices) holds, in [0, 1].

        The query's distinct terms weigh their IDF in this index (a term no
        passage holds weighs the most); see :func:`crag_cli.index.bm25.term_support`.
        """
        return self._support(self.tokenizer.tokenize([query])[0], passages)

    def _support(self, tokens: Sequence[str], passages: Sequence[int]):
        """:meth:`support` of a query's tokens: each term's passages are a sorted column, searched, not scanned."""
        import numpy as np

        from .bm25 import term_support

        terms = list(dict.fromkeys(tokens))
        held = np.zeros((len(passages), len(terms)), dtype=bool)
        df = np.zeros(len(terms), dtype=np.int64)
        wanted = np.asarray(passages, dtype=np.int64)
        for j, term in enumerate(terms):
            column = self._column(term)
            df[j] = len(column)
            if len(column):
                at = np.minimum(np.searchsorted(column, wanted), len(column) - 1)
                held[:, j] = column[at] == wanted
        return term_support(held, df, len(self.passages))

    def _column(self, term: str):
        """The passages (indices, ascending) that hold ``term``; empty when none does."""
        t = self.term_id.get(term)
        if t is None:
            return self.terms.indices[:0]
        return self.terms.indices[int(self.terms.indptr[t]) : int(self.terms.indptr[t + 1])]

    def text_support(self, query: str, texts: Sequence[str]) -> list[float]:
        """How much of ``query``'s term weight each of ``texts`` holds, weighed as in this index (:meth:`support`).

        For text that is not an indexed passage (a web page's strip): the same
        weights make a strip's support comparable with a passage's, and a term
        the folder never names weighs the most.
        """
        import numpy as np

        from .bm25 import term_support

        terms = list(dict.fromkeys(self.tokenizer.tokenize([query])[0]))
        df = np.array([len(self._column(t)) for t in terms], dtype=np.int64)
        held = np.zeros((len(texts), len(terms)), dtype=bool)
        for i, tokens in enumerate(self.tokenizer.tokenize(list(texts)) if texts else []):
            present = set(tokens)
            held[i] = [t in present for t in terms]
        return [float(x) for x in term_support(held, df, len(self.passages))]

    def scores(self, query: str):
        """BM25 score of every passage for ``query`` (a NumPy float32 array in index order)."""
        import numpy as np

        dense = np.zeros(len(self.passages), dtype=np.float32)
        idx, val = self.matched(query)
        dense[idx] = val
        return dense

    def search(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best passages with a positive score, best first (ties keep index order).

        Raises
        ------
        IndexUnusableError
            When the index's files were damaged after it was built (a term matrix
            that points outside the passages, an unreadable passage line).
        """
        try:
            tokens = self.tokenizer.tokenize([query])[0]
            idx, val = self._matched(tokens)
            positive = val > 0
            idx, val = idx[positive], val[positive]
            best = top_k(val, k) if len(val) else []
            support = self._support(tokens, [int(idx[i]) for i in best])
            return [
                Hit(self.passages[int(idx[i])], float(val[i]), rank, float(sup))
                for rank, (i, sup) in enumerate(zip(best, support), 1)
            ]
        except (IndexError, ValueError, TypeError, OverflowError) as exc:
            raise corrupt(self.path, exc) from None

    def encoder(self):
        """What embeds a question for the dense part: the one given, else the encoder its manifest names."""
        if self._encoder is None:
            from .dense import DenseInfo, encoder_named

            info = DenseInfo.of(self.manifest)
            try:
                self._encoder = encoder_named(info.encoder if info is not None else "")
            except ValueError as exc:
                raise IndexUnusableError(f"{self.path}: {exc}") from None
        return self._encoder

    def cosines(self, query: str, rows: Sequence[int] | None = None):
        """The cosine of the question's embedding with every passage (or with ``rows``), float32."""
        from .dense import cosines

        return cosines(self.vectors, self.encoder().encode([query])[0], rows)

    def dense(self, query: str, k: int) -> list[Hit]:
        """The ``k`` passages nearest the question by cosine (the dense part), with their BM25 features."""
        return self.fused(query, k, ("dense",))

    def fused(self, query: str, k: int, by: Sequence[str] = ("bm25", "dense")) -> list[Hit]:
        """The ``k`` best passages by reciprocal-rank fusion (:func:`fuse`) of BM25's and the dense part's top
        :data:`FUSED_DEPTH` (``by``: the rankings fused; one of them alone is that retriever's top ``k``).

        Every hit carries both retrievers' evidence: its BM25 score, rank and support, its cosine and dense rank.
        An index without a dense part gives BM25's :meth:`search`.
        """
        import numpy as np

        if not self.has_dense:
            return self.search(query, k)
        self.encoder()  # (an encoder this crag does not know: its own error)
        try:
            tokens = self.tokenizer.tokenize([query])[0]
            idx, val = self._matched(tokens)
            positive = val > 0
            idx, val = idx[positive], val[positive]
            depth = max(k, FUSED_DEPTH) if len(by) > 1 else k
            lexical = [int(idx[i]) for i in top_k(val, depth)] if len(val) else []
            cos = self.cosines(query)
            nearest = top_k(cos, depth)
            rows = fuse([lexical if name == "bm25" else nearest for name in by], k)
            bm25 = dict(zip(idx.tolist(), val.tolist()))
            scores = np.array([bm25.get(r, 0.0) for r in rows], dtype=np.float32)
            bm25_rank = [int((val > s).sum()) + 1 if s > 0 else len(val) + 1 for s in scores]
            dense_rank = [int((cos > cos[r]).sum()) + 1 for r in rows]
            support = self._support(tokens, rows)
            return [
                Hit(self.passages[r], float(s), br, float(sup), float(cos[r]), dr)
                for r, s, br, sup, dr in zip(rows, scores, bm25_rank, support, dense_rank)
            ]
        except (IndexError, ValueError, TypeError, OverflowError) as exc:
            raise corrupt(self.path, exc) from None


class Retrieval:
    """An index as the pipeline searches it: by the retrievers the setting ``retrieval`` names.

    ``fused``: BM25 and the dense part by reciprocal rank (:meth:`BM25Index.fused`); ``bm25`` or ``dense``: that
    one alone. Every hit carries both retrievers' evidence where the index has a dense part; an index without one
    is searched by BM25 whatever is asked (:attr:`by` says what was used).
    """

    def __init__(self, index: BM25Index, retrieval: str) -> None:
        if retrieval not in RETRIEVALS:
            raise ValueError(f"unknown retrieval {retrieval!r}: choose from {', '.join(RETRIEVALS)}")
        self.index = index
        self.by = retrieval if index.has_dense else "bm25"

    @property
    def manifest(self) -> dict:
        return self.index.manifest

    @property
    def dense(self) -> bool:
        """Whether the hits carry the dense part's evidence (cosine, dense rank)."""
        return self.index.has_dense

    def search(self, query: str, k: int) -> list[Hit]:
        return self.index.fused(query, k, ("bm25", "dense") if self.by == "fused" else (self.by,))

    def text_support(self, query: str, texts: Sequence[str]) -> list[float]:
        return self.index.text_support(query, texts)
