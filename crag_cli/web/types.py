"""The web stage's types, as the pipeline sees them.

The stage itself ``WebCorrector.run(question)``
returns an :class:`ExternalKnowledge` and never raises for a network problem:
failures are recorded in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..reader import Reader
from ..action.refine import Strip, Unread


@dataclass(frozen=True)
class SearchResult:
    url: str
    title: str = ""
    snippet: str = ""


@dataclass
class ExternalKnowledge:
    """What the web stage found, and what went wrong on the way."""

    backend: str
    query: str | None = None
    rewritten: bool = False
    results: list[SearchResult] = field(default_factory=list)
    pages: list[dict] = field(default_factory=list)  # {"url", "status", "error", "chars"}
    strips: list[Strip] = field(default_factory=list)
    error: str | None = None
    from_snippets: bool = False

    @classmethod
    def disabled(cls) -> "ExternalKnowledge":
        return cls(backend="none", error="web search is off (--web none): no external knowledge")

    def to_dict(self) -> dict:
        return {
            "backend": self.backend,
            "query": self.query,
            "rewritten": self.rewritten,
            "results": [{"url": r.url, "title": r.title} for r in self.results],
            "pages": self.pages,
            "strips": [dict(s.to_dict(), url=s.source) for s in self.strips],
            "from_snippets": self.from_snippets,
            "error": self.error,
        }


class SearchBackend(Protocol):
    """A web search engine; ``where`` is the address it asks (part of the web cache's key; empty: its default)."""

    name: str
    where: str

    def search(self, query: str, k: int) -> list[SearchResult]: ...


class WebCorrector(Protocol):
    """The whole external-knowledge stage; ``reader`` writes its keyword query (``None``: no model).

    ``unread``, given the texts of the strips about to be scored, says whether none of them can be read: then
    none is scored and none kept (:func:`crag_cli.action.refine.refine`).
    """

    reader: Reader | None

    def run(self, question: str, timings: dict[str, float], unread: Unread | None = None) -> ExternalKnowledge: ...
