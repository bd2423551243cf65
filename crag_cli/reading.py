"""The reading policy: given the action, the scored passages and the web's strips, what the reader reads, in order.

On a 2-core CPU a question costs its prompt, so what the reader reads is the
speed; reading the right things is the accuracy. The pipeline hands a policy
the question's :class:`Evidence` and gets back a :class:`Reading` (the strips
in reading order and why); benchmarks swap policies through
``Pipeline(reading=...)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

from .actions import Action
from .refine import Strip, distinct, strongest_first, within_words


@dataclass
class Evidence:
    """What is known of a question when the reader's knowledge is chosen.

    ``internal`` are the kept passages' strips (retrieval order when kept whole),
    ``external`` the web's strips (as found); ``in_domain`` is the evaluator's
    verdict on the question (``None``: it cannot tell).
    """

    action: Action | None
    scores: Sequence[float] = ()
    supported: bool | None = None
    in_domain: bool | None = None
    internal: list[Strip] = field(default_factory=list)
    external: list[Strip] = field(default_factory=list)


@dataclass
class Reading:
    """The strips the reader reads, in reading order, and why (a few words for a user and a benchmark).

    With ``first``, the reader reads ``strips[:first]`` first and stands by that
    answer when it occurs in them and its mean token log-probability is at
    least ``min_confidence``; otherwise it reads every strip (the same prompt
    extended: the model's cache of the first part is reused).
    """

    strips: list[Strip]
    why: str
    first: int | None = None
    min_confidence: float = 0.0


class ReadingPolicy(Protocol):
    """Chooses what the reader reads of a question's evidence."""

    def read(self, evidence: Evidence) -> Reading: ...


@dataclass(frozen=True)
class ActionReading:
    """crag's rule: each action reads its own share, Ambiguous both sources one after the other.

    Correct reads the first ``strips_correct`` of its passages and Incorrect the
    first ``strips`` of the web's strips, each within ``knowledge_words`` words
    (at least one strip). Ambiguous reads both (the paper's "combine both"):
    first the leading source's first ``strips_correct`` strips within
    ``knowledge_words``, then the other source's up to ``strips`` in all,
    within ``knowledge_words`` of their own. The passages lead when one of them
    has lexical support or scores at least ``upper`` (a question out of the
    evaluator's domain that it would judge Correct), else the web's strips. A
    question outside the evaluator's domain (``domain_guard``) whose passages
    lead reads them as plain RAG does, up to ``outside_words`` words, then the
    web's share of the domain's rule. A strip repeating an earlier one's text
    is left out (:func:`crag_cli.refine.distinct`). Passages kept whole keep
    their retrieval order; refined strips (``refined``) and the web's are
    ranked by ``ranking`` (:func:`crag_cli.refine.strongest_first`).
    """

    strips: int = 5
    strips_correct: int = 5
    knowledge_words: int | None = None
    outside_words: int = 0
    domain_guard: bool = True
    upper: float = 1.0
    refined: bool = False
    ranking: str = "evaluator"

    def top(self, action: Action | None) -> int:
        """Strips read for ``action``: ``strips_correct`` (at most ``strips``) when Correct, else ``strips``."""
        return min(self.strips, self.strips_correct) if action is Action.CORRECT else self.strips

    def read(self, evidence: Evidence) -> Reading:
        internal = strongest_first(evidence.internal, self.ranking) if self.refined else list(evidence.internal)
        external = strongest_first(evidence.external, self.ranking)
        if evidence.action is not Action.AMBIGUOUS:
            correct = evidence.action is Action.CORRECT
            only = internal if correct else external
            chosen = within_words(distinct(only)[: self.top(evidence.action)], self.knowledge_words)
            return Reading(chosen, "the kept passages" if correct else "the web's strips")
        vouched = bool(evidence.scores) and max(evidence.scores) >= self.upper  # Correct but for the domain
        passages_lead = bool(evidence.supported) or vouched
        lead, other = (internal, external) if passages_lead else (external, internal)
        outside = bool(self.outside_words) and self.domain_guard and evidence.in_domain is False
        if passages_lead and outside:
            first = within_words(distinct(lead), self.outside_words)
        else:
            first = within_words(distinct(lead)[: self.top(Action.CORRECT)], self.knowledge_words)
        others = self.strips - min(len(first), self.top(Action.CORRECT))  # the other source's share, either way
        rest = distinct(first + other)[len(first) :]
        why = ("the passages, then the web's strips" if passages_lead else "the web's strips, then the passages") + (
            " (out of the evaluator's domain: the passages as plain RAG reads them)"
            if passages_lead and outside
            else ""
        )
        return Reading(first + within_words(rest[:others], self.knowledge_words), why)


@dataclass(frozen=True)
class ProgressiveReading:
    """Read a little first, more only when the reader's answer is not clearly in it.

    ``base`` chooses the strips and their order; the first part is its leading
    strips within ``first_words`` words when they are passages (a question the
    web leads reads every strip at once). The answer to the first part stands
    when it occurs in it and its mean token log-probability is at least
    ``min_confidence`` (:class:`Reading`).
    """

    base: ReadingPolicy
    first_words: int = 300
    min_confidence: float = -0.3

    def read(self, evidence: Evidence) -> Reading:
        reading = self.base.read(evidence)
        passages = {id(s) for s in evidence.internal}
        first = len(within_words(reading.strips, self.first_words))
        if first >= len(reading.strips) or not all(id(s) in passages for s in reading.strips[:first]):
            return reading
        why = f"{reading.why}; the first {first} first, the rest if the answer is not clearly in them"
        return Reading(reading.strips, why, first, self.min_confidence)
