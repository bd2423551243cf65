"""Loading an index: one generation of it, whole, however often ``crag index`` replaces it meanwhile.

A rebuild writes the new index into a temporary folder, renames the old one
aside, renames the new one into place and deletes the old (:mod:`.build`); no
file is ever rewritten in place. So the folder is opened once, and every file
through that descriptor (``openat``): the files are all of one generation even
when the folder is renamed away meanwhile, and once open (and mapped) they stay
readable when it is deleted. A file missing from a folder that is no longer the
one at the index's path went with the old generation: the load starts again,
with the new one. Only a folder still in place that lacks a file, or files that
do not fit together, are a corrupt index.

What is read is checked where it is cheap (:meth:`crag_cli.index.bm25.TermMatrix.check`,
:class:`.store.PassageStore`): counts, bounds, order and finiteness, so that a
damaged file is a "corrupt index" error rather than wrong hits.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from .bm25 import INDICES, INDPTR, TF, VOCAB, WEIGHTS, TermMatrix
from .format import (
    BM25_DIR,
    FORMAT_VERSION,
    MANIFEST,
    PASSAGE_OFFSETS,
    PASSAGES,
    IndexUnusableError,
    await_folder,
    check_manifest,
    corrupt,
)
from .dense import DENSE_DIR, VECTORS, DenseInfo, as_rows
from .store import PassageStore

ATTEMPTS = 20  # loads begun again because a rebuild replaced the folder meanwhile
_FILE = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
_FOLDER = _FILE | getattr(os, "O_DIRECTORY", 0)
_TERMS = (VOCAB, INDPTR, INDICES, TF, WEIGHTS)


class _Replaced(Exception):
    """The folder being opened was replaced by a rebuild, and a file of it already deleted."""


@dataclass
class Loaded:
    """One generation of an index: its manifest, its passages (read on demand) and its term matrix (mapped)."""

    manifest: dict
    passages: PassageStore
    terms: TermMatrix
    vectors: object = None  # (passages, dim) float16, mapped: the dense part's, None when the index has none


def load_index(index_dir: Path, versions: tuple[int, ...] = (FORMAT_VERSION,)) -> Loaded:
    """The index at ``index_dir``, all of one generation, checked; :class:`IndexUnusableError` if it is not usable.

    A folder missing for the instant of a rebuild's renames is waited for
    (:func:`.format.await_folder`); one replaced while its files were being
    opened is opened again, up to :data:`ATTEMPTS` times.
    """
    index_dir = Path(index_dir)
    for attempt in range(ATTEMPTS):
        await_folder(index_dir)
        fds: dict[str, int] = {}
        try:
            manifest = _open_all(index_dir, versions, fds)
            return _read(index_dir, manifest, fds)
        except _Replaced:
            time.sleep(0.001 * attempt)
        finally:
            for fd in fds.values():
                os.close(fd)
    raise IndexUnusableError(
        f"the index at {index_dir} was replaced {ATTEMPTS} times while it was being loaded: try again"
    )


def _open_all(index_dir: Path, versions: tuple[int, ...], fds: dict[str, int]) -> dict:
    """Open every file of the index through one descriptor of its folder, into ``fds`` (``{name: fd}``, ``bm25/``
    names too); return the manifest, read (and checked) before the others are opened.

    Raises :class:`_Replaced` when the folder went (or lost a file) because a
    rebuild replaced it meanwhile.
    """
    folders: list[int] = []
    try:
        folders.append(os.open(index_dir, _FOLDER))
        fds[MANIFEST] = os.open(MANIFEST, _FILE, dir_fd=folders[0])
        manifest = check_manifest(index_dir, _read_bytes(fds[MANIFEST]), versions)
        for name in (PASSAGES, PASSAGE_OFFSETS):
            fds[name] = os.open(name, _FILE, dir_fd=folders[0])
        folders.append(os.open(BM25_DIR, _FOLDER, dir_fd=folders[0]))
        for name in _TERMS:
            fds[f"{BM25_DIR}/{name}"] = os.open(name, _FILE, dir_fd=folders[1])
        if DenseInfo.of(manifest) is not None:
            folders.append(os.open(DENSE_DIR, _FOLDER, dir_fd=folders[0]))
            fds[f"{DENSE_DIR}/{VECTORS}"] = os.open(VECTORS, _FILE, dir_fd=folders[2])
        return manifest
    except OSError as exc:
        if isinstance(exc, (FileNotFoundError, NotADirectoryError)) and not (
            folders and _in_place(index_dir, folders[0])
        ):
            raise _Replaced from None  # (the folder went before it was opened, or with a file of it)
        if not folders:
            raise IndexUnusableError(f"cannot read the index at {index_dir}: {exc.strerror or exc}") from None
        if isinstance(exc, FileNotFoundError) and MANIFEST not in fds:
            raise IndexUnusableError(f"{index_dir} is not a crag index (no {MANIFEST})") from None
        raise corrupt(index_dir, exc) from None
    finally:
        for fd in folders:
            os.close(fd)


def _in_place(index_dir: Path, folder: int) -> bool:
    """Whether the folder open as ``folder`` is still the one at ``index_dir`` (held open: its inode is not reused)."""
    try:
        here, opened = os.stat(index_dir), os.fstat(folder)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (opened.st_dev, opened.st_ino)


def _read(index_dir: Path, manifest: dict, fds: dict[str, int]) -> Loaded:
    """Read and check the opened files (``fds``; the passages' is handed to the store and removed)."""
    passages = None
    try:
        offsets = _map(fds[PASSAGE_OFFSETS])
        passages = PassageStore(index_dir / PASSAGES, offsets, fd=fds.pop(PASSAGES))
        arrays = [_map(fds[f"{BM25_DIR}/{name}"]) for name in (INDPTR, INDICES, TF, WEIGHTS)]
        terms = TermMatrix.of_parts(_read_bytes(fds[f"{BM25_DIR}/{VOCAB}"]), arrays)
        info = DenseInfo.of(manifest)
        vectors = None if info is None else as_rows(_map(fds[f"{DENSE_DIR}/{VECTORS}"]), info, len(passages))
    except Exception as exc:
        if passages is not None:
            passages.close()
        raise corrupt(index_dir, exc) from None
    if len(passages) != manifest["passage_count"] or terms.n != len(passages):
        passages.close()
        raise corrupt(index_dir, "passage count does not match the manifest")
    return Loaded(manifest, passages, terms, vectors)


def _read_bytes(fd: int) -> bytes:
    with os.fdopen(fd, "rb", closefd=False) as f:
        f.seek(0)
        return f.read()


def _map(fd: int):
    """The one-dimensional NumPy array an open ``.npy`` file holds, memory-mapped read-only (as
    ``np.load(path, mmap_mode="r")`` maps it, from a descriptor); ``ValueError`` if it holds no such array."""
    import numpy as np

    with os.fdopen(fd, "rb", closefd=False) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"unknown .npy version {version}")
        if dtype.hasobject or len(shape) != 1:
            raise ValueError(f"not a one-dimensional array of numbers ({dtype}, shape {shape})")
        return np.memmap(f, dtype=dtype, mode="r", shape=shape, offset=f.tell())
