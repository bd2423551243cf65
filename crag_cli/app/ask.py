"""``crag ask``: one question answered with the whole pipeline, the answer streamed, notes on what it read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..settings import Settings
from .common import Note, quiet, check_question


@dataclass(frozen=True, kw_only=True)
class AskJob:
    """What ``crag ask`` is asked to do, beside the settings: one question."""

    question: str


def knowledge_notes(result) -> list[str]:
    """What ``crag ask`` says under the sources: the evaluator's domain, the prompt, the web, no knowledge.

    Parameters
    ----------
    result : pipeline.Result
        A result whose knowledge is chosen (the answer need not be generated yet).

    Returns
    -------
    list of str
        One line a note, in the order shown; empty when there is nothing to say.
    """
    from ..action.trigger import FUSED, Action
    from ..reader.prompts import AUTO

    notes = []
    if result.in_domain is False:
        notes.append("the question is unlike those the evaluator was trained on (out of its domain)")
    fused = result.thresholds is not None and result.thresholds.source == FUSED
    if result.evidence_score is not None and result.action is Action.CORRECT and not fused:
        notes.append(
            f"judged Correct by the evaluator's logit, BM25 support and rank combined ({result.evidence_score:+.2f})"
        )
    if result.task == AUTO and result.prompt_task != "popqa":
        notes.append(f"answered as --task {result.prompt_task} (--task auto: out of the evaluator's domain)")
    ext = result.external_knowledge
    if ext is not None:
        if ext.query:
            notes.append(f"web query: {ext.query}")
        if ext.error:
            notes.append(f"web: {ext.error}")
    if result.doubted:
        notes.append(
            "the evaluator doubted the passages read (every score below the lower threshold)"
            + (": out of its domain that is no proof" if result.in_domain is False else "")
        )
    if result.knowledge_cut is not None:
        notes.append(cut_note(result.knowledge_cut))
    if result.not_found is not None:
        notes.append("nothing read: no answer (--model-knowledge answers from the model's own memory)")
    elif not result.knowledge_used:
        notes.append("no knowledge: answering from the model's own memory, not from documents")
    return notes


def cut_note(cut: dict) -> str:
    """The warning that the prompt left out knowledge to fit the reader's window (a record's ``knowledge_cut``).

    Examples
    --------
    >>> cut = {"given": 5, "sent": 2, "shortened": True, "window": 1024, "answer_tokens": 64, "counted_by": "bound"}
    >>> cut_note(cut)[:80]
    'warning: the prompt holds 2 of the 5 pieces of knowledge chosen (the last cut sh'
    """
    counted = {
        "bound": "; its tokens counted by a bound, about 3 times their number (the server counts none)",
        "server": "; its tokens counted by the reader's tokenizer",
    }.get(cut.get("counted_by"), "")
    return (
        f"warning: the prompt holds {cut['sent']} of the {cut['given']} pieces of knowledge chosen"
        + (" (the last cut short)" if cut["shortened"] else "")
        + f", to fit the reader's window of {cut['window']} tokens less {cut['answer_tokens']} for the answer"
        + counted
    )


def answer_notes(result) -> list[str]:
    """What ``crag ask`` says after the answer: a first answer asked again, a reader's answer given as the
    sentence asked for, an answer found in no knowledge.

    Parameters
    ----------
    result : pipeline.Result
        A finished result.

    Returns
    -------
    list of str
        One line a note; empty when there is nothing to say.
    """
    notes = []
    if result.restated is not None:
        notes.append(
            f"note: the first answer ({result.restated!r}) only restated the question: "
            "asked again for the reference's sentence"
        )
    if result.judged:
        verdicts = ", ".join(f"{j['source']} {'yes' if j['answers'] else 'no'}" for j in result.judged)
        notes.append(f"note: the reader judged the first passage alone (does it answer the question?): {verdicts}")
    if result.reader_answer is not None and result.not_found is not None and result.grounded is False:
        notes.append(
            f"note: the reader answered {result.reader_answer!r}, which the passages it read do not state "
            "(--model-knowledge gives it)"
        )
    elif result.reader_answer is not None and result.not_found is not None:
        notes.append(f"note: the reader answered {result.reader_answer!r}, then said its reference does not state it")
    elif result.reader_answer is not None:
        notes.append(f"note: the reader answered {result.reader_answer!r}: given as the sentence asked for")
    if result.grounded is False and result.answer is not None:
        notes.append("note: the knowledge it was given does not state the answer (grounded: false)")
    return notes


class AskRun:
    """One ``crag ask`` run: made (the question checked, the index opened, the model file found), then :meth:`run`.

    Parameters
    ----------
    settings : Settings
    job : AskJob
    note : callable, optional
        Receives each note on the finished answer (:func:`answer_notes`).
    """

    def __init__(self, settings: Settings, job: AskJob, note: Note = quiet) -> None:
        from .. import assemble

        check_question(job.question)
        self.job, self.note = job, note
        self.pipeline = assemble.pipeline(settings, with_reader=True)

    def run(
        self,
        on_token: Optional[Callable[[str], None]] = None,
        on_knowledge: Optional[Callable[[object], None]] = None,
    ):
        """Load the reader and answer; returns the ``pipeline.Result`` (its ``error`` set when it failed).

        ``on_knowledge(result)`` is called once the knowledge is chosen, before the answer.
        ``on_token`` receives the answer as it streams, then its end: the ``not_found`` text
        when nothing was read, and a newline. The notes go to ``note`` after that.
        """
        self.pipeline.reader.load()
        result = self.pipeline.run(self.job.question.strip(), on_token=on_token, on_knowledge=on_knowledge)
        if on_token is not None:
            on_token((result.not_found or "") + "\n")
        for line in answer_notes(result):
            self.note(line)
        return result
