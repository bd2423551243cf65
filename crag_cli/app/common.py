"""What every command of the application layer shares: the note callback, the input checks, gold questions."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..errors import CragError

Note = Callable[[str], None]


def quiet(_: str) -> None:
    pass


def check_input_file(path: Path) -> None:
    """Refuse a questions file that is a folder or does not exist (``-`` is stdin)."""
    if str(path) == "-":
        return
    if path.is_dir():
        raise CragError(f"{path} is a folder, not a JSONL file")
    if not path.is_file():
        raise CragError(f"no such file: {path}")


def check_question(question: str) -> None:
    """Refuse a question that is empty or not valid UTF-8 (undecodable bytes reach Python as lone surrogates,
    which no tokenizer or output can take)."""
    from ..jsonl import has_surrogate

    if not question.strip():
        raise CragError("the question is empty")
    if has_surrogate(question):
        raise CragError("the question is not valid UTF-8 text (check the terminal's or the script's encoding)")


def gold_questions(path: Path, limit: int | None, note: Note = quiet) -> list[tuple[str, list[str]]]:
    """(question, gold aliases) of a JSONL file's first ``limit`` usable lines; unusable lines before them are noted
    as skipped."""
    from ..batch.records import read_questions

    questions = []
    for q in read_questions(path):  # read as far as ``limit`` needs, not the whole file
        if limit is not None and len(questions) >= limit:
            break
        if q.error or not q.answers:
            note(f"line {q.line}: skipped: {q.error or 'no gold answers'}")
            continue
        questions.append((q.question, q.answers))
    if not questions:
        raise CragError(f"{path} holds no question with gold answers")
    return questions
