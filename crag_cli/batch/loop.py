"""The batch loop: records in input order, kept or answered, to the output or stdout, counted in a :class:`Summary`."""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain, islice
from typing import Callable, Iterable, Iterator, Sequence, Sized

from ..pipeline.modes import Mode
from .records import QuestionLine

from .executors import Answerer
from .output import BatchOutput


# --------------------------------------------------------------------------- the run


@dataclass
class Summary:
    """Counts over a batch's records: each record counted once, under its action or as an error."""

    total: int = 0
    actions: Counter = field(default_factory=Counter)
    errors: int = 0
    graded: int = 0
    correct: int = 0
    ungrounded: int = 0
    not_found: int = 0
    from_model: int = 0
    doubted: int = 0
    cut: int = 0  # prompts that left knowledge out to fit the reader's window
    seconds: float = 0.0
    answered_now: int = 0
    lines: int | None = 0  # the batch's lines, done and to do (None: not known yet)

    def add(self, rec: dict) -> None:
        self.total += 1
        if rec.get("error"):
            self.errors += 1
        else:
            self.actions[rec.get("action") or rec.get("mode") or "answered"] += 1
        if rec.get("grounded") is False and rec.get("answer") is not None:  # given; a withheld one is not found
            self.ungrounded += 1
        self.not_found += rec.get("basis") == "none"
        self.doubted += bool(rec.get("doubted"))
        self.cut += rec.get("knowledge_cut") is not None
        self.from_model += rec.get("basis") == "model" and rec.get("mode") != Mode.NO_RETRIEVAL
        if rec.get("correct") is not None:
            self.graded += 1
            self.correct += bool(rec["correct"])

    def to_dict(self) -> dict:
        return {
            "records": self.total,
            "actions": dict(self.actions),
            "errors": self.errors,
            "graded": self.graded,
            "correct": self.correct,
            "ungrounded": self.ungrounded,
            "not_found": self.not_found,
            "from_model": self.from_model,
            "doubted": self.doubted,
            "knowledge_cut": self.cut,
        }

    def line(self, resumed: int = 0) -> str:
        parts = [
            f"{self.total} questions",
            ", ".join(f"{k}: {v}" for k, v in sorted(self.actions.items())) or "none answered",
        ]
        if self.errors:
            parts.append(f"{self.errors} error record(s)")
        if self.not_found:
            parts.append(f"{self.not_found} not found (nothing read, or no answer in what was read)")
        if self.doubted:
            parts.append(f"{self.doubted} read passages the evaluator doubted (doubted: true)")
        if self.from_model:
            parts.append(f"{self.from_model} answered from the model's memory (nothing read)")
        if self.cut:
            parts.append(f"{self.cut} prompt(s) left knowledge out to fit the reader's window (knowledge_cut)")
        if self.ungrounded:
            parts.append(f"{self.ungrounded} answer(s) their knowledge does not state (grounded: false)")
        if self.graded:
            parts.append(f"accuracy {self.correct}/{self.graded} = {self.correct / self.graded:.1%}")
        if self.answered_now:
            parts.append(
                f"{self.seconds / self.answered_now:.2f} s/question"
                + (f" (the {self.answered_now} answered now)" if resumed else "")
            )
        return "summary: " + "; ".join(parts)


def run_batch(
    answerer: Answerer,
    lines: Iterable[QuestionLine],
    output: BatchOutput | None,
    done: Sequence[dict] = (),
    retry_errors: bool = False,
    on_record: Callable[[dict, Summary], None] | None = None,
    stream=None,
) -> Summary:
    """Answer ``lines`` in order; records to ``output`` (or ``stream``, default stdout).

    Records in ``done`` (an earlier run's, for the first lines) are kept, except
    error records when ``retry_errors``; the rest go to ``answerer``
    (:class:`InProcess` or :class:`WorkerPool`), whose records are written in
    input order. ``lines`` are read once, as the answerer asks for them (a
    :class:`~crag_cli.batch.records.Questions` holds no more); how many there are
    (``Summary.lines``) is known when they are a sequence or a ``Questions``
    that knows. ``KeyboardInterrupt`` leaves the partial file whole (and the
    manifest incomplete) and propagates.
    """
    summary = Summary(lines=_total(lines))
    stream = stream or sys.stdout
    finished = False
    source = iter(lines)
    head = list(islice(source, len(done)))  # the lines of the kept records, held with them
    redo = [retry_errors and bool(rec.get("error")) for rec in done[: len(head)]]
    answers = answerer(chain((q for q, again in zip(head, redo) if again), source))
    try:
        for i, rec, seconds in _records(answers, done[: len(head)], redo):
            if seconds is None:
                if output is not None:
                    output.keep(i, rec)
            else:
                summary.answered_now += 1
                summary.seconds += seconds
                if output is not None:
                    output.write(i, rec)
                else:
                    stream.write(json.dumps(rec, ensure_ascii=False, allow_nan=False) + "\n")
                    stream.flush()
            summary.lines = _total(lines)
            summary.add(rec)
            if on_record is not None:
                on_record(rec, summary)
        finished = True
    finally:
        answers.close()  # stops the workers of a pool
        if output is not None:
            output.close(finished, summary.to_dict() if finished else None)
    return summary


def _records(answers: Iterator, done: Sequence[dict], redo: list[bool]) -> Iterator[tuple[int, dict, float | None]]:
    """``(position, record, seconds)`` in input order: the kept records (``None`` seconds), then the answered."""
    for i, rec in enumerate(done):
        if redo[i]:
            rec, seconds = next(answers)
            yield i, rec, seconds
        else:
            yield i, rec, None
    for i, (rec, seconds) in enumerate(answers, len(done)):
        yield i, rec, seconds


def _total(lines: Iterable) -> int | None:
    """How many lines a batch has, when known."""
    return len(lines) if isinstance(lines, Sized) else getattr(lines, "total", None)
