"""Readers for the documents people have besides plain text: PDF (its text layer, page by page) and Word.

PDF text comes from pypdfium2 (PDFium, the PDF engine of Chromium), chosen by
measuring (docs/files-and-safety.md, "PDF and Word files"; ``benchmarks/pdf_extract.py``): it
recovered every sentence in reading order from a two-column paper, a report
with tables and a slide deck, as pypdf and pdfminer.six did, and it marks
the hyphens that TeX puts at line ends (joined here), at 5 to 30 times
their speed. Pages are read one at a time and closed, in a child process with
a memory and a time limit (:mod:`crag_cli.documents.pdfworker`: a content bomb is one
skipped file). Lines that repeat at the top or bottom of most
pages (running headers and footers, page numbers) are dropped.

``.docx`` files are read with python-docx: paragraphs and tables in document
order, each heading starting a section whose passages carry it in their title.
One whose XML unpacks to more than 64 MB (a zip bomb, or a giant) is skipped
before it is unpacked, so that memory stays bounded.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..errors import one_line


@dataclass(frozen=True)
class Document:
    """One source document; a paged one (a PDF) says at which offsets of ``text`` its pages 2, 3, ... start.

    A text file too large to hold (:mod:`crag_cli.documents.bigtext`) is left on disk: ``path`` names it and ``text``
    is empty; :func:`crag_cli.documents.bigtext.passages` reads and splits it piece by piece.
    """

    id: str
    title: str
    text: str
    source: str
    page_breaks: tuple[int, ...] | None = None  # None: not a paged document
    path: Path | None = None  # None: the text is ``text``


class Unreadable(Exception):
    """A file that yields no text; ``str()`` is the reason for the skipped list."""


# --------------------------------------------------------------------------- PDF


def read_pdf(
    path: Path, rel: str, on_page: Callable[[int, int], None] | None = None, skipped: list | None = None
) -> list[Document]:
    """The text layer of a PDF as one document whose ``page_breaks`` say where each page starts.

    Parameters
    ----------
    path : Path
    rel : str
        The file's name as reported (the document's id and source).
    on_page : callable, optional
        Called as ``on_page(done, total)`` every 25 pages of a long PDF.
    skipped : list, optional
        Where a page that cannot be read is noted (``("report.pdf p. 3", "unreadable page")``);
        the others are kept.

    Raises
    ------
    Unreadable
        Encrypted (a password is needed), corrupt or truncated, no pages, or no text on any page (a scan); a
        page that needs more memory or time than crag gives it, or too much text (:mod:`crag_cli.documents.pdfworker`).
    """
    from .pdfworker import PdfUnreadable, read_pages

    try:
        pages, title = read_pages(path, on_page)
    except PdfUnreadable as exc:
        raise Unreadable(str(exc)) from None
    total = len(pages)
    for i, page in enumerate(pages):
        if page is None and skipped is not None:
            skipped.append((f"{rel} p. {i + 1}", "unreadable page"))
    pages = [clean_page(page or "") for page in pages]
    title = _title(title)
    if not total:
        raise Unreadable("a PDF with no pages")
    if not any(p.strip() for p in pages):
        raise Unreadable(f"no text layer in {total} page(s) (a scanned PDF? crag reads text, it does not OCR)")
    pages = drop_running_lines(pages)
    text, breaks = join_pages(pages)
    return [Document(id=rel, title=title or Path(rel).stem, text=text, source=rel, page_breaks=breaks)]


_JUNK_TITLE = re.compile(
    r"^(untitled\b.*|document\d*|presentation\d*|powerpoint presentation|slide \d+|"
    r".*\.(docx?|pptx?|pdf|tex|dvi|odt)|microsoft word - .*)$",
    re.IGNORECASE,
)


def _title(title: str) -> str:
    """A document's metadata title, or "" when it is a tool's placeholder ("Microsoft Word - Document1")."""
    title = " ".join(title.split())
    return "" if _JUNK_TITLE.match(title) or not re.search(r"[^\W\d_]", title) else title


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_page(text: str) -> str:
    """PDFium's page text as plain lines.

    A hyphen that PDFium marks as a line-end hyphenation (``\\x02``) joins the
    word again; CR LF becomes LF; other control characters become spaces.

    Examples
    --------
    >>> clean_page("struc\\x02tures and\\r\\nmore\\x0c")
    'structures and\\nmore'
    """
    text = text.replace("\x02", "").replace("\r\n", "\n").replace("\r", " ")
    return _CONTROL.sub(" ", text).strip()


_PAGE_NUMBER = re.compile(r"^\W*((page|p\.|seite|pag\.?)\s*)?\d+(\s*(/|of|von|de)\s*\d+)?\W*$", re.IGNORECASE)


def drop_running_lines(pages: Sequence[str], edge: int = 2) -> list[str]:
    """Remove running headers and footers: a line that stands at the same place from the top (or the
    bottom) of at least half of the pages, and of at least 3.

    The places are the first and last ``edge`` lines of a page (on a short
    page, at most half of its lines each). A line must recur there as it is,
    except a page number (``7``, ``- 7 -``, ``Page 7 of 12``) in a page's first
    or last line, which matches with its numbers aside. A line that recurs
    elsewhere, or in other places, is kept: a table's rows, numbered questions
    and dates stay.

    Parameters
    ----------
    pages : sequence of str
        Each page's text.
    edge : int
        How many lines at each end of a long page may be a header or footer.

    Returns
    -------
    list of str
        The pages without those lines.

    Examples
    --------
    >>> drop_running_lines(["Report\\nalpha one\\n1", "Report\\nbeta two\\n2", "Report\\ngamma three\\n3"])
    ['alpha one', 'beta two', 'gamma three']
    """

    def places(lines: list[str]) -> list[tuple[int, str]]:
        """(line index, place key) of a page's candidate lines; a place is "t0", "t1", "b0", "b1"."""
        k = min(edge, max(1, len(lines) // 2))
        out = []
        for j in range(min(k, len(lines))):
            out += [(j, f"t{j}"), (len(lines) - 1 - j, f"b{j}")]
        return out

    def key(line: str, place: str) -> str:
        text = " ".join(line.split()).lower()
        if place in ("t0", "b0") and _PAGE_NUMBER.match(text):
            return "#page-number#"
        return text

    split = [[line for line in page.split("\n")] for page in pages]
    seen: Counter = Counter()
    for lines in split:
        seen.update({(place, key(lines[i], place)) for i, place in places(lines) if lines[i].strip()})
    need = max(3, (len(pages) + 1) // 2)
    running = {pk for pk, c in seen.items() if c >= need}
    if not running:
        return list(pages)
    out = []
    for lines in split:
        drop = {i for i, place in places(lines) if lines[i].strip() and (place, key(lines[i], place)) in running}
        out.append("\n".join(line for i, line in enumerate(lines) if i not in drop).strip())
    return out


def join_pages(pages: Sequence[str]) -> tuple[str, tuple[int, ...]]:
    """The pages' text joined by blank lines, and the offset at which each page after the first starts.

    Examples
    --------
    >>> join_pages(["one", "two", "three"])
    ('one\\n\\ntwo\\n\\nthree', (5, 10))
    """
    text, breaks = "", []
    for i, page in enumerate(pages):
        if i:
            text += "\n\n"
            breaks.append(len(text))
        text += page
    return text, tuple(breaks)


# --------------------------------------------------------------------------- Word


def read_docx(path: Path, rel: str) -> list[Document]:
    """A Word file's paragraphs and tables in order, one document per section (a heading starts one).

    The body is walked as Word stores it: paragraphs (inserted text of tracked
    changes included, deleted text not), tables (a row per line, its cells
    joined by `` | `` and ended by a full stop; a table inside a cell is read
    in place) and content controls (the fields of forms and templates). A
    section's documents are titled ``TITLE › HEADING`` (the file's title: its
    core properties' title, else its first Title-style paragraph, else the
    file name); a heading with no text under it joins the next one
    (``Part 1 › Scope``).

    Raises
    ------
    Unreadable
        When the file is not a Word document (not a zip, or no document part), unpacks to more than
        crag reads (see :func:`_check_unpacked_size`), or holds no text.
    """
    import zipfile

    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from lxml import etree

    try:
        _check_unpacked_size(path)
        document = docx.Document(_xml_parts(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise Unreadable(_docx_problem(path, exc)) from None
    except etree.XMLSyntaxError as exc:  # lxml's own bounds (a text node over 10 MB, 256 levels) or damage
        raise Unreadable(f"unreadable Word XML ({str(exc).split(',')[0]})") from None
    styles = {s.style_id: s.name or "" for s in document.styles}
    title = _title(document.core_properties.title or "")
    sections: list[tuple[str, list[str]]] = [("", [])]
    for kind, text, style in _blocks(document.element.body, styles):
        if kind == "paragraph" and style == "Title" and not title:
            title = text
        elif kind == "paragraph" and style.startswith("Heading"):
            heading, body = sections[-1]
            if heading and not body:  # an empty section: its heading leads the next one
                sections[-1] = (f"{heading} › {text}", body)
            else:
                sections.append((text, []))
        else:
            sections[-1][1].append(text)
    title = title or Path(rel).stem
    docs = []
    for n, (heading, blocks) in enumerate(sections):
        body = "\n\n".join(b for b in blocks if b.strip())
        if body.strip():
            docs.append(
                Document(
                    id=f"{rel}#s{n}" if n else rel,
                    title=f"{title} › {heading}" if heading else title,
                    text=body,
                    source=rel,
                )
            )
    if not docs:
        raise Unreadable("no text")
    return docs


def _docx_problem(path: Path, exc: Exception) -> str:
    """What is wrong with a ``.docx`` that python-docx could not open, for the skipped file's line."""
    import zipfile

    if isinstance(exc, KeyError):  # zipfile's "There is no item named 'word/document.xml' in the archive"
        said = one_line(exc.args[0] if exc.args else exc)
        part = re.search(r"named '([^']+)'", said)
        return f"a damaged Word file: missing {part.group(1)}" if part else f"a damaged Word file ({said})"
    if not zipfile.is_zipfile(path):
        return "not a Word (.docx) file (not a zip archive)"
    if isinstance(exc, zipfile.BadZipFile):  # "Bad CRC-32 for file 'word/document.xml'" and the like
        return f"a damaged Word file ({one_line(exc)})"
    return f"not a Word (.docx) file ({type(exc).__name__}: {one_line(exc)})"


DOCX_MAX_XML = 64 << 20  # bytes of XML a .docx may unpack to (indexing 100 MB of it took 1.9 GB of memory)
DOCX_MAX_RATIO = 20  # and all of its parts together at most this many times the file's size more


def _check_unpacked_size(path: Path) -> None:
    """Refuse a .docx that unpacks to more than crag reads in bounded memory (a zip bomb, or a giant).

    The sizes are the zip directory's; :mod:`zipfile`, which python-docx reads
    with, never unpacks a part past its listed size (it fails on the checksum).

    Raises
    ------
    Unreadable
        When its XML parts unpack to more than :data:`DOCX_MAX_XML` bytes, or all its
        parts to more than that plus :data:`DOCX_MAX_RATIO` times the file's size.
    """
    import zipfile

    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
    xml = sum(i.file_size for i in infos if i.filename.lower().endswith((".xml", ".rels")))
    total = sum(i.file_size for i in infos)
    size = os.stat(path).st_size
    if xml > DOCX_MAX_XML:
        raise Unreadable(
            f"too large: its XML unpacks to {_mb(xml)} (crag reads a .docx of up to {_mb(DOCX_MAX_XML)} of XML)"
        )
    if total > DOCX_MAX_XML + DOCX_MAX_RATIO * size:
        raise Unreadable(f"too large: it unpacks to {_mb(total)} from {_mb(size)} (a zip bomb?)")


def _xml_parts(path: Path):
    """The .docx's XML parts, unpacked here in chunks (at most :data:`DOCX_MAX_XML` bytes in all, whatever
    its directory says) into an uncompressed zip in memory, which python-docx reads (its other parts empty).

    :mod:`zipfile` stops at a part's listed size, but reads it in one piece: a part whose directory
    entry lies (2,000 bytes listed, 1 GiB inside) took 2.1 GB of memory before its checksum failed.
    """
    import io
    import zipfile

    out, total, seen = io.BytesIO(), 0, set()
    with zipfile.ZipFile(path) as z, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as copy:
        for info in z.infolist():
            if info.filename in seen or info.is_dir():
                continue
            seen.add(info.filename)
            if not info.filename.lower().endswith((".xml", ".rels")):
                copy.writestr(info.filename, b"")  # pictures and the like: the text needs none of them
                continue
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise Unreadable(f"a Word file with a part compressed by method {info.compress_type} (not Word's)")
            with z.open(info) as src, copy.open(info.filename, "w") as dst:
                while chunk := src.read(1 << 16):
                    total += len(chunk)
                    if total > DOCX_MAX_XML:
                        raise Unreadable(f"too large: its XML unpacks to more than {_mb(DOCX_MAX_XML)} (a zip bomb?)")
                    dst.write(chunk)
    out.seek(0)
    return out


def _mb(n: int) -> str:
    return f"{n / (1 << 20):.0f} MB" if n >= 1 << 20 else f"{n / 1024:.0f} KB"


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _blocks(parent, styles: dict[str, str]):
    """``(kind, text, style name)`` of the paragraphs and tables under ``parent``, in document order
    (content controls opened); empty ones left out."""
    for child in parent.iterchildren():
        tag = child.tag
        if tag == f"{_W}p":
            text = _paragraph_text(child)
            if text:
                style_el = child.find(f"{_W}pPr/{_W}pStyle")
                style = styles.get(style_el.get(f"{_W}val"), "") if style_el is not None else ""
                yield "paragraph", text, style
        elif tag == f"{_W}tbl":
            rows = [_end(" | ".join(cells)) for cells in _rows(child) if any(cells)]
            if rows:
                yield "table", "\n".join(rows), ""
        elif tag == f"{_W}sdt":
            content = child.find(f"{_W}sdtContent")
            if content is not None:
                yield from _blocks(content, styles)


def _paragraph_text(p) -> str:
    """A paragraph's text: its runs' ``w:t`` (in insertions and fields too; deleted text is ``w:delText``)."""
    pieces = []
    for el in p.iter(f"{_W}t", f"{_W}tab", f"{_W}br"):
        pieces.append(el.text or "" if el.tag == f"{_W}t" else " ")
    return " ".join("".join(pieces).split())


def _rows(table) -> list[list[str]]:
    """Each row's cell texts; a cell's paragraphs and nested tables in order; a merged cell once."""
    out = []
    for tr in table.iterfind(f"{_W}tr"):
        cells = []
        for tc in tr.iterfind(f"{_W}tc"):
            merge = tc.find(f"{_W}tcPr/{_W}vMerge")
            if merge is not None and merge.get(f"{_W}val") in (None, "continue"):
                cells.append("")  # the rows a vertically merged cell spans after its first
                continue
            cells.append(" ".join(text for _, text, _ in _blocks(tc, {}) if text))
        out.append(cells)
    return out


def _end(row: str) -> str:
    return row if row.rstrip().endswith((".", "!", "?")) else row.rstrip() + "."
