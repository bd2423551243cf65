"""Readers for the documents people have besides plain text: PDF (its text layer, page by page) and Word.

PDF text comes from pypdfium2 (PDFium, the PDF engine of Chromium), chosen by
measuring (README, "PDF and Word files"; ``benchmarks/pdf_extract.py``): it
recovered every sentence in reading order from a two-column paper, a report
with tables and a slide deck, as pypdf and pdfminer.six did, and it marks
the hyphens that TeX puts at line ends (joined here), at 5 to 30 times
their speed. Pages are read one at a time and closed, so memory stays bounded
by the text, not the file. Lines that repeat at the top or bottom of most
pages (running headers and footers, page numbers) are dropped.

``.docx`` files are read with python-docx: paragraphs and tables in document
order, each heading starting a section whose passages carry it in their title.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Callable, Sequence

from .corpus import Document

class Unreadable(Exception):
    """A file that yields no text; ``str()`` is the reason for the skipped list."""


# --------------------------------------------------------------------------- PDF


def read_pdf(path: Path, rel: str, on_page: Callable[[int, int], None] | None = None) -> list[Document]:
    """The text layer of a PDF as one document whose ``page_breaks`` say where each page starts.

    Parameters
    ----------
    path : Path
    rel : str
        The file's name as reported (the document's id and source).
    on_page : callable, optional
        Called as ``on_page(done, total)`` every 25 pages of a long PDF.

    Raises
    ------
    Unreadable
        Encrypted (a password is needed), corrupt or truncated, or no text on any page (a scan).
    """
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        raise Unreadable(_pdfium_reason(exc)) from None
    try:
        total = len(pdf)
        pages = []
        for i in range(total):
            pages.append(_page_text(pdf, i))
            if on_page is not None and ((i + 1) % 25 == 0 or i + 1 == total) and total >= 50:
                on_page(i + 1, total)
        title = (pdf.get_metadata_dict().get("Title") or "").strip()
    except pdfium.PdfiumError as exc:
        raise Unreadable(_pdfium_reason(exc)) from None
    finally:
        pdf.close()
    if not any(p.strip() for p in pages):
        raise Unreadable(f"no text layer in {total} page(s) (a scanned PDF? crag reads text, it does not OCR)")
    pages = drop_running_lines(pages)
    text, breaks = join_pages(pages)
    return [Document(id=rel, title=title or Path(rel).stem, text=text, source=rel, page_breaks=breaks)]


def _page_text(pdf, i: int) -> str:
    page = pdf[i]
    try:
        textpage = page.get_textpage()
        try:
            return clean_page(textpage.get_text_bounded())
        finally:
            textpage.close()
    finally:
        page.close()


def _pdfium_reason(exc: Exception) -> str:
    message = str(exc)
    if "password" in message.lower():
        return "encrypted PDF (it needs a password)"
    return f"unreadable PDF ({message.rstrip('.')})"


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


def drop_running_lines(pages: Sequence[str], edge: int = 2) -> list[str]:
    """Remove running headers and footers: lines at the top or bottom of a page that recur on at least
    half of the pages (and on at least 3).

    A page's top and bottom are its first and last ``edge`` lines (on a short
    page, at most half of its lines each). A short line (up to 6 words) matches
    with its numbers aside (``Page 3``, ``Vol. 2, p. 17``); a longer one must
    recur as it is. A line that recurs inside the pages is kept.

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
    def key(line: str) -> str:
        words = line.split()
        text = " ".join(words).lower()
        return re.sub(r"\d+", "#", text) if len(words) <= 6 else text

    def edges(lines: list[str]) -> set[int]:
        k = min(edge, max(1, len(lines) // 2))
        return set(range(min(k, len(lines)))) | set(range(max(0, len(lines) - k), len(lines)))

    split = [page.split("\n") for page in pages]
    seen: Counter = Counter()
    for lines in split:
        seen.update({key(lines[i]) for i in edges(lines) if lines[i].strip()})
    need = max(3, (len(pages) + 1) // 2)
    running = {k for k, c in seen.items() if c >= need}
    if not running:
        return list(pages)
    out = []
    for lines in split:
        drop = {i for i in edges(lines) if key(lines[i]) in running}
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

    A section's documents are titled ``TITLE › HEADING`` (the file's title: its
    core properties' title, else its first Title-style paragraph, else the file
    name); a table becomes one line per row, its cells joined by `` | `` and
    the row ended by a full stop (rows stay apart when a passage joins lines).

    Raises
    ------
    Unreadable
        When the file is not a Word document (not a zip, or no document part).
    """
    import zipfile

    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table

    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise Unreadable(f"not a Word (.docx) file ({type(exc).__name__})") from None
    title = (document.core_properties.title or "").strip()
    sections: list[tuple[str, list[str]]] = [("", [])]
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            rows = [" | ".join(_unique_cells(row.cells)) for row in block.rows]
            sections[-1][1].append("\n".join(_end(r) for r in rows if r.strip()))
            continue
        text = block.text.strip()
        if not text:
            continue
        style = (block.style.name if block.style is not None else "") or ""
        if style == "Title" and not title:
            title = text
        elif style.startswith("Heading"):
            sections.append((text, []))
        else:
            sections[-1][1].append(text)
    title = title or Path(rel).stem
    docs = []
    for n, (heading, blocks) in enumerate(sections):
        body = "\n\n".join(b for b in blocks if b.strip())
        if body.strip():
            docs.append(Document(id=f"{rel}#s{n}" if n else rel, title=f"{title} › {heading}" if heading else title,
                                 text=body, source=rel))  # fmt: skip
    return docs


def _end(row: str) -> str:
    return row if row.rstrip().endswith((".", "!", "?")) else row.rstrip() + "."


def _unique_cells(cells) -> list[str]:
    """A row's cell texts, a merged cell (python-docx repeats it) once."""
    out, seen = [], set()
    for cell in cells:
        if id(cell._tc) not in seen:
            seen.add(id(cell._tc))
            out.append(" ".join(cell.text.split()))
    return out
