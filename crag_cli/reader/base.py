"""What every reader is: the Protocol, a reply (:class:`Generation`) and the model error."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable, Protocol

from ..errors import CragError


class ModelError(CragError):
    """A model file is missing, corrupt or cannot be loaded."""


@dataclass
class Generation:
    """A reply: its text, the prompt's tokens and the tokens generated.

    ``cached_tokens``: of the prompt's tokens, the leading ones the engine still held from the prompt before (its
    prompt cache) and did not read again, as the engine reports them; ``None`` when it does not say.
    ``prompt_source``: where ``prompt_tokens`` comes from: ``"server"`` (the server's usage), ``"counted"`` (crag
    counted the prompt with the server's tokenizer), ``"estimate"`` (a bound: the server counts nothing);
    ``None``: not said (a reader of a plugin). ``served_model``: the model the server says answered.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None = None
    prompt_source: str | None = None
    served_model: str | None = None


@dataclass(frozen=True)
class ReaderOptions:
    """The reader's settings besides ``model`` (the reader settings that do not shape the prompt)."""

    n_ctx: int
    temperature: float
    seed: int
    threads: int | None
    parallel: int
    gpu_layers: int
    reader_url: str | None
    reader_timeout: float  # the most seconds one whole answer takes (crag's engine or a served reader)

    @classmethod
    def of(cls, settings) -> "ReaderOptions":
        """The options a :class:`~crag_cli.settings.Settings` holds (its defaults where it was not given them)."""
        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})


class Reader(Protocol):
    """Generates a reply to chat messages, optionally streaming text pieces to ``on_token``.

    ``model`` names the model (the record's ``model``); ``n_ctx`` is the context window in tokens.
    """

    model: str
    n_ctx: int

    def load(self) -> None:
        """Load the model now; counting or generating loads it otherwise."""
        ...

    def fork(self, n_ctx: int | None = None) -> "Reader":
        """A second reader on the same model with its own context (``n_ctx``: its window; default this one's)."""
        ...

    def count_tokens(self, messages: list[dict]) -> int:
        """The prompt's length in tokens, as :meth:`generate` would send it."""
        ...

    def generate(
        self, messages: list[dict], max_tokens: int, on_token: Callable[[str], None] | None = None
    ) -> Generation:
        """Reply to ``messages`` with at most ``max_tokens`` tokens, streaming each piece to ``on_token``."""
        ...
