"""Which reader runs a ``--model`` value: the registry of reader backends.

A backend says which ``--model`` values it takes and why one is unusable, the
user's file it reads (an input crag never writes, which Ray workers get as an
absolute path), what identifies its answers (a batch resumes only with the
same), what to check before anything loads, and it builds the
:class:`~crag_cli.generator.base.Generator`. A second reader is a module with
a backend and one entry in :data:`BACKENDS`, before the llama.cpp backend,
which takes every other value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from .. import files
from ..models import EMBEDDED, embedded, model_file
from .base import Generator, ModelError
from .embedded import check_model, resolve_model
from .llama import LlamaGenerator


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

    def create(self, model: str, n_ctx: int, temperature: float, seed: int, threads: int | None) -> Generator:
        """The generator, loaded lazily (counting or generating loads it)."""
        ...


class LlamaBackend:
    """GGUF chat models run by llama-cpp-python: the embedded models by name (docs/models.md) or a .gguf path."""

    name = "llama.cpp"

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

    def create(self, model: str, n_ctx: int, temperature: float, seed: int, threads: int | None) -> Generator:
        return LlamaGenerator(model, n_ctx=n_ctx, temperature=temperature, seed=seed, threads=threads)


BACKENDS: tuple[ReaderBackend, ...] = (LlamaBackend(),)


def backend(model: str) -> ReaderBackend:
    """The backend that runs ``model`` (a ``--model`` value): the first in :data:`BACKENDS` that accepts it."""
    return next(b for b in BACKENDS if b.accepts(model))
