"""BM25 from term counts: the index's term matrix, recomputable when passages come and go.

The index stores, for every term, the passages that hold it with how often
(``tf``) and the BM25 weight of that pair. The weight depends on the whole
collection (its size, the average passage length, how many passages hold the
term), so adding a file changes every weight; but the counts of the passages
already indexed do not change. Keeping the counts lets ``crag index`` add,
change or remove files without reading or tokenizing the others again: the
new passages' counts are joined to the old ones and every weight is
recomputed at once, in NumPy (bm25s, which tokenizes for crag, can only index
a whole collection at a time: xhluca/bm25s#5, #98).

The weights are those of bm25s's ``BM25(method="atire", idf_method="lucene")``
(Okapi BM25's term-frequency saturation, as rank-bm25's ``BM25Okapi``, with
Lucene's IDF), computed in the same floating-point steps; ``tests/test_bm25.py``
checks them against bm25s and rank-bm25. Lucene's IDF is positive for every term
a passage holds, so a folder of one or two passages retrieves them (Robertson's,
floored at 0, weighed a term held by half the passages or more at 0: a
one-passage index could never retrieve anything).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

VOCAB = "vocab.json"
INDPTR = "indptr.npy"
INDICES = "indices.npy"
TF = "tf.npy"
WEIGHTS = "weights.npy"
FILES = frozenset({VOCAB, INDPTR, INDICES, TF, WEIGHTS})


@dataclass(frozen=True)
class BM25Params:
    """Okapi BM25's two constants (rank-bm25's and bm25s's defaults)."""

    k1: float = 1.5
    b: float = 0.75


def idf(df: np.ndarray, n: int) -> np.ndarray:
    """Lucene's idf, ``log(1 + (n - df + 0.5) / (df + 0.5))``: positive for every ``df <= n``.

    Parameters
    ----------
    df : numpy.ndarray
        Passages holding each term.
    n : int
        Passages in the collection.

    Returns
    -------
    numpy.ndarray
        float64, one per term; largest for a term no passage holds (``df`` 0).

    Examples
    --------
    A term held by the only passage of a collection still counts:

    >>> round(float(idf(np.array([1]), 1)[0]), 4)
    0.2877
    """
    df = np.asarray(df, dtype=np.float64)
    return np.log1p((n - df + 0.5) / (df + 0.5))


def weights(indptr: np.ndarray, indices: np.ndarray, tf: np.ndarray, n: int, params: BM25Params = BM25Params()):
    """BM25 weight of every stored (term, passage) count of a term-major matrix.

    ``idf(term) · tf·(k1+1) / (tf + k1·(1 - b + b·|d|/avgdl))``, where ``|d|`` is
    the passage's number of tokens (the sum of its counts) and ``avgdl`` their
    mean over the ``n`` passages.

    Parameters
    ----------
    indptr : numpy.ndarray
        ``len(vocabulary) + 1`` offsets: term ``t``'s entries are ``indptr[t]:indptr[t+1]``.
    indices : numpy.ndarray
        The passage of each entry.
    tf : numpy.ndarray
        How often the term occurs in that passage (> 0).
    n : int
        Passages in the collection (those without any token included).
    params : BM25Params

    Returns
    -------
    numpy.ndarray
        float32 weights, one per entry, in the entries' order.
    """
    if n == 0 or len(tf) == 0:
        return np.zeros(len(tf), dtype=np.float32)
    lengths = np.bincount(indices, weights=tf, minlength=n)  # float64: exact for any realistic count
    avgdl = lengths.mean()
    df = np.diff(indptr)
    entry_idf = np.repeat(idf(df, n).astype(np.float32), df)  # bm25s keeps its idf in float32
    k1, b = params.k1, params.b
    out = np.empty(len(tf), dtype=np.float32)
    for start in range(0, len(tf), WEIGHT_BLOCK):  # a block at a time: the float64 steps of all would be 5 copies
        at = slice(start, start + WEIGHT_BLOCK)
        tf32 = tf[at].astype(np.float32)
        # bm25s: (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * l_d / l_avg)) with a float32 tf and a float64 norm
        norm = k1 * (1 - b + b * lengths[indices[at]] / avgdl)  # the same order of operations as bm25s
        tfc = (tf32 * (k1 + 1)).astype(np.float64) / (tf32.astype(np.float64) + norm)
        out[at] = (entry_idf[at].astype(np.float64) * tfc).astype(np.float32)
    return out


WEIGHT_BLOCK = 1 << 22  # entries weighed at a time (each step of it 32 MB of float64)


def count_terms(token_ids: Sequence[Sequence[int]], n_terms: int):
    """Passage-by-term counts of tokenized passages.

    Parameters
    ----------
    token_ids : sequence of sequence of int
        Each passage's token ids (a token repeated is counted again).
    n_terms : int
        Size of the vocabulary the ids index.

    Returns
    -------
    scipy.sparse.csr_matrix
        ``len(token_ids) × n_terms``, int32 counts, each row's terms sorted.
    """
    import scipy.sparse as sp

    lengths = np.fromiter((len(t) for t in token_ids), dtype=np.int64, count=len(token_ids))
    indptr = np.zeros(len(token_ids) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    flat = np.fromiter((i for t in token_ids for i in t), dtype=np.int32, count=int(indptr[-1]))
    m = sp.csr_matrix((np.ones(len(flat), dtype=np.int32), flat, indptr), shape=(len(token_ids), n_terms))
    m.sum_duplicates()
    return m


def term_support(held: np.ndarray, df: np.ndarray, n: int) -> np.ndarray:
    """The share of a query's term weight that each passage holds: lexical support for a retrieved passage.

    A term weighs its IDF in the collection (:func:`idf`), positive even for a
    term in most passages and largest for a term that no passage holds (a question about something the collection never
    names gets little support from any passage). A passage's support is the
    weight of the terms it holds over the weight of all the query's terms.

    Parameters
    ----------
    held : numpy.ndarray of bool, shape (passages, terms)
        Whether each passage holds each of the query's distinct terms.
    df : numpy.ndarray of int, shape (terms,)
        How many of the collection's passages hold each term.
    n : int
        Passages in the collection.

    Returns
    -------
    numpy.ndarray
        One value in [0, 1] per passage (0 for every passage of a query with no terms).

    Examples
    --------
    A rare term (1 passage of 100) weighs more than a common one (50 of 100):

    >>> s = term_support(np.array([[True, False], [False, True]]), np.array([1, 50]), 100)
    >>> [round(float(x), 2) for x in s]
    [0.86, 0.14]
    """
    held = np.asarray(held, dtype=bool)
    w = idf(df, n)
    total = w.sum()
    if held.size == 0 or total <= 0:
        return np.zeros(held.shape[0])
    return (held * w).sum(axis=1) / total


CHUNK = 1 << 22  # entries checked at a time


def ascending(arr: np.ndarray, strict: bool = True) -> bool:
    """Whether ``arr`` (one-dimensional, signed integers) ascends (``strict``: each value above the one before)."""
    for a in range(0, max(len(arr) - 1, 0), CHUNK):
        step = np.diff(arr[a : a + CHUNK + 1])
        if len(step) and (step.min() <= 0 if strict else step.min() < 0):
            return False
    return True


@dataclass
class TermMatrix:
    """The index's terms: vocabulary, and per term the passages holding it, with counts and BM25 weights.

    A term-major (CSC) matrix over ``n`` passages. Loaded memory-mapped, so a
    search reads only its terms' entries.
    """

    vocab: list[str]
    indptr: np.ndarray
    indices: np.ndarray
    tf: np.ndarray
    weights: np.ndarray
    n: int

    @classmethod
    def from_counts(cls, counts, vocab: list[str], params: BM25Params = BM25Params()) -> "TermMatrix":
        """From a passage-by-term count matrix (any scipy sparse format) and its vocabulary."""
        csc = counts.tocsc()
        csc.sum_duplicates()
        indptr = csc.indptr.astype(np.int64)
        indices = np.asarray(csc.indices, dtype=np.int32)  # (not copied when they are int32 already)
        tf = np.asarray(csc.data, dtype=np.int32)
        return cls(list(vocab), indptr, indices, tf, weights(indptr, indices, tf, csc.shape[0], params), csc.shape[0])

    def counts(self):
        """The passage-by-term counts as a ``scipy.sparse.csr_matrix`` (the inverse of :meth:`from_counts`)."""
        import scipy.sparse as sp

        csc = sp.csc_matrix(
            (np.asarray(self.tf), np.asarray(self.indices), np.asarray(self.indptr)), shape=(self.n, len(self.vocab))
        )
        return csc.tocsr()

    def save(self, folder: Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / VOCAB).write_text(
            json.dumps({"passages": self.n, "terms": self.vocab}, ensure_ascii=False), encoding="utf-8"
        )
        for name, arr in ((INDPTR, self.indptr), (INDICES, self.indices), (TF, self.tf), (WEIGHTS, self.weights)):
            np.save(folder / name, arr)

    @classmethod
    def load(cls, folder: Path, mmap: bool = True) -> "TermMatrix":
        """Load what :meth:`save` wrote; ``ValueError`` when the parts do not fit together (:meth:`check`)."""
        folder = Path(folder)
        mode = "r" if mmap else None
        arrays = [np.load(folder / name, mmap_mode=mode) for name in (INDPTR, INDICES, TF, WEIGHTS)]
        return cls.of_parts((folder / VOCAB).read_bytes(), arrays)

    @classmethod
    def of_parts(cls, vocab_json: bytes, arrays: Sequence[np.ndarray]) -> "TermMatrix":
        """The matrix of ``vocab.json``'s bytes and the arrays ``indptr``, ``indices``, ``tf``, ``weights``, checked."""
        meta = json.loads(vocab_json)
        if not isinstance(meta, dict) or not isinstance(meta.get("terms"), list):
            raise ValueError(f"{VOCAB} holds no list of terms")
        terms = cls(meta["terms"], *arrays, meta.get("passages"))
        terms.check()
        return terms

    def check(self) -> None:
        """Raise ``ValueError`` where the parts cannot be one term matrix (files damaged with a valid header).

        The vocabulary is strings, one per column (that they are distinct is
        checked where they are numbered); the column offsets ascend from 0 to
        the number of entries; every entry's passage is in ``[0, n)``, its count
        at least 1, its weight finite and not negative (format 2's can be 0).
        Vectorised, a chunk at a time (no copy of the arrays): some 45 ms for 23
        million entries (a million passages). Not checked: that a column's
        passages ascend.
        """
        vocab, indptr, indices, tf, w, n = self.vocab, self.indptr, self.indices, self.tf, self.weights, self.n
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"{VOCAB} has no valid passage count")
        if not all(isinstance(t, str) for t in vocab):
            raise ValueError(f"{VOCAB}'s terms are not all strings")
        for name, arr, kind in ((INDPTR, indptr, "i"), (INDICES, indices, "i"), (TF, tf, "i"), (WEIGHTS, w, "f")):
            if arr.ndim != 1 or arr.dtype.kind != kind:
                raise ValueError(f"{name} holds {arr.dtype} in {arr.ndim} dimension(s), not a list of numbers")
        if len(indptr) != len(vocab) + 1 or not len(indices) == len(tf) == len(w) == int(indptr[-1]):
            raise ValueError("the term matrix's parts do not fit together")
        if int(indptr[0]) != 0 or not ascending(indptr, strict=False):
            raise ValueError(f"{INDPTR} does not ascend from 0")
        for a in range(0, len(indices), CHUNK):
            i, f, x = indices[a : a + CHUNK], tf[a : a + CHUNK], w[a : a + CHUNK]
            if i.min() < 0 or i.max() >= n:
                raise ValueError(f"{INDICES} holds a passage outside 0..{n - 1}")
            if f.min() < 1:
                raise ValueError(f"{TF} holds a count below 1")
            if not (x.min() >= 0 and x.max() < np.inf):  # (NaN fails both)
                raise ValueError(f"{WEIGHTS} holds a weight that is negative or not a finite number")
