"""Which reader runs a ``--model`` value: the registry of reader backends.

A backend says which ``--model`` values it takes and why one is unusable, the
user's file it reads (an input crag never writes, which Ray workers get as an
absolute path), what identifies its answers (a batch resumes only with the
same), what to check before anything loads, and it builds the
:class:`~crag_cli.reader.base.Reader`. Two are shipped: a served model
(``--reader-url``: any OpenAI-compatible server, :class:`ServedBackend`) and a
GGUF file read by crag's in-process llama.cpp server (:class:`EngineBackend`),
which takes every ``--model`` value when no URL is given. Installed packages
add others through the entry point group ``crag.readers``
(:mod:`crag_cli.plugins`, docs/extending.md): one list holds them all, and the
plugins' are asked first.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .. import files, plugins
from .models import EMBEDDED, embedded, model_file
from .base import Reader, ModelError, ReaderOptions
from .embedded import check_model, resolve_model
from .engine import EngineReader
from .served import KEY_VARIABLE, Connection, ServedReader


class ReaderBackend(Protocol):
    """A kind of reader: the ``--model`` values it takes, and what crag needs of them."""

    name: str

    def accepts(self, model: str) -> bool:
        """Whether ``model`` (a ``--model`` value) is this backend's."""
        ...

    def problem(self, model: str) -> str | None:
        """Why ``model`` cannot be used, in a few words (``None``: it can); checked by the settings."""
        ...

    def canonical(self, model: str) -> str:
        """The name ``model`` is recorded by (an alias becomes its model's name)."""
        ...

    def user_file(self, model: str) -> Path | None:
        """The user's file that ``model`` reads, if any (an input crag never writes)."""
        ...

    def fingerprint(self, model: str) -> str:
        """What identifies this reader's answers: the same model gives the same fingerprint."""
        ...

    def check(self, model: str) -> None:
        """Raise :class:`ModelError` now, before anything loads, when ``model`` cannot load (a missing extra)."""
        ...

    def create(self, model: str, options: ReaderOptions) -> Reader:
        """The reader, loaded lazily (counting or generating loads it)."""
        ...


class EngineBackend:
    """GGUF chat models read by llama.cpp's server in this process: the embedded models by name (docs/models.md)
    or a .gguf path."""

    name = "llama.cpp-server"

    def accepts(self, model: str) -> bool:
        return True  # the last backend: an embedded name, else a path

    def problem(self, model: str) -> str | None:
        if embedded(model) is not None:
            return None
        path, problem = model_file(model)
        return (
            None
            if path is not None
            else f"no such model ({problem}): give a .gguf file or one of {', '.join(EMBEDDED)}"
        )

    def canonical(self, model: str) -> str:
        known = embedded(model)
        return known.name if known is not None else model

    def user_file(self, model: str) -> Path | None:
        return None if embedded(model) is not None else model_file(model)[0]

    def fingerprint(self, model: str) -> str:
        """sha256 of the GGUF file (a split embedded model: its pinned sha256, checked before every load)."""
        known = embedded(model)
        if known is not None and known.split:
            return known.sha256
        found = files.cached_digest(resolve_model(model))
        if found is None:
            raise ModelError(f"cannot read model file {model}")
        return found[1]

    def check(self, model: str) -> None:
        check_model(model)

    def create(self, model: str, options: ReaderOptions) -> Reader:
        return EngineReader(model, options)


def connection(url: str) -> Connection:
    """The one connection of this process to the reader server at ``url`` with the environment's key (what it
    says of itself is asked once)."""
    return _connection(url, os.environ.get(KEY_VARIABLE) or "")


@functools.lru_cache(maxsize=None)
def _connection(url: str, key: str) -> Connection:
    return Connection(url, api_key=key)


@dataclass(frozen=True)
class ServedBackend:
    """A model behind the OpenAI-compatible server at ``url`` (``--reader-url``), named as the server names it."""

    url: str = ""  # the registry's entry has none: :meth:`at` gives the one for a run's URL
    name = "served"
    serves_url = True  # chosen when --reader-url is given (a backend without it, when it is not)

    def at(self, url: str) -> "ServedBackend":
        return ServedBackend(url)

    def accepts(self, model: str) -> bool:
        return True

    def problem(self, model: str) -> str | None:
        return None if model.strip() else "give the server's name of the model"

    def canonical(self, model: str) -> str:
        return model.strip()

    def user_file(self, model: str) -> Path | None:
        return None

    def fingerprint(self, model: str) -> str:
        """The server, the model and what the server says of its build (a resume never mixes two readers)."""
        conn = connection(self.url)
        return f"{conn.shown} {model} {conn.info().fingerprint}"

    def check(self, model: str) -> None:
        ServedReader(connection(self.url), model, 4096, 0.0, 0).load()  # reachable, the key taken, the model there

    def create(self, model: str, options: ReaderOptions) -> Reader:
        conn = connection(self.url)
        return ServedReader(
            conn, model, options.n_ctx, options.temperature, options.seed, answer_timeout=options.reader_timeout
        )


BACKENDS: tuple[ReaderBackend, ...] = (ServedBackend(), EngineBackend())  # crag's own, asked after the plugins'
NEEDS = ("name", "accepts", "problem", "canonical", "user_file", "fingerprint", "check", "create")


def reader_backends() -> tuple[ReaderBackend, ...]:
    """Every backend, in the order they are asked: the plugins' (entry point group ``crag.readers``, loaded once
    per process), then crag's own (:data:`BACKENDS`; the engine takes every ``--model`` value, so it is last)."""
    return plugins.registry(plugins.READERS, NEEDS, _usable)


def _usable(found: list[plugins.Plugin]) -> tuple[ReaderBackend, ...]:
    """The plugins' backends, but one named as a backend before it (the run identity records the name), then
    crag's own."""
    names = {b.name for b in BACKENDS}
    kept = []
    for plugin in found:
        if plugin.obj.name in names:
            plugins.warn(f"{plugin.shown(plugins.READERS)} is named {plugin.obj.name!r}, like another; left out")
            continue
        names.add(plugin.obj.name)
        kept.append(plugin.obj)
    return (*kept, *BACKENDS)


def backend(model: str, url: str | None = None) -> ReaderBackend:
    """The backend that runs ``model`` (a ``--model`` value): the first of :func:`reader_backends` that accepts it,
    among those that serve a URL (``serves_url``, bound to it by ``at(url)``) when ``url`` (``--reader-url``) is
    given, else among the others."""
    for found in reader_backends():
        if bool(getattr(found, "serves_url", False)) == bool(url) and found.accepts(model):
            return found.at(url) if url else found
    raise ModelError(f"no reader backend takes {model!r}")
