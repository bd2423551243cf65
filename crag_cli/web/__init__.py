"""External knowledge: rewrite the question, search the web, fetch, extract, refine.

``types`` holds what the pipeline sees (:class:`ExternalKnowledge`, the
:class:`WebCorrector` protocol); ``rewrite`` the keyword query; ``search``
the search engines; ``fetch`` the page fetcher with its address guard;
``cache`` the on-disk cache; ``stage`` the whole stage (:class:`WebSearch`).
"""

from .types import ExternalKnowledge, SearchBackend, SearchResult, WebCorrector

__all__ = ["ExternalKnowledge", "SearchBackend", "SearchResult", "WebCorrector"]
