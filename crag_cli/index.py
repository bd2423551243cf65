"""The local BM25 index: build (atomically, with a manifest), load, search.

The scoring is Okapi BM25 as in rank-bm25's ``BM25Okapi`` (k1=1.5, b=0.75,
term frequency saturated as ``tf·(k1+1) / (tf + k1·(1-b+b·|d|/avgdl))``,
idf ``log((N-df+0.5)/(df+0.5))``), computed by bm25s (``method="atire"`` for the
term-frequency part, ``idf_method="robertson"``). The one difference: a term in
more than half of the passages gets idf 0 here, where rank-bm25 gives it
``0.25 × mean idf``.

On disk an index is a directory::

    manifest.json       format version, tokenizer settings, counts, source files
    passages.jsonl      one Passage per line, in index order
    passages.offsets.npy  where each line starts (int64 byte offsets, one more than passages)
    bm25/               the bm25s score matrix and vocabulary

A loaded index keeps neither the passages nor the score matrix in memory: the
matrix is memory-mapped and a passage is read from ``passages.jsonl`` when a
search returns it, so a process's memory does not grow with the collection.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Protocol, Sequence, overload

from . import files
from .corpus import Passage, list_files, read_files, split_passages
from .errors import CragError

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
PASSAGES = "passages.jsonl"
PASSAGE_OFFSETS = "passages.offsets.npy"
BM25_DIR = "bm25"
INDEX_ENTRIES = frozenset({MANIFEST, PASSAGES, PASSAGE_OFFSETS, BM25_DIR})  # everything crag writes into an index folder


class IndexUnusableError(CragError):
    """The index is missing, corrupt, or cannot be built."""




@dataclass(frozen=True)
class TokenizerSettings:
    """How text becomes BM25 tokens; stored in the manifest and reused for every query."""

    lower: bool = True
    splitter: str = r"(?u)\b\w\w+\b"
    stopwords: str = "en"
    stemmer: str | None = "english"

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """Tokenize texts exactly as bm25s does with these settings.

        Parameters
        ----------
        texts : sequence of str

        Returns
        -------
        list of list of str
            One list of (stemmed, lower-cased, stopword-free) tokens per text.
        """
        return [list(tokens) for tokens in self._bm25s(texts, return_ids=False)]

    def tokenize_ids(self, texts: Sequence[str]):
        """Tokenize as :meth:`tokenize` does, as bm25s's compact ``Tokenized`` (token ids and their vocabulary).

        What the index is built from: a few bytes per token rather than one
        Python string each, so a million passages tokenize in memory.
        """
        return self._bm25s(texts, return_ids=True)

    def _bm25s(self, texts: Sequence[str], return_ids: bool):
        import bm25s

        return bm25s.tokenize(
            list(texts), lower=self.lower, token_pattern=self.splitter, stopwords=self.stopwords,
            stemmer=_stemmer(self.stemmer), return_ids=return_ids, show_progress=False,
        )  # fmt: skip

    def check(self) -> None:
        """Raise ``ValueError`` when these settings cannot tokenize (unknown stemmer, bad pattern, ...)."""
        import re

        import Stemmer

        if not isinstance(self.lower, bool):
            raise ValueError(f"lower must be true or false, not {self.lower!r}")
        if not isinstance(self.splitter, str):
            raise ValueError(f"splitter must be a regular expression, not {self.splitter!r}")
        try:
            re.compile(self.splitter)
        except re.error as exc:
            raise ValueError(f"splitter {self.splitter!r} is not a regular expression ({exc})") from None
        if self.stemmer is not None and self.stemmer not in Stemmer.algorithms():
            raise ValueError(f"unknown stemmer {self.stemmer!r}")
        try:
            self.tokenize(["a check of the stop words"])
        except Exception as exc:
            raise ValueError(f"stopwords {self.stopwords!r} do not work ({type(exc).__name__}: {exc})") from None


_STEMMERS: dict[str, object] = {}


def _stemmer(name: str | None):
    if name is None:
        return None
    if name not in _STEMMERS:
        import Stemmer

        _STEMMERS[name] = Stemmer.Stemmer(name)
    return _STEMMERS[name]


@dataclass(frozen=True)
class BM25Params:
    k1: float = 1.5
    b: float = 0.75
    method: str = "atire"
    idf_method: str = "robertson"


@dataclass(frozen=True)
class Hit:
    """One retrieved passage with its BM25 score and 1-based rank."""

    passage: Passage
    score: float
    rank: int


class Retriever(Protocol):
    """Anything that returns the top-k passages for a question."""

    def search(self, query: str, k: int) -> list[Hit]: ...


class NoIndex:
    """The retriever of the ``no-retrieval`` baseline: no index, nothing found."""

    manifest: dict = {}

    def search(self, query: str, k: int) -> list[Hit]:
        return []


@dataclass
class BuildReport:
    status: str  # "built" or "unchanged"
    passages: int
    documents: int
    files: int
    skipped: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    hidden: list[str] = field(default_factory=list)  # hidden files and folders left out
    indexes: list[str] = field(default_factory=list)  # index folders inside the documents, left out
    cleaned: int = 0  # temporaries of killed runs removed


def _fingerprint(sources: list[dict], passage_words: int, tok: TokenizerSettings, params: BM25Params) -> dict:
    return {
        "format_version": FORMAT_VERSION,
        "passage_words": passage_words,
        "tokenizer": asdict(tok),
        "bm25": asdict(params),
        "sources": sources,
    }


def is_crag_index(path: Path) -> bool:
    """Whether ``path`` is a folder crag wrote as an index.

    That is: a real folder (not a link) holding only ``manifest.json`` (a JSON object
    with crag's format version, passage count, tokenizer and sources),
    ``passages.jsonl``, ``passages.offsets.npy`` and ``bm25/`` (bm25s's ``*.index.npy`` / ``*.index.json``
    files). This is the only kind of folder ``crag index`` replaces; one holding
    anything else (a user's file dropped into it, a web app's own
    ``manifest.json``) is never touched.
    """
    path = Path(path)
    try:
        if path.is_symlink() or not path.is_dir():
            return False
        entries = {entry.name: entry for entry in os.scandir(path)}
        if MANIFEST not in entries or not set(entries) <= INDEX_ENTRIES:
            return False
        if not entries[MANIFEST].is_file(follow_symlinks=False):
            return False
        for name in (PASSAGES, PASSAGE_OFFSETS):
            if name in entries and not entries[name].is_file(follow_symlinks=False):
                return False
        if BM25_DIR in entries:
            if not entries[BM25_DIR].is_dir(follow_symlinks=False):
                return False
            for entry in os.scandir(path / BM25_DIR):
                if not (entry.is_file(follow_symlinks=False) and entry.name.endswith((".index.npy", ".index.json"))):
                    return False
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(manifest, dict)
        and isinstance(manifest.get("format_version"), int)
        and all(key in manifest for key in ("passage_count", "tokenizer", "sources"))
        and str(manifest.get("created_by", "crag-cli")).startswith("crag-cli")
    )


def check_index_target(docs: Path, index_dir: Path) -> None:
    """Refuse an index location that would replace or delete anything crag did not write.

    Raises
    ------
    IndexUnusableError
        When ``index_dir`` is an existing file, an existing folder that is neither
        empty nor a crag index, the documents folder itself or one of its parents.
    """
    docs, index_dir = Path(docs), Path(index_dir)
    try:
        real_docs, real_index = docs.resolve(strict=False), index_dir.resolve(strict=False)
    except (OSError, RuntimeError) as exc:  # a symbolic link loop
        raise IndexUnusableError(f"cannot resolve {index_dir} or {docs}: {exc}") from None
    if real_index == real_docs or real_index in real_docs.parents:
        raise IndexUnusableError(
            f"the index folder {index_dir} would hold the documents {docs}: choose a folder outside them"
        )
    cwd = Path.cwd().resolve()
    if real_index == cwd or real_index in cwd.parents:
        raise IndexUnusableError(
            f"--index {index_dir} is the current folder or one of its parents: a rebuild replaces the index "
            "folder, so give one below it (such as --index .crag-index)"
        )
    if index_dir.is_symlink():
        raise IndexUnusableError(f"--index {index_dir} is a symbolic link: give the folder itself")
    if index_dir.exists() and not index_dir.is_dir():
        raise IndexUnusableError(f"--index {index_dir} is a file, not an index folder: crag leaves it alone")
    files.check_name_length(index_dir)
    if index_dir.is_dir() and not is_crag_index(index_dir):
        try:
            names = sorted(entry.name for entry in index_dir.iterdir())
        except OSError as exc:
            raise IndexUnusableError(f"cannot read --index {index_dir}: {exc.strerror or exc}") from None
        foreign = [n for n in names if n not in INDEX_ENTRIES] or names
        if names:
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            raise IndexUnusableError(
                f"--index {index_dir} is a folder that is not a crag index (it holds {shown}): "
                "crag replaces only its own index folders; choose a new or empty folder"
            )


def read_manifest(index_dir: Path) -> dict:
    """Read and check ``manifest.json``; raise :class:`IndexUnusableError` with a clear message."""
    path = Path(index_dir) / MANIFEST
    if not Path(index_dir).is_dir():
        raise IndexUnusableError(f"no index at {index_dir} (build one with: crag index DOCS --index {index_dir})")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise IndexUnusableError(f"{index_dir} is not a crag index (no {MANIFEST})") from None
    except (OSError, ValueError) as exc:
        raise IndexUnusableError(f"corrupt index at {index_dir}: cannot read {MANIFEST} ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format_version") != FORMAT_VERSION:
        found = manifest.get("format_version") if isinstance(manifest, dict) else None
        raise IndexUnusableError(
            f"index at {index_dir} has format version {found!r}, this crag reads {FORMAT_VERSION}: re-run crag index"
        )
    problem = _manifest_problem(manifest)
    if problem:
        raise IndexUnusableError(f"corrupt index at {index_dir}: {MANIFEST} {problem}; rebuild it with crag index --force")
    return manifest


def _manifest_problem(manifest: dict) -> str | None:
    """What makes a manifest unusable (missing or bad fields), or ``None``."""
    if not isinstance(manifest.get("passage_count"), int) or manifest["passage_count"] < 0:
        return "has no valid passage_count"
    if not isinstance(manifest.get("sources"), list):
        return "has no sources list"
    tok = manifest.get("tokenizer")
    if not isinstance(tok, dict):
        return "has no tokenizer settings"
    try:
        TokenizerSettings(**tok).check()
    except TypeError as exc:
        return f"has bad tokenizer settings ({exc})"
    except ValueError as exc:
        return f"has unusable tokenizer settings: {exc}"
    return None


def build_index(
    docs: Path,
    index_dir: Path,
    passage_words: int = 100,
    tokenizer: TokenizerSettings = TokenizerSettings(),
    params: BM25Params = BM25Params(),
    force: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    include_hidden: bool = False,
) -> BuildReport:
    """Read ``docs``, split into passages, and write a BM25 index to ``index_dir``.

    ``index_dir`` must be new, an empty folder or a crag index (see
    :func:`check_index_target`); it is never the documents folder or one of its
    parents. The index is written to a temporary folder beside it and renamed
    into place, so a crash never leaves a half-written index; temporaries of
    killed runs are removed. Hidden files and folders and index folders inside
    ``docs`` are left out (hidden ones are read with ``include_hidden``). When the
    manifest of the existing index lists the same files with the same sizes and
    sha256 and the same settings, nothing is parsed or rebuilt and the report's
    status is ``"unchanged"``.

    Raises
    ------
    IndexUnusableError
        When ``docs`` does not exist or yields no passage, or ``index_dir`` may not be written.
    """
    import bm25s

    from . import __version__

    start = time.perf_counter()
    shown = Path(index_dir)
    docs, index_dir = Path(docs), Path(os.path.abspath(index_dir))  # "." cannot be renamed onto; its full name can
    if not docs.exists():
        raise IndexUnusableError(f"no such folder: {docs}")
    check_index_target(docs, shown)
    cleaned = files.clean_stale(index_dir)
    listing = list_files(docs, include_hidden, exclude=[index_dir], is_index=is_crag_index)
    sources = []
    for path in listing.paths:
        size, sha256 = files.digest(path) or (-1, "")
        sources.append({"path": listing.rel(path), "size": size, "sha256": sha256})
    fingerprint = _fingerprint(sources, passage_words, tokenizer, params)
    left_out = {"hidden": listing.hidden, "indexes": listing.indexes, "cleaned": cleaned}
    if not force and is_crag_index(index_dir):
        try:
            old = read_manifest(index_dir)
        except IndexUnusableError:
            old = None
        if old is not None and all(old.get(k) == v for k, v in fingerprint.items()):
            skipped = [(s.get("path", "?"), s.get("reason", "?")) for s in old.get("skipped", []) if isinstance(s, dict)]
            return BuildReport(
                "unchanged", old.get("passage_count", 0), old.get("document_count", 0), len(listing.paths),
                skipped, time.perf_counter() - start, **left_out,
            )  # fmt: skip
    report = read_files(listing, progress=progress)
    passages: list[Passage] = []
    for doc in report.documents:
        passages.extend(split_passages(doc, passage_words))
    if not passages:
        raise IndexUnusableError(
            f"no documents to index in {docs} "
            f"({len(report.skipped)} file(s) skipped; supported: .txt .md .html .htm .jsonl)"
        )
    tokens = tokenizer.tokenize_ids([_index_text(p) for p in passages])
    retriever = bm25s.BM25(k1=params.k1, b=params.b, method=params.method, idf_method=params.idf_method)
    retriever.index(tokens, show_progress=False)
    del tokens

    try:
        index_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = files.temp_dir(index_dir)
    except OSError as exc:
        raise IndexUnusableError(f"cannot write the index at {shown}: {exc.strerror or exc}") from None
    old_dir = None
    try:
        retriever.save(str(tmp / BM25_DIR))
        write_passages(passages, tmp / PASSAGES, tmp / PASSAGE_OFFSETS)
        manifest = {
            **fingerprint,
            "passage_count": len(passages),
            "document_count": len(report.documents),
            "skipped": [{"path": p, "reason": r} for p, r in report.skipped],
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "created_by": f"crag-cli {__version__}",
            "docs": str(docs.resolve()),
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False), encoding="utf-8")
        if index_dir.is_dir():  # the user's empty folder, or the old index: the new one keeps its permissions
            os.chmod(tmp, index_dir.stat().st_mode & 0o777)
        if is_crag_index(index_dir):  # ours: set aside, replaced, then deleted
            old_dir = index_dir.parent / (files.temp_prefix(index_dir) + "old")
            os.replace(index_dir, old_dir)
        os.replace(tmp, index_dir)  # onto a new name or an empty folder; never onto anything else
    except OSError as exc:
        files.remove(tmp)
        if old_dir is not None and not index_dir.exists():
            os.replace(old_dir, index_dir)
        raise IndexUnusableError(f"cannot write the index at {shown}: {exc.strerror or exc}") from None
    except BaseException:
        files.remove(tmp)
        raise
    if old_dir is not None:
        files.remove(old_dir)
    return BuildReport(
        "built", len(passages), len(report.documents), len(listing.paths), report.skipped,
        time.perf_counter() - start, **left_out,
    )  # fmt: skip


def _index_text(p: Passage) -> str:
    """What BM25 sees of a passage: its document title, then its text."""
    return f"{p.title}\n{p.text}" if p.title else p.text


def write_passages(passages: Sequence[Passage], path: Path, offsets_path: Path) -> None:
    """Write ``passages`` as JSON lines to ``path`` and where each line starts to ``offsets_path``.

    Parameters
    ----------
    passages : sequence of Passage
    path : Path
        The JSON-lines file, one passage per line, in order.
    offsets_path : Path
        A NumPy ``int64`` array of ``len(passages) + 1`` byte offsets: line ``i``
        is ``path``'s bytes ``offsets[i]:offsets[i + 1]``.
    """
    import numpy as np

    offsets = np.empty(len(passages) + 1, dtype=np.int64)
    offsets[0] = 0
    with open(path, "wb") as f:
        for i, p in enumerate(passages):
            line = (json.dumps(p.to_dict(), ensure_ascii=False) + "\n").encode("utf-8")
            f.write(line)
            offsets[i + 1] = offsets[i] + len(line)
    np.save(offsets_path, offsets)


def line_offsets(path: Path):
    """Byte offsets of the lines of ``path`` (and its size): for an index written before the offsets file."""
    import numpy as np

    starts = [0]
    with open(path, "rb") as f:
        for line in f:
            starts.append(starts[-1] + len(line))
    return np.asarray(starts, dtype=np.int64)


class PassageStore(Sequence[Passage]):
    """The passages of an index, read from disk when asked for: a read-only sequence of :class:`Passage`.

    Holds only the line offsets (memory-mapped) and an open file; ``store[i]``
    reads and parses line ``i`` (``os.pread``: safe from several threads).
    """

    def __init__(self, path: Path, offsets) -> None:
        self.path = Path(path)
        self._offsets = offsets
        self._fd = os.open(self.path, os.O_RDONLY)
        size = os.fstat(self._fd).st_size
        if len(offsets) < 1 or int(offsets[0]) != 0 or int(offsets[-1]) != size:
            os.close(self._fd)
            raise ValueError(f"{PASSAGE_OFFSETS} does not match {self.path.name} ({size} bytes)")

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, i: int) -> Passage: ...
    @overload
    def __getitem__(self, i: slice) -> list[Passage]: ...
    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"passage {i} of {n}")
        start, end = int(self._offsets[i]), int(self._offsets[i + 1])
        return Passage.from_dict(json.loads(os.pread(self._fd, end - start, start)))

    def __iter__(self) -> Iterator[Passage]:
        with os.fdopen(os.dup(self._fd), "rb") as f:  # the file __getitem__ reads, even if the path was replaced
            f.seek(0)
            for line in f:
                if line.strip():
                    yield Passage.from_dict(json.loads(line))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __getstate__(self):  # pickled (sent to a worker process): reopened there
        return {"path": self.path, "offsets": self._offsets}

    def __setstate__(self, state) -> None:
        self.__init__(state["path"], state["offsets"])


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


class BM25Index:
    """A loaded index: passages (read on demand) plus the memory-mapped bm25s retriever."""

    def __init__(self, path: Path, manifest: dict, passages: Sequence[Passage], retriever) -> None:
        self.path = Path(path)
        self.manifest = manifest
        self.passages = passages
        self.retriever = retriever
        self.tokenizer = TokenizerSettings(**manifest["tokenizer"])

    @classmethod
    def load(cls, path: Path) -> "BM25Index":
        """Load an index written by :func:`build_index`; a clear :class:`IndexUnusableError` if it is not usable.

        The score matrix and the passage offsets are memory-mapped, the passages
        read when asked for: loading takes about the same time at any size.
        """
        import bm25s
        import numpy as np

        path = Path(path)
        manifest = read_manifest(path)
        passages = None
        try:
            if (path / PASSAGE_OFFSETS).exists():
                offsets = np.load(path / PASSAGE_OFFSETS, mmap_mode="r")
            else:  # written before offsets were stored
                offsets = line_offsets(path / PASSAGES)
            passages = PassageStore(path / PASSAGES, offsets)
            retriever = bm25s.BM25.load(str(path / BM25_DIR), load_corpus=False, mmap=True, show_progress=False)
        except Exception as exc:
            if passages is not None:
                passages.close()
            raise IndexUnusableError(f"corrupt index at {path}: {type(exc).__name__}: {exc}") from None
        if len(passages) != manifest.get("passage_count") or retriever.scores.get("num_docs") != len(passages):
            passages.close()
            raise IndexUnusableError(f"corrupt index at {path}: passage count does not match the manifest")
        return cls(path, manifest, passages, retriever)

    def matched(self, query: str):
        """The passages that hold a query term, ascending, and their BM25 scores for ``query``.

        Only the score matrix's columns of the query's terms are read (a term
        asked twice counts twice, as in rank-bm25) and added per passage in
        float32, term after term, as bm25s adds them: the scores are bm25s's to
        the bit, and the work grows with how many passages hold the terms, not
        with the size of the collection.

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            Passage indices (int64, ascending) and their scores (float32).
        """
        import numpy as np

        ids = self.retriever.get_tokens_ids(self.tokenizer.tokenize([query])[0])
        if not ids:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        if self.retriever.nonoccurrence_array is not None:  # (a method that scores absent terms too)
            dense = self.retriever.get_scores_from_ids(ids)
            hit = np.flatnonzero(dense)
            return hit, dense[hit]
        s = self.retriever.scores
        indptr, indices, data = s["indptr"], s["indices"], s["data"]
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

    def scores(self, query: str):
        """BM25 score of every passage for ``query`` (a NumPy array in index order)."""
        import numpy as np

        tokens = [t for t in self.tokenizer.tokenize([query])[0] if t in self.retriever.vocab_dict]
        if not tokens:
            return np.zeros(len(self.passages), dtype=np.float32)
        return self.retriever.get_scores(tokens)

    def search(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best passages with a positive score, best first (ties keep index order)."""
        idx, val = self.matched(query)
        positive = val > 0
        idx, val = idx[positive], val[positive]
        best = top_k(val, k) if len(val) else []
        return [Hit(self.passages[int(idx[i])], float(val[i]), rank) for rank, i in enumerate(best, 1)]
