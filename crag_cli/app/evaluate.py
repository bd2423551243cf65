"""``crag evaluate``: one question's or a JSONL file's passages scored, and the action each triggers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import CragError
from ..settings import Settings
from .common import check_input_file, check_question

EVALUATION_KEYS = (
    "id",
    "question",
    "evaluator",
    "action",
    "in_domain",
    "evidence_score",
    "thresholds",
    "scores",
    "timings",
    "error",
)


@dataclass(frozen=True, kw_only=True)
class EvaluateJob:
    """What ``crag evaluate`` is asked to do: one ``question``, or every line of ``input`` (``-`` is stdin)."""

    question: Optional[str] = None
    input: Optional[Path] = None


def evaluation_record(result) -> dict[str, Any]:
    """The record ``crag evaluate`` prints for a result: the fields of its full record that the evaluator fills.

    Parameters
    ----------
    result : pipeline.Result
        A result of ``Pipeline.evaluate``.

    Returns
    -------
    dict
        ``id``, ``question``, ``evaluator``, ``action``, ``in_domain``, ``evidence_score``, ``thresholds``, ``scores``,
        ``timings`` and ``error``, as ``records.to_record`` writes them.
    """
    from ..batch.records import to_record

    rec = to_record(result)
    return {k: rec[k] for k in EVALUATION_KEYS}


class EvaluateRun:
    """One ``crag evaluate`` run: made (the question or the file checked, the index opened), then
    :meth:`result` for the question or :meth:`records` for the file.

    Parameters
    ----------
    settings : Settings
    job : EvaluateJob
        Exactly one of ``question`` and ``input``.
    """

    def __init__(self, settings: Settings, job: EvaluateJob) -> None:
        from .. import assemble

        if (job.question is None) == (job.input is None):
            raise CragError("give a QUESTION or --input FILE.jsonl (one of them)")
        if job.question is not None:
            check_question(job.question)
        if job.input is not None:
            check_input_file(job.input)
        self.job = job
        self.pipeline = assemble.pipeline(settings, with_reader=False)

    def result(self):
        """The question's passages, their scores and the action (a ``pipeline.Result``)."""
        return self.pipeline.evaluate(self.job.question.strip())

    def records(self, on_record: Callable[[dict[str, Any]], None]) -> int:
        """Give ``on_record`` one record per line of the file, in order; returns how many are error records.

        A line that cannot be read, or whose question fails, gets an error record and the rest go on;
        a :class:`CragError` (an index or a model that cannot be used) stops the file.
        """
        from ..batch.records import error_record, read_questions

        errors = 0
        for q in read_questions(self.job.input):
            if q.error:
                rec = error_record(q.id, q.question, q.error, q.line)
            else:
                try:
                    result = self.pipeline.evaluate(q.question)
                    result.id = q.id
                    rec = evaluation_record(result)
                except CragError:
                    raise
                except Exception as exc:  # one bad question never stops the file
                    rec = error_record(q.id, q.question, f"{type(exc).__name__}: {exc}", q.line)
            errors += bool(rec.get("error"))
            on_record(rec)
        return errors
