"""The on-disk web cache: searches and fetched pages, bounded and expiring, safe across processes."""

from __future__ import annotations

from pathlib import Path


class DiskCache:
    """JSON values on disk under ``root``, keyed by a string, expiring after ``ttl`` seconds, bounded in size.

    Backed by diskcache (SQLite, safe across concurrent processes, values stored
    as JSON, never pickled). Expired entries are deleted when the cache is
    opened; past ``max_bytes`` the oldest entries are evicted. A cache that
    cannot be read or written only costs a refetch.
    """

    def __init__(self, root: Path, ttl: float, max_bytes: int) -> None:
        import diskcache

        self.root = Path(root)
        self.ttl = ttl
        try:
            self._cache = diskcache.Cache(
                str(self.root),
                size_limit=int(max_bytes),
                disk=diskcache.JSONDisk,
                eviction_policy="least-recently-stored",
                statistics=False,
            )
            self._cache.expire()
        except Exception:  # unwritable folder, corrupt database: run without a cache
            self._cache = None

    def get(self, key: str):
        if self._cache is None:
            return None
        try:
            return self._cache.get(key)
        except Exception:
            return None

    def put(self, key: str, value) -> None:
        if self._cache is None:
            return
        try:
            self._cache.set(key, value, expire=self.ttl)
        except Exception:
            pass

    def __len__(self) -> int:
        return len(self._cache) if self._cache is not None else 0

    def volume(self) -> int:
        """Bytes on disk."""
        return self._cache.volume() if self._cache is not None else 0

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
