"""crag as a Python library: open an index with settings, answer one question or many.

    import crag_cli

    crag = crag_cli.open(index="my-index", model="qwen2.5-coder-1.5b")  # any setting, as the CLI's
    result = crag.ask("Who wrote Dune?")  # a Result: .answer, .action, .knowledge, .timings
    for record in crag.answer(["Who wrote Dune?", {"id": "q2", "question": "...", "answers": ["..."]}]):
        print(record["id"], record["answer"])  # the records `crag batch` writes, in input order

The settings are the ones of ``crag ask`` and ``crag batch`` (names as in
``crag_cli.settings.Settings``: ``top_k``, ``evaluator``, ``web``, ...), checked the
same way; environment variables and ``crag.toml`` are not read here (pass what
you want). ``answer`` is the loop ``crag batch`` runs, without the output file:
one record per question, an error record for a bad one, never an exception
for one question; ``workers=N`` answers in N processes as ``--workers`` does.
``batch`` is ``crag batch`` itself (the same function, ``crag_cli.app.BatchRun``):
an output file written beside its name and renamed into place, ``resume``,
``workers``, ``ray``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pydantic import ValidationError

from .settings.layers import problem
from .pipeline.modes import Mode
from .settings import Settings, SettingsError


class Crag:
    """An opened index with its settings; models load on the first question (or :meth:`load`)."""

    def __init__(self, settings: Settings, mode: Mode | str = Mode.CRAG) -> None:
        from . import assemble

        try:
            self.mode = Mode.parse(mode)
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
        self.settings = settings
        self.pipeline = assemble.pipeline(settings, with_reader=True, retrieve=self.mode.retrieves)
        self._loaded = False

    def load(self) -> "Crag":
        """Load the evaluator and the reader now rather than on the first question."""
        from .batch import load_models

        if not self._loaded:
            load_models(self.pipeline, self.mode)
            self._loaded = True
        return self

    def ask(self, question: str, answers: Iterable[str] | None = None, on_token: Callable[[str], None] | None = None):
        """Answer one question: a :class:`crag_cli.pipeline.result.Result`; ``on_token`` receives the answer as it streams.

        Raises ``ValueError`` for an empty question; errors of the models or the web propagate.
        """
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question is empty")
        if isinstance(answers, str):  # one alias, as a batch line may give it
            answers = [answers]
        self.load()
        return self.pipeline.run(
            question.strip(), answers=list(answers) if answers is not None else None, mode=self.mode, on_token=on_token
        )

    def answer(self, questions: Iterable[str | dict[str, Any]], workers: int = 1) -> Iterator[dict[str, Any]]:
        """Records for ``questions`` (strings, or objects as a ``crag batch`` line), lazily, in input order.

        Each record is what ``crag batch`` writes for that line (``timings`` included);
        a bad question (empty, wrong types) gives an error record and the rest go on.
        """
        from .batch import InProcess, WorkerPool
        from .batch.records import parse_question

        lines = (parse_question({"question": q} if isinstance(q, str) else q, i) for i, q in enumerate(questions, 1))
        if workers > 1:
            answerer = WorkerPool(self.settings, self.mode, workers)
        else:
            self.load()
            answerer = InProcess(self.pipeline, self.mode)
        for record, _seconds in answerer(lines):
            yield record

    def batch(
        self,
        input: str | Path,
        output: str | Path | None = None,
        *,
        resume: bool = False,
        retry_errors: bool = False,
        overwrite: bool = False,
        workers: int = 1,
        ray: str | None = None,
        limit: int | None = None,
        note: Callable[[str], None] | None = None,
        on_record: Callable | None = None,
    ):
        """Run ``crag batch`` on a JSONL file: the same checks, output, resume, workers and Ray as the command.

        ``ray`` is ``"local"`` or a cluster address; ``note`` receives what the
        command prints on stderr; ``on_record(record, summary)`` follows progress.
        Returns a :class:`crag_cli.app.BatchReport`; raises
        :class:`crag_cli.errors.CragError` with the command's one-line message.
        """
        from .app import BatchJob, BatchRun

        job = BatchJob(
            input=Path(input),
            output=Path(output) if output is not None else None,
            mode=self.mode,
            limit=limit,
            resume=resume,
            retry_errors=retry_errors,
            overwrite=overwrite,
            workers=workers,
            ray=ray,
        )
        run = BatchRun(self.settings, job, note or (lambda _: None))
        try:  # the models load after the input and resume checks, as in crag batch
            return run.run(on_record=on_record, pipeline=self.pipeline)
        finally:
            run.close()


def open(index: str | None = None, mode: Mode | str = Mode.CRAG, **settings: Any) -> Crag:  # noqa: A001 (like io.open)
    """Open ``index`` with ``settings`` (the CLI's, as keyword arguments) for ``mode`` (crag, rag, ...).

    Raises ``crag_cli.settings.SettingsError`` (a ``ValueError``) naming the bad
    setting, and ``crag_cli.errors.CragError`` when the index cannot be used or a
    model's extra is not installed; the index is loaded now, the models lazily.
    """
    if index is not None:
        settings["index"] = index
    try:
        checked = Settings(**settings)
    except ValidationError as exc:
        loc = exc.errors(include_url=False)[0]["loc"]
        raise SettingsError(f"{loc[0] if loc else 'settings'}: {problem(exc)}") from None
    return Crag(checked, mode)


__all__ = ["Crag", "open"]
