"""Result records (JSON) and reading question files (JSONL) line by line."""

from __future__ import annotations

import math
import os
import stat
import sys
from collections import deque
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Iterator

from .. import jsonl
from ..pipeline.result import Result
from ..reader.prompts import TASK_CHOICES as VALID_TASKS

JSON_BLANK = b" \t\r\n"  # JSON's white space: a line of nothing else is blank
QUESTION_LINE_BYTES = 1 << 20  # a question line longer than this (1 MiB) is that line's error record, not read


def to_record(result: Result) -> dict[str, Any]:
    """The JSON record of a result; every field is documented in docs/how-it-works.md ("Result record")."""
    record: dict[str, Any] = {
        "id": result.id,
        "question": result.question,
        "task": result.task,
        "prompt_task": result.prompt_task,
        "mode": result.mode,
        "model": result.model,
        "served_model": result.served_model,
        "evaluator": result.evaluator,
        "action": result.action.value if result.action else None,
        "in_domain": result.in_domain,
        "evidence_score": None if result.evidence_score is None else round(result.evidence_score, 4),
        "thresholds": (
            {**result.thresholds.to_dict(), "lexical_support": result.lexical_support} if result.thresholds else None
        ),
        "scores": [
            {
                "id": h.passage.id,
                "title": h.passage.title,
                "bm25": round(h.score, 4),
                **({"support": round(h.support, 4)} if h.support is not None else {}),
                "score": round(s, 4) if s is not None else None,
                **({"probability": round(p, 4)} if p is not None else {}),
                **({"source": h.passage.cite} if h.passage.page else {}),
            }
            for h, s, p in zip(
                result.hits, _padded(result.scores, result.hits), _padded(result.probabilities, result.hits)
            )
        ],
        "internal_knowledge": (
            [s.to_dict() for s in result.internal_knowledge] if result.internal_knowledge is not None else None
        ),
        "external_knowledge": result.external_knowledge.to_dict() if result.external_knowledge else None,
        "knowledge_cut": result.knowledge_cut,
        "reading": result.reading,
        "doubted": result.doubted,
        "judged": result.judged,
        "answer": result.answer,
        "basis": result.basis,
        **({"not_found": result.not_found} if result.not_found is not None else {}),
        "grounded": result.grounded,
        "restated": result.restated,
        "reader_answer": result.reader_answer,
        "checked": result.checked,
        "prompt_tokens": result.prompt_tokens,
        "prompt_tokens_source": result.prompt_tokens_source,
        "timings": {k: round(v, 4) for k, v in result.timings.items()},
        "error": result.error,
    }
    if result.answers:
        record["answers"] = result.answers
        record["correct"] = result.correct
    return record


def error_record(id: Any, question: Any, error: str, line: int | None = None) -> dict[str, Any]:
    """The record written for an input line that could not be processed."""
    rec = {"id": id, "question": question, "action": None, "answer": None, "error": error}
    if line is not None:
        rec["line"] = line
    return rec


@dataclass
class QuestionLine:
    """One input line: either a valid question or the error that makes it unusable.

    ``id`` is the line's own ``id``, else ``line-N`` (also for a line that could not be read).
    """

    line: int
    id: str | None
    question: str | None
    answers: list[str] | None
    task: str | None
    error: str | None = None


def parse_question(obj: Any, line: int) -> QuestionLine:
    """Validate one decoded JSON value as a question object.

    Parameters
    ----------
    obj : Any
        The decoded line.
    line : int
        Its 1-based line number (the default id is ``"line-N"``, also of a line that is not a question).
    """
    if not isinstance(obj, dict):
        return QuestionLine(line, f"line-{line}", None, None, None, "line is not a JSON object")
    raw_id = obj.get("id")
    if raw_id is not None and not isinstance(raw_id, (str, int, float)):
        return QuestionLine(line, f"line-{line}", None, None, None, "'id' must be a string or a number")
    if isinstance(raw_id, float) and not math.isfinite(raw_id):  # 1e400, NaN, Infinity: no id can be "inf"
        return QuestionLine(line, f"line-{line}", None, None, None, "'id' must be a finite number (or a string)")
    qid = str(raw_id) if raw_id is not None else f"line-{line}"
    question = obj.get("question")
    if not isinstance(question, str) or not question.strip():
        return QuestionLine(line, qid, None, None, None, "missing or empty 'question'")
    answers = obj.get("answers")
    if answers is not None:
        if isinstance(answers, str):
            answers = [answers]
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            return QuestionLine(line, qid, question, None, None, "'answers' must be a list of strings")
    task = obj.get("task")
    if task is not None and task not in VALID_TASKS:
        return QuestionLine(line, qid, question, None, None, f"unknown task {task!r}: use {', '.join(VALID_TASKS)}")
    return QuestionLine(line, qid, question.strip(), answers, task)


def read_questions(path: Path) -> Iterator[QuestionLine]:
    """Yield every non-blank line of a JSONL question file, valid or not, in order.

    A line that cannot be read (see :func:`crag_cli.jsonl.parse`: not UTF-8,
    malformed, a number too long, nesting too deep, a lone surrogate) or that is
    not a valid question yields a :class:`QuestionLine` with ``error`` set
    (and the id ``line-N``); reading goes on. Lines of JSON white space only (space,
    tab, CR) are skipped; every other line yields exactly one item (one longer than
    :data:`QUESTION_LINE_BYTES` is an error, read past without being held). A UTF-8
    byte-order mark at the start of the file is ignored. The path ``-`` reads
    standard input.
    """
    with nullcontext(sys.stdin.buffer) if str(path) == "-" else open(path, "rb") as f:
        for lineno, raw in enumerate(jsonl.bounded_lines(f, QUESTION_LINE_BYTES), 1):
            if raw is None:
                problem = f"line longer than {QUESTION_LINE_BYTES >> 20} MiB: not read"
                yield QuestionLine(lineno, f"line-{lineno}", None, None, None, problem)
                continue
            if not raw.strip(JSON_BLANK):
                continue
            try:
                obj = jsonl.parse(raw, first=lineno == 1)  # a byte-order mark may open the file
            except jsonl.BadLine as exc:
                yield QuestionLine(lineno, f"line-{lineno}", None, None, None, str(exc))
                continue
            yield parse_question(obj, lineno)


COUNT_BYTES = 16 << 20  # a question file up to this size is counted before a batch (its progress has a total)


class Questions:
    """A batch's question lines (:func:`read_questions`), read as they are needed: memory holds the lines
    asked for ahead (:meth:`prefix`), never the file, and ``limit`` stops the reading.

    Parameters
    ----------
    path : Path
        The question file, or ``-`` for standard input.
    limit : int, optional
        Read only the first ``limit`` lines (``--limit``).
    """

    def __init__(self, path: Path, limit: int | None = None) -> None:
        lines = read_questions(path)
        self._file = lines
        self._lines = islice(lines, limit) if limit is not None else lines
        self._ahead: deque[QuestionLine] = deque()
        self.limit = limit
        self.read = 0  # lines read from the file so far
        self.ended = False  # all of them
        self._counted = _count_lines(path, limit)

    @property
    def total(self) -> int | None:
        """How many lines the batch has: counted before (a file up to :data:`COUNT_BYTES`), or once all are
        read; until then at most ``limit`` (``None`` without one)."""
        if self.ended:
            return self.read
        if self._counted is not None:
            return max(self._counted, self.read)
        return self.limit

    def prefix(self, n: int) -> list[QuestionLine]:
        """The first ``n`` lines not yet iterated over (fewer when the file has fewer), kept for the iteration."""
        while len(self._ahead) < n and self._more():
            pass
        return list(islice(self._ahead, n))

    def __iter__(self) -> Iterator[QuestionLine]:
        while self._ahead or self._more():
            yield self._ahead.popleft()

    def _more(self) -> bool:
        if self.ended:
            return False
        try:
            self._ahead.append(next(self._lines))
        except StopIteration:
            self.ended = True
            return False
        self.read += 1
        return True

    def close(self) -> None:
        """Close the file (its lines after ``limit``, or after a stop, are never read)."""
        self._file.close()


def _count_lines(path: Path, limit: int | None) -> int | None:
    """The lines :func:`read_questions` yields (at most ``limit``), of a file of up to :data:`COUNT_BYTES`;
    ``None`` for a larger file, standard input, or a file that cannot be read."""
    try:
        st = os.stat(path) if str(path) != "-" else None
        if st is None or not stat.S_ISREG(st.st_mode) or st.st_size > COUNT_BYTES:
            return None
        n = 0
        with open(path, "rb") as f:
            for raw in jsonl.bounded_lines(f, QUESTION_LINE_BYTES):  # as read_questions reads them
                n += raw is None or bool(raw.strip(JSON_BLANK))
                if limit is not None and n >= limit:
                    break
        return n
    except OSError:
        return None


def _padded(values, hits) -> list:
    """``values`` (or none) with ``None`` for each hit past them."""
    values = list(values or [])
    return values + [None] * (len(hits) - len(values))
