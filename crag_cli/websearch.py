"""The web stage: rewrite the question, search, fetch the pages, extract their text, refine.

Backends: ``ddgs`` (DuckDuckGo's HTML endpoint through the ddgs package, engine
pinned explicitly), ``searxng`` (a SearxNG instance's JSON API). Fetching uses
httpx with timeouts, a body-size cap, a redirect limit, an HTML/plain-text
content-type allow-list and, unless ``allow_private``, a refusal of URLs that are
not http(s) or that resolve to loopback, private, link-local or otherwise
non-public addresses (checked again at every redirect hop).

Search results and fetched pages are cached on disk (keyed by backend and
query, or by URL) for ``cache_ttl`` seconds.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence
from urllib.parse import urljoin, urlsplit

from . import jsonl
from .version import __version__
from .corpus import html_main_text, paragraphs
from .errors import CragError, one_line
from .evaluator import Evaluator
from .generator import Generator
from .refine import KnowledgeSource, refine
from .web import ExternalKnowledge, SearchResult

USER_AGENT = f"crag-cli/{__version__} (corrective question answering; https://pypi.org/project/crag-cli/)"
ALLOWED_TYPES = ("text/html", "application/xhtml+xml", "text/plain")
MAX_REDIRECTS = 3
DDGS_ENGINE = "duckduckgo"


class SearchError(Exception):
    """A search backend failed (network, HTTP status, rate limit, bad response)."""


# --------------------------------------------------------------------------- query rewriting

_STOPWORDS = set(
    "a an the of in on at to for from by with about as is are was were be been being do does did what who whom "
    "whose which when where why how that this these those it its his her their there here and or not no yes "
    "can could would should will shall may might must has have had i you he she we they me him them my your our "
    "s name named".split()
)

REWRITE_INSTRUCTION = (
    "Rewrite the question into a web search query of at most three keywords or short phrases, "
    "separated by commas. Keep the names and the main intent. Output only the query."
)
# Few-shot examples in the paper's style (question -> keyword query), given as chat turns.
REWRITE_EXAMPLES = (
    ("What is Henry Feilden's occupation?", "Henry Feilden, occupation"),
    ("In what city was Billy Carlson born?", "Billy Carlson, city of birth"),
    ("Who was the director of the film The Beach?", "The Beach, film, director"),
    ("What genre is the album Blue Train?", "Blue Train, album, genre"),
)


def rewrite_messages(question: str) -> list[dict]:
    """The few-shot chat that asks the generator for a keyword query; the question is the last turn."""
    messages = [{"role": "system", "content": REWRITE_INSTRUCTION}]
    for q, a in REWRITE_EXAMPLES:
        messages += [{"role": "user", "content": f"question: {q}"}, {"role": "assistant", "content": a}]
    messages.append({"role": "user", "content": f"question: {question}"})
    return messages


def content_words(question: str) -> str:
    """The deterministic fallback query: the question's words minus stop words and punctuation.

    Parameters
    ----------
    question : str

    Returns
    -------
    str
        Content words in their original order and case (the whole stripped
        question if none are left).
    """
    words = re.findall(r"[\w][\w'.-]*", question)
    kept = [w.rstrip(".'").removesuffix("'s") for w in words if w.lower().rstrip(".'") not in _STOPWORDS]
    kept = [w for w in kept if w]
    return " ".join(kept) if kept else question.strip()


def accept_query(raw: str, question: str) -> str | None:
    """A cleaned keyword query from the generator's output, or ``None`` when it is not one.

    Accepted: one line, at most three comma-separated parts of at most six words
    each, twelve words in all, no sentence-ending punctuation, and at least one
    content word shared with the question (an answer alone shares none).
    """
    line = next((ln.strip() for ln in raw.strip().splitlines() if ln.strip()), "")
    line = re.sub(r"^(query|search query|keywords)\s*:\s*", "", line, flags=re.I).strip().strip('"').strip()
    if not line or line.endswith((".", "?", "!")) or len(line) > 150:
        return None
    parts = [p.strip() for p in line.split(",") if p.strip()]
    if not 1 <= len(parts) <= 3 or any(len(p.split()) > 6 for p in parts) or len(line.split()) > 12:
        return None
    qwords = {w.lower() for w in content_words(question).split()}
    lwords = {w.lower().strip(".'").removesuffix("'s") for w in re.findall(r"[\w][\w'.-]*", line)}
    if not qwords & lwords:
        return None
    return ", ".join(parts)


def rewrite_query(question: str, generator: Generator | None) -> tuple[str, bool, str | None]:
    """``(query, rewritten, note)``: the generator's keyword query, or the content-word fallback."""
    if generator is None:
        return content_words(question), False, "no generator: content words used"
    try:
        raw = generator.generate(rewrite_messages(question), max_tokens=24).text
    except Exception as exc:  # the fallback is always available
        return content_words(question), False, f"rewrite failed ({exc}); content words used"
    query = accept_query(raw, question)
    if query is None:
        return (
            content_words(question),
            False,
            f"rewrite output {raw.strip()[:60]!r} is not a keyword query; content words used",
        )
    return query, True, None


# --------------------------------------------------------------------------- cache


class DiskCache:
    """JSON values on disk under ``root``, keyed by a string, expiring after ``ttl`` seconds, bounded in size.

    Backed by diskcache (SQLite, safe across concurrent processes, values stored
    as JSON, never pickled). Expired entries are deleted when the cache is
    opened; past ``max_bytes`` the oldest entries are evicted. A cache that
    cannot be read or written only costs a refetch.
    """

    def __init__(self, root: Path, ttl: float, max_bytes: int = 200_000_000) -> None:
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


# --------------------------------------------------------------------------- URL safety


def address_is_public(ip: str) -> bool:
    """Whether ``ip`` is a globally routable unicast address (not loopback, private, link-local, ...)."""
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped:
        addr = addr.ipv4_mapped
    return addr.is_global and not (addr.is_multicast or addr.is_reserved or addr.is_unspecified)


def check_url(url: str, allow_private: bool, trusted_hosts: Sequence[str] = ()) -> str | None:
    """Why ``url`` must not be fetched, or ``None`` when it may be.

    Refuses non-http(s) schemes always, and hosts resolving to a non-public
    address unless ``allow_private`` or the host is one of ``trusted_hosts``
    (names the user gave explicitly, such as their SearxNG instance's). The
    check resolves the name itself; a DNS answer that changes between the check
    and the connection is not covered.
    """
    try:
        parts = urlsplit(url)
        port = parts.port  # raises for a port that is not a number in 0-65535
    except (ValueError, TypeError) as exc:  # "http://[::1" and the like
        return f"malformed URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return f"refused: scheme {parts.scheme or '(none)'!r} is not http(s)"
    if not parts.hostname:
        return "refused: no host"
    if allow_private or parts.hostname in trusted_hosts:
        return None
    try:
        infos = socket.getaddrinfo(parts.hostname, port or (443 if parts.scheme == "https" else 80))
    except (socket.gaierror, UnicodeError) as exc:
        return f"cannot resolve {parts.hostname}: {exc}"
    for info in infos:
        ip = info[4][0]
        if not address_is_public(ip):
            return f"refused: {parts.hostname} resolves to non-public address {ip} (use --allow-private to allow)"
    return None


# --------------------------------------------------------------------------- backends


class SearxngBackend:
    """A SearxNG instance's JSON API: ``GET {url}/search?q=...&format=json``."""

    name = "searxng"

    def __init__(self, url: str, timeout: float = 10.0, allow_private: bool = False) -> None:
        if not url:
            raise CragError("--web searxng needs --searxng-url URL")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.allow_private = allow_private

    def search(self, query: str, k: int) -> list[SearchResult]:
        import httpx

        endpoint = f"{self.url}/search"
        problem = check_url(endpoint, self.allow_private, trusted_hosts=(urlsplit(self.url).hostname or "",))
        if problem:
            raise SearchError(f"SearxNG URL {problem}")
        try:
            resp = httpx.get(
                endpoint,
                params={"q": query, "format": "json"},
                timeout=self.timeout,
                headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            )
        except httpx.TimeoutException:
            raise SearchError(f"SearxNG timed out after {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise SearchError(f"SearxNG unreachable: {type(exc).__name__}: {exc}") from None
        if resp.status_code == 429:
            raise SearchError("SearxNG rate limit (HTTP 429)")
        if resp.status_code != 200:
            raise SearchError(
                f"SearxNG answered HTTP {resp.status_code}"
                + (" (is the json format enabled in its settings.yml?)" if resp.status_code == 403 else "")
            )
        try:
            data = jsonl.parse(resp.content, first=True)  # a hostile answer: deep nesting, huge numbers, surrogates
            rows = data["results"]
        except (ValueError, KeyError, TypeError):
            raise SearchError("SearxNG answer is not its JSON results format") from None
        out = []
        for row in rows:
            if isinstance(row, dict) and isinstance(row.get("url"), str):
                out.append(SearchResult(row["url"], str(row.get("title") or ""), str(row.get("content") or "")))
        return out[:k]


class DdgsBackend:
    """DuckDuckGo through the ddgs package, with its engine pinned (ddgs silently falls back on unknown names).

    Parameters
    ----------
    engine : str
        A ddgs text engine name (default ``duckduckgo``).
    endpoint : str, optional
        Replace the engine's search URL (a mirror or a test server).
    timeout : float
    """

    name = "ddgs"

    def __init__(self, engine: str = DDGS_ENGINE, endpoint: str | None = None, timeout: float = 10.0) -> None:
        from ddgs.engines import ENGINES

        available = ENGINES.get("text", {})
        if engine not in available:
            raise CragError(f"unknown ddgs engine {engine!r}: choose from {', '.join(sorted(available))}")
        self.engine_class = available[engine]
        self.engine = engine
        self.endpoint = endpoint
        self.timeout = timeout

    def search(self, query: str, k: int) -> list[SearchResult]:
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

        engine = self.engine_class(timeout=int(max(1, self.timeout)))
        if self.endpoint:
            engine.search_url = self.endpoint
        try:
            rows = engine.search(query)
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


# --------------------------------------------------------------------------- fetching


@dataclass
class Page:
    url: str
    status: int | None = None
    error: str | None = None
    content_type: str = ""
    body: str = ""
    truncated: bool = False
    cached: bool = False

    def record(self) -> dict:
        out = {"url": self.url, "status": self.status, "error": self.error}
        if self.truncated:
            out["truncated"] = True
        if self.cached:
            out["cached"] = True
        return out


class Fetcher:
    """Concurrent, bounded page fetching with httpx.

    Parameters
    ----------
    timeout : float
        Connect and read timeout, and the limit for a whole page.
    max_bytes : int
        Bodies are cut at this size (the page is marked ``truncated``).
    allow_private : bool
        Allow loopback/private/link-local addresses.
    trusted_hosts : sequence of str
        Host names allowed even when private (exactly as written in the URL).
    """

    def __init__(
        self,
        timeout: float = 10.0,
        max_bytes: int = 2_000_000,
        allow_private: bool = False,
        trusted_hosts: Sequence[str] = (),
    ) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.allow_private = allow_private
        self.trusted_hosts = tuple(trusted_hosts)

    def fetch_all(self, urls: Sequence[str]) -> list[Page]:
        """Fetch every URL concurrently; one :class:`Page` per URL, in order, never raising."""
        if not urls:
            return []
        return asyncio.run(self._fetch_all(list(urls)))

    async def _fetch_all(self, urls: list[str]) -> list[Page]:
        import httpx

        timeout = httpx.Timeout(self.timeout, connect=min(self.timeout, 5.0))
        async with httpx.AsyncClient(
            timeout=timeout,
            follow_redirects=False,
            headers={"User-Agent": USER_AGENT, "Accept": ", ".join(ALLOWED_TYPES)},
        ) as client:
            return list(await asyncio.gather(*(self._fetch_bounded(client, u) for u in urls)))

    async def _fetch_bounded(self, client, url: str) -> Page:
        try:
            return await asyncio.wait_for(self._fetch(client, url), timeout=self.timeout * 2)
        except asyncio.TimeoutError:
            return Page(url, error=f"timed out after {self.timeout * 2:g} s")

    async def _fetch(self, client, url: str) -> Page:
        import httpx

        current = url
        for _hop in range(MAX_REDIRECTS + 1):
            problem = await asyncio.to_thread(check_url, current, self.allow_private, self.trusted_hosts)
            if problem:
                return Page(url, error=problem if current == url else f"redirect to {current}: {problem}")
            try:
                async with client.stream("GET", current) as resp:
                    if resp.is_redirect:
                        location = resp.headers.get("location")
                        if not location:
                            return Page(url, resp.status_code, "redirect without a location")
                        current = urljoin(current, location)
                        continue
                    if resp.status_code != 200:
                        return Page(url, resp.status_code, f"HTTP {resp.status_code}")
                    ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
                    if ctype not in ALLOWED_TYPES:
                        return Page(url, resp.status_code, f"unsupported content type {ctype or '(none)'}")
                    chunks, size, truncated = [], 0, False
                    async for chunk in resp.aiter_bytes():
                        chunks.append(chunk)
                        size += len(chunk)
                        if size >= self.max_bytes:
                            truncated = True
                            break
                    body = b"".join(chunks)[: self.max_bytes]
                    text = body.decode(resp.encoding or "utf-8", errors="replace")
                    return Page(url, resp.status_code, None, ctype, text, truncated)
            except httpx.TimeoutException:
                return Page(url, error=f"timed out after {self.timeout:g} s")
            except (httpx.HTTPError, httpx.InvalidURL, ValueError, UnicodeError) as exc:  # a bad URL or redirect
                return Page(url, error=f"{type(exc).__name__}: {one_line(exc)}")
        return Page(url, error=f"more than {MAX_REDIRECTS} redirects")


MAX_PAGE_WORDS = 3000  # words of a page's main text that are refined (bounds the evaluator's work per page)


def page_text(page: Page, max_words: int = MAX_PAGE_WORDS) -> tuple[str, str]:
    """``(title, main text)`` of a fetched page: readability for HTML, paragraphs for plain text.

    Only whole paragraphs within the first ``max_words`` words are kept (at least one).
    """
    if page.content_type == "text/plain":
        title, paras = "", paragraphs(page.body)
    else:
        title, text = html_main_text(page.body)
        paras = text.split("\n\n") if text else []
    kept, words = [], 0
    for para in paras:
        n = len(para.split())
        if kept and words + n > max_words:
            break
        kept.append(para)
        words += n
    return title, "\n\n".join(kept)


# --------------------------------------------------------------------------- the stage


class WebSearch:
    """Rewrite -> search -> fetch -> extract -> refine, recording every failure instead of raising.

    Parameters
    ----------
    backend : SearchBackend
    evaluator : Evaluator
        Scores the web strips (the same refinement as internal knowledge).
    generator : Generator, optional
        Rewrites the question; ``None`` or ``rewrite=False`` searches without it.
    fetcher : Fetcher
    results : int
        Result pages to fetch.
    """

    def __init__(
        self,
        backend,
        evaluator: Evaluator,
        generator: Generator | None,
        fetcher: Fetcher,
        results: int = 5,
        rewrite: bool = True,
        wiki_first: bool = False,
        cache: DiskCache | None = None,
        strip_mode: str = "excerption",
        strips: int = 5,
        filter_threshold: float = -0.5,
        ranking: str = "evaluator",
        strips_scored: int | None = None,
    ) -> None:
        self.backend = backend
        self.evaluator = evaluator
        self.generator = generator
        self.fetcher = fetcher
        self.results = results
        self.rewrite = rewrite
        self.wiki_first = wiki_first
        self.cache = cache
        self.strip_mode = strip_mode
        self.strips = strips
        self.filter_threshold = filter_threshold
        self.ranking = ranking
        self.strips_scored = strips_scored

    def _search(self, query: str) -> list[SearchResult]:
        key = f"search:{self.backend.name}:{getattr(self.backend, 'url', '')}:{self.results}:{query}"
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return [SearchResult(**r) for r in hit]
        found = self.backend.search(query, self.results)
        if self.cache is not None and found:
            self.cache.put(key, [r.__dict__ for r in found])
        return found

    def _page_key(self, url: str) -> str:
        """Pages fetched while private addresses were allowed are only ever served under the same policy
        (and pages cut at one size limit are not served to a run with another)."""
        policy = "private-allowed" if self.fetcher.allow_private else "public-only"
        return f"page:{policy}:{self.fetcher.max_bytes}:{url}"

    def _fetch(self, urls: list[str]) -> list[Page]:
        """Fetch (or take from the cache) each URL; the address check comes first, cached or not."""
        pages: dict[str, Page] = {}
        allowed = []
        for url in urls:
            problem = check_url(url, self.fetcher.allow_private, self.fetcher.trusted_hosts)
            if problem:
                pages[url] = Page(url, error=problem)
            else:
                allowed.append(url)
        if self.cache is not None:
            for url in allowed:
                hit = self.cache.get(self._page_key(url))
                if hit is not None:
                    pages[url] = Page(**hit, cached=True)
        missing = [u for u in allowed if u not in pages]
        for page in self.fetcher.fetch_all(missing):
            pages[page.url] = page
            if self.cache is not None and page.error is None:
                self.cache.put(self._page_key(page.url), {k: v for k, v in page.__dict__.items() if k != "cached"})
        return [pages[u] for u in urls]

    def run(self, question: str, timings: dict[str, float]) -> ExternalKnowledge:
        ext = ExternalKnowledge(backend=self.backend.name)
        start = time.perf_counter()
        notes: list[str] = []
        if self.rewrite:
            query, ext.rewritten, note = rewrite_query(question, self.generator)
            if note:
                notes.append(note)
        else:
            query = question
        timings["rewrite"] = time.perf_counter() - start
        ext.query = query
        t0 = time.perf_counter()
        try:
            results = self._search(query)
        except SearchError as exc:
            ext.error = "; ".join(notes + [f"search failed: {exc}"])
            timings["search"] = time.perf_counter() - t0
            return ext
        if self.wiki_first:
            results = wikipedia_first(results)
        ext.results = results
        pages = self._fetch([r.url for r in results])
        sources = []
        for page in pages:
            record = page.record()
            if page.error is None:
                try:
                    title, text = page_text(page)
                except Exception as exc:  # an unparsable page is that page's error
                    title, text = "", ""
                    record["error"] = f"unparsable page: {type(exc).__name__}"
                if text.strip():
                    sources.append(KnowledgeSource(page.url, title, text))
                elif record["error"] is None:
                    record["error"] = "no main text"
            ext.pages.append(record)
        if not sources:
            sources = [KnowledgeSource(r.url, r.title, r.snippet) for r in results if r.snippet.strip()]
            ext.from_snippets = bool(sources)
            if results:
                notes.append("no page yielded text: using the search snippets")
        if not results:
            notes.append("the search returned no results")
        timings["search"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        ext.strips = refine(
            question,
            sources,
            self.evaluator,
            self.strip_mode,
            self.strips,
            self.filter_threshold,
            self.ranking,
            self.strips_scored,
            lexical_rank=True,
        )
        timings["refine"] = timings.get("refine", 0.0) + time.perf_counter() - t1
        ext.error = "; ".join(notes) or None
        return ext


def build_web_corrector(settings, evaluator: Evaluator, generator: Generator | None, thresholds) -> WebSearch:
    """The web stage for ``settings.web`` (``ddgs`` or ``searxng``)."""
    from .generator import cache_dir

    if settings.web == "searxng":
        backend = SearxngBackend(settings.searxng_url or "", settings.fetch_timeout, settings.allow_private)
    elif settings.web == "ddgs":
        backend = DdgsBackend(timeout=settings.fetch_timeout)
    else:
        raise CragError(f"unknown web backend {settings.web!r}")
    cache = None
    if settings.cache:
        cache = DiskCache(cache_dir() / "web-cache", settings.cache_ttl, int(settings.cache_max_mb * 1_000_000))
    return WebSearch(
        backend,
        evaluator,
        generator,
        Fetcher(settings.fetch_timeout, settings.max_page_bytes, settings.allow_private),
        results=settings.web_results,
        rewrite=settings.rewrite,
        wiki_first=settings.wiki_first,
        cache=cache,
        strip_mode=settings.strip_mode,
        strips=settings.strips,
        filter_threshold=thresholds.filter,
        ranking=settings.ranking,
        strips_scored=settings.strips_scored,
    )
