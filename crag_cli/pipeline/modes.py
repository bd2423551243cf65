"""The modes a question is answered in: crag (CRAG's Algorithm 1) and the baselines it is measured against.

A :class:`Mode` is a ``str`` (``Mode.RAG == "rag"``), so the command line's
``--mode`` values and the records' ``mode`` are the strings they always were.
Each mode says which settings its answers use (by group, :data:`crag_cli.stages.GROUPS`):
what the pipeline runs (:mod:`crag_cli.pipeline.corrective`), which models a batch loads
(:func:`crag_cli.batch.load_models`) and what a batch's resume identity
compares (:func:`crag_cli.batch.identity.run_identity`) all read it here.
"""

from __future__ import annotations

from enum import StrEnum

from ..reader.prompts import AUTO
from ..stages import GROUPS


class Mode(StrEnum):
    """How a question is answered.

    ``crag`` is the paper's method; ``rag`` gives the top-k passages to the
    reader unchecked; ``rag+web`` adds the web's knowledge to them always;
    ``no-retrieval`` asks the reader alone.
    """

    CRAG = "crag"
    RAG = "rag"
    RAG_WEB = "rag+web"
    NO_RETRIEVAL = "no-retrieval"

    @classmethod
    def parse(cls, text: str) -> "Mode":
        """The mode named ``text``; ``ValueError`` naming the choices otherwise.

        Examples
        --------
        >>> Mode.parse("rag+web") is Mode.RAG_WEB
        True
        """
        try:
            return cls(text)
        except ValueError:
            raise ValueError(f"unknown mode {text!r}: choose from {', '.join(MODES)}") from None

    @property
    def groups(self) -> tuple[str, ...]:
        """The setting groups whose values this mode's records can depend on (the evaluator's: see :meth:`unused`)."""
        return _GROUPS[self]

    @property
    def retrieves(self) -> bool:
        """Whether the mode retrieves passages (it needs an index)."""
        return "retrieval" in self.groups

    @property
    def judges(self) -> bool:
        """Whether the evaluator scores what is read: crag's passages and strips, the web's strips of both."""
        return self in (Mode.CRAG, Mode.RAG_WEB)

    @property
    def unchecked(self) -> bool:
        """Whether the reader reads the retrieved passages unchecked (the baselines that retrieve)."""
        return self in (Mode.RAG, Mode.RAG_WEB)

    def uses_evaluator(self, task: str) -> bool:
        """Whether the answers depend on the evaluator: the modes that score with it (:attr:`judges`), and under
        ``auto`` every mode that retrieves, which asks its domain (:func:`crag_cli.reader.prompts.prompt_task`).

        Examples
        --------
        >>> Mode.RAG.uses_evaluator("popqa"), Mode.RAG.uses_evaluator("auto"), Mode.NO_RETRIEVAL.uses_evaluator("auto")
        (False, True, False)
        """
        return self.judges or (task == AUTO and self.retrieves)

    def unused(self, task: str) -> tuple[str, ...]:
        """The setting groups whose values the mode's records do not depend on under ``task``.

        Examples
        --------
        >>> Mode.RAG.unused("popqa")
        ('evaluator', 'thresholds', 'action', 'refine', 'web')
        >>> Mode.RAG.unused("auto"), Mode.CRAG.unused("popqa")
        (('thresholds', 'action', 'refine', 'web'), ())
        """
        used = set(self.groups) | ({"evaluator"} if self.uses_evaluator(task) else set())
        return tuple(g for g in GROUPS if g not in used)


# The setting groups each mode's records depend on; the evaluator's too wherever the mode uses it (Mode.uses_evaluator).
_GROUPS = {
    Mode.CRAG: GROUPS,
    Mode.RAG_WEB: GROUPS,
    Mode.RAG: ("index", "retrieval", "reader"),
    Mode.NO_RETRIEVAL: ("index", "reader"),
}

MODES = tuple(m.value for m in Mode)  # the names, in the order the command line's help lists them

__all__ = ["MODES", "Mode"]
