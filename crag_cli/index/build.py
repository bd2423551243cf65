"""Building an index: atomically, incrementally (unchanged files reused), safely (never over a folder crag did not write)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .. import files
from .bm25 import BM25Params, TermMatrix, count_terms
from ..documents.passages import Passage
from ..documents.types import PARSERS_VERSION, find, supported_text
from ..documents.folder import list_files, read_file, shown_name, split_documents

if TYPE_CHECKING:  # numpy is imported where it is used (a CLI that only parses flags never loads it)
    pass


from .format import (
    BM25_DIR,
    check_index_target,
    FORMAT_VERSION,
    REUSABLE_VERSIONS,
    MANIFEST,
    PASSAGE_OFFSETS,
    PASSAGES,
    IndexUnusableError,
    TokenizerSettings,
    is_crag_index,
    recover_index,
)
from .dense import DENSE_DIR, DenseInfo, Encoder, encoder_name, write_dense
from .load import load_index
from .store import PassageStore, _index_text, row_spans, write_passages


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
    embedded: int = 0  # passages embedded for the dense part (the others' vectors came from the old index)
    dense: str | None = None  # the encoder of the dense part; None when the index has none


def _fingerprint(passage_words: int, tok: TokenizerSettings, params: BM25Params) -> dict:
    """The settings an index was built with: an index with other settings is rebuilt."""
    return {
        "format_version": FORMAT_VERSION,
        "parsers": PARSERS_VERSION,
        "passage_words": passage_words,
        "tokenizer": asdict(tok),
        "bm25": asdict(params),
    }


def _content(sources: list[dict]) -> list[tuple]:
    """What identifies the indexed files: path, size, sha256 and (a plugin's) document type of each, in order."""
    return [_identity(s) for s in sources if isinstance(s, dict)]


def _identity(source: dict) -> tuple:
    """What a file's passages depend on: its path, size and sha256, and the plugin that read it (if one did)."""
    return (source.get("path"), source.get("size"), source.get("sha256"), source.get("document_type"))


@dataclass
class _OldIndex:
    """An existing index whose passages and term counts a rebuild can take over."""

    manifest: dict
    sources: dict[str, dict]  # by path: size, sha256, passages [start, end), ...
    passages: "PassageStore"
    terms: TermMatrix
    vectors: object = None  # the dense part's rows, when it has one

    def vectors_by(self, encoder: Encoder | None):
        """The old vectors when ``encoder`` made them (a rebuild copies them); else ``None``."""
        info = DenseInfo.of(self.manifest)
        return self.vectors if encoder is not None and info is not None and info.encoder == encoder.name else None


def _reusable(index_dir: Path, passage_words: int, tokenizer: TokenizerSettings) -> _OldIndex | None:
    """The old index at ``index_dir`` if its passages can be reused (same format, passage size and tokenizer)."""
    if not is_crag_index(index_dir):
        return None
    try:
        loaded = load_index(index_dir, REUSABLE_VERSIONS)  # checked: a damaged index is not carried over
    except Exception:  # unreadable in any way: a full build replaces it
        return None
    manifest, terms, passages, n = loaded.manifest, loaded.terms, loaded.passages, loaded.manifest["passage_count"]
    try:
        sources = {s["path"]: s for s in manifest["sources"]}
        usable = (
            manifest.get("passage_words") == passage_words
            and manifest.get("tokenizer") == asdict(tokenizer)
            and manifest.get("parsers", manifest.get("readers")) == PARSERS_VERSION  # "readers" before 0.2.0
            and len(set(terms.vocab)) == len(terms.vocab)
            and all(
                isinstance(r := s.get("passages"), list) and len(r) == 2 and 0 <= r[0] <= r[1] <= n
                for s in sources.values()
            )
        )
    except (TypeError, KeyError, AttributeError):  # a manifest's sources that are not what crag writes
        usable = False
    if not usable:
        passages.close()
        return None
    return _OldIndex(manifest, sources, passages, terms, loaded.vectors)


def _source_entry(path: Path, rel: str, previous: dict | None) -> dict:
    """``path``, ``size``, ``mtime_ns`` and ``sha256`` of a listed file, and the ``document_type`` that reads it
    when a plugin does (:mod:`crag_cli.documents.types`: its name and versions; a file of crag's own types has none).

    The sha256 is taken from ``previous`` (the old manifest's entry) when size and
    modification time are the same, as git and rsync do; otherwise the file is
    read and hashed. An unreadable file gets size -1.
    """
    found = find(path)
    typed = {"document_type": found.identity} if found is not None and found.identity is not None else {}
    try:
        st = os.stat(path)
    except OSError:
        return {"path": rel, "size": -1, "mtime_ns": 0, "sha256": "", **typed}
    if previous and previous.get("size") == st.st_size and previous.get("mtime_ns") == st.st_mtime_ns:
        sha256 = previous.get("sha256", "")
        return {"path": rel, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256, **typed}
    size, sha256 = files.digest(path) or (-1, "")
    return {"path": rel, "size": size, "mtime_ns": st.st_mtime_ns, "sha256": sha256, **typed}


def build_index(
    docs: Path,
    index_dir: Path,
    passage_words: int = 100,
    tokenizer: TokenizerSettings = TokenizerSettings(),
    params: BM25Params = BM25Params(),
    force: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    include_hidden: bool = False,
    encoder: Encoder | None = None,
) -> BuildReport:
    """Read ``docs``, split into passages, and write a BM25 index to ``index_dir``.

    With an ``encoder``, every passage is also embedded (the index's dense part,
    :mod:`crag_cli.index.dense`): only the new and changed files' passages when
    the old index's vectors are by the same encoder.

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
        job = _Build(
            docs, index_dir, shown, passage_words, tokenizer, params, force, progress, include_hidden, start, encoder
        )
        return _build_locked(job)


@dataclass(frozen=True)
class _Build:
    """One build as asked: the folders, the settings, and when it started."""

    docs: Path
    index_dir: Path  # absolute
    shown: Path  # as the user named it, for messages
    passage_words: int
    tokenizer: TokenizerSettings
    params: BM25Params
    force: bool
    progress: Callable | None
    include_hidden: bool
    start: float
    encoder: Encoder | None = None


def _build_locked(job: _Build) -> BuildReport:
    docs, index_dir, passage_words, tokenizer, force = (
        job.docs,
        job.index_dir,
        job.passage_words,
        job.tokenizer,
        job.force,
    )
    cleaned = files.clean_stale(index_dir)
    listing = list_files(docs, job.include_hidden, exclude=[index_dir], is_index=is_crag_index)
    old = None if force else _reusable(index_dir, passage_words, tokenizer)
    try:
        previous = old.sources if old is not None else {}  # (--force, other settings: every file hashed)
        sources = [_source_entry(p, listing.rel(p), previous.get(listing.rel(p))) for p in listing.paths]
        settings = _fingerprint(passage_words, tokenizer, job.params)
        left_out = {"hidden": listing.hidden, "indexes": listing.indexes, "cleaned": cleaned}
        if (
            not force
            and old is not None
            and _content(old.manifest["sources"]) == _content(sources)
            and all(old.manifest.get(k) == v for k, v in settings.items())
            and encoder_name(old.manifest) == (job.encoder.name if job.encoder is not None else None)
        ):
            m = old.manifest
            skipped = [(s.get("path", "?"), s.get("reason", "?")) for s in m.get("skipped", []) if isinstance(s, dict)]
            return BuildReport(
                "unchanged",
                m.get("passage_count", 0),
                m.get("document_count", 0),
                len(listing.paths),
                skipped,
                time.perf_counter() - job.start,
                **left_out,
                reused=len(listing.paths),
                dense=encoder_name(m),
            )
        return _write_index(job, listing, sources, settings, old, left_out)
    finally:
        if old is not None:
            old.passages.close()


def _gather(job: _Build, listing, sources: list[dict], old) -> tuple[list, list, int, int, int]:
    """Every file's passages: a range of the old index's for an unchanged file, else read and split.

    Returns the pieces (per file, in order), what was skipped and why, and the
    counts of files read and reused and of documents; ``sources`` gain each
    file's documents and skipped entries.
    """
    progress = job.progress
    pieces: list[range | list[Passage]] = []  # per file: a range of the old index's passages, or new passages
    skipped: list[tuple[str, str]] = [(rel, "unsupported file type") for rel in listing.unsupported] + listing.skipped
    read = reused = documents = 0
    for done, (path, src) in enumerate(zip(listing.paths, sources), 1):
        prev = old.sources.get(src["path"]) if old is not None else None
        name = shown_name(src["path"])  # passages, citations and messages name the file so; the manifest exactly
        if prev is not None and src["size"] >= 0 and _identity(prev) == _identity(src):
            pieces.append(range(*prev["passages"]))
            src_docs = int(prev.get("documents", 0))
            src_skipped = [tuple(x) for x in prev.get("skipped", [])]
            reused += 1
        else:

            def on_page(page: int, pages: int, rel: str = name, at: int = done) -> None:  # a long PDF's
                if progress is not None:
                    progress(f"{rel} p. {page}/{pages}", at - 1, len(listing.paths))

            new, src_docs, src_skipped = _read_source(path, src, name, on_page, job.passage_words)
            pieces.append(new)
            read += 1
        src.update(documents=src_docs, skipped=[list(x) for x in src_skipped])
        documents += src_docs
        skipped.extend(src_skipped)
        if progress is not None:
            progress(name, done, len(listing.paths))
    return pieces, skipped, read, reused, documents


def _terms(pieces: list, old, tokenizer: TokenizerSettings, params: BM25Params) -> TermMatrix:
    """The term counts and BM25 weights: the old index's rows for reused files, new rows (with new terms appended)
    for the others; terms no passage holds any more are dropped."""
    import numpy as np
    import scipy.sparse as sp

    vocab = list(old.terms.vocab) if old is not None else []
    new = [p for piece in pieces if isinstance(piece, list) for p in piece]
    ids, local_vocab = ([], {}) if not new else tokenizer.tokenize_ids([_index_text(p) for p in new])
    term_id = {t: i for i, t in enumerate(vocab)}
    local = np.empty(len(local_vocab), dtype=np.int32)
    for token in sorted(local_vocab):  # (bm25s numbers its terms in set order, which PYTHONHASHSEED changes)
        term_id.setdefault(token, len(term_id))
    for token, i in local_vocab.items():
        local[i] = term_id[token]
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
    blocks = []
    for old_rows, first, end in row_spans(pieces):
        m = old_counts if old_rows else new_counts
        blocks.append(m if (first, end) == (0, m.shape[0]) else m[first:end])  # (a whole matrix is not copied)
    counts = sp.vstack(blocks, format="csc") if len(blocks) > 1 else blocks[0].tocsc()
    live = np.flatnonzero(np.diff(counts.indptr))  # terms only the removed or changed files held are dropped
    order = sorted(live.tolist(), key=vocab.__getitem__)  # the terms sorted: a rebuild writes what a full build does
    if order != list(range(len(vocab))):
        counts, vocab = counts[:, order], [vocab[i] for i in order]
    return TermMatrix.from_counts(counts, vocab, params)


def _build_time() -> float:
    """Now, or ``SOURCE_DATE_EPOCH`` (the reproducible-builds convention) when it is set to a whole number."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    return int(epoch) if epoch.isdigit() else time.time()


def _write_index(job: _Build, listing, sources: list[dict], settings: dict, old, left_out: dict) -> BuildReport:
    """Gather every file's passages and term counts (reused or new), weigh, write and rename into place."""
    from ..version import __version__ as version

    docs, index_dir, shown = job.docs, job.index_dir, job.shown
    pieces, skipped, read, reused, documents = _gather(job, listing, sources, old)
    total = sum(len(p) for p in pieces)
    if not total:
        raise IndexUnusableError(
            f"no documents to index in {docs} ({len(skipped)} file(s) skipped; supported: {supported_text()})"
        )
    terms = _terms(pieces, old, job.tokenizer, job.params)

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
        dense, embedded = _dense(job, pieces, old, tmp / DENSE_DIR) if job.encoder is not None else (None, 0)
        manifest = {
            **settings,
            **({"dense": dense.to_dict()} if dense is not None else {}),
            "sources": sources,
            "passage_count": total,
            "document_count": documents,
            "skipped": [{"path": p, "reason": r} for p, r in skipped],
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(_build_time())),
            "created_by": f"crag-cli {version}",
            "docs": str(docs.resolve()),
        }
        # ASCII: a file name that is not UTF-8 is kept exactly, as JSON \u escapes (json.loads reads them back)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="ascii")
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
        time.perf_counter() - job.start,
        **left_out,
        read=read,
        reused=reused,
        embedded=embedded,
        dense=dense.encoder if dense is not None else None,
    )


def _dense(job: _Build, pieces: list, old, folder: Path) -> tuple[DenseInfo, int]:
    """The new index's dense part, written into ``folder``: unchanged files' rows copied when by this encoder."""
    new = [p for piece in pieces if isinstance(piece, list) for p in piece]

    def texts(is_old: bool, a: int, b: int) -> list[str]:
        return [_index_text(p) for p in (old.passages[a:b] if is_old else new[a:b])]

    reuse = old.vectors_by(job.encoder) if old is not None else None
    try:
        return write_dense(row_spans(pieces), texts, reuse, job.encoder, folder, job.progress)
    except (MemoryError, RuntimeError) as exc:
        if isinstance(exc, RuntimeError) and "can't allocate memory" not in str(exc):  # (torch's allocator says so)
            raise
        raise IndexUnusableError(
            "not enough memory to embed the passages: --no-dense indexes with BM25 alone"
        ) from None


def _read_source(path: Path, src: dict, name: str, on_page, words: int) -> tuple[list, int, list]:
    """Read a file whose manifest entry ``src`` (size, sha256) was taken before: its passages of ``words`` words,
    how many documents gave them, and what was skipped (a large text file is read while it is split).

    ``name`` is the file as passages and messages show it (:func:`crag_cli.documents.folder.shown_name`).

    The file is hashed again after it is read, so that the manifest's sha256 is
    that of the text indexed. A file that changed between the listing and the
    reading is read again, with its new size and sha256; one that changes
    again (being written) or cannot be read (gone) is skipped, and its entry's
    size -1 makes the next run read it whatever it holds then.
    """
    for _attempt in range(2):
        found, skipped, _ = read_file(path, name, on_page)
        passages, documents = split_documents(found, words, skipped)
        after = files.digest(path)
        if after is not None and after == (src["size"], src["sha256"]):
            return passages, documents, skipped
        src.update(_source_entry(path, src["path"], None))
    src.update(size=-1, mtime_ns=0, sha256="")
    if after is None:  # gone, or no longer readable: read_file's reason, when it says so
        own = [(rel, reason) for rel, reason in skipped if rel == name]
        return [], 0, own or [(name, "gone while it was being read")]
    return [], 0, [(name, "changed while it was being read (it is read again next time)")]
