"""PDFs read in a child process with a memory and a time limit, so that a content bomb costs one skipped file.

PDFium parses a page's whole content stream when the page is loaded (about
300 bytes for each operator) and as many again for its text: a 486 KB PDF
whose one page unpacks to ten million ``(x) Tj`` took ``crag index`` to 21 GB.
No size the file or PDFium tells beforehand bounds that (a page's content may
be any number of streams, forms drawn by forms), so the pages are read where
the memory is bounded: one child process, started at the first PDF and kept for
the next, whose address space is limited to :data:`PDF_MEMORY`. A page that
needs more ends the child, one that takes longer than :data:`PDF_PAGE_SECONDS`
is ended, and either way the file is skipped with the reason (the next PDF gets
a new child); a PDF whose text passes :data:`PDF_MAX_TEXT` characters is skipped
too. The child sends JSON (never pickles) and each message is read with a bound.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable

PDF_MEMORY = 1 << 30  # bytes of address space of the process that reads PDFs (a 1M-operator page took 600 MB)
PDF_PAGE_SECONDS = 60.0  # seconds one page (or opening the file) may take
PDF_MAX_TEXT = 64 << 20  # characters of text one PDF may give (a 3,000-page book: about 10 million)
_START_SECONDS = 60.0  # for the child to import PDFium and say it is ready


def _mb(n: int) -> str:
    return f"{n / (1 << 20):.0f} MB"


class PdfUnreadable(Exception):
    """A PDF that gives no text; ``str()`` is the reason (:class:`crag_cli.documents.formats.Unreadable` says it)."""


class _Child:
    """The reading process: JSON messages over two pipes (:mod:`multiprocessing.connection` framing)."""

    def __init__(self) -> None:
        from multiprocessing.connection import Connection

        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        root = str(Path(__file__).resolve().parent.parent)  # the child imports this crag, whatever sys.path says
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}
        args = [sys.executable, "-m", "crag_cli.documents.pdfworker", str(down_r), str(up_w), str(PDF_MEMORY)]
        try:
            self.proc = subprocess.Popen(
                args, pass_fds=(down_r, up_w), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
        finally:
            os.close(down_r)
            os.close(up_w)
        self.send = Connection(down_w, readable=False)
        self.recv = Connection(up_r, writable=False)
        try:
            self.message(_START_SECONDS, "starting")
        except BaseException:
            self.close()
            raise

    def message(self, seconds: float, what: str) -> list:
        """The child's next message; :class:`TimeoutError` or :class:`EOFError` (the child is gone) naming ``what``."""
        if not self.recv.poll(seconds):
            raise TimeoutError(what)
        try:
            return json.loads(self.recv.recv_bytes(maxlength=6 * PDF_MAX_TEXT + 4096))
        except (EOFError, OSError):
            raise EOFError(what) from None

    def close(self) -> None:
        for conn in (self.send, self.recv):
            conn.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


_child: _Child | None = None
_lock = threading.Lock()


def _stop() -> None:
    global _child
    if _child is not None:
        _child.close()
        _child = None


atexit.register(_stop)


def _started() -> _Child:
    """The running child, started anew when there is none (or it has ended)."""
    global _child
    if _child is None or _child.proc.poll() is not None:
        _stop()
        try:
            _child = _Child()
        except (TimeoutError, EOFError, OSError):
            raise PdfUnreadable("the process that reads PDFs did not start") from None
    return _child


def read_pages(path: Path, on_page: Callable[[int, int], None] | None = None) -> tuple[list[str | None], str]:
    """Each page's cleaned text (``None``: an unreadable page) and the metadata title of the PDF at ``path``.

    Raises
    ------
    PdfUnreadable
        Unreadable, encrypted or damaged (PDFium's reason), a page past the memory or time limit, too much text.
    """
    with _lock:
        child, where = _started(), "opening it"
        pages: list[str | None] = []
        total, chars = 0, 0
        try:
            try:
                child.send.send_bytes(json.dumps(os.fspath(path)).encode())  # (ASCII: JSON escapes the rest)
            except OSError:
                raise EOFError(where) from None
            while True:
                kind, value = child.message(PDF_PAGE_SECONDS, where)
                if kind == "unreadable":
                    raise PdfUnreadable(value)
                if kind == "pages":
                    total = value
                elif kind == "page":
                    pages.append(value)
                    chars += len(value or "")
                    if chars > PDF_MAX_TEXT:
                        _stop()
                        raise PdfUnreadable(f"too much text: more than {PDF_MAX_TEXT:,} characters (a content bomb?)")
                    if on_page is not None and total >= 50 and (len(pages) % 25 == 0 or len(pages) == total):
                        on_page(len(pages), total)
                elif kind == "title":
                    return pages, value
                where = f"page {len(pages) + 1}"
        except TimeoutError:
            _stop()
            raise PdfUnreadable(f"{where} took more than {PDF_PAGE_SECONDS:g} s to read (a content bomb?)") from None
        except EOFError:
            code = child.proc.wait()
            _stop()
            if code < 0 and code not in (-6, -9):  # not abort() nor the kernel's OOM kill: PDFium crashed
                raise PdfUnreadable(f"PDFium crashed reading {where} (signal {-code})") from None
            raise PdfUnreadable(
                f"{where} needs more than {_mb(PDF_MEMORY)} of memory to read (a content bomb?)"
            ) from None


# --------------------------------------------------------------------------- the child


def _serve(down: int, up: int, memory: int) -> None:
    """The child's loop: a path in, its messages out, until the parent closes the pipe."""
    import resource
    from multiprocessing.connection import Connection

    try:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    except (ValueError, OSError):  # a system that does not take the limit (macOS): the time limit still holds
        pass
    import pypdfium2 as pdfium

    inp, out = Connection(down, writable=False), Connection(up, readable=False)

    def send(*message) -> None:
        out.send_bytes(json.dumps(message).encode())

    send("ready")
    while True:
        try:
            path = json.loads(inp.recv_bytes())
        except EOFError:
            return
        _read(pdfium, Path(path), send)


def _read(pdfium, path: Path, send: Callable) -> None:
    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        return send("unreadable", _open_failure(path, exc))
    try:
        total = len(pdf)
        send("pages", total)
        for i in range(total):
            try:
                send("page", _page_text(pdf, i))
            except pdfium.PdfiumError:
                send("page", None)
        send("title", pdf.get_metadata_dict().get("Title") or "")
    except pdfium.PdfiumError as exc:
        send("unreadable", f"unreadable PDF ({_first_words(exc)})")
    finally:
        pdf.close()


def _page_text(pdf, i: int) -> str:
    """Page ``i``'s text as PDFium gives it (:func:`crag_cli.documents.formats.clean_page` cleans it)."""
    page = pdf[i]
    try:
        textpage = page.get_textpage()
        try:
            return textpage.get_text_bounded()
        finally:
            textpage.close()
    finally:
        page.close()


def _open_failure(path: Path, exc: Exception) -> str:
    """Why PDFium could not open a file. Encryption is read from the file itself (its trailer names an
    ``/Encrypt`` dictionary): PDFium's error text can be left over from the file before."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - (1 << 20)))
            encrypted = b"/Encrypt" in f.read()
    except OSError:
        encrypted = False
    if encrypted and "password" in str(exc).lower():
        return "encrypted PDF (it needs a password)"
    return f"unreadable PDF ({_first_words(exc)})"


def _first_words(exc: Exception) -> str:
    text = str(exc).rstrip(".")
    return "not a PDF, or damaged" if not text or "Success" in text else text


if __name__ == "__main__":
    _serve(*map(int, sys.argv[1:4]))
