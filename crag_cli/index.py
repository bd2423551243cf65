"""The local BM25 index: build (atomically, with a manifest), load, search.

The scoring is Okapi BM25 as in rank-bm25's ``BM25Okapi`` (k1=1.5, b=0.75,
term frequency saturated as ``tf·(k1+1) / (tf + k1·(1-b+b·|d|/avgdl))``,
idf ``log((N-df+0.5)/(df+0.5))``), with bm25s's tokenizer and weights (see
:mod:`crag_cli.bm25`). The one difference: a term in more than half of the
passages gets idf 0 here, where rank-bm25 gives it ``0.25 × mean idf``.

On disk an index is a directory::

    manifest.json       format version, tokenizer settings, counts, source files
                        (each with its size, modification time, sha256 and passages)
    passages.jsonl      one Passage per line, in index order (the files' order)
    passages.offsets.npy  where each line starts (int64 byte offsets, one more than passages)
    bm25/               the term matrix: vocabulary, term counts and BM25 weights

A loaded index keeps neither the passages nor the term matrix in memory: the
matrix is memory-mapped and a passage is read from ``passages.jsonl`` when a
search returns it, so a process's memory does not grow with the collection.

A rebuild is incremental: the passages and term counts of files whose size and
sha256 are unchanged are taken from the old index, only new and changed files
are read and tokenized, and the BM25 weights are recomputed; the result is the
index a full build would write (``--force`` does a full build).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Protocol, Sequence, overload

from . import files, jsonl
from .bm25 import FILES as TERM_FILES
from .bm25 import BM25Params, TermMatrix, count_terms
from .corpus import READERS_VERSION, SUPPORTED_TEXT, Passage, list_files, read_file, split_passages
from .errors import CragError, one_line

if TYPE_CHECKING:  # numpy is imported where it is used (a CLI that only parses flags never loads it)
    import numpy as np

FORMAT_VERSION = 2  # 1: bm25s's score matrix without term counts (read by no crag since 2)
MANIFEST = "manifest.json"
PASSAGES = "passages.jsonl"
PASSAGE_OFFSETS = "passages.offsets.npy"
BM25_DIR = "bm25"
INDEX_ENTRIES = frozenset(
    {MANIFEST, PASSAGES, PASSAGE_OFFSETS, BM25_DIR}
)  # everything crag writes into an index folder


class IndexUnusableError(CragError):
    """The index is missing, corrupt, or cannot be built."""


def corrupt(where: Path, problem: Exception | str) -> IndexUnusableError:
    """The one message for an index damaged after it was built (found when it is read)."""
    what = f"{type(problem).__name__}: {one_line(problem)}" if isinstance(problem, Exception) else problem
    return IndexUnusableError(f"corrupt index at {where} ({what}): re-run crag index --force")


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
            list(texts),
            lower=self.lower,
            token_pattern=self.splitter,
            stopwords=self.stopwords,
            stemmer=_stemmer(self.stemmer),
            return_ids=return_ids,
            show_progress=False,
        )

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
    read: int = 0  # files read and tokenized
    reused: int = 0  # files whose passages and term counts came from the old index


def _fingerprint(passage_words: int, tok: TokenizerSettings, params: BM25Params) -> dict:
    """The settings an index was built with: an index with other settings is rebuilt."""
    return {
        "format_version": FORMAT_VERSION,
        "readers": READERS_VERSION,
        "passage_words": passage_words,
        "tokenizer": asdict(tok),
        "bm25": asdict(params),
    }


def _content(sources: list[dict]) -> list[tuple]:
    """What identifies the indexed files: path, size and sha256 of each, in order."""
    return [(s.get("path"), s.get("size"), s.get("sha256")) for s in sources if isinstance(s, dict)]


def is_crag_index(path: Path) -> bool:
    """Whether ``path`` is a folder crag wrote as an index.

    That is: a real folder (not a link) holding only ``manifest.json`` (a JSON object
    with crag's format version, passage count, tokenizer and sources),
    ``passages.jsonl``, ``passages.offsets.npy`` and ``bm25/`` (the term matrix's
    files, or the ``*.index.npy`` / ``*.index.json`` files of bm25s that format 1
    wrote). This is the only kind of folder ``crag index`` replaces; one holding
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
            for entry in os.scandir(path / BM25_DIR):  # crag's term matrix, or bm25s's files (format 1)
                name = entry.name
                if not (
                    entry.is_file(follow_symlinks=False)
                    and (name in TERM_FILES or name.endswith((".index.npy", ".index.json")))
                ):
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
        try:
            with files.Lock(index_dir, "index"):  # not while a build (or another reader) recovers it
                recover_index(index_dir)
        except CragError:
            pass
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
        raise IndexUnusableError(
            f"corrupt index at {index_dir}: {MANIFEST} {problem}; rebuild it with crag index --force"
        )
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


@dataclass
class _OldIndex:
    """An existing index whose passages and term counts a rebuild can take over."""

    manifest: dict
    sources: dict[str, dict]  # by path: size, sha256, passages [start, end), ...
    passages: "PassageStore"
    terms: TermMatrix


def _reusable(index_dir: Path, passage_words: int, tokenizer: TokenizerSettings) -> _OldIndex | None:
    """The old index at ``index_dir`` if its passages can be reused (same format, passage size and tokenizer)."""
    import numpy as np

    if not is_crag_index(index_dir):
        return None
    try:
        manifest = read_manifest(index_dir)
        if (
            manifest.get("passage_words") != passage_words
            or manifest.get("tokenizer") != asdict(tokenizer)
            or manifest.get("readers") != READERS_VERSION
        ):
            return None
        sources = {s["path"]: s for s in manifest["sources"]}
        terms = TermMatrix.load(index_dir / BM25_DIR)
        passages = PassageStore(index_dir / PASSAGES, np.load(index_dir / PASSAGE_OFFSETS, mmap_mode="r"))
    except Exception:  # unreadable in any way: a full build replaces it
        return None
    n = manifest["passage_count"]
    ranges_ok = all(
        isinstance(r := s.get("passages"), list) and len(r) == 2 and 0 <= r[0] <= r[1] <= n for s in sources.values()
    )
    if terms.n != n or len(passages) != n or not ranges_ok:
        passages.close()
        return None
    return _OldIndex(manifest, sources, passages, terms)


def _source_entry(path: Path, rel: str, previous: dict | None) -> dict:
    """``path``, ``size``, ``mtime_ns`` and ``sha256`` of a listed file.

    The sha256 is taken from ``previous`` (the old manifest's entry) when size and
    modification time are the same, as git and rsync do; otherwise the file is
    read and hashed. An unreadable file gets size -1.
    """
    try:
        st = os.stat(path)
    except OSError:
        return {"path": rel, "size": -1, "mtime_ns": 0, "sha256": ""}
    if previous and previous.get("size") == st.st_size and previous.get("mtime_ns") == st.st_mtime_ns:
        return {"path": rel, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": previous.get("sha256", "")}
    size, sha256 = files.digest(path) or (-1, "")
    return {"path": rel, "size": size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}


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
    ``docs`` are left out (hidden ones are read with ``include_hidden``).

    When the existing index lists the same files with the same sizes and sha256
    and the same settings, nothing is parsed or rebuilt and the report's status
    is ``"unchanged"``. Otherwise the passages and term counts of the files that
    are unchanged are taken from the existing index (when it has the same
    passage size and tokenizer), only the others are read and tokenized, and
    the BM25 weights are recomputed; ``force`` reads every file again. A file
    whose size and modification time are those in the manifest is not hashed
    again.

    Raises
    ------
    IndexUnusableError
        When ``docs`` does not exist or yields no passage, or ``index_dir`` may not be written.
    """
    start = time.perf_counter()
    shown = Path(index_dir)
    docs, index_dir = Path(docs), Path(os.path.abspath(index_dir))  # "." cannot be renamed onto; its full name can
    if not docs.exists():
        raise IndexUnusableError(f"no such folder: {docs}")
    check_index_target(docs, shown)
    try:
        index_dir.parent.mkdir(parents=True, exist_ok=True)  # the lock file lives beside the index
    except OSError as exc:
        raise IndexUnusableError(f"cannot write the index at {shown}: {exc.strerror or exc}") from None
    with files.Lock(index_dir, "index"):  # one writer per index: a second build is refused, naming the first
        recover_index(index_dir)  # (only ever puts back an index of crag's: the target checked above stays valid)
        return _build_locked(
            docs, index_dir, shown, passage_words, tokenizer, params, force, progress, include_hidden, start
        )


def recover_index(index_dir: Path) -> str | None:
    """Finish, or roll back, a rebuild that a killed run left between its two renames.

    A rebuild writes the new index to a temporary folder, renames the old index
    aside (``.NAME.crag-tmp-PID-old``), renames the new one into place, then
    deletes the old. A kill between the two renames leaves no index at
    ``index_dir``: when the run's new index is complete (it holds its manifest,
    written last) it is moved into place and the old one deleted; otherwise the
    old one is moved back. Only temporaries of processes that are gone are
    touched. Called by :func:`build_index` (under the index's lock) and when an
    index is read and missing.

    Returns
    -------
    str or None
        What was done, or ``None`` when there was nothing to recover.
    """
    index_dir = Path(os.path.abspath(index_dir))
    if index_dir.exists() or index_dir.is_symlink():
        return None
    stale = files.stale_temporaries(index_dir)
    for old in (p for p in stale if p.name.endswith("-old") and is_crag_index(p)):
        pid = old.name[: -len("-old")]
        new = [p for p in stale if p != old and p.name.startswith(pid + "-") and is_crag_index(p)]
        try:
            os.replace(new[0] if new else old, index_dir)
        except OSError:  # (a reader without write access to the folder): left for crag index
            return None
        if new:
            files.remove(old)
            return "finished an interrupted rebuild"
        return "rolled back an interrupted rebuild to the previous index"
    return None


def _build_locked(
    docs, index_dir, shown, passage_words, tokenizer, params, force, progress, include_hidden, start
) -> BuildReport:
    from .version import __version__

    cleaned = files.clean_stale(index_dir)
    listing = list_files(docs, include_hidden, exclude=[index_dir], is_index=is_crag_index)
    old = None if force else _reusable(index_dir, passage_words, tokenizer)
    try:
        previous = old.sources if old is not None else {}  # (--force, other settings: every file hashed)
        sources = [_source_entry(p, listing.rel(p), previous.get(listing.rel(p))) for p in listing.paths]
        settings = _fingerprint(passage_words, tokenizer, params)
        left_out = {"hidden": listing.hidden, "indexes": listing.indexes, "cleaned": cleaned}
        if (
            not force
            and old is not None
            and _content(old.manifest["sources"]) == _content(sources)
            and all(old.manifest.get(k) == v for k, v in settings.items())
        ):
            m = old.manifest
            skipped = [(s.get("path", "?"), s.get("reason", "?")) for s in m.get("skipped", []) if isinstance(s, dict)]
            return BuildReport(
                "unchanged",
                m.get("passage_count", 0),
                m.get("document_count", 0),
                len(listing.paths),
                skipped,
                time.perf_counter() - start,
                **left_out,
                reused=len(listing.paths),
            )
        return _write_index(
            docs,
            index_dir,
            shown,
            listing,
            sources,
            settings,
            old,
            tokenizer,
            params,
            passage_words,
            progress,
            start,
            left_out,
            __version__,
        )
    finally:
        if old is not None:
            old.passages.close()


def _write_index(
    docs,
    index_dir,
    shown,
    listing,
    sources,
    settings,
    old,
    tokenizer,
    params,
    passage_words,
    progress,
    start,
    left_out,
    version,
) -> BuildReport:
    """Gather every file's passages and term counts (reused or new), weigh, write and rename into place."""
    import numpy as np
    import scipy.sparse as sp

    pieces: list[range | list[Passage]] = []  # per file: a range of the old index's passages, or new passages
    skipped: list[tuple[str, str]] = [(rel, "unsupported file type") for rel in listing.unsupported]
    read = reused = documents = 0
    for done, (path, src) in enumerate(zip(listing.paths, sources), 1):
        prev = old.sources.get(src["path"]) if old is not None else None
        if (
            prev is not None
            and src["size"] >= 0
            and (prev.get("size"), prev.get("sha256")) == (src["size"], src["sha256"])
        ):
            pieces.append(range(*prev["passages"]))
            src_docs = int(prev.get("documents", 0))
            src_skipped = [tuple(x) for x in prev.get("skipped", [])]
            reused += 1
        else:

            def on_page(page: int, pages: int, rel: str = src["path"], at: int = done) -> None:  # a long PDF's
                if progress is not None:
                    progress(f"{rel} p. {page}/{pages}", at - 1, len(listing.paths))

            found, src_skipped, _ = read_file(path, src["path"], on_page)
            pieces.append([p for d in found for p in split_passages(d, passage_words)])
            src_docs = len(found)
            read += 1
        src.update(documents=src_docs, skipped=[list(x) for x in src_skipped])
        documents += src_docs
        skipped.extend(src_skipped)
        if progress is not None:
            progress(src["path"], done, len(listing.paths))
    total = sum(len(p) for p in pieces)
    if not total:
        raise IndexUnusableError(
            f"no documents to index in {docs} ({len(skipped)} file(s) skipped; supported: {SUPPORTED_TEXT})"
        )

    # term counts: the old index's rows for reused files, new rows (with new terms appended) for the others
    vocab = list(old.terms.vocab) if old is not None else []
    new = [p for piece in pieces if isinstance(piece, list) for p in piece]
    ids, local_vocab = ([], {}) if not new else tokenizer.tokenize_ids([_index_text(p) for p in new])
    term_id = {t: i for i, t in enumerate(vocab)}
    local = np.empty(len(local_vocab), dtype=np.int32)
    for token, i in local_vocab.items():
        local[i] = term_id.setdefault(token, len(term_id))
    vocab.extend(list(term_id)[len(vocab) :])
    new_counts = count_terms(ids, len(local_vocab))
    del ids
    new_counts = sp.csr_matrix(
        (new_counts.data, local[new_counts.indices], new_counts.indptr), shape=(len(new), len(vocab))
    )
    old_counts = None
    if old is not None:
        c = old.terms.counts()
        old_counts = sp.csr_matrix((c.data, c.indices, c.indptr), shape=(c.shape[0], len(vocab)))
    blocks, at = [], 0
    for piece in pieces:
        if isinstance(piece, range):
            blocks.append(old_counts[piece.start : piece.stop])
        else:
            blocks.append(new_counts[at : at + len(piece)])
            at += len(piece)
    counts = sp.vstack(blocks, format="csc") if len(blocks) > 1 else blocks[0].tocsc()
    live = np.flatnonzero(np.diff(counts.indptr))  # terms only the removed or changed files held are dropped
    if len(live) < len(vocab):
        counts, vocab = counts[:, live], [vocab[i] for i in live]
    terms = TermMatrix.from_counts(counts, vocab, params)
    del counts, blocks, new_counts, old_counts

    try:
        index_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = files.temp_dir(index_dir)
    except OSError as exc:
        raise IndexUnusableError(f"cannot write the index at {shown}: {exc.strerror or exc}") from None
    old_dir = None
    try:
        terms.save(tmp / BM25_DIR)
        at = 0
        for src, piece in zip(sources, pieces):
            src["passages"] = [at, at + len(piece)]
            at += len(piece)
        write_passages(pieces, tmp / PASSAGES, tmp / PASSAGE_OFFSETS, old.passages if old is not None else None)
        manifest = {
            **settings,
            "sources": sources,
            "passage_count": total,
            "document_count": documents,
            "skipped": [{"path": p, "reason": r} for p, r in skipped],
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "created_by": f"crag-cli {version}",
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
        "built",
        total,
        documents,
        len(listing.paths),
        skipped,
        time.perf_counter() - start,
        **left_out,
        read=read,
        reused=reused,
    )


def _index_text(p: Passage) -> str:
    """What BM25 sees of a passage: its document title, then its text."""
    return f"{p.title}\n{p.text}" if p.title else p.text


def write_passages(
    pieces: Sequence[range | Sequence[Passage]], path: Path, offsets_path: Path, old: "PassageStore | None" = None
) -> None:
    """Write passages as JSON lines to ``path`` and where each line starts to ``offsets_path``.

    Parameters
    ----------
    pieces : sequence of (range or sequence of Passage)
        In order: new passages, or a range of ``old``'s passages (copied as they
        are stored, without parsing).
    path : Path
        The JSON-lines file, one passage per line, in order.
    offsets_path : Path
        A NumPy ``int64`` array of ``passages + 1`` byte offsets: line ``i``
        is ``path``'s bytes ``offsets[i]:offsets[i + 1]``.
    old : PassageStore, optional
        The store the ranges refer to.
    """
    import numpy as np

    parts = [np.zeros(1, dtype=np.int64)]
    pos = 0
    with open(path, "wb") as f:
        for piece in pieces:
            if isinstance(piece, range):
                ends = old.copy_lines(piece.start, piece.stop, f)
                parts.append(ends + pos)
                pos += int(ends[-1]) if len(ends) else 0
                continue
            ends = np.empty(len(piece), dtype=np.int64)
            for i, p in enumerate(piece):
                line = (json.dumps(p.to_dict(), ensure_ascii=False) + "\n").encode("utf-8")
                f.write(line)
                pos += len(line)
                ends[i] = pos
            parts.append(ends)
    np.save(offsets_path, np.concatenate(parts))


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
        try:
            start, end = int(self._offsets[i]), int(self._offsets[i + 1])
            raw = os.pread(self._fd, end - start, start)
        except (ValueError, OSError, OverflowError) as exc:  # offsets that point nowhere
            raise corrupt(self.path, exc) from None
        return self._passage(raw)

    def _passage(self, raw: bytes) -> Passage:
        """One stored line as a passage; a damaged line is :func:`corrupt`."""
        try:
            return Passage.from_dict(jsonl.parse(raw))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:  # jsonl.BadLine among them
            raise corrupt(self.path, exc) from None

    def copy_lines(self, start: int, stop: int, out) -> "np.ndarray":
        """Write the stored lines of passages ``start:stop`` to the binary file ``out``, as they are.

        Returns where each copied line ends, counted from the first copied byte (int64).
        """
        import numpy as np

        a, b = int(self._offsets[start]), int(self._offsets[stop])
        for at in range(a, b, 1 << 24):
            out.write(os.pread(self._fd, min(1 << 24, b - at), at))
        return np.asarray(self._offsets[start + 1 : stop + 1], dtype=np.int64) - a

    def __iter__(self) -> Iterator[Passage]:
        with os.fdopen(os.dup(self._fd), "rb") as f:  # the file __getitem__ reads, even if the path was replaced
            f.seek(0)
            for line in f:
                if line.strip():
                    yield self._passage(line)

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
    """A loaded index: passages (read on demand) plus the memory-mapped term matrix."""

    def __init__(self, path: Path, manifest: dict, passages: Sequence[Passage], terms: TermMatrix) -> None:
        self.path = Path(path)
        self.manifest = manifest
        self.passages = passages
        self.terms = terms
        self.term_id = {t: i for i, t in enumerate(terms.vocab)}
        self.tokenizer = TokenizerSettings(**manifest["tokenizer"])

    @classmethod
    def load(cls, path: Path) -> "BM25Index":
        """Load an index written by :func:`build_index`; a clear :class:`IndexUnusableError` if it is not usable.

        The term matrix and the passage offsets are memory-mapped, the passages
        read when asked for: loading takes about the same time at any size.
        """
        import numpy as np

        path = Path(path)
        manifest = read_manifest(path)
        passages = None
        try:
            passages = PassageStore(path / PASSAGES, np.load(path / PASSAGE_OFFSETS, mmap_mode="r"))
            terms = TermMatrix.load(path / BM25_DIR)
        except Exception as exc:
            if passages is not None:
                passages.close()
            raise corrupt(path, exc) from None
        if len(passages) != manifest.get("passage_count") or terms.n != len(passages):
            passages.close()
            raise corrupt(path, "passage count does not match the manifest")
        return cls(path, manifest, passages, terms)

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
        import numpy as np

        ids = [self.term_id[t] for t in self.tokenizer.tokenize([query])[0] if t in self.term_id]
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
            idx, val = self.matched(query)
            positive = val > 0
            idx, val = idx[positive], val[positive]
            best = top_k(val, k) if len(val) else []
            return [Hit(self.passages[int(idx[i])], float(val[i]), rank) for rank, i in enumerate(best, 1)]
        except (IndexError, ValueError, TypeError, OverflowError) as exc:
            raise corrupt(self.path, exc) from None
