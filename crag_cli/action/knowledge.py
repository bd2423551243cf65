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

from .trigger import Action
from .refine import Strip, distinct, strongest_first, within_words

# Raised whenever crag's reading rule (:class:`ActionReading`) reads other strips for the same evidence, so that
# `crag batch --resume` never mixes records of two rules (the batch identity records it for crag's mode).
# 1: Ambiguous reads the stronger source. 2: the web's strips, leading alone, read as Incorrect's do.
# 3: Incorrect with no web strips reads the passages as Ambiguous does (the web-off change; CHANGELOG.md).
READING_VERSION = 3


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
    """The strips the reader reads, in reading order, and why (a few words for a user and a benchmark)."""

    strips: list[Strip]
    why: str


class ReadingPolicy(Protocol):
    """Chooses what the reader reads of a question's evidence.

    ``web_unread`` is asked before the web's strips of an Ambiguous question are
    scored, with the kept passages' strips (weighed) and each web strip's
    support: ``True`` when it would read none of them whatever their scores, so
    that they go unscored (``False`` when it cannot tell).
    """

    def read(self, evidence: Evidence) -> Reading: ...

    def web_unread(self, internal: Sequence[Strip], web_supports: Sequence[float]) -> bool: ...


@dataclass(frozen=True)
class ActionReading:
    """crag's rule: Correct reads its passages, Incorrect the web's strips, Ambiguous the stronger source.

    Correct reads the first ``strips_correct`` of its passages and Incorrect the
    first ``strips`` of the web's strips, each within ``knowledge_words`` words
    (at least one strip). Ambiguous (the evaluator unsure; the paper reads
    both sources) compares what each source holds of the question: the
    source whose best strip holds the larger share of the question's term
    weight (:attr:`crag_cli.action.refine.Strip.support`) leads. Of the passages,
    the first and those holding at least ``read_share`` of the best one's
    share are read (:meth:`strong`; 0: all), within ``read_words`` words:
    little when one passage holds the question, more when several do. The
    web's strips, when they lead alone, are read as Incorrect reads them.
    Incorrect with no web strip (the web off, failed or empty) reads the
    passages as Ambiguous reads them when they lead alone.
    Only when the two shares are within ``close_support`` of each other is
    the other source's best strip read too, last, within ``read_words``.
    When the retriever cannot weigh a strip, the passages lead if one has
    lexical support or scores at least ``upper``, else the web's strips, and
    the other's best strip follows. A strip repeating an earlier one's text
    is left out (:func:`crag_cli.action.refine.distinct`). Passages kept whole keep
    their retrieval order; refined strips (``refined``) and the web's are
    ranked by ``ranking`` (:func:`crag_cli.action.refine.strongest_first`).
    """

    strips: int
    strips_correct: int
    knowledge_words: int | None  # None: no bound
    read_words: int
    read_share: float
    close_support: float
    upper: float
    refined: bool
    ranking: str

    @classmethod
    def of(cls, settings, upper: float, **changes) -> "ActionReading":
        """The rule with the refine settings of ``settings`` (the run's :class:`crag_cli.settings.Settings`, read by
        name, the stage importing none; ``refined`` is ``refine``), the upper threshold in force, and ``changes``."""
        fields = {
            "strips": settings.strips,
            "strips_correct": settings.strips_correct,
            "knowledge_words": settings.knowledge_words,
            "read_words": settings.read_words,
            "read_share": settings.read_share,
            "close_support": settings.close_support,
            "refined": settings.refine,
            "ranking": settings.ranking,
        }
        return cls(**{**fields, "upper": upper, **changes})

    def top(self, action: Action | None) -> int:
        """Strips read for ``action``: ``strips_correct`` (at most ``strips``) when Correct, else ``strips``."""
        return min(self.strips, self.strips_correct) if action is Action.CORRECT else self.strips

    def read(self, evidence: Evidence) -> Reading:
        internal = strongest_first(evidence.internal, self.ranking) if self.refined else list(evidence.internal)
        external = strongest_first(evidence.external, self.ranking)
        if evidence.action is Action.INCORRECT and not external and internal:
            return Reading(self.passages(internal), "the doubted passages (no web)")
        if evidence.action is not Action.AMBIGUOUS:
            correct = evidence.action is Action.CORRECT
            only = internal if correct else external
            return Reading(self.alone(only, evidence.action), "the kept passages" if correct else "the web's strips")
        internal, external = distinct(internal), distinct(external)
        passages_lead, close = self.compare(evidence, internal, external)
        lead, other = (self.strong(internal), external) if passages_lead else (external, internal)
        names = ("the passages", "the web's strips") if passages_lead else ("the web's strips", "the passages")
        if not (close and other):
            chosen = self.passages(internal) if passages_lead else self.alone(external, Action.INCORRECT)
            return Reading(chosen, f"{names[0]} (they hold more of the question)")
        best = other[0]
        chosen = distinct(within_words(lead, self.read_words - len(best.text.split())) + [best])
        return Reading(chosen, f"{names[0]}, then the best of {names[1]} (both hold the question alike)")

    def passages(self, internal: list[Strip]) -> list[Strip]:
        """The passages read when they lead alone: the :meth:`strong` ones, in order, within ``read_words``."""
        return within_words(self.strong(distinct(internal)), self.read_words)

    def strong(self, passages: list[Strip]) -> list[Strip]:
        """The first passage and those whose support is at least ``read_share`` of the best one's, in order.

        All of them when a support is unknown.

        Examples
        --------
        >>> p = [Strip(t, "x", "", (0, i), 0.0, support=s) for i, (t, s) in enumerate([("a", 0.3), ("b", 0.8), ("c", 0.5)])]
        >>> from crag_cli.settings import Settings
        >>> rule = ActionReading.of(Settings(read_share=0.6), upper=0.6)
        >>> [s.text for s in rule.strong(p)], len(ActionReading.of(Settings(read_share=0), upper=0.6).strong(p))
        (['a', 'b', 'c'], 3)
        >>> [s.text for s in ActionReading.of(Settings(), upper=0.6, read_share=0.7).strong(p)]
        ['a', 'b']
        """
        if not passages or any(s.support is None for s in passages):
            return passages
        best = max(s.support for s in passages)
        return [s for i, s in enumerate(passages) if i == 0 or s.support >= self.read_share * best]

    def alone(self, strips: list[Strip], action: Action | None) -> list[Strip]:
        """One source read alone as ``action`` reads it: its first :meth:`top` strips within ``knowledge_words``."""
        return within_words(distinct(strips)[: self.top(action)], self.knowledge_words)

    def web_unread(self, internal: Sequence[Strip], web_supports: Sequence[float]) -> bool:
        """Whether the passages lead alone (:meth:`compare`) against any web strips kept of these.

        Scoring keeps some of the web's strips, never more, so their best support
        is at most ``max(web_supports)``: when the passages' best leads that by
        ``close_support`` or more, the web's strips are not read, whatever they score.
        """
        if not internal or not web_supports or any(s.support is None for s in internal):
            return False
        return max(s.support for s in internal) - max(web_supports) >= self.close_support

    def compare(self, evidence: Evidence, internal: list[Strip], external: list[Strip]) -> tuple[bool, bool]:
        """Whether the passages lead, and whether the two sources are close enough for both to be read.

        By each source's best :attr:`~crag_cli.action.refine.Strip.support`; when a
        strip's is unknown, the passages lead if one has lexical support or a
        score of at least ``upper``, and both are read.
        """
        if not external or not internal:
            return bool(internal), False
        supports = [s.support for s in internal + external]
        if any(x is None for x in supports):
            vouched = bool(evidence.scores) and max(evidence.scores) >= self.upper  # Correct but for the domain
            return bool(evidence.supported) or vouched, True
        gap = max(s.support for s in internal) - max(s.support for s in external)
        return gap >= 0, abs(gap) < self.close_support
