"""Document types: which files ``crag index`` reads, and how, by suffix; crag's own and those plugins add.

A type has a ``name``, a ``version``, the ``suffixes`` it reads and
``read(path, rel)``, which gives the file's documents (:class:`DocumentType`).
crag's own: ``text`` (``.txt``, ``.md``, ``.rst``), ``html`` (``.html``, ``.htm``: the
main text through readability-lxml), ``jsonl`` (one document per line with
``id``, ``title``, ``text``), ``pdf`` and ``docx`` (:mod:`crag_cli.documents.formats`).
An installed package adds others through the entry point group
``crag.documents`` (:mod:`crag_cli.plugins`, docs/extending.md); one that
claims a suffix crag reads itself, or another plugin's, is left out with a
warning. :func:`registry` is the one place a suffix is looked up.

What reads a file is part of the index's identity: crag's own types by
:data:`PARSERS_VERSION` (an index rebuilds every file when it changes), a
plugin's files by its name, its version and its package's version (the
manifest's ``document_type`` for each of them: they are read again when one
changes).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Collection, Iterator, Protocol

from . import bigtext
from .. import jsonl, plugins
from .passages import normalize_space
from .formats import Document, read_docx, read_pdf
from .titles import first_heading, first_line_title, markdown_title, rst_title, text_title

# Raised whenever one of crag's own types gives other text or titles for the same file, so that an index rebuilds
# every file. 2: .txt titles from the first line; .pdf and .docx read.
PARSERS_VERSION = 2


class DocumentType(Protocol):
    """A kind of document file: the suffixes it reads, and how (a plugin of ``crag.documents`` is one)."""

    name: str
    version: str | int  # raise it whenever ``read`` gives other documents for the same file
    suffixes: Collection[str]  # lower-case, with the dot: (".toy",)

    def read(self, path: Path, rel: str) -> list[Document]:
        """The documents of the file at ``path``, which crag names ``rel`` (their ids and sources start with it).

        Raise :class:`crag_cli.documents.formats.Unreadable` to skip the file with a reason; any other exception skips
        it as unparsable. A document with no text is skipped as such.
        """
        ...


OnPage = Callable[[int, int], None]


@dataclass
class Report:
    """What a type's ``read`` may tell crag of the file it is reading, besides its documents: the parts it skips
    and a long file's progress (:func:`skip`, :func:`progress`)."""

    skipped: list[tuple[str, str]] = field(default_factory=list)
    on_page: OnPage | None = None


_REPORT: ContextVar[Report | None] = ContextVar("crag_document_report", default=None)


def skip(what: str, why: str) -> None:
    """Say, from a type's ``read``, that part of the file (``"notes.toy line 3"``) was left out, and why."""
    report = _REPORT.get()
    if report is not None:
        report.skipped.append((what, why))


def progress(done: int, total: int) -> None:
    """Say, from a type's ``read``, how far a long file has been read (``done`` of ``total`` pages or parts)."""
    report = _REPORT.get()
    if report is not None and report.on_page is not None:
        report.on_page(done, total)


@contextmanager
def reporting(report: Report) -> Iterator[Report]:
    """Collect what the ``read`` calls inside say through :func:`skip` and :func:`progress` into ``report``."""
    token = _REPORT.set(report)
    try:
        yield report
    finally:
        _REPORT.reset(token)


@dataclass(frozen=True)
class BuiltinType:
    """One of crag's own types: a :class:`DocumentType` like a plugin's, its ``read`` a function of the file that
    is handed the report's list of skipped parts and its progress callback."""

    name: str
    suffixes: frozenset[str]
    parse: Callable[[Path, str, list[tuple[str, str]], OnPage | None], list[Document]]
    version: int = PARSERS_VERSION

    def read(self, path: Path, rel: str) -> list[Document]:
        report = _REPORT.get() or Report()
        return self.parse(path, rel, report.skipped, report.on_page)


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


def read_text_file(path: Path, rel: str, data: bytes) -> list[Document]:
    """A text, Markdown, reStructuredText or HTML file's document, from its bytes."""
    text = data.decode("utf-8-sig")
    if path.suffix.lower() in HTML.suffixes:
        title, body = html_main_text(text)
        return [Document(id=rel, title=title or Path(rel).stem, text=body, source=rel)]
    titled = {".md": markdown_title, ".rst": rst_title}.get(path.suffix.lower(), text_title)
    title = titled(text)
    return [Document(id=rel, title=title or Path(rel).stem, text=text, source=rel)]  # (the name: valid Unicode)


def _big_text_file(path: Path, rel: str) -> list[Document]:
    """A .txt, .md or .rst larger than :data:`crag_cli.documents.bigtext.PIECE_BYTES`: titled from its first pieces as a whole
    read titles a .txt or .md (a .rst as a .txt; a first line or heading longer than a piece is no title), its text
    left on disk."""
    markdown = path.suffix.lower() == ".md"
    title, has_text = (first_heading if markdown else first_line_title)(bigtext.text_pieces(path))
    return [Document(id=rel, title=title or Path(rel).stem, text="", source=rel, path=path if has_text else None)]


def _read_text(path: Path, rel: str, skipped: list, on_page: OnPage | None) -> list[Document]:
    if os.stat(path).st_size > bigtext.PIECE_BYTES:  # read piece by piece when split (crag_cli.documents.bigtext)
        return _big_text_file(path, rel)
    return read_text_file(path, rel, path.read_bytes())


def _read_html(path: Path, rel: str, skipped: list, on_page: OnPage | None) -> list[Document]:
    return read_text_file(path, rel, path.read_bytes())


def _read_jsonl(path: Path, rel: str, skipped: list[tuple[str, str]], on_page: OnPage | None) -> list[Document]:
    docs = []
    for lineno, line in enumerate(path.read_bytes().splitlines(), 1):
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


TEXT = BuiltinType("text", frozenset({".txt", ".md", ".rst"}), _read_text)
HTML = BuiltinType("html", frozenset({".html", ".htm"}), _read_html)
JSONL = BuiltinType("jsonl", frozenset({".jsonl"}), _read_jsonl)
PDF = BuiltinType("pdf", frozenset({".pdf"}), lambda path, rel, skipped, on_page: read_pdf(path, rel, on_page, skipped))
DOCX = BuiltinType("docx", frozenset({".docx"}), lambda path, rel, skipped, on_page: read_docx(path, rel))
BUILTIN_TYPES: tuple[BuiltinType, ...] = (TEXT, HTML, JSONL, PDF, DOCX)
OWN_SUFFIXES = tuple(s for kind in BUILTIN_TYPES for s in sorted(kind.suffixes, key=len))  # as the docs list them


# --------------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class Registered:
    """A type as the registry holds it: what reads a file, and what the index's manifest records of it."""

    kind: DocumentType
    identity: str | None  # a plugin's name, version and package ("toy 1 (toy-plugin 0.1)"); None: crag's own


def registry() -> dict[str, Registered]:
    """Every type by the suffixes it reads: crag's own, then the usable plugins (loaded once per process)."""
    return plugins.registry(plugins.DOCUMENTS, NEEDS, _with_plugins)


NEEDS = ("name", "version", "suffixes", "read")  # what a type has, crag's own as a plugin's


def _with_plugins(found: list[plugins.Plugin]) -> dict[str, Registered]:
    """crag's own types and then the plugins' as one list, each checked alike; a plugin may not take a name or a
    suffix that one before it has."""
    own = [
        plugins.Plugin(kind, f"{kind.name} = crag_cli.documents.types:{kind.name.upper()}", "")
        for kind in BUILTIN_TYPES
    ]
    by_suffix: dict[str, Registered] = {}
    names: dict[str, str] = {}
    for plugin in [*own, *found]:
        kind, shown, builtin = plugin.obj, plugin.shown(plugins.DOCUMENTS), plugin in own
        suffixes = _suffixes(kind.suffixes)
        taken = [s for s in sorted(suffixes or ()) if s in by_suffix]
        if not suffixes:
            plugins.warn(f'{shown} has no suffixes like (".toy",); left out')
        elif names.get(kind.name):
            plugins.warn(f"{shown} is named {kind.name!r}, like a type of {names[kind.name]}; left out")
        elif taken:
            owner = by_suffix[taken[0]].identity or "crag itself"
            plugins.warn(f"{shown} claims {taken[0]}, which {owner} reads; left out")
        else:
            names[kind.name] = "crag" if builtin else (plugin.package or plugin.entry)
            identity = (
                None if builtin else f"{kind.name} {kind.version}" + (f" ({plugin.package})" if plugin.package else "")
            )
            by_suffix.update({s: Registered(kind, identity) for s in suffixes})
    return by_suffix


def _suffixes(value: object) -> set[str] | None:
    """A plugin's suffixes, lower-cased.

    Parameters
    ----------
    value : object
        The plugin's ``suffixes``: strings such as ``".toy"`` (a lone string is one suffix).

    Returns
    -------
    set of str or None
        ``None`` unless there is one at least and each is a dot and a name (no space, no slash).

    Examples
    --------
    >>> sorted(_suffixes((".Toy", ".toy2"))), _suffixes(".toy"), _suffixes(("toy",)), _suffixes(3)
    (['.toy', '.toy2'], {'.toy'}, None, None)
    """
    try:
        items = [value] if isinstance(value, str) else list(value)  # type: ignore[call-overload]
    except TypeError:
        return None
    good = all(isinstance(s, str) and len(s) > 1 and s.startswith(".") and not set(s) & set("/\\ ") for s in items)
    return {s.lower() for s in items} if items and good else None


def find(path: Path) -> Registered | None:
    """The type that reads ``path`` (by its suffix, in any case), or ``None``: crag does not read it."""
    return registry().get(path.suffix.lower())


def supported_text() -> str:
    """The suffixes read, for messages: ``.docx .htm .html .jsonl .md .pdf .rst .txt`` and the plugins'."""
    return " ".join(sorted(registry()))
