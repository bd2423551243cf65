"""CRAG's last stage, generation: the reader answers the question over the knowledge read, into a ``Result``.

:class:`GenerationStep` asks once (a ``docqa`` answer that only restates the
question is asked once more; a ``docqa`` answer is its first sentence, the knowledge's own when reworded);
:func:`not_found` is what a user reads instead when nothing was read, :func:`not_stated` when the reader, asked
whether what it read states its answer, said no (:attr:`crag_cli.reader.prompts.Task.check`).
"""

from __future__ import annotations

from dataclasses import replace

from ..documents.passages import split_sentences
from ..reader import Generation, Reader
from ..action.match import is_grounded, quote, restates
from .modes import Mode
from ..reader.prompts import JUDGE, TASKS, KnowledgeItem, build_messages, clean_answer, fit_knowledge, says_yes
from .result import Result, Timer

SOURCES = ("server", "server-no-cache", "counted", "estimate")  # prompt_tokens' sources, the surest first


def not_found(result: Result, web: bool) -> str:
    """What a user reads instead of an answer when nothing was read (no passage kept, no web strip);
    ``web``: whether the pipeline has a web stage."""
    ext = result.external_knowledge
    if not web:
        return "Not found in the indexed documents; web search is off."
    if ext is None:  # Correct, or plain RAG: the web was not asked
        return "Not found in the indexed documents."
    if ext.error:
        return f"Not found in the indexed documents; the web search failed ({ext.error})."
    return "Not found in the indexed documents or on the web."


def not_stated(result: Result, withheld: bool = False) -> str:
    """What a user reads instead of an answer when the reader's check said what it read does not state one, or
    the reader judged that no passage it read answers the question; ``withheld``: when what it read does not
    state the answer it gave (:func:`crag_cli.action.match.is_grounded`)."""
    ext = result.external_knowledge
    read_web = ext is not None and bool(ext.strips)
    read_passages = bool(result.internal_knowledge) or Mode(result.mode).unchecked
    where = "the indexed documents" + (" or on the web" if read_web else "") if read_passages else "the web"
    n = len(result.judged) if result.judged is not None else len(result.knowledge_used)
    passages = f"{n} passage{'s' * (n != 1)} it read"
    if withheld:
        return f"Not found in {where}: the reader's answer is not stated in the {passages}."
    return f"Not found in {where}: the reader found no answer in the {passages}."


class GenerationStep:
    """The generation of one question's answer: ``reader`` asked with ``max_tokens`` (default per task),
    what it gives written into ``result`` (answer, knowledge kept, prompt tokens, timing, error).

    ``judge``: a declined answer has the reader judge the first item of the knowledge alone (:meth:`judge_first`);
    ``withhold``: an answer that the knowledge it was read from does not state is no answer (:meth:`_withhold`).
    """

    def __init__(
        self, reader: Reader, max_tokens: int | None, result: Result, judge: bool = False, withhold: bool = False
    ) -> None:
        self.reader, self.max_tokens, self.result = reader, max_tokens, result
        self.judge, self.withhold = judge, withhold
        self._fits: dict[tuple, tuple] = {}  # (question, task, items) -> its fit: :meth:`fit`'s is not counted again

    def _fitted(self, question: str, items: list[KnowledgeItem], task: str):
        """``(messages, kept, max_tokens)``: ``task``'s prompt over ``items`` fitted to ``n_ctx`` less the answer."""
        key = (question, task, tuple(items))
        if key not in self._fits:
            max_tokens = self.max_tokens or TASKS[task].max_tokens
            budget = self.reader.n_ctx - max_tokens
            messages, kept, _ = fit_knowledge(question, items, task, self.reader.count_tokens, budget)
            self._fits[key] = self._fits[(question, task, tuple(kept))] = (
                messages,
                kept,
                max_tokens,
            )  # kept fits as is
        return self._fits[key]

    def _ask(self, question: str, items: list[KnowledgeItem], task: str, on_token=None):
        """One generation: ``task``'s prompt fitted to ``n_ctx``; the cleaned answer, the knowledge kept and the
        :class:`crag_cli.reader.Generation` (its prompt tokens)."""
        messages, kept, max_tokens = self._fitted(question, items, task)
        gen = self.reader.generate(messages, max_tokens, on_token)
        return clean_answer(gen.text, task), kept, gen

    def fit(self, items: list[KnowledgeItem]) -> list[KnowledgeItem]:
        """The knowledge the answer's prompt holds once fitted to the reader's window, before anything is generated,
        so that the record and ``crag ask``'s listing show what is sent: ``knowledge_used``, and the strips of
        ``internal_knowledge`` and ``external_knowledge`` those sent (the one cut short, as sent). When the fit left
        knowledge out, ``knowledge_cut`` says how much and why. ``items`` as they are when the prompt cannot fit:
        the generation then fails and says why."""
        result = self.result
        try:
            with Timer(result.timings, "generate"):
                _, kept, max_tokens = self._fitted(result.question, items, result.prompt_task or result.task)
        except Exception:  # the generation fails the same way, and its error says why
            return items
        result.knowledge_used = kept
        shortened = bool(kept) and kept[-1] is not items[len(kept) - 1]
        if len(kept) == len(items) and not shortened:
            return kept
        result.knowledge_cut = {
            "given": len(items),
            "sent": len(kept),
            "shortened": shortened,
            "window": self.reader.n_ctx,
            "answer_tokens": max_tokens,
            "counted_by": getattr(self.reader, "counted_by", None),
        }
        sent = {(k.text, k.source): k.text for k in kept if not (shortened and k is kept[-1])}
        if shortened:
            sent[(items[len(kept) - 1].text, kept[-1].source)] = kept[-1].text
        if result.internal_knowledge is not None:
            result.internal_knowledge = _sent(result.internal_knowledge, sent)
        if result.external_knowledge is not None:
            result.external_knowledge.strips = _sent(result.external_knowledge.strips, sent)
        return kept

    def _counted(self, reply: Generation, later: bool = False) -> None:
        """Record where ``reply``'s prompt tokens come from: ``prompt_tokens_source`` is the least sure of a
        question's prompts (:data:`SOURCES`); a later prompt of a server that says nothing of its cache is
        ``server-no-cache`` (crag subtracted the start it knows the prompts share)."""
        source = reply.prompt_source
        if source == "server" and later and reply.cached_tokens is None:
            source = "server-no-cache"
        if source in SOURCES:
            now = self.result.prompt_tokens_source
            self.result.prompt_tokens_source = max(source, now or source, key=SOURCES.index)

    def _read_anew(self, reply: Generation, shared: tuple[list[KnowledgeItem], str] | None = None) -> int:
        """Of a question's later prompt (a check, a judge, a second ask), the tokens the reader read anew.

        The engine keeps the previous prompt's tokens and reads only what follows their common start: the prompt's
        tokens less those it says it had cached (:attr:`crag_cli.reader.Generation.cached_tokens`); when it does
        not say, less the start this prompt is known to share with the one before: the prompt over ``shared``'s
        knowledge and task without its last line (none when ``shared`` is ``None``).
        """
        self._counted(reply, later=True)
        cached = reply.cached_tokens
        if cached is None:
            start = build_messages(self.result.question, *shared, instruction="") if shared is not None else None
            cached = self.reader.count_tokens(start) if start is not None else 0
        return max(reply.prompt_tokens - cached, 0)

    def _ask_again(self, items: list[KnowledgeItem], task: str) -> tuple[str, list[KnowledgeItem], int] | None:
        """The answer to ``task``'s prompt over the same knowledge, the knowledge kept and the prompt's tokens read
        anew (:meth:`_read_anew`: it shares all but its last line with the answer's when the same knowledge fits).

        ``None`` when that generation fails or answers nothing: the first answer then stands.
        """
        try:
            answer, kept, gen = self._ask(self.result.question, items, task)
        except Exception:  # the first answer stands; a model that fails again fails the next question
            return None
        return (answer, kept, self._read_anew(gen, (kept, task))) if answer else None

    def _declined(self, task: str, kept: list[KnowledgeItem]) -> bool:
        """Ask ``task``'s :attr:`~crag_cli.reader.prompts.Task.check` over the knowledge ``kept``; when the reader says no,
        the answer becomes no answer (``not_found`` says why, ``reader_answer`` keeps the reader's words).

        The check's prompt differs from the answer's only in its last line, so the engine's cached prefix serves it:
        ``prompt_tokens`` grows by what the reader read anew (:meth:`_read_anew`), not by the whole prompt.
        """
        result, t = self.result, TASKS[task]
        question = result.question
        messages = build_messages(question, kept, task, instruction=t.check)
        try:
            reply = self.reader.generate(messages, 4)
        except Exception:  # the answer stands; a model that fails again fails the next question
            return False
        result.prompt_tokens = (result.prompt_tokens or 0) + self._read_anew(reply, (kept, task))
        result.checked = clean_answer(reply.text, task)
        if not t.declines(result.checked):
            return False
        result.reader_answer, result.answer = result.answer, None
        result.not_found = not_stated(result)
        return True

    def _withhold(self) -> bool:
        """With ``withhold``, an answer that the knowledge it was read from does not state (``grounded`` false)
        becomes no answer: ``not_found`` says so (:func:`not_stated`), ``reader_answer`` keeps the reader's words.
        Whether it did."""
        result = self.result
        if not (self.withhold and result.answer and result.grounded is False):
            return False
        result.reader_answer, result.answer = result.answer, None
        result.not_found = not_stated(result, withheld=True)
        return True

    def _quote(self, kept: list[KnowledgeItem]) -> None:
        """The answer as :attr:`crag_cli.reader.prompts.Task.quote` gives it: its first sentence (the one asked for; the
        reader may run on to ``max_tokens``), or the knowledge's sentence that one was drawn from."""
        answer = self.result.answer
        first = (split_sentences(answer) or [answer])[0]
        given = quote(first, [k.text for k in kept]) or first
        if given != answer:
            self.result.reader_answer, self.result.answer = answer, given

    def judge_first(self, items: list[KnowledgeItem], on_token) -> Generation | None:
        """The reader as the retrieval evaluator, once its check declined the answer it gave over all ``items``:
        asked of the first item (the strongest in reading order) alone whether it answers the question
        (:data:`crag_cli.reader.prompts.JUDGE`); when it says yes, the answer is read from that item alone and is not
        checked again; when it says no the answer stays "Not found" (:func:`not_stated`). A later item is not asked:
        no answer read from one was right on the docs folders measured (docs/benchmarks.md).

        ``result.judged`` lists the item asked with the reader's verdict. ``prompt_tokens`` adds what the reader
        read anew (:meth:`_read_anew`) of the judge's prompt (its start is the answer's, up to the item's end: whole
        when the engine does not say what it had cached) and of the answer's (all but its last line is the judge's).
        """
        result = self.result
        task = result.prompt_task or result.task
        before, item = result.prompt_tokens or 0, items[0]
        with Timer(result.timings, "judge"):
            try:
                reply = self.reader.generate(build_messages(result.question, [item], task, JUDGE), 4)
            except Exception as exc:  # a model failure is this question's error, not the batch's
                result.error, result.not_found = f"generation failed: {type(exc).__name__}: {exc}", None
                return None
        tokens, answers = self._read_anew(reply), says_yes(reply.text)
        result.judged = [{"source": item.source, "answers": answers}]
        if not answers:
            result.prompt_tokens, result.not_found = before + tokens, not_stated(result)
            return None
        result.not_found, result.reader_answer = None, None
        gen = self.generate([item], on_token, check=False)  # sets prompt_tokens to its own prompts'
        if gen is not None:  # what came before, and of the answer's prompt what the judge's had not held
            anew = self._read_anew(gen, ([item], task)) - gen.prompt_tokens
            result.prompt_tokens = (result.prompt_tokens or 0) + before + tokens + anew
        return gen

    def generate(self, items: list[KnowledgeItem], on_token, check: bool = True) -> Generation | None:
        """Generate the answer; a ``docqa`` answer that only restates the question is asked once more
        (:attr:`crag_cli.reader.prompts.Task.retry`), the first answer kept in ``result.restated``; a ``docqa``
        answer is its first sentence, or the knowledge's sentence that one was drawn from when the knowledge
        does not hold it as it stands (:attr:`crag_cli.reader.prompts.Task.quote`), the reader's words kept in
        ``result.reader_answer``.

        A ``docqa`` answer that stands is checked (:attr:`crag_cli.reader.prompts.Task.check`) unless ``check`` is false:
        when the reader says the reference does not state it, it is no answer (:meth:`_declined`); a step made with
        ``judge`` then has the reader judge the first item it read alone (:meth:`judge_first`). An answer
        that stands is ``grounded`` or not in the knowledge kept (:func:`crag_cli.action.match.is_grounded`); a step made
        with ``withhold`` gives none that is not (:meth:`_withhold`).
        An answer that may be asked again or quoted is not streamed piece by piece: once it stands it goes to
        ``on_token`` whole, so what streamed is the answer given. ``prompt_tokens`` counts both prompts.
        """
        result = self.result
        task = result.prompt_task or result.task
        declined: list[KnowledgeItem] | None = None
        with Timer(result.timings, "generate"):
            try:
                t = TASKS[task]
                whole = bool(items) and (t.retry is not None or t.quote or t.check is not None or self.withhold)
                result.answer, kept, gen = self._ask(result.question, items, task, None if whole else on_token)
                result.prompt_tokens, result.served_model = gen.prompt_tokens, gen.served_model
                self._counted(gen)
                result.knowledge_used = kept
                retry = TASKS[task].retry if kept else None  # all knowledge cut to fit n_ctx: no reference to quote
                again = self._ask_again(items, retry) if retry and restates(result.answer, result.question) else None
                if again is not None:
                    result.restated, (result.answer, kept, tokens) = result.answer, again
                    result.knowledge_used = kept
                    result.prompt_tokens += tokens
                if TASKS[task].quote and kept:
                    self._quote(kept)
                if check and TASKS[task].check and kept and result.answer and self._declined(task, kept):
                    declined = kept
                else:
                    if t.grounded and Mode(result.mode).retrieves:
                        result.grounded = is_grounded(result.answer, [k.text for k in kept], result.question)
                    if not self._withhold() and whole and on_token is not None:
                        on_token(result.answer)
            except Exception as exc:  # a model failure is this question's error, not the batch's
                result.error = f"generation failed: {type(exc).__name__}: {exc}"
                return None
        return self.judge_first(declined, on_token) if declined is not None and self.judge else gen


def _sent(strips: list, sent: dict[tuple[str, str], str]) -> list:
    """Of ``strips``, those a prompt held (``sent``: each one's text and source, to the text sent)."""
    return [replace(s, text=sent[(s.text, s.source)]) for s in strips if (s.text, s.source) in sent]
