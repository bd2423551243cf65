"""Read a folder of documents: which files, read how, and what was skipped and why.

Splitting them into passages is :mod:`crag_cli.documents.passages`.

Supported files: ``.txt``, ``.md``, ``.html``/``.htm`` (main text through
readability-lxml), ``.jsonl`` (one document per line with ``id``, ``title``,
``text``), ``.pdf`` (the text layer, page by page) and ``.docx`` (see
:mod:`crag_cli.documents.formats`), and those of the document types plugins add: the
suffixes and their parsers are :mod:`crag_cli.documents.types`. Every other file, every unreadable or non-UTF-8
file (a scanned, encrypted or corrupt PDF, a ``.docx`` that is not one) and
every bad JSONL line is reported in :attr:`CorpusReport.skipped`, never dropped
silently.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from . import types
from .formats import Document
from ..errors import one_line
from ..files import LOCK_TAG


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


# --------------------------------------------------------------------------- folders


def shown_name(rel: str) -> str:
    """A file name as crag shows and stores it (citations, passages, skipped files): valid Unicode.

    A name that is not UTF-8 reaches Python with its undecodable bytes as lone
    surrogates (``surrogateescape``); they become U+FFFD. The manifest keeps
    the name itself (JSON ``\\u`` escapes), so that an unchanged file is found
    again by the next ``crag index``.

    Control characters (an escape sequence in a name could drive the terminal
    that shows a citation) become U+FFFD too.

    Examples
    --------
    >>> shown_name("odd\\udcff.txt"), shown_name("café.txt"), shown_name("a\\x1b[2Jb.txt")
    ('odd\ufffd.txt', 'café.txt', 'a\ufffd[2Jb.txt')
    """
    text = rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return _CONTROL.sub("\ufffd", text)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass
class FileListing:
    """The files of a folder that ``crag index`` reads, and what it left out without reading."""

    base: Path
    paths: list[Path] = field(default_factory=list)  # supported files, sorted
    unsupported: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)  # hidden files and folders not entered
    indexes: list[str] = field(default_factory=list)  # crag index folders (the target among them) not entered
    skipped: list[tuple[str, str]] = field(default_factory=list)  # links not followed, and why

    def rel(self, path: Path) -> str:
        """``path``'s name below the folder, exactly (the manifest's key; see :func:`shown_name` for showing it)."""
        return path.relative_to(self.base).as_posix()

    def shown(self, path: Path) -> str:
        return shown_name(self.rel(path))


def list_files(folder: Path, include_hidden: bool = False, exclude: Sequence[Path] = (), is_index=None) -> FileListing:
    """The supported documents below ``folder``, without reading them.

    A symbolic link that leads outside the folder is followed, to a file or a
    folder, as if what it leads to were there; what it leads to is read once
    (a second link to it or into it, or a link back to a folder above it, is
    not followed: no loop). A link that leads inside the folder is not
    followed: its target is read under its own name. Links not followed and
    links that lead nowhere are listed in ``skipped`` with the reason.

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
        (listing.paths if types.find(folder) is not None else listing.unsupported).append(folder)
        listing.unsupported = [listing.shown(p) for p in listing.unsupported]
        return listing
    listing = FileListing(folder)
    excluded = {Path(e).resolve() for e in exclude}
    followed: dict[Path, str] = {}  # the targets of the links followed: the name each is read under
    for root, dirs, names in os.walk(folder, followlinks=True):  # (links that may not be followed are pruned)
        here = Path(root)
        kept = []
        for d in sorted(dirs):
            path = here / d
            if path.resolve() in excluded or (is_index is not None and is_index(path)):
                listing.indexes.append(listing.shown(path) + "/")
            elif not include_hidden and d.startswith("."):
                listing.hidden.append(listing.shown(path) + "/")
            elif _once(listing, path, followed, "/"):
                kept.append(d)
        dirs[:] = kept
        for name in sorted(names):
            path = here / name
            if name.startswith(".") and name.endswith(LOCK_TAG):  # crag's own lock of an index being built here
                continue
            if not include_hidden and name.startswith("."):
                listing.hidden.append(listing.shown(path))
            elif not _once(listing, path, followed):
                continue
            elif not path.is_file():
                listing.skipped.append((listing.shown(path), _not_a_file(path)))
            elif types.find(path) is not None:
                listing.paths.append(path)
            else:
                listing.unsupported.append(listing.shown(path))
    listing.paths.sort()
    return listing


def _not_a_file(path: Path) -> str:
    """Why a name that is no regular file (a pipe, a socket, a device, or a link to one) is not read."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if stat.S_ISFIFO(mode):
        kind = "a named pipe (FIFO)"
    elif stat.S_ISSOCK(mode):
        kind = "a socket"
    else:
        kind = "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a special file"
    if path.is_symlink():
        kind = f"a link to {kind} ({shown_name(os.path.realpath(path))})"
    return f"{kind}, not a document"


def _once(listing: FileListing, path: Path, followed: dict[Path, str], slash: str = "") -> bool:
    """Whether to read ``path``: not a link, or a link that leads outside the folder to something not read yet;
    each followed target is noted in ``followed``. If not, ``listing.skipped`` says why."""
    name = listing.shown(path) + slash
    if not path.is_symlink():
        first = followed.get(path.resolve()) if followed else None  # (below a followed link: read already?)
        if first is not None:
            listing.skipped.append((name, f"the same as {first}, read under that name"))
        return first is None
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):  # missing, or links that lead to each other (3.11: RuntimeError)
        listing.skipped.append((name, "a link that leads nowhere (its target is missing, or links loop)"))
        return False
    base = listing.base.resolve()
    if target == base or base in target.parents:
        inside = shown_name(target.relative_to(base).as_posix()) + slash if target != base else "the folder itself"
        listing.skipped.append((name, f"a link to {inside} in the documents folder, read under its own name"))
        return False
    for seen, first in followed.items():
        if target == seen or (first.endswith("/") and seen in target.parents):
            listing.skipped.append((name, f"a link to what {first} leads to, read under that name"))
            return False
    followed[target] = name
    return True


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
    report.skipped.extend(listing.skipped)
    for done, path in enumerate(listing.paths, 1):
        rel = listing.shown(path)
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


def read_file(
    path: Path, rel: str, on_page: Callable[[int, int], None] | None = None
) -> tuple[list[Document], list[tuple[str, str]], int | None]:
    """Read and parse one supported file.

    Parameters
    ----------
    path : Path
    rel : str
        Its name as reported (relative to the folder read).
    on_page : callable, optional
        ``on_page(done, total)`` while a long PDF is read.

    Returns
    -------
    (list of Document, list of (str, str), int or None)
        Its documents with text, what was skipped and why (the file, or lines and
        documents of it), and its size in bytes (``None`` when it could not be read
        or parsed).
    """
    from .formats import Unreadable

    skipped: list[tuple[str, str]] = []
    found = types.find(path)
    kind = found.kind if found is not None else types.TEXT  # (a file crag does not list: read as text)
    try:
        size = os.stat(path).st_size
        with types.reporting(types.Report(skipped, on_page)):  # what it skips of the file, a long file's progress
            docs = list(kind.read(path, rel))
        if not all(isinstance(doc, Document) for doc in docs):
            raise TypeError(f"the {kind.name} parser gave something other than a list of Documents")
    except Unreadable as exc:
        return [], [(rel, str(exc))], None
    except UnicodeDecodeError:
        return [], [(rel, "not UTF-8")], None
    except OSError as exc:
        return [], [(rel, f"unreadable ({exc.strerror or exc})")], None
    except Exception as exc:  # a parser failing on one file must not stop the folder
        return [], [(rel, f"unparsable ({type(exc).__name__}: {one_line(exc)})")], None
    kept = []
    for doc in docs:
        if doc.text.strip() or doc.path is not None:
            kept.append(doc)
        else:
            skipped.append((doc.source, "no text"))
    return kept, skipped, size


def split_documents(docs: Sequence[Document], max_words: int, skipped: list[tuple[str, str]]) -> tuple[list, int]:
    """The passages of a file's documents (:func:`crag_cli.documents.bigtext.passages`), and how many documents gave them.

    A large text file is read here, piece by piece: one that turns out not to be
    UTF-8, unreadable or not text gives no passage, and ``skipped`` says why.
    """
    from .bigtext import passages
    from .formats import Unreadable

    out: list = []
    kept = 0
    for doc in docs:
        try:
            out.extend(passages(doc, max_words))
            kept += 1
        except UnicodeDecodeError:
            skipped.append((doc.source, "not UTF-8"))
        except OSError as exc:
            skipped.append((doc.source, f"unreadable ({exc.strerror or exc})"))
        except Unreadable as exc:
            skipped.append((doc.source, str(exc)))
    return out, kept


def read_folder(folder: Path, progress=None, include_hidden: bool = False) -> CorpusReport:
    """Read every supported document below ``folder`` (hidden files and folders only with ``include_hidden``)."""
    return read_files(list_files(folder, include_hidden), progress)
