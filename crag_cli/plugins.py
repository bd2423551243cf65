"""Extension points: reader backends and document types that other packages add, found by entry point.

A package adds one by naming an object (or a class, made with no arguments)
in its ``pyproject.toml``, as simonw/llm's plugins do::

    [project.entry-points."crag.readers"]
    toy = "toy_plugin:ToyBackend"        # a ReaderBackend (crag_cli.reader.backends)

    [project.entry-points."crag.documents"]
    toy = "toy_plugin:ToyDocuments"      # a DocumentType (crag_cli.documents.types)

Each group is loaded once per process, when first needed, with
:func:`importlib.metadata.entry_points`. One that cannot be loaded (its import
fails, its class cannot be made, a method it must have is missing) gives one
``crag: warning:`` line naming the entry point, and crag goes on without it.
docs/extending.md walks through writing one.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

from .errors import one_line

READERS = "crag.readers"
DOCUMENTS = "crag.documents"

T = TypeVar("T")


@dataclass(frozen=True)
class Plugin:
    """An object an installed package registers, and where it comes from (for warnings and identities)."""

    obj: Any
    entry: str  # "toy = toy_plugin:ToyBackend"
    package: str  # "toy-plugin 0.1" ("" when the entry point has no distribution)

    def shown(self, group: str) -> str:
        """The entry point as warnings name it: ``crag.documents entry point "toy = toy_plugin:Toy" (toy-plugin 0.1)``."""
        return f'{group} entry point "{self.entry}"' + (f" ({self.package})" if self.package else "")


_registries: dict[str, Any] = {}


def registry(group: str, needs: Sequence[str], make: Callable[[list[Plugin]], T]) -> T:
    """``make`` of the plugins of ``group`` that have every attribute in ``needs``; made once per process.

    ``make`` refuses what else it must (with :func:`warn`), so that each warning is given once.
    """
    if group not in _registries:
        _registries[group] = make(load(group, needs))
    return _registries[group]


def clear() -> None:
    """Forget the plugins loaded (tests that add an entry point, then look again)."""
    _registries.clear()


def load(group: str, needs: Sequence[str]) -> list[Plugin]:
    """The objects registered in entry point ``group``, by entry point name; the unusable ones left out with a warning."""
    from importlib.metadata import entry_points

    found = []
    for ep in sorted(entry_points(group=group), key=lambda e: (e.name, e.value)):
        dist = getattr(ep, "dist", None)
        package = f"{dist.name} {dist.version}" if dist is not None else ""
        plugin = Plugin(None, f"{ep.name} = {ep.value}", package)
        try:
            obj = ep.load()
            obj = obj() if isinstance(obj, type) else obj
        except Exception as exc:  # whatever a package's import or constructor raises, crag goes on without it
            warn(f"{plugin.shown(group)} could not be loaded ({type(exc).__name__}: {one_line(exc)}); left out")
            continue
        missing = [name for name in needs if not hasattr(obj, name)]
        if missing:
            warn(f"{plugin.shown(group)} has no {', '.join(missing)}; left out")
            continue
        found.append(Plugin(obj, plugin.entry, plugin.package))
    return found


def warn(message: str) -> None:
    """One ``crag: warning:`` line on stderr."""
    sys.stderr.write(f"crag: warning: {one_line(message)}\n")
