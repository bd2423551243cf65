"""What an index is on disk: its files, its manifest, its tokenizer, and the retriever's types."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Sequence

from .. import files
from .bm25 import FILES as TERM_FILES
from ..documents.passages import Passage
from ..errors import CragError, one_line
from .dense import DENSE_DIR
from .dense import FILES as DENSE_FILES

if TYPE_CHECKING:  # numpy is imported where it is used (a CLI that only parses flags never loads it)
    pass


FORMAT_VERSION = 3  # 3: Lucene's idf; 2: Robertson's (its term counts are reused); 1: no term counts
REUSABLE_VERSIONS = (2, FORMAT_VERSION)  # indexes whose passages and term counts a rebuild takes over
MANIFEST = "manifest.json"
PASSAGES = "passages.jsonl"
PASSAGE_OFFSETS = "passages.offsets.npy"
BM25_DIR = "bm25"
INDEX_ENTRIES = frozenset(
    {MANIFEST, PASSAGES, PASSAGE_OFFSETS, BM25_DIR, DENSE_DIR}
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
    """One retrieved passage with its BM25 score and 1-based rank (among every passage holding a question term;
    one holding none ranks after them all).

    ``support`` is the share of the question's term weight that the passage
    holds (:func:`crag_cli.index.bm25.term_support`), or ``None`` where the retriever
    does not say; the action trigger reads it (:func:`crag_cli.action.trigger.decide`).
    """

    passage: Passage
    score: float
    rank: int
    support: float | None = None
    cosine: float | None = None  # the question's cosine with the passage (the dense part), where the index has one
    dense_rank: int | None = None  # its 1-based rank by that cosine over the whole index


class Retriever(Protocol):
    """Anything that returns the top-k passages for a question, and weighs how much of it other text holds.

    ``manifest`` describes the index (a batch's resume identity holds it; empty when there is none).
    """

    manifest: dict

    def search(self, query: str, k: int) -> list[Hit]: ...

    def text_support(self, query: str, texts: Sequence[str]) -> list[float] | None:
        """The share of ``query``'s term weight each text holds, as :attr:`Hit.support` weighs it (``None``: it
        cannot say)."""
        ...


class NoIndex:
    """The retriever of the ``no-retrieval`` baseline: no index, nothing found."""

    manifest: dict = {}

    def search(self, query: str, k: int) -> list[Hit]:
        return []

    def text_support(self, query: str, texts: Sequence[str]) -> list[float] | None:
        return None


def is_crag_index(path: Path) -> bool:
    """Whether ``path`` is a folder crag wrote as an index.

    That is: a real folder (not a link) holding only ``manifest.json`` (a JSON object
    with crag's format version, passage count, tokenizer and sources),
    ``passages.jsonl``, ``passages.offsets.npy``, ``bm25/`` (the term matrix's
    files, or the ``*.index.npy`` / ``*.index.json`` files of bm25s that format 1
    wrote) and ``dense/`` (the passages' vectors). This is the only kind of folder ``crag index`` replaces; one holding
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
        if DENSE_DIR in entries:  # the passages' vectors (crag_cli.index.dense)
            if not entries[DENSE_DIR].is_dir(follow_symlinks=False):
                return False
            for entry in os.scandir(path / DENSE_DIR):
                if not (entry.is_file(follow_symlinks=False) and entry.name in DENSE_FILES):
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


def read_manifest(index_dir: Path, versions: tuple[int, ...] = (FORMAT_VERSION,)) -> dict:
    """Read and check ``manifest.json`` (its format one of ``versions``); a clear :class:`IndexUnusableError` if not."""
    await_folder(index_dir)
    try:
        raw = (Path(index_dir) / MANIFEST).read_bytes()
    except FileNotFoundError:
        raise IndexUnusableError(f"{index_dir} is not a crag index (no {MANIFEST})") from None
    except OSError as exc:
        raise IndexUnusableError(f"corrupt index at {index_dir}: cannot read {MANIFEST} ({exc})") from None
    return check_manifest(index_dir, raw, versions)


def await_folder(index_dir: Path, seconds: float = 2.0) -> None:
    """Return once ``index_dir`` is a folder; :class:`IndexUnusableError` ("no index at") when it stays missing.

    A rebuild renames the old index aside, then the new one into place: between
    the two, for an instant, there is no folder. A missing folder is looked for
    again a few times; then an interrupted rebuild is recovered (under the
    index's lock, :func:`recover_index`); while another run holds that lock
    (a rebuild, or a process that opened it recovering it) it is waited for, up to ``seconds``.
    """
    from time import monotonic, sleep

    index_dir = Path(index_dir)
    deadline = monotonic() + seconds
    for _ in range(20):  # a rebuild between its two renames: gone in microseconds
        if index_dir.is_dir():
            return
        sleep(0.002)
    while not index_dir.is_dir():
        try:
            with files.Lock(index_dir, "index"):  # not while a build (or another process that opened it) recovers it
                recover_index(index_dir)
        except CragError:  # held (the lock file is there) and not for long: wait; else it cannot be locked
            if files.lock_path(index_dir).exists() and monotonic() < deadline:
                sleep(0.02)
                continue
        if not index_dir.is_dir():
            raise IndexUnusableError(f"no index at {index_dir} (build one with: crag index DOCS --index {index_dir})")


def check_manifest(index_dir: Path, raw: bytes, versions: tuple[int, ...] = (FORMAT_VERSION,)) -> dict:
    """The manifest ``raw`` (the bytes of ``index_dir``'s ``manifest.json``), checked; :class:`IndexUnusableError` if
    it is not JSON, of another format version than ``versions``, or lacks what a load needs."""
    try:
        manifest = json.loads(raw)
    except ValueError as exc:
        raise IndexUnusableError(f"corrupt index at {index_dir}: cannot read {MANIFEST} ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format_version") not in versions:
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
        except OSError:  # (a process without write access to the folder): left for crag index
            return None
        if new:
            files.remove(old)
            return "finished an interrupted rebuild"
        return "rolled back an interrupted rebuild to the previous index"
    return None


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
