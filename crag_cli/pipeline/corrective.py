"""The corrective pipeline: CRAG's Algorithm 1, and the baselines it is measured against.

``Pipeline.run`` does, for one question:
retrieve -> evaluate -> decide -> (refine internal | search external | both) -> read -> generate.
Each stage is a small object given to the constructor (a retriever, an
evaluator, a web corrector, a reader, a reading policy), so each can be
replaced or faked. What the question produced is a :class:`crag_cli.pipeline.corrective.result.Result`;
the generation step is :mod:`crag_cli.pipeline.corrective.generation`.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable, Sequence

from ..action.trigger import CALIBRATED, FUSED, Action, Thresholds, decide, supported
from ..evaluator import Evaluator, Scorer
from ..evaluator.fused import FusedFit
from .generation import GenerationStep, not_found
from ..reader import Reader
from ..index import Hit, Retriever
from .modes import Mode
from ..action.knowledge import ActionReading, Reading, ReadingPolicy
from ..reader.prompts import (
    AUTO,
    TASK_CHOICES,
    KnowledgeItem,
    prompt_task,
)
from ..action.refine import KnowledgeSource, Strip, Unread, refine, strip_pieces
from .result import Result, Timer, evidence
from ..settings import Settings
from ..web import ExternalKnowledge, WebCorrector


class Pipeline:
    """CRAG over a retriever, an evaluator, a web corrector and a reader.

    Parameters
    ----------
    retriever : Retriever
        Finds the passages (:mod:`crag_cli.index`).
    evaluator : Evaluator
        Scores question-passage pairs and knows its domain (:mod:`crag_cli.evaluator`).
    thresholds : Thresholds
        Upper, lower and filter thresholds (settings ``upper``, ``lower``, ``filter_threshold``, ``preset``).
    reader : Reader, optional
        ``None`` for evaluation-only use (``crag evaluate``).
    web : WebCorrector, optional
        External knowledge for Incorrect / Ambiguous (setting ``web``); ``None`` means no web.
    settings : Settings, optional
        The settings it reads (the retrieval, action and refine groups', and ``task``, ``max_tokens``,
        ``model_knowledge``, ``reader_judge``), each explained, with its one default, in
        :class:`crag_cli.settings.Settings` (``crag ask --help-all``); default ``Settings()``. A library caller
        changes some with ``Settings(strips=3)`` or ``settings.replace(...)``; :func:`crag_cli.assemble.pipeline`
        builds the whole pipeline from settings. The pipeline keeps a copy: a caller's later edits stay theirs.
    reading : ReadingPolicy, optional
        What the reader reads of the action's knowledge (:mod:`crag_cli.action.knowledge`); default: :attr:`reading`.
    """

    def __init__(
        self,
        retriever: Retriever,
        evaluator: Evaluator,
        thresholds: Thresholds,
        reader: Reader | None = None,
        web: WebCorrector | None = None,
        *,
        settings: Settings | None = None,
        reading: ReadingPolicy | None = None,
    ) -> None:
        self.retriever = retriever
        self.evaluator = evaluator
        self.thresholds = thresholds
        self.reader = reader
        self.web = web
        self.settings = settings.model_copy() if settings is not None else Settings()
        self._reading = reading
        self._scorer = Scorer(evaluator)
        self._ahead_seconds: dict[str, tuple[float, float]] = {}  # question -> its share of score_ahead's time
        self._known_ahead: dict[str, bool | None] = {}  # question -> in the evaluator's domain (score_ahead's)
        self._fit: FusedFit | None | bool = False  # the fused evaluator's fit (False: not looked up yet)

    @property
    def fit(self) -> FusedFit | None:
        """The evaluator's fused fit (:mod:`crag_cli.evaluator.fused`) when it has one and the index a dense part:
        then the passages are read in the order of its probability that each holds the answer."""
        if self._fit is False:
            fit = getattr(self.evaluator, "fused", None)
            self._fit = fit if fit is not None and getattr(self.retriever, "dense", False) else None
        return self._fit  # type: ignore[return-value]

    def _decisive(self, scores: Sequence[float], probabilities: Sequence[float] | None):
        """The values the action is decided on and their thresholds: the fused probabilities and the fit's (source
        ``FUSED``) when the fused :attr:`fit` stores thresholds and the evaluator's own are in force (the fused
        action), else the evaluator's scores and the thresholds in force."""
        fit = self.fit
        if fit is not None and fit.decides and self.thresholds.source == CALIBRATED and probabilities is not None:
            return probabilities, replace(self.thresholds, upper=fit.upper, lower=fit.lower, source=FUSED)  # type: ignore[arg-type]
        return scores, self.thresholds

    def _fused(self, question: str, hits: list[Hit], scores: list[float], logits: Sequence[float] | None):
        """The hits, scores and logits in the fused order (as they are without a :attr:`fit`), and their probabilities."""
        unranked = any(h.dense_rank is None or h.support is None for h in hits)
        if self.fit is None or not hits or logits is None or unranked:
            return hits, scores, logits, None
        near = self.evaluator.nearness([question])  # type: ignore[attr-defined]
        evidence = [(h.support, h.cosine, h.rank, h.dense_rank) for h in hits]
        order, p = self.fit.ranked(logits, evidence, near[0] if near else 0.0)
        return [hits[i] for i in order], [scores[i] for i in order], [logits[i] for i in order], p

    @property
    def task(self) -> str:
        """The task of the questions that name none (setting ``task``)."""
        return self.settings.task

    def score_ahead(self, questions: Sequence[str]) -> None:
        """Score what :meth:`run` in ``crag`` mode will score for several questions, in two evaluator calls.

        Their retrieved passages in one call, then the strips that refinement will score (of the passages kept by the
        questions that are not Incorrect) in a second. One forward pass over many pairs pads less than one per question
        (``benchmarks/evaluator_batching.py``); the scores equal a question-by-question run's up to floating-point
        rounding. The scores are kept until the next call, and each question's share of the time is added to its
        ``evaluate`` and ``refine`` timings. Web strips are still scored per question, as pages arrive.
        """
        self._scorer.ahead.clear()
        self._ahead_seconds.clear()
        self._known_ahead.clear()
        qs = list(dict.fromkeys(q for q in questions if q))
        if len(qs) < 2:
            return
        t0 = time.perf_counter()
        hits = [self._retrieve(q) for q in qs]
        known = self._knows(qs)
        self._known_ahead.update(zip(qs, known))
        self._scorer.add([(q, h.passage.text) for q, hs in zip(qs, hits) for h in hs])
        t1 = time.perf_counter()
        strips = []
        for q, hs, in_domain in zip(qs, hits, known):
            scores, logits = self._scorer.judged([(q, h.passage.text) for h in hs])
            hs, scores, logits, p = self._fused(q, hs, scores, logits)
            _, action, _ = self._judge(hs, scores, in_domain, logits, p)
            if self.settings.refine and action is not Action.INCORRECT:
                sources = [
                    KnowledgeSource(h.passage.cite, h.passage.title, h.passage.text)
                    for h, _ in self._kept(hs, scores, action, in_domain, p)
                ]
                strips += [(q, text) for text, _, _ in strip_pieces(sources, self.settings.strip_mode)]
        self._scorer.add(strips)
        t2 = time.perf_counter()
        for q in qs:
            self._ahead_seconds[q] = ((t1 - t0) / len(qs), (t2 - t1) / len(qs))

    def _kept(
        self,
        hits: Sequence[Hit],
        scores: Sequence[float],
        action: Action,
        in_domain: bool | None = None,
        probabilities: Sequence[float] | None = None,
    ) -> list[tuple[Hit, float]]:
        """The passages that refinement reads, with their scores; which depends on how sure the evaluator is.

        Correct: those scoring at least the lower threshold, or with lexical support (over the filter threshold,
        holding more than ``lexical_support`` of the question's term weight). Ambiguous: those scoring at least the
        filter threshold; all out of the evaluator's domain (its scores prove nothing there, :meth:`_judge`).
        Incorrect: all, read only when no web strip came (:meth:`act`). Under the fused action (:meth:`_decisive`) Correct's are
        those whose fused ``probabilities`` reach the fit's lower threshold, or supported. Why: docs/how-it-works.md."""
        if action is Action.INCORRECT or (action is Action.AMBIGUOUS and self._outside(in_domain)):
            return list(zip(hits, scores))
        if action is not Action.CORRECT:
            return [(h, s) for h, s in zip(hits, scores) if s >= self.thresholds.filter]
        values, th = self._decisive(scores, probabilities)
        return [(h, s) for h, s, x in zip(hits, scores, values) if x >= th.lower or self._supported([h], [s])]

    def _outside(self, in_domain: bool | None) -> bool:  # the domain guard holds the verdicts out of the domain
        return self.settings.domain_guard and in_domain is False

    def evaluate(self, question: str, result: Result | None = None) -> Result:
        """Retrieve, score and decide: everything before the action's branch."""
        result = result or Result(question=question, task=self.task)
        result.evaluator = self.evaluator.name
        with Timer(result.timings, "retrieve"):
            result.hits = self._retrieve(question)
        with Timer(result.timings, "evaluate"):
            result.scores, logits = self._scorer.judged([(question, h.passage.text) for h in result.hits])
            result.hits, result.scores, logits, result.probabilities = self._fused(
                question, result.hits, result.scores, logits
            )
            known = self._known_ahead
            result.in_domain = known[question] if question in known else self._knows([question])[0]
        _, result.thresholds = self._decisive(result.scores, result.probabilities)  # the record shows what decided
        result.lexical_support = self.settings.lexical_support
        result.supported, result.action, result.evidence_score = self._judge(
            result.hits, result.scores, result.in_domain, logits, result.probabilities
        )
        return result

    def act(self, result: Result) -> Result:
        """The action's knowledge (read by :meth:`reader_strips`): Correct refines the kept passages, Incorrect searches
        the web, Ambiguous both. Incorrect with no web strip (web off, failed, empty) keeps its passages all the same:
        they are what crag has (the record's ``doubted``; the reader may still say no answer, ``Task.check``)."""
        ambiguous = result.action is Action.AMBIGUOUS  # its reading compares each strip's share of the question
        if result.action in (Action.CORRECT, Action.AMBIGUOUS):
            internal = self._internal(result)
            result.internal_knowledge = self._weighed(result.question, internal) if ambiguous else internal
        if result.action in (Action.INCORRECT, Action.AMBIGUOUS):
            result.external_knowledge = self._external(result, self._web_unread(result) if ambiguous else None)
        if ambiguous:
            result.external_knowledge.strips = self._weighed(result.question, result.external_knowledge.strips)
        if result.action is Action.INCORRECT and not result.external_knowledge.strips and result.hits:
            result.internal_knowledge = self._weighed(result.question, self._internal(result))
        return result

    def _web_unread(self, result: Result) -> Unread:
        """Whether the reading leaves the web's strips (texts) unread whatever they score; then none is scored."""
        weigh, read = self.retriever.text_support, self.reading.web_unread
        return lambda texts: (x := weigh(result.question, texts)) is not None and read(result.internal_knowledge, x)

    def _weighed(self, question: str, strips: list[Strip]) -> list[Strip]:
        """``strips`` with their :attr:`~crag_cli.action.refine.Strip.support` as the retriever weighs it (or as they are).

        Passages too, though their hits carry a support: that one counts the title the index holds with each passage;
        here each strip's own text is weighed, as the web's strips are (as the reading rule was measured).
        """
        support = self.retriever.text_support(question, [s.text for s in strips]) if strips else None
        return [replace(s, support=x) for s, x in zip(strips, support)] if support is not None else strips

    def _retrieve(self, question: str) -> list[Hit]:
        """The ``top_k`` passages for ``question``: every mode's retrieval (a step before the evaluator goes here)."""
        return self.retriever.search(question, self.settings.top_k)

    def _knows(self, questions: Sequence[str]) -> list[bool | None]:
        """The evaluator's ``knows`` (whether each question is in its domain); ``None`` each when it cannot tell."""
        verdicts = self.evaluator.knows(list(questions))
        return list(verdicts) if verdicts is not None else [None] * len(questions)

    def _judge(
        self,
        hits: Sequence[Hit],
        scores: Sequence[float],
        in_domain: bool | None = None,
        logits: Sequence[float] | None = None,
        probabilities: Sequence[float] | None = None,
    ) -> tuple[bool, Action, float | None]:
        """Whether a passage has lexical support, the action (:func:`crag_cli.action.trigger.decide`) and the combined evidence.

        Under the fused action (:meth:`_decisive`): the paper's rule over the fused ``probabilities`` and the fit's thresholds,
        in the domain or out (the fit weighs the domain), the evidence the best probability. Otherwise, with
        ``domain_guard``, a question with passages outside the evaluator's domain is Correct only by its stored
        combined evidence (``evidence``, :mod:`crag_cli.evaluator.evidence`: the best passage's reaches the threshold
        and Correct would keep a passage), else Ambiguous whatever the scores say: neither the evaluator's sureness nor
        its doubt carries there (docs/how-it-works.md). The evidence is ``None`` where it was not consulted."""
        has_support = self._supported(hits, scores)
        values, th = self._decisive(scores, probabilities)
        action = decide(values, th.upper, th.lower, has_support)
        if th.source == FUSED:
            return has_support, action, max(values)
        if not self._outside(in_domain) or not hits:
            return has_support, action, None
        fit = self._scorer.fit if self.settings.evidence and logits is not None else None
        best = fit.best(logits, [h.support for h in hits]) if fit is not None else None  # type: ignore[arg-type]
        if best is not None and best >= fit.threshold and self._kept(hits, scores, Action.CORRECT):  # type: ignore[union-attr]
            return has_support, Action.CORRECT, best
        return has_support, Action.AMBIGUOUS, best

    def _unaided(self, result: Result) -> bool:
        """Whether the answer rests on the evaluator's doubted passages alone: in crag mode, a question out of the
        evaluator's domain that is not Correct and got nothing from the web (the web off, failed or empty: no page
        fetched, no strip; pages that the reading left unread for the passages count as the web's). There the
        evaluator's scores prove nothing (AUC 0.62 on COVID-QA) and no other source corrects them, so the reader
        answers under two guards (docs/how-it-works.md, "The reader as evaluator"): with ``reader_judge``, when its
        check declines its answer, it judges the first passage it read alone (:meth:`GenerationStep.judge_first`);
        without ``model_knowledge``, an answer that what it read does not state is withheld
        (:func:`crag_cli.action.match.is_grounded`)."""
        ext = result.external_knowledge
        return (
            bool(result.knowledge_used)
            and result.mode == Mode.CRAG.value
            and result.action is not Action.CORRECT
            and self._outside(result.in_domain)
            and not (ext is not None and (ext.strips or ext.pages))
        )

    def _step(self, result: Result) -> GenerationStep:
        """The generation of ``result``'s answer, with the guards of an answer on doubted passages (:meth:`_unaided`)."""
        unaided = self._unaided(result)
        judge, withhold = unaided and self.settings.reader_judge, unaided and not self.settings.model_knowledge
        return GenerationStep(self.reader, self.settings.max_tokens, result, judge=judge, withhold=withhold)

    def _supported(self, hits: Sequence[Hit], scores: Sequence[float]) -> bool:
        """Whether a passage has lexical support (:func:`crag_cli.action.trigger.supported`)."""
        return supported(scores, [h.support for h in hits], self.thresholds.filter, self.settings.lexical_support)

    def _internal(self, result: Result) -> list[Strip]:
        """Refine the kept passages (see :meth:`_kept`).

        Without the setting ``refine`` those passages are returned whole, one strip each.
        """
        kept = self._kept(result.hits, result.scores, result.action, result.in_domain, result.probabilities)
        if not self.settings.refine:
            return [
                Strip(h.passage.text, h.passage.cite, h.passage.title, (i, 0), s, i) for i, (h, s) in enumerate(kept)
            ]
        sources = [KnowledgeSource(h.passage.cite, h.passage.title, h.passage.text) for h, _ in kept]
        with Timer(result.timings, "refine"):
            return refine(
                result.question,
                sources,
                self._scorer,
                self.settings.strip_mode,
                self._rule().top(result.action),
                self.thresholds.filter,
                self.settings.ranking,
            )

    @property
    def reading(self) -> ReadingPolicy:
        """The reading policy: the one given, else crag's rule (:meth:`_rule`)."""
        return self._reading if self._reading is not None else self._rule()

    def _rule(self) -> ActionReading:
        """crag's reading rule (:class:`crag_cli.action.knowledge.ActionReading`) with this pipeline's settings."""
        return ActionReading.of(self.settings, self.thresholds.upper)

    def reader_strips(self, result: Result) -> list[Strip]:
        """The strips the reader reads for this result, in reading order (before the prompt's token fit): the reading
        policy's choice (:attr:`reading`) of the action's knowledge.
        """
        return self.reading.read(evidence(result)).strips

    def _keep_first(self, result: Result) -> Reading:
        """Keep the strips the reader reads (:meth:`reader_strips`) and drop the rest from the result.

        The result keeps only those, so its record shows what the reader read. Returns the policy's reading: the
        strips in reading order, the order the prompt shows (fused ranks depend on the set ranked, so the kept strips
        are not ranked again).
        """
        reading = self.reading.read(evidence(result))
        result.reading = reading.why
        kept = {id(s) for s in reading.strips}
        if result.internal_knowledge is not None:
            result.internal_knowledge = [s for s in result.internal_knowledge if id(s) in kept]
        if result.external_knowledge is not None:
            result.external_knowledge.strips = [s for s in result.external_knowledge.strips if id(s) in kept]
        return reading

    def _knowledge(self, chosen: Sequence[Strip]) -> list[KnowledgeItem]:
        """CRAG's knowledge for the prompt: the kept strips (internal and external) in reading order.

        Each item carries the evaluator's verdict in words (``high``, ``medium``, ``low``; see
        :meth:`Thresholds.relevance`).
        """
        return [KnowledgeItem(s.text, s.source, s.title, self.thresholds.relevance(s.score)) for s in chosen]

    def _external(self, result: Result, unread: Unread | None = None) -> ExternalKnowledge:
        if self.web is None:
            return ExternalKnowledge.disabled()
        return self.web.run(result.question, result.timings, unread)

    def _unchecked(self, result: Result) -> list[KnowledgeItem]:
        """The baselines' knowledge: the top-k passages unchecked, and under ``rag+web`` the web's strips too.

        Under ``auto`` the evaluator is asked the question's domain alone (to pick the prompt), no passage scored.
        """
        question = result.question
        with Timer(result.timings, "retrieve"):
            result.hits = self._retrieve(question)
        items = [KnowledgeItem(h.passage.text, h.passage.cite, h.passage.title) for h in result.hits]
        if "web" in Mode(result.mode).groups:  # rag+web
            result.external_knowledge = self._external(result)
            items += [KnowledgeItem(s.text, s.source, s.title) for s in result.external_knowledge.strips]
        if result.task == AUTO:
            # the evaluator's domain alone (its base encoder embeds the question): no passage is scored
            with Timer(result.timings, "domain"):
                result.in_domain = self._knows([question])[0]
            result.evaluator = self.evaluator.name
        return items

    def run(
        self,
        question: str,
        id: str | None = None,
        answers: Sequence[str] | None = None,
        task: str | None = None,
        mode: Mode | str = Mode.CRAG,
        on_token: Callable[[str], None] | None = None,
        on_knowledge: Callable[[Result], None] | None = None,
    ) -> Result:
        """Answer one question.

        Parameters
        ----------
        question : str
        id : str, optional
        answers : sequence of str, optional
            Gold aliases; when given, ``Result.correct`` is set.
        task : str, optional
            Task to use (default: the pipeline's); ``auto`` picks the prompt by the evaluator's domain.
        mode : Mode or str
            :class:`crag_cli.pipeline.corrective.modes.Mode` or its name: ``crag`` (the paper's method), ``rag``,
            ``rag+web``, ``no-retrieval``.
        on_token : callable, optional
            Receives each generated text piece (streaming).
        on_knowledge : callable, optional
            Called with the result once knowledge is chosen, before generation.

        Returns
        -------
        Result
            Failures of a stage (model, web) are recorded in ``error``; only a bad
            ``mode``/``task`` raises.
        """
        mode = Mode.parse(mode)
        task = task or self.task
        if task not in TASK_CHOICES:
            raise ValueError(f"unknown task {task!r}: choose from {', '.join(TASK_CHOICES)}")
        result = Result(
            question=question, id=id, task=task, mode=mode.value, answers=list(answers) if answers else None
        )
        result.model = self.reader.model if self.reader is not None else None
        result.evaluator = self.evaluator.name if mode.judges else None
        start = time.perf_counter()
        items: list[KnowledgeItem] = []
        ahead = self._ahead_seconds.pop(question, (0.0, 0.0)) if mode is Mode.CRAG else (0.0, 0.0)
        for stage, seconds in zip(("evaluate", "refine"), ahead):
            if seconds:
                result.timings[stage] = seconds
        if mode is Mode.CRAG:
            self.evaluate(question, result)  # retrieve, evaluate, decide the action
            self.act(result)  # the action's knowledge: refined passages, the web's strips, or both
            items = self._knowledge(self._keep_first(result).strips)  # what the reader reads of it
            result.doubted = bool(result.internal_knowledge) and max(result.scores) < self.thresholds.lower
        elif mode.unchecked:
            items = self._unchecked(result)
        result.prompt_task = prompt_task(task, result.in_domain, has_reference=bool(items))
        result.knowledge_used = items
        if self.reader is not None and not items and mode.retrieves and not self.settings.model_knowledge:
            result.not_found = not_found(result, web=self.web is not None)
        step = self._step(result) if self.reader is not None and result.not_found is None else None
        if step is not None:
            items = step.fit(items)  # what the prompt holds: the record and on_knowledge show what is sent
        if on_knowledge is not None:
            on_knowledge(result)
        if step is not None:
            step.generate(items, on_token)  # generate
        result.timings["total"] = time.perf_counter() - start + sum(ahead)
        return result
