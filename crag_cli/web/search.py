"""Search backends: ``searxng`` (a SearxNG instance's JSON API) and ``ddgs`` (DuckDuckGo through ddgs, engine pinned)."""

from __future__ import annotations

import asyncio
from typing import Sequence
from urllib.parse import urlsplit

from .. import jsonl
from ..errors import CragError
from .fetch import USER_AGENT, check_url, tls_context, whole_limit
from .types import SearchResult
from ..unpack import ACCEPT_ENCODING, UnpackError, read_bounded

DDGS_ENGINE = "duckduckgo"
MAX_ANSWER_BYTES = 4_000_000  # a SearxNG answer of 10 results is some kB; a bigger one is not read to its end


class SearchError(Exception):
    """A search backend failed (network, HTTP status, rate limit, bad response)."""


class SearxngBackend:
    """A SearxNG instance's JSON API: ``GET {where}/search?q=...&format=json`` (``where``: its base URL)."""

    name = "searxng"

    def __init__(self, url: str, timeout: float, allow_private: bool) -> None:
        if not url:
            raise CragError("--web searxng needs --searxng-url URL")
        self.where = url.rstrip("/")
        self.timeout = timeout
        self.allow_private = allow_private

    def search(self, query: str, k: int) -> list[SearchResult]:
        endpoint = f"{self.where}/search"
        problem = check_url(endpoint, self.allow_private, trusted_hosts=(urlsplit(self.where).hostname or "",))
        if problem:
            raise SearchError(f"SearxNG URL {problem}")
        limit = whole_limit(self.timeout)  # as for a page: a server dripping bytes cannot hold the question
        try:
            status, body = asyncio.run(asyncio.wait_for(self._get(endpoint, query), timeout=limit))
        except asyncio.TimeoutError:
            raise SearchError(f"SearxNG did not answer within {limit:g} s") from None
        if status == 429:
            raise SearchError("SearxNG rate limit (HTTP 429)")
        if status != 200:
            raise SearchError(
                f"SearxNG answered HTTP {status}"
                + (" (is the json format enabled in its settings.yml?)" if status == 403 else "")
            )
        return searxng_results(body)[:k]

    async def _get(self, endpoint: str, query: str) -> tuple[int, bytes]:
        """The answer's status and body; a network failure is a :class:`SearchError`."""
        import httpx

        try:
            async with httpx.AsyncClient(
                timeout=self.timeout,
                verify=tls_context(),
                headers={"User-Agent": USER_AGENT, "Accept": "application/json", "Accept-Encoding": ACCEPT_ENCODING},
            ) as client:
                async with client.stream("GET", endpoint, params={"q": query, "format": "json"}) as resp:
                    body, cut = await read_bounded(resp, MAX_ANSWER_BYTES)  # cut as it is unpacked, as a page is
                    if cut:
                        raise SearchError(f"SearxNG answer over {MAX_ANSWER_BYTES // 1_000_000} MB: not read")
                    return resp.status_code, body
        except UnpackError as exc:
            raise SearchError(f"SearxNG answer: {exc}") from None
        except httpx.TimeoutException:
            raise SearchError(f"SearxNG timed out after {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise SearchError(f"SearxNG unreachable: {type(exc).__name__}: {exc}") from None


def searxng_results(body: bytes) -> list[SearchResult]:
    """The results of a SearxNG JSON answer, in order.

    A hostile or broken answer (not JSON, deep nesting, huge numbers, no
    ``results`` list) is a :class:`SearchError`; a row that is not an object
    with a ``url`` string of valid Unicode is dropped (the others are kept), and
    a ``title`` or ``content`` that is not such a string is taken as empty.
    """
    try:
        data = jsonl.parse(body, first=True, check_strings=False)  # strings are checked row by row below
    except jsonl.BadLine as exc:
        raise SearchError(f"SearxNG answer is not its JSON results format ({exc})") from None
    rows = data.get("results") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise SearchError("SearxNG answer is not its JSON results format (no results list)")

    def text(row: dict, key: str) -> str:
        value = row.get(key)
        return value if isinstance(value, str) and jsonl.valid_unicode(value) else ""

    return [
        SearchResult(text(row, "url"), text(row, "title"), text(row, "content"))
        for row in rows
        if isinstance(row, dict) and text(row, "url")
    ]


class DdgsBackend:
    """DuckDuckGo through the ddgs package, with its engine pinned (ddgs silently falls back on unknown names).

    Parameters
    ----------
    timeout : float
        Setting ``fetch_timeout``.
    engine : str
        A ddgs text engine name (default ``duckduckgo``).
    endpoint : str, optional
        Replace the engine's search URL (a mirror or a test server).
    """

    name = "ddgs"

    def __init__(self, timeout: float, engine: str = DDGS_ENGINE, endpoint: str | None = None) -> None:
        from ddgs.engines import ENGINES

        available = ENGINES.get("text", {})
        if engine not in available:
            raise CragError(f"unknown ddgs engine {engine!r}: choose from {', '.join(sorted(available))}")
        self.engine_class = available[engine]
        self.engine = engine
        self.endpoint = endpoint
        self.where = endpoint or ""
        self.timeout = timeout

    def search(self, query: str, k: int) -> list[SearchResult]:
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

        engine = self.engine_class(timeout=int(max(1, self.timeout)))
        if self.endpoint:
            engine.search_url = self.endpoint
        try:
            rows = engine.search(query)  # its client's timeout bounds the whole answer (a test drips one)
        except RatelimitException as exc:
            raise SearchError(f"DuckDuckGo rate limit: {exc}") from None
        except TimeoutException:
            raise SearchError(f"DuckDuckGo timed out after {self.timeout:g} s") from None
        except DDGSException as exc:
            raise SearchError(f"DuckDuckGo unreachable: {exc}") from None
        if rows is None:
            raise SearchError("DuckDuckGo refused the request (HTTP error status; it answers so when rate-limiting)")
        rows = engine.post_extract_results(rows) if hasattr(engine, "post_extract_results") else rows
        if not rows:
            raise SearchError("No results found. (DuckDuckGo also says this when it rate-limits: try again later)")
        return [SearchResult(r.href, r.title or "", r.body or "") for r in rows if r.href][:k]


def wikipedia_first(results: Sequence[SearchResult]) -> list[SearchResult]:
    """Stable reordering: results on a ``*.wikipedia.org`` host first."""

    def is_wiki(r: SearchResult) -> bool:
        try:
            host = urlsplit(r.url).hostname or ""
        except ValueError:  # a malformed URL: its fetch reports it
            return False
        return host == "wikipedia.org" or host.endswith(".wikipedia.org")

    return sorted(results, key=lambda r: not is_wiki(r))
