"""crag: corrective retrieval-augmented generation (CRAG, Yan et al. 2024) from the command line.

As a library: ``crag_cli.open(index=..., **settings)`` gives a :class:`crag_cli.api.Crag`
with ``ask(question)`` and ``answer(questions)`` (see ``crag_cli.api``).
"""

from .version import __version__

__all__ = ["__version__", "open", "Crag"]


def __getattr__(name: str):  # the library's entry points, imported when first used (the CLI starts faster)
    if name in ("open", "Crag"):
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'crag_cli' has no attribute {name!r}")
