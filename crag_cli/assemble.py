"""Build the pipeline's components from :class:`~crag_cli.settings.Settings`."""

from __future__ import annotations

from dataclasses import fields
from typing import TypeVar

from .action.trigger import Thresholds, resolve_thresholds
from .evaluator import Evaluator, build_evaluator
from .reader import Reader, ReaderOptions
from .index import BM25Index, NoIndex, Retrieval
from .pipeline.corrective import Pipeline
from .action.knowledge import ReadingPolicy
from .settings import Settings
from .settings.info import stage_settings

T = TypeVar("T")


def thresholds(settings: Settings) -> Thresholds:
    """The thresholds in force: the evaluator's own, a preset's, and the settings' (checked together here)."""
    return resolve_thresholds(
        settings.evaluator, settings.preset, settings.upper, settings.lower, settings.filter_threshold
    )


def evaluator_of(spec: str, **settings) -> Evaluator:
    """The evaluator ``spec`` (setting ``evaluator``) with the evaluator settings given by name, the others at
    their defaults; its thresholds are its own (:func:`evaluator` makes its guard follow those in force)."""
    return _evaluator(Settings(evaluator=spec, **settings))


def _evaluator(settings: Settings) -> Evaluator:
    own = stage_settings(settings, "evaluator")  # the evaluator's own settings, by name
    return build_evaluator(own.pop("evaluator"), **own)


def evaluator(settings: Settings, th: Thresholds | None = None) -> Evaluator:
    """The evaluator of ``settings``, its topic guard following the thresholds in force (``th``, resolved once by
    the caller that has them)."""
    ev = _evaluator(settings)
    if hasattr(ev, "use_thresholds"):  # a trained evaluator's topic guard follows the thresholds in force
        th = th or thresholds(settings)
        ev.use_thresholds(th.upper, th.lower)
    return ev


PROMPT_SETTINGS = (
    "task",
    "max_tokens",
    "model_knowledge",
    "reader_judge",
)  # reader settings that the pipeline uses (the prompt and its answer)


def reader(settings: Settings) -> Reader:
    """The reader of ``settings.model``, built by its backend (:mod:`crag_cli.reader.backends`)."""
    options = {k: v for k, v in stage_settings(settings, "reader").items() if k not in PROMPT_SETTINGS}
    model = options.pop("model")
    return settings.reader_backend.create(model, ReaderOptions(**options))


def web_corrector(settings: Settings, evaluator: Evaluator, reader: Reader | None, th: Thresholds):
    """The external-knowledge stage for ``settings.web`` (``ddgs`` or ``searxng``; ``None`` for ``none``)."""
    if settings.web == "none":
        return None
    from .errors import CragError
    from .reader import cache_dir
    from .web.search import DdgsBackend, SearxngBackend
    from .web.cache import DiskCache
    from .web.fetch import Fetcher
    from .web.stage import WebOptions, WebSearch

    if settings.web == "searxng":
        backend_ = SearxngBackend(settings.searxng_url or "", settings.fetch_timeout, settings.allow_private)
    elif settings.web == "ddgs":
        backend_ = DdgsBackend(timeout=settings.fetch_timeout)
    else:
        raise CragError(f"unknown web backend {settings.web!r}")
    cache = None
    if settings.cache:
        cache = DiskCache(cache_dir() / "web-cache", settings.cache_ttl, int(settings.cache_max_mb * 1_000_000))
    rewriter = reader.fork(n_ctx=1024) if reader is not None and settings.rewrite == "model" else None
    fetcher = Fetcher(settings.fetch_timeout, settings.max_page_bytes, settings.allow_private)
    return WebSearch(backend_, evaluator, rewriter, fetcher, part(settings, WebOptions), th.filter, cache)


def part(settings: Settings, cls: type[T]) -> T:
    """``cls``, a stage's dataclass of settings, with the values of the settings of the same names."""
    return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})


def retriever(settings: Settings, index: BM25Index | None = None) -> Retrieval:
    """The index of ``settings`` (or ``index``, loaded), searched as the setting ``retrieval`` says."""
    return Retrieval(index if index is not None else BM25Index.load(settings.index), settings.retrieval)


def pipeline(
    settings: Settings,
    with_reader: bool = True,
    index: BM25Index | None = None,
    retrieve: bool = True,
    with_web: bool | None = None,
    reading: ReadingPolicy | None = None,
) -> Pipeline:
    """A ready pipeline from validated settings; the index is loaded now, models lazily on first use.

    ``retrieve=False`` (the ``no-retrieval`` baseline) needs no index. ``with_web`` (default:
    ``with_reader``) builds the web stage of ``settings.web``; without a reader no model
    rewrites the query (``--rewrite model`` falls back to the question's content words). ``reading``
    replaces crag's reading rule (:mod:`crag_cli.action.knowledge`), as a benchmark compares policies.
    """
    with_web = with_reader if with_web is None else with_web
    if with_reader:
        settings.reader_backend.check(settings.model)  # a missing extra is one line before the index or any model loads
    th = thresholds(settings)
    ev = evaluator(settings, th)
    gen = reader(settings) if with_reader else None
    return Pipeline(
        retriever=retriever(settings, index) if retrieve else NoIndex(),
        evaluator=ev,
        thresholds=th,
        reader=gen,
        web=web_corrector(settings, ev, gen, th) if with_web else None,
        settings=settings,
        reading=reading,
    )
