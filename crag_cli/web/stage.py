"""The web stage: rewrite -> search -> fetch -> extract -> refine, every failure recorded, never raised."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..evaluator import Evaluator
from ..reader import Reader
from ..action.refine import KnowledgeSource, Unread, refine
from .search import SearchError, wikipedia_first
from .cache import DiskCache
from .fetch import Fetcher, Page, check_url, page_text
from .rewrite import keyword_query, rewrite_query
from .types import ExternalKnowledge, SearchResult


@dataclass(frozen=True)
class WebOptions:
    """The settings the web stage reads, of the same names (built once from the run's settings by
    :func:`crag_cli.assemble.web_corrector`): the web ones and the refine ones it shares with the folder's passages."""

    web_results: int
    rewrite: str
    rewrite_tokens: int
    wiki_first: bool
    strips_scored: int
    strip_mode: str
    strips: int
    ranking: str


class WebSearch:
    """Rewrite -> search -> fetch -> extract -> refine, recording every failure instead of raising.

    Parameters
    ----------
    backend : SearchBackend
    evaluator : Evaluator
        Scores the web strips (the same refinement as internal knowledge).
    reader : Reader, optional
        Writes the keyword query with ``rewrite="model"`` (``None``: content words instead).
    fetcher : Fetcher
    settings : WebOptions
        The web settings it reads (``web_results``, ``rewrite``, ``rewrite_tokens``, ``wiki_first``,
        ``strips_scored``) and the refine ones (``strip_mode``, ``strips``, ``ranking``); ``rewrite`` is the
        search query: the question's content words (no model), the reader's keyword query, or the
        question itself.
    filter_threshold : float
        Strips scoring below it are dropped (the thresholds in force).
    cache : DiskCache, optional
        Searches and pages kept on disk (``None``: none).
    """

    def __init__(
        self,
        backend,
        evaluator: Evaluator,
        reader: Reader | None,
        fetcher: Fetcher,
        settings: WebOptions,
        filter_threshold: float,
        cache: DiskCache | None = None,
    ) -> None:
        self.backend = backend
        self.evaluator = evaluator
        self.reader = reader
        self.fetcher = fetcher
        self.settings = settings
        self.filter_threshold = filter_threshold
        self.cache = cache

    def _search(self, query: str) -> list[SearchResult]:
        key = f"search:{self.backend.name}:{self.backend.where}:{self.settings.web_results}:{query}"
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return [SearchResult(**r) for r in hit]
        found = self.backend.search(query, self.settings.web_results)
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

    def run(self, question: str, timings: dict[str, float], unread: Unread | None = None) -> ExternalKnowledge:
        """The web's knowledge for ``question``; ``unread`` as :func:`crag_cli.action.refine.refine` takes it."""
        ext = ExternalKnowledge(backend=self.backend.name)
        start = time.perf_counter()
        notes: list[str] = []
        if self.settings.rewrite == "model":
            query, ext.rewritten, note = rewrite_query(question, self.reader, self.settings.rewrite_tokens)
            if note:
                notes.append(note)
        elif self.settings.rewrite == "words":
            query = keyword_query(question)
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
        if self.settings.wiki_first:
            results = wikipedia_first(results)
        ext.results = results
        sources, ext.pages = page_sources(self._fetch([r.url for r in results]))
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
            self.settings.strip_mode,
            self.settings.strips,
            self.filter_threshold,
            self.settings.ranking,
            self.settings.strips_scored,
            lexical_rank=self.settings.ranking == "fused",  # BM25 ranks only where the ranking reads them
            unread=unread,
        )
        timings["refine"] = timings.get("refine", 0.0) + time.perf_counter() - t1
        ext.error = "; ".join(notes) or None
        return ext


def page_sources(pages: list[Page]) -> tuple[list[KnowledgeSource], list[dict]]:
    """The main text of each fetched page as a knowledge source, and each page's record with what went wrong."""
    sources, records = [], []
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
        records.append(record)
    return sources, records
