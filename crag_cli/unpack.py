"""A body's Content-Encoding undone a bounded step at a time, so that a page packed small (a gzip bomb, in one layer
or several) is cut at its byte limit as it is unpacked instead of being unpacked whole.

httpx unpacks each piece that arrives whole: 2.5 kB sent as ``Content-Encoding: gzip, gzip`` become 1 GiB before
any limit is looked at, in one call that no timer can interrupt. Here every call to zlib makes at most
:data:`STEP` bytes (its ``max_length``), in every layer, and the reader gets control back after each.
"""

from __future__ import annotations

import asyncio
import zlib
from typing import Iterator

STEP = 64 * 1024  # the most bytes any one unpacking step makes, in any layer
MAX_LAYERS = 5  # content encodings stacked on one body (urllib3's limit); a real page has one at most
ACCEPT_ENCODING = "gzip, deflate"  # what crag can unpack, so what it asks for


class UnpackError(ValueError):
    """A body crag will not unpack: an encoding it has no decoder for, too many layers, or broken data."""


class _Deflate:
    """HTTP's ``deflate``: zlib's format, or (from some servers) raw deflate data; decided on the first bytes."""

    def __init__(self) -> None:
        self._inner = None

    def decompress(self, data: bytes, max_length: int) -> bytes:
        if self._inner is None:
            self._inner = zlib.decompressobj()
            try:
                return self._inner.decompress(data, max_length)
            except zlib.error:
                self._inner = zlib.decompressobj(-zlib.MAX_WBITS)
        return self._inner.decompress(data, max_length)

    @property
    def unconsumed_tail(self) -> bytes:
        return self._inner.unconsumed_tail if self._inner is not None else b""


def _layer(name: str):
    if name in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)  # one gzip member; what follows it is ignored, as httpx does
    if name == "deflate":
        return _Deflate()
    raise UnpackError(f"unsupported content encoding {name}")


class Unpacker:
    """Undoes ``content_encoding`` (a Content-Encoding header's value) in steps of at most :data:`STEP` bytes.

    >>> import gzip
    >>> unpacker = Unpacker("gzip, gzip")
    >>> pieces = list(unpacker.pieces(gzip.compress(gzip.compress(b"a" * 200_000))))
    >>> max(map(len, pieces)) <= STEP and b"".join(pieces) == b"a" * 200_000
    True
    >>> Unpacker("br")
    Traceback (most recent call last):
    ...
    crag_cli.unpack.UnpackError: unsupported content encoding br
    """

    def __init__(self, content_encoding: str = "") -> None:
        names = [n.strip().lower() for n in content_encoding.split(",")]
        names = [n for n in names if n and n != "identity"]
        if len(names) > MAX_LAYERS:
            raise UnpackError(f"{len(names)} content encodings (at most {MAX_LAYERS} are unpacked)")
        self.layers = [_layer(name) for name in reversed(names)]  # the last encoding applied is undone first

    def pieces(self, data: bytes) -> Iterator[bytes]:
        """What ``data`` (the next bytes received) unpacks to, in pieces of at most :data:`STEP` bytes.

        After every step in any layer a piece is yielded, empty when that step made nothing for the last layer,
        so that the reader can stop (at its byte limit, or its time limit) between any two steps.
        """
        try:
            yield from self._through(0, data)
        except zlib.error as exc:
            raise UnpackError(f"cannot unpack the body: {exc}") from None

    def _through(self, i: int, data: bytes) -> Iterator[bytes]:
        if i == len(self.layers):
            yield data
            return
        layer = self.layers[i]
        while True:
            out = layer.decompress(data, STEP)
            data = layer.unconsumed_tail  # what this step had no room for; empty once ``out`` is short of STEP
            if not out:
                return
            yield from self._through(i + 1, out)
            yield b""


async def read_bounded(resp, max_bytes: int) -> tuple[bytes, bool]:
    """The body of an httpx streaming response, unpacked, cut at ``max_bytes``: ``(body, cut)``.

    Reads the raw bytes and unpacks them with :class:`Unpacker`; gives the event loop a turn after every step,
    so that a limit on the whole request (``asyncio.wait_for``) ends it between any two steps. Raises
    :class:`UnpackError` for an encoding it cannot undo.
    """
    unpacker = Unpacker(resp.headers.get("content-encoding", ""))
    body = bytearray()
    async for raw in resp.aiter_raw():
        for piece in unpacker.pieces(raw):
            body += piece[: max_bytes + 1 - len(body)]
            if len(body) > max_bytes:
                return bytes(body[:max_bytes]), True
            await asyncio.sleep(0)
    return bytes(body), False
