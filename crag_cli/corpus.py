"""Read a folder of documents and split them into passages of about 100 words.

Supported files: ``.txt``, ``.md``, ``.html``/``.htm`` (main text through
readability-lxml), ``.jsonl`` (one document per line with ``id``, ``title``,
``text``). Every other file, every unreadable or non-UTF-8 file and every bad
JSONL line is reported in :attr:`CorpusReport.skipped`, never dropped silently.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from . import jsonl
from .files import LOCK_TAG

TEXT_SUFFIXES = {".txt", ".md"}
HTML_SUFFIXES = {".html", ".htm"}
JSONL_SUFFIXES = {".jsonl"}
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | JSONL_SUFFIXES


@dataclass(frozen=True)
class Document:
    """One source document."""

    id: str
    title: str
    text: str
    source: str


@dataclass(frozen=True)
class Passage:
    """A retrievable unit of about ``passage_words`` words; keeps its document's id and title."""

    id: str
    doc_id: str
    title: str
    text: str
    source: str = ""

    def to_dict(self) -> dict:
        return {"id": self.id, "doc_id": self.doc_id, "title": self.title, "text": self.text, "source": self.source}

    @classmethod
    def from_dict(cls, d: dict) -> "Passage":
        return cls(d["id"], d.get("doc_id", d["id"]), d.get("title", ""), d["text"], d.get("source", ""))


@dataclass(frozen=True)
class SourceFile:
    """A file that was read, and its size."""

    path: str
    size: int


@dataclass
class CorpusReport:
    """What reading a folder produced."""

    documents: list[Document] = field(default_factory=list)
    files: list[SourceFile] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


# --------------------------------------------------------------------------- text helpers

_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "no", "fig",
    "inc", "ltd", "co", "mt", "gen", "col", "lt", "sgt", "capt", "rev", "hon", "approx", "cf",
}  # fmt: skip
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_WS = re.compile(r"\s+")


def normalize_space(text: str) -> str:
    """Collapse every run of white space to one space and strip the ends."""
    return _WS.sub(" ", text).strip()


def paragraphs(text: str) -> list[str]:
    """Split text at blank lines; each paragraph has its white space collapsed.

    Parameters
    ----------
    text : str
        Any text.

    Returns
    -------
    list of str
        The non-empty paragraphs, in order.
    """
    return [p for p in (normalize_space(b) for b in re.split(r"\n\s*\n", text)) if p]


def split_sentences(text: str) -> list[str]:
    """Split text into sentences with a rule-based splitter.

    A sentence ends at ``.``, ``!`` or ``?`` (and any closing quote or bracket)
    followed by white space and an upper-case letter, a digit or an opening
    quote. Paragraph breaks (blank lines) always end a sentence. A split after a
    common abbreviation ("Dr.", "e.g.") or a single initial ("J.") is undone.

    Parameters
    ----------
    text : str
        Any text; white space inside sentences is collapsed.

    Returns
    -------
    list of str
        Sentences in order; joined with spaces they give the normalized text.
    """
    out: list[str] = []
    for para in paragraphs(text):
        pieces = [p for p in (s.strip() for s in _split_keep(para)) if p]
        merged: list[str] = []
        for piece in pieces:
            if merged and _ends_with_abbreviation(merged[-1]):
                merged[-1] = merged[-1] + " " + piece
            else:
                merged.append(piece)
        out.extend(merged)
    return out


def _split_keep(para: str) -> list[str]:
    pieces, start = [], 0
    for m in _SENTENCE_END.finditer(para):
        pieces.append(para[start : m.start()] + para[m.start() : m.end()].rstrip())
        start = m.end()
    pieces.append(para[start:])
    return pieces


def _ends_with_abbreviation(sentence: str) -> bool:
    last = sentence.rstrip("\"')]").split(" ")[-1]
    if not last.endswith("."):
        return False
    word = last[:-1].lstrip("(\"'").lower()
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def word_count(text: str) -> int:
    return len(text.split())


def chunk_sentences(sentences: Iterable[str], max_words: int) -> list[str]:
    """Group consecutive sentences into chunks of at most ``max_words`` words.

    A sentence longer than ``max_words`` on its own is cut into windows of
    ``max_words`` words. Every word of the input appears in exactly one chunk,
    in order.

    Parameters
    ----------
    sentences : iterable of str
        Sentences in document order.
    max_words : int
        The most words a chunk may hold (at least 1).

    Returns
    -------
    list of str
        The chunks.
    """
    if max_words < 1:
        raise ValueError("max_words must be at least 1")
    chunks: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in sentences:
        words = sentence.split()
        if not words:
            continue
        if len(words) > max_words:
            if current:
                chunks.append(" ".join(current))
                current, count = [], 0
            for i in range(0, len(words), max_words):
                chunks.append(" ".join(words[i : i + max_words]))
            continue
        if count + len(words) > max_words and current:
            chunks.append(" ".join(current))
            current, count = [], 0
        current.append(sentence)
        count += len(words)
    if current:
        chunks.append(" ".join(current))
    return chunks


def split_passages(doc: Document, max_words: int = 100) -> list[Passage]:
    """Split a document into passages of about ``max_words`` words at sentence boundaries.

    A document of at most ``max_words`` words is one passage, its white space
    collapsed, without splitting it into sentences first (the same result,
    faster: most documents of a large collection are short).
    """
    words = doc.text.split()
    if len(words) <= max_words:
        chunks = [" ".join(words)] if words else []
    else:
        chunks = chunk_sentences(split_sentences(doc.text), max_words)
    return [
        Passage(id=f"{doc.id}#{i}", doc_id=doc.id, title=doc.title, text=chunk, source=doc.source)
        for i, chunk in enumerate(chunks)
    ]


# --------------------------------------------------------------------------- HTML


def html_main_text(html: str) -> tuple[str, str]:
    """Extract ``(title, main text)`` from an HTML page with readability-lxml.

    Block elements (paragraphs, headings, list items) become paragraphs
    separated by blank lines.
    """
    import lxml.html
    from readability import Document as ReadabilityDocument

    rdoc = ReadabilityDocument(html)
    title = rdoc.short_title() or ""
    summary = rdoc.summary(html_partial=True)
    tree = lxml.html.fromstring(summary) if summary.strip() else None
    if tree is None:
        return title, ""
    blocks: list[str] = []
    block_tags = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "pre", "blockquote", "td", "dd", "dt"}
    for el in tree.iter():
        if el.tag in block_tags and not any(a.tag in block_tags for a in el.iterancestors()):
            text = normalize_space(el.text_content())
            if text:
                blocks.append(text)
    if not blocks:
        text = normalize_space(tree.text_content())
        blocks = [text] if text else []
    if title in ("[no-title]",):
        title = ""
    return title, "\n\n".join(blocks)


# --------------------------------------------------------------------------- folders


def _read_text_file(path: Path, rel: str, data: bytes) -> list[Document]:
    text = data.decode("utf-8-sig")
    if path.suffix.lower() in HTML_SUFFIXES:
        title, body = html_main_text(text)
        return [Document(id=rel, title=title or path.stem, text=body, source=rel)]
    title = path.stem
    if path.suffix.lower() == ".md":
        for line in text.splitlines():
            if line.startswith("#"):
                title = line.lstrip("#").strip() or title
                break
    return [Document(id=rel, title=title, text=text, source=rel)]


def _read_jsonl(rel: str, data: bytes, skipped: list[tuple[str, str]]) -> list[Document]:
    docs = []
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{rel}:{lineno}"
        try:
            obj = jsonl.parse(line, first=lineno == 1)
        except jsonl.BadLine as exc:
            skipped.append((where, str(exc)))
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
            skipped.append((where, "not an object with a string 'text'"))
            continue
        doc_id = str(obj.get("id", f"{rel}:{lineno}"))
        docs.append(Document(id=doc_id, title=str(obj.get("title") or ""), text=obj["text"], source=where))
    return docs


@dataclass
class FileListing:
    """The files of a folder that ``crag index`` reads, and what it left out without reading."""

    base: Path
    paths: list[Path] = field(default_factory=list)  # supported files, sorted
    unsupported: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)  # hidden files and folders not entered
    indexes: list[str] = field(default_factory=list)  # crag index folders (the target among them) not entered

    def rel(self, path: Path) -> str:
        return path.relative_to(self.base).as_posix()


def list_files(
    folder: Path, include_hidden: bool = False, exclude: Sequence[Path] = (), is_index=None
) -> FileListing:
    """The supported documents below ``folder``, without reading them.

    Parameters
    ----------
    folder : Path
        A directory, or a single file.
    include_hidden : bool
        Enter hidden folders (``.git``, ``.venv``, ...) and read hidden files too.
    exclude : sequence of Path
        Folders never entered (the index being written).
    is_index : callable, optional
        ``is_index(dir) -> bool``: folders it accepts (crag's own indexes) are not entered.

    Returns
    -------
    FileListing
        Sorted supported files, and the names of what was left out.
    """
    folder = Path(folder)
    if folder.is_file():
        listing = FileListing(folder.parent)
        (listing.paths if folder.suffix.lower() in SUPPORTED_SUFFIXES else listing.unsupported).append(folder)
        listing.unsupported = [listing.rel(p) for p in listing.unsupported]
        return listing
    listing = FileListing(folder)
    excluded = {Path(e).resolve() for e in exclude}
    for root, dirs, names in os.walk(folder):
        here = Path(root)
        kept = []
        for d in sorted(dirs):
            path = here / d
            if path.resolve() in excluded or (is_index is not None and is_index(path)):
                listing.indexes.append(listing.rel(path) + "/")
            elif not include_hidden and d.startswith("."):
                listing.hidden.append(listing.rel(path) + "/")
            else:
                kept.append(d)
        dirs[:] = kept
        for name in sorted(names):
            path = here / name
            if name.startswith(".") and name.endswith(LOCK_TAG):  # crag's own lock of an index being built here
                continue
            if not include_hidden and name.startswith("."):
                listing.hidden.append(listing.rel(path))
            elif not path.is_file():
                continue
            elif path.suffix.lower() in SUPPORTED_SUFFIXES:
                listing.paths.append(path)
            else:
                listing.unsupported.append(listing.rel(path))
    listing.paths.sort()
    return listing


def read_files(listing: FileListing, progress=None) -> CorpusReport:
    """Read and parse every file of a listing.

    Parameters
    ----------
    listing : FileListing
        From :func:`list_files`.
    progress : callable, optional
        Called as ``progress(path, done, total)`` after each file.

    Returns
    -------
    CorpusReport
        Documents, the files read (with their sizes; the index hashes them while listing), and every file or line
        skipped and why (unsupported types included).
    """
    report = CorpusReport()
    report.skipped.extend((rel, "unsupported file type") for rel in listing.unsupported)
    for done, path in enumerate(listing.paths, 1):
        rel = listing.rel(path)
        try:
            docs, skipped, size = read_file(path, rel)
            report.skipped.extend(skipped)
            if size is not None:
                report.files.append(SourceFile(rel, size))
            report.documents.extend(docs)
        finally:
            if progress is not None:
                progress(rel, done, len(listing.paths))
    return report


def read_file(path: Path, rel: str) -> tuple[list[Document], list[tuple[str, str]], int | None]:
    """Read and parse one supported file.

    Parameters
    ----------
    path : Path
    rel : str
        Its name as reported (relative to the folder read).

    Returns
    -------
    (list of Document, list of (str, str), int or None)
        Its documents with text, what was skipped and why (the file, or lines and
        documents of it), and its size in bytes (``None`` when it could not be read
        or parsed).
    """
    skipped: list[tuple[str, str]] = []
    try:
        data = path.read_bytes()
    except OSError as exc:
        return [], [(rel, f"unreadable ({exc.strerror or exc})")], None
    try:
        if path.suffix.lower() in JSONL_SUFFIXES:
            docs = _read_jsonl(rel, data, skipped)
        else:
            docs = _read_text_file(path, rel, data)
    except UnicodeDecodeError:
        return [], [(rel, "not UTF-8")], None
    except Exception as exc:  # a parser failing on one file must not stop the folder
        return [], [(rel, f"unparsable ({type(exc).__name__}: {exc})")], None
    kept = []
    for doc in docs:
        if doc.text.strip():
            kept.append(doc)
        else:
            skipped.append((doc.source, "no text"))
    return kept, skipped, len(data)


def read_folder(folder: Path, progress=None, include_hidden: bool = False) -> CorpusReport:
    """Read every supported document below ``folder`` (hidden files and folders only with ``include_hidden``)."""
    return read_files(list_files(folder, include_hidden), progress)
