"""The passage store: ``passages.jsonl`` with its byte offsets, read a passage at a time."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence, overload

from .. import jsonl
from ..documents.passages import Passage
from .format import PASSAGE_OFFSETS, corrupt

if TYPE_CHECKING:  # numpy is imported where it is used (a CLI that only parses flags never loads it)
    import numpy as np


def _index_text(p: Passage) -> str:
    """What BM25 sees of a passage: its document title, then its text."""
    return f"{p.title}\n{p.text}" if p.title else p.text


def write_passages(
    pieces: Sequence[range | Sequence[Passage]], path: Path, offsets_path: Path, old: "PassageStore | None" = None
) -> None:
    """Write passages as JSON lines to ``path`` and where each line starts to ``offsets_path``.

    Parameters
    ----------
    pieces : sequence of (range or sequence of Passage)
        In order: new passages, or a range of ``old``'s passages (copied as they
        are stored, without parsing).
    path : Path
        The JSON-lines file, one passage per line, in order.
    offsets_path : Path
        A NumPy ``int64`` array of ``passages + 1`` byte offsets: line ``i``
        is ``path``'s bytes ``offsets[i]:offsets[i + 1]``.
    old : PassageStore, optional
        The store the ranges refer to.
    """
    import numpy as np

    parts = [np.zeros(1, dtype=np.int64)]
    pos = 0
    with open(path, "wb") as f:
        for piece in pieces:
            if isinstance(piece, range):
                ends = old.copy_lines(piece.start, piece.stop, f)
                parts.append(ends + pos)
                pos += int(ends[-1]) if len(ends) else 0
                continue
            ends = np.empty(len(piece), dtype=np.int64)
            for i, p in enumerate(piece):
                line = (json.dumps(p.to_dict(), ensure_ascii=False) + "\n").encode("utf-8")
                f.write(line)
                pos += len(line)
                ends[i] = pos
            parts.append(ends)
    np.save(offsets_path, np.concatenate(parts))


def row_spans(pieces: Sequence[range | Sequence[Passage]]) -> list[tuple[bool, int, int]]:
    """Where the passages of ``pieces`` (as :func:`write_passages` takes them) are, in order: ``(old, first,
    end)``, rows of the old index (``old``) or of the new passages counted from the first, each run of rows
    that follow each other as one span.

    Examples
    --------
    >>> row_spans([range(0, 3), range(3, 5), ["p", "q"], range(9, 10), ["r"]])
    [(True, 0, 5), (False, 0, 2), (True, 9, 10), (False, 2, 3)]
    """
    spans: list[tuple[bool, int, int]] = []
    at = 0
    for piece in pieces:
        old = isinstance(piece, range)
        first, end = (piece.start, piece.stop) if old else (at, at + len(piece))
        at = at if old else end
        if spans and spans[-1][0] == old and spans[-1][2] == first:
            spans[-1] = (old, spans[-1][1], end)
        else:
            spans.append((old, first, end))
    return spans


class PassageStore(Sequence[Passage]):
    """The passages of an index, read from disk when asked for: a read-only sequence of :class:`Passage`.

    Holds only the line offsets (memory-mapped) and an open file; ``store[i]``
    reads and parses line ``i`` (``os.pread``: safe from several threads).
    ``fd``, when given, is ``path`` already open (the store closes it); the
    offsets must be signed integers that ascend, from 0 to the file's size.
    """

    def __init__(self, path: Path, offsets, fd: int | None = None) -> None:
        from .bm25 import ascending

        self.path = Path(path)
        self._offsets = offsets
        self._fd = os.open(self.path, os.O_RDONLY) if fd is None else fd
        size = os.fstat(self._fd).st_size
        if (
            getattr(offsets, "ndim", 0) != 1
            or offsets.dtype.kind != "i"
            or len(offsets) < 1
            or int(offsets[0]) != 0
            or int(offsets[-1]) != size
            or not ascending(offsets)  # (a line is never empty)
        ):
            self.close()
            raise ValueError(f"{PASSAGE_OFFSETS} does not match {self.path.name} ({size} bytes)")

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, i: int) -> Passage: ...
    @overload
    def __getitem__(self, i: slice) -> list[Passage]: ...
    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"passage {i} of {n}")
        try:
            start, end = int(self._offsets[i]), int(self._offsets[i + 1])
            raw = os.pread(self._fd, end - start, start)
        except (ValueError, OSError, OverflowError) as exc:  # offsets that point nowhere
            raise corrupt(self.path, exc) from None
        return self._passage(raw)

    def _passage(self, raw: bytes) -> Passage:
        """One stored line as a passage; a damaged line is :func:`corrupt`."""
        try:
            return Passage.from_dict(jsonl.parse(raw))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:  # jsonl.BadLine among them
            raise corrupt(self.path, exc) from None

    def copy_lines(self, start: int, stop: int, out) -> "np.ndarray":
        """Write the stored lines of passages ``start:stop`` to the binary file ``out``, as they are.

        Returns where each copied line ends, counted from the first copied byte (int64).
        """
        import numpy as np

        a, b = int(self._offsets[start]), int(self._offsets[stop])
        for at in range(a, b, 1 << 24):
            out.write(os.pread(self._fd, min(1 << 24, b - at), at))
        return np.asarray(self._offsets[start + 1 : stop + 1], dtype=np.int64) - a

    def __iter__(self) -> Iterator[Passage]:
        with os.fdopen(os.dup(self._fd), "rb") as f:  # the file __getitem__ reads, even if the path was replaced
            f.seek(0)
            for line in f:
                if line.strip():
                    yield self._passage(line)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __getstate__(self):  # pickled (sent to a worker process): reopened there
        return {"path": self.path, "offsets": self._offsets}

    def __setstate__(self, state) -> None:
        self.__init__(state["path"], state["offsets"])
