"""``crag batch``: checked, locked, resumed, answered in this process, workers or Ray."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from ..errors import CragError
from ..pipeline.modes import Mode
from ..settings import Settings
from .common import Note, quiet, check_input_file


@dataclass(frozen=True, kw_only=True)
class BatchJob:
    """What ``crag batch`` is asked to do, beside the settings.

    ``ray`` is ``None`` (no Ray), ``"local"`` (a local Ray) or a cluster address.
    ``config`` is the config file the settings came from: an input, never an output.
    """

    input: Path
    output: Optional[Path] = None
    mode: str = Mode.CRAG.value  # a Mode's name (crag_cli.pipeline.modes)
    limit: Optional[int] = None
    resume: bool = False
    retry_errors: bool = False
    overwrite: bool = False
    workers: int = 1
    ray: Optional[str] = None
    config: Optional[Path] = None


@dataclass(frozen=True)
class BatchReport:
    """What a finished batch did: its summary, how many records an earlier run had made, where it wrote."""

    summary: "object"
    resumed: int
    output: Optional[Path]
    manifest: Optional[Path]

    def line(self) -> str:
        """The summary line ``crag batch`` prints at the end."""
        return self.summary.line(resumed=self.resumed)


class BatchRun:
    """One ``crag batch`` run: made (every check, the output locked), then :meth:`run`, then :meth:`close`.

    Parameters
    ----------
    settings : Settings
    job : BatchJob
    note : callable, optional
        Receives each note for the user (resuming, a file taken over, the workers used).
    """

    def __init__(self, settings: Settings, job: BatchJob, note: Note = quiet) -> None:
        from ..batch import BatchOutput, ray_missing

        self.settings, self.job, self.note = settings, job, note
        try:
            self.mode = Mode.parse(job.mode)
        except ValueError as exc:
            raise CragError(str(exc)) from None
        check_input_file(job.input)
        if job.resume and job.output is None:
            raise CragError("--resume needs -o/--output: the file whose records to keep")
        if job.retry_errors and not job.resume:
            raise CragError("--retry-errors goes with --resume")
        if job.ray is not None and ray_missing():
            raise CragError(ray_missing())
        self.output = None
        if job.output is not None:
            # everything the run reads is an input: the questions, the model file, the config file
            model_file = settings.reader_backend.user_file(settings.model)
            inputs = [job.input, model_file, job.config or Path("crag.toml")]
            self.output = BatchOutput(
                job.output, inputs, resume=job.resume, retry_errors=job.retry_errors, overwrite=job.overwrite
            )
            try:
                inside = Path(os.path.abspath(job.output))
                if Path(os.path.abspath(settings.index)) in inside.parents:
                    raise CragError(
                        f"the output {job.output} is inside the index {settings.index}: crag never writes there"
                    )
                for line in self.output.check():
                    note(f"crag: note: {line}")
            except OSError as exc:
                self.close()
                raise CragError(f"cannot write {job.output}: {exc.strerror or exc}") from None
            except CragError:
                self.close()
                raise

    @property
    def partial(self) -> Optional[Path]:
        """Where the records so far are while the run goes on (``None`` for stdout)."""
        return self.output.partial if self.output is not None else None

    def close(self) -> None:
        """Unlock the output (whatever happened)."""
        if self.output is not None:
            self.output.unlock()

    def _answerer(self, pipe, todo: bool):
        from ..batch import InFlight, InProcess, RayPool, WorkerPool, load_models, split_threads

        job, settings = self.job, self.settings
        if job.ray is not None:
            threads = split_threads(settings.threads, job.workers)
            self.note(f"batch: Ray at {job.ray}, {job.workers} actors, {threads} generation thread(s) each")
            return RayPool(settings, self.mode, job.workers, job.ray)  # each actor loads the models itself
        if job.workers > 1:
            threads = split_threads(settings.threads, job.workers)
            self.note(f"batch: {job.workers} workers, {threads} generation thread(s) each")
            return WorkerPool(settings, self.mode, job.workers)  # each worker loads the models itself
        if todo:
            load_models(pipe, self.mode)  # so that no question's timings include loading a model
        if settings.parallel > 1:
            self.note(f"batch: {settings.parallel} questions at once over one reader")
            return InFlight(pipe, self.mode, settings.parallel)
        return InProcess(pipe, self.mode)

    def run(self, on_record: Callable | None = None, stream=None, pipeline=None) -> BatchReport:
        """Answer the questions; records go to the output (or ``stream``, default stdout).

        ``pipeline`` is one already built from the same settings (the API's), or
        ``None`` to build it here.

        ``on_record(record, summary)`` is called after each record. Raises
        :class:`CragError` (bad input, a model that cannot load, a file that
        cannot be read or written); ``KeyboardInterrupt`` leaves the partial
        file whole for ``--resume`` and propagates. The question file is read
        as the questions are answered (``--limit`` stops the reading), never
        held whole.
        """
        from ..batch.records import Questions

        questions = Questions(self.job.input, self.job.limit)
        try:
            return self._run(questions, on_record, stream, pipeline)
        finally:
            questions.close()

    def _run(self, questions, on_record: Callable | None, stream, pipeline) -> BatchReport:
        from .. import assemble
        from ..batch import run_batch, run_identity

        job, out = self.job, self.output
        if not questions.prefix(1):
            raise CragError(f"{job.input} holds no question")
        pipe = pipeline or assemble.pipeline(self.settings, with_reader=True, retrieve=self.mode.retrieves)
        try:
            identity = run_identity(self.settings, self.mode, pipe.thresholds, pipe.retriever.manifest)
            done = out.done_records(questions, identity) if out is not None else []
        except OSError as exc:
            raise CragError(f"cannot read {job.output}: {exc.strerror or exc}") from None
        redo = sum(1 for rec in done if rec.get("error")) if job.retry_errors else 0
        todo = redo or len(questions.prefix(len(done) + 1)) > len(done)  # a line after the kept records
        if done:
            again = f"; redoing {redo} error record(s)" if redo else ""
            self.note(f"resuming after the {len(done)} records already in {job.output}{again}")
        if not todo:
            self.note(f"nothing to do: {job.output} holds a record for every line")
        answerer = self._answerer(pipe, todo)
        try:
            if out is not None:
                out.open(identity, done, questions)
            summary = run_batch(answerer, questions, out, done, job.retry_errors, on_record=on_record, stream=stream)
        except OSError as exc:  # the disk filled up, the folder went away: the partial file keeps what was written
            raise CragError(f"cannot write {job.output or 'stdout'}: {exc.strerror or exc}") from None
        return BatchReport(summary, len(done), job.output, out.manifest if out is not None else None)
