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
    bm25/               the bm25s score matrix and vocabulary
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Protocol, Sequence

from .errors import CragError
from .corpus import CorpusReport, Passage, read_folder, split_passages

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
PASSAGES = "passages.jsonl"
BM25_DIR = "bm25"


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
        import bm25s

        stemmer = _stemmer(self.stemmer)
        out = bm25s.tokenize(
            list(texts),
            lower=self.lower,
            token_pattern=self.splitter,
            stopwords=self.stopwords,
            stemmer=stemmer,
            return_ids=False,
            show_progress=False,
        )
        return [list(tokens) for tokens in out]


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


@dataclass
class BuildReport:
    status: str  # "built" or "unchanged"
    passages: int
    documents: int
    files: int
    skipped: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0


def _source_entries(report: CorpusReport) -> list[dict]:
    return [asdict(f) for f in report.files]


def _fingerprint(sources: list[dict], passage_words: int, tok: TokenizerSettings, params: BM25Params) -> dict:
    return {
        "format_version": FORMAT_VERSION,
        "passage_words": passage_words,
        "tokenizer": asdict(tok),
        "bm25": asdict(params),
        "sources": sources,
    }


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
    return manifest


def build_index(
    docs: Path,
    index_dir: Path,
    passage_words: int = 100,
    tokenizer: TokenizerSettings = TokenizerSettings(),
    params: BM25Params = BM25Params(),
    force: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> BuildReport:
    """Read ``docs``, split into passages, and write a BM25 index to ``index_dir``.

    The index is written to a temporary directory beside ``index_dir`` and renamed
    into place, so a crash never leaves a half-written index. When the manifest of
    an existing index matches the folder (same files, sizes and sha256, same
    settings), nothing is rebuilt and the report's status is ``"unchanged"``.

    Raises
    ------
    IndexUnusableError
        When ``docs`` does not exist or yields no passage.
    """
    import bm25s

    start = time.perf_counter()
    docs, index_dir = Path(docs), Path(index_dir)
    if not docs.exists():
        raise IndexUnusableError(f"no such folder: {docs}")
    report = read_folder(docs, progress=progress)
    fingerprint = _fingerprint(_source_entries(report), passage_words, tokenizer, params)
    if not force and index_dir.exists():
        try:
            old = read_manifest(index_dir)
        except IndexUnusableError:
            old = None
        if old is not None and all(old.get(k) == v for k, v in fingerprint.items()):
            return BuildReport(
                "unchanged", old.get("passage_count", 0), old.get("document_count", 0), len(report.files),
                report.skipped, time.perf_counter() - start,
            )  # fmt: skip
    passages: list[Passage] = []
    for doc in report.documents:
        passages.extend(split_passages(doc, passage_words))
    if not passages:
        raise IndexUnusableError(
            f"no documents to index in {docs} "
            f"({len(report.skipped)} file(s) skipped; supported: .txt .md .html .htm .jsonl)"
        )
    tokens = tokenizer.tokenize([_index_text(p) for p in passages])
    retriever = bm25s.BM25(k1=params.k1, b=params.b, method=params.method, idf_method=params.idf_method)
    retriever.index(tokens, show_progress=False)

    index_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{index_dir.name}.tmp-", dir=index_dir.parent))
    try:
        retriever.save(str(tmp / BM25_DIR))
        with open(tmp / PASSAGES, "w", encoding="utf-8") as f:
            for p in passages:
                f.write(json.dumps(p.to_dict(), ensure_ascii=False) + "\n")
        manifest = {
            **fingerprint,
            "passage_count": len(passages),
            "document_count": len(report.documents),
            "skipped": [{"path": p, "reason": r} for p, r in report.skipped],
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "docs": str(docs.resolve()),
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False), encoding="utf-8")
        old_dir = None
        if index_dir.exists():
            old_dir = index_dir.parent / f".{index_dir.name}.old-{os.getpid()}"
            os.replace(index_dir, old_dir)
        os.replace(tmp, index_dir)
        if old_dir is not None:
            shutil.rmtree(old_dir, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return BuildReport(
        "built", len(passages), len(report.documents), len(report.files), report.skipped, time.perf_counter() - start
    )


def _index_text(p: Passage) -> str:
    """What BM25 sees of a passage: its document title, then its text."""
    return f"{p.title}\n{p.text}" if p.title else p.text


class BM25Index:
    """A loaded index: passages plus the bm25s retriever, queried with the manifest's tokenizer."""

    def __init__(self, path: Path, manifest: dict, passages: list[Passage], retriever) -> None:
        self.path = Path(path)
        self.manifest = manifest
        self.passages = passages
        self.retriever = retriever
        self.tokenizer = TokenizerSettings(**manifest["tokenizer"])

    @classmethod
    def load(cls, path: Path) -> "BM25Index":
        """Load an index written by :func:`build_index`; a clear :class:`IndexUnusableError` if it is not usable."""
        import bm25s

        path = Path(path)
        manifest = read_manifest(path)
        try:
            with open(path / PASSAGES, encoding="utf-8") as f:
                passages = [Passage.from_dict(json.loads(line)) for line in f if line.strip()]
            retriever = bm25s.BM25.load(str(path / BM25_DIR), load_corpus=False)
        except Exception as exc:
            raise IndexUnusableError(f"corrupt index at {path}: {type(exc).__name__}: {exc}") from None
        if len(passages) != manifest.get("passage_count") or retriever.scores.get("num_docs") != len(passages):
            raise IndexUnusableError(f"corrupt index at {path}: passage count does not match the manifest")
        return cls(path, manifest, passages, retriever)

    def scores(self, query: str):
        """BM25 score of every passage for ``query`` (a NumPy array in index order)."""
        import numpy as np

        tokens = [t for t in self.tokenizer.tokenize([query])[0] if t in self.retriever.vocab_dict]
        if not tokens:
            return np.zeros(len(self.passages), dtype=np.float32)
        return self.retriever.get_scores(tokens)

    def search(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best passages with a positive score, best first (ties keep index order)."""
        import numpy as np

        scores = self.scores(query)
        k = min(k, len(self.passages))
        if k <= 0:
            return []
        order = np.argsort(-scores, kind="stable")[:k]
        return [
            Hit(self.passages[i], float(scores[i]), rank)
            for rank, i in enumerate((int(i) for i in order if scores[i] > 0), 1)
        ]
