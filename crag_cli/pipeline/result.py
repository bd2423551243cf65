"""What one question produced (:class:`Result`), how its answer is graded, and what the reading policy is given.

:class:`crag_cli.pipeline.corrective.corrective.Pipeline` fills a ``Result`` stage by stage
(retrieve, evaluate, act, read, generate); :func:`crag_cli.batch.records.to_record`
turns it into JSON.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

from ..action.trigger import Action, Thresholds
from ..index import Hit
from ..action.match import holds_answer
from .modes import Mode
from ..reader.prompts import KnowledgeItem
from ..action.knowledge import Evidence
from ..action.refine import Strip
from ..web import ExternalKnowledge


@dataclass
class Result:
    """Everything one question produced; :func:`crag_cli.batch.records.to_record` turns it into JSON."""

    question: str
    task: str  # the task asked for (``auto``: see :func:`crag_cli.reader.prompts.prompt_task`)
    id: str | None = None
    prompt_task: str | None = None  # the task whose prompt was sent (``auto`` resolved: :func:`prompt_task`)
    mode: str = Mode.CRAG.value  # a Mode's name, as the record gives it
    model: str | None = None  # the reader that answered
    served_model: str | None = None  # the model a reader server says answered (None: crag's own engine)
    evaluator: str | None = None  # the evaluator that scored (None when the mode uses none)
    action: Action | None = None
    hits: list[Hit] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    probabilities: list[float] | None = None  # the fused evaluator's, per hit (None: no fused fit read them)
    thresholds: Thresholds | None = None
    lexical_support: float | None = None  # the share that made a passage supported (crag mode)
    supported: bool | None = None  # some passage had lexical support (decided with the action)
    in_domain: bool | None = None  # the question is like the evaluator's training questions (None: it cannot tell)
    evidence_score: float | None = None  # out of the domain: the best combined evidence (None: not consulted)
    internal_knowledge: list[Strip] | None = None
    external_knowledge: ExternalKnowledge | None = None
    knowledge_used: list[KnowledgeItem] = field(default_factory=list)
    knowledge_cut: dict | None = None  # what fitting the prompt to the reader's window left out (None: nothing)
    reading: str | None = None  # why the reader read what it did (the reading policy's words; crag mode)
    doubted: bool | None = None  # passages read though the evaluator scored every one below the lower threshold
    judged: list[dict] | None = None  # the reader as evaluator: each item asked, {"source", "answers"} (reader_judge)
    answer: str | None = None
    answers: list[str] | None = None
    grounded: bool | None = None  # the answer occurs in the knowledge given (short-answer tasks only)
    not_found: str | None = None  # why no answer was generated: nothing read and no --model-knowledge
    restated: str | None = None  # a first answer that only restated the question, asked again (Task.retry)
    reader_answer: str | None = None  # the reader's own answer when the answer given differs (Task.quote)
    checked: str | None = None  # the reader's reply to its task's check: does what it read state the answer?
    prompt_tokens: int | None = None
    prompt_tokens_source: str | None = None  # server, server-no-cache, counted, estimate (generation.SOURCES)
    timings: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    @property
    def basis(self) -> str | None:
        """What the answer rests on: ``knowledge`` (what was read), ``model`` (the model's own memory: nothing
        was read, under ``no-retrieval`` or ``model_knowledge``) or ``none`` (not found: no answer); ``None``
        when no answer was asked for or generation failed."""
        if self.not_found is not None:
            return "none"
        if self.answer is None:
            return None
        return "knowledge" if self.knowledge_used else "model"

    @property
    def correct(self) -> bool | None:
        """Whether the answer holds a gold alias; a question not found counts as wrong, a failed one is not graded."""
        if not self.answers:
            return None
        if self.answer is None:
            return False if self.not_found is not None else None
        return is_correct(self.answer, self.answers)


def is_correct(answer: str, gold: Sequence[str]) -> bool:
    """PopQA's metric with whole words: some (non-empty) gold alias occurs in the answer, ignoring case.

    "pol" (an alias of "politician") does not make "policy adviser" correct; see
    :func:`crag_cli.action.match.holds_answer`.
    """
    return holds_answer(answer, gold)


def evidence(result: Result) -> Evidence:
    """What the reading policy is given of an evaluated and acted-on ``result``."""
    return Evidence(
        action=result.action,
        scores=list(result.scores),
        supported=result.supported,
        in_domain=result.in_domain,
        internal=list(result.internal_knowledge or []),
        external=list(result.external_knowledge.strips) if result.external_knowledge else [],
    )


class Timer:
    """Adds the seconds spent in its ``with`` block to ``timings[stage]`` (a :attr:`Result.timings`)."""

    def __init__(self, timings: dict[str, float], stage: str) -> None:
        self.timings, self.stage = timings, stage

    def __enter__(self):
        self.start = time.perf_counter()

    def __exit__(self, *exc):
        self.timings[self.stage] = self.timings.get(self.stage, 0.0) + time.perf_counter() - self.start
