"""The application layer: what a command does, for the CLI and the Python API alike.

A command here takes settings and inputs, checks what can be checked before
any model loads, runs, and returns a report. It never prints: notes for the
user go to a callback, progress to another, and every failure is a
:class:`~crag_cli.errors.CragError` whose message is the one line the CLI
prints. ``crag_cli.cli`` parses flags, calls, and prints; ``crag_cli.api``
calls the same functions, so the library has what the command line has
(resume, workers, Ray).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from .errors import CragError
from .settings import Settings

Note = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


@dataclass(frozen=True)
class BatchJob:
    """What ``crag batch`` is asked to do, beside the settings.

    ``ray`` is ``None`` (no Ray), ``"local"`` (a local Ray) or a cluster address.
    ``config`` is the config file the settings came from: an input, never an output.
    """

    input: Path
    output: Optional[Path] = None
    mode: str = "crag"
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


def check_input_file(path: Path) -> None:
    """Refuse a questions file that is a folder or does not exist (``-`` is stdin)."""
    if str(path) == "-":
        return
    if path.is_dir():
        raise CragError(f"{path} is a folder, not a JSONL file")
    if not path.is_file():
        raise CragError(f"no such file: {path}")


class BatchRun:
    """One ``crag batch`` run: made (every check, the output locked), then :meth:`run`, then :meth:`close`.

    Parameters
    ----------
    settings : Settings
    job : BatchJob
    note : callable, optional
        Receives each note for the user (resuming, a file taken over, the workers used).
    """

    def __init__(self, settings: Settings, job: BatchJob, note: Note = _quiet) -> None:
        from .batch import BatchOutput, ray_missing
        from .pipeline import MODES

        self.settings, self.job, self.note = settings, job, note
        if job.mode not in MODES:
            raise CragError(f"unknown mode {job.mode!r}: choose from {', '.join(MODES)}")
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
            model_file = Path(settings.model) if Path(settings.model).is_file() else None  # not an embedded name
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

    def _answerer(self, pipe, todo: int):
        from .batch import InProcess, RayPool, WorkerPool, load_models, split_threads

        job, settings = self.job, self.settings
        if job.ray is not None:
            threads = split_threads(settings.threads, job.workers)
            self.note(f"batch: Ray at {job.ray}, {job.workers} actors, {threads} generation thread(s) each")
            return RayPool(settings, job.mode, job.workers, job.ray)  # each actor loads the models itself
        if job.workers > 1:
            threads = split_threads(settings.threads, job.workers)
            self.note(f"batch: {job.workers} workers, {threads} generation thread(s) each")
            return WorkerPool(settings, job.mode, job.workers)  # each worker loads the models itself
        if todo:
            load_models(pipe, job.mode)  # so that no question's timings include loading a model
        return InProcess(pipe, job.mode)

    def run(self, on_record: Callable | None = None, stream=None, pipeline=None) -> BatchReport:
        """Answer the questions; records go to the output (or ``stream``, default stdout).

        ``pipeline`` is one already built from the same settings (the API's), or
        ``None`` to build it here.

        ``on_record(record, summary)`` is called after each record. Raises
        :class:`CragError` (bad input, a model that cannot load, a file that
        cannot be read or written); ``KeyboardInterrupt`` leaves the partial
        file whole for ``--resume`` and propagates.
        """
        from . import build
        from .batch import run_batch, run_identity
        from .records import read_questions

        job, out = self.job, self.output
        lines = list(read_questions(job.input))
        if job.limit is not None:
            lines = lines[: job.limit]
        if not lines:
            raise CragError(f"{job.input} holds no question")
        pipe = pipeline or build.pipeline(self.settings, with_generator=True, retrieve=job.mode != "no-retrieval")
        try:
            identity = run_identity(self.settings, job.mode, pipe.thresholds, getattr(pipe.retriever, "manifest", {}))
            done = out.done_records(lines, identity) if out is not None else []
        except OSError as exc:
            raise CragError(f"cannot read {job.output}: {exc.strerror or exc}") from None
        redo = sum(1 for rec in done if rec.get("error")) if job.retry_errors else 0
        todo = len(lines) - len(done) + redo
        if done:
            again = f"; redoing {redo} error record(s)" if redo else ""
            self.note(f"resuming after the {len(done)} records already in {job.output}{again}")
        if not todo:
            self.note(f"nothing to do: {job.output} holds a record for every line")
        answerer = self._answerer(pipe, todo)
        try:
            if out is not None:
                out.open(identity, done, lines)
            summary = run_batch(answerer, lines, out, done, job.retry_errors, on_record=on_record, stream=stream)
        except OSError as exc:  # the disk filled up, the folder went away: the partial file keeps what was written
            raise CragError(f"cannot write {job.output or 'stdout'}: {exc.strerror or exc}") from None
        return BatchReport(summary, len(done), job.output, out.manifest if out is not None else None)


# --------------------------------------------------------------------------- gold questions


def gold_questions(path: Path, limit: int | None, note: Note = _quiet) -> list[tuple[str, list[str]]]:
    """(question, gold aliases) of a JSONL file's first ``limit`` usable lines; the others are noted as skipped."""
    from .records import read_questions

    questions = []
    for q in read_questions(path):
        if q.error or not q.answers:
            note(f"line {q.line}: skipped: {q.error or 'no gold answers'}")
            continue
        questions.append((q.question, q.answers))
    questions = questions[:limit] if limit is not None else questions
    if not questions:
        raise CragError(f"{path} holds no question with gold answers")
    return questions


# --------------------------------------------------------------------------- train-evaluator


@dataclass(frozen=True)
class TrainJob:
    """What ``crag train-evaluator`` is asked to do: the data, where to write, and the training settings.

    ``config`` is a :class:`crag_cli.train.TrainConfig` whose ``base`` is the
    ``--base`` text as given (``minilm``, a folder, ``t5:PATH``).
    """

    out: Path
    config: object
    questions: Optional[Path] = None
    pairs: Optional[Path] = None
    synthetic: Optional[int] = None
    save_synthetic: Optional[Path] = None
    limit: Optional[int] = None


def _base_folder(base: str) -> tuple[str, Optional[Path]]:
    """``(base name stored with the evaluator, local folder or None)`` of a ``--base`` value."""
    kind, _, arg = base.partition(":")
    if base == "minilm":
        from .evaluator import EMBEDDED_BASE

        return EMBEDDED_BASE, None
    folder = Path(arg if kind == "t5" else base)
    if not folder.is_dir():
        raise CragError(f"--base {base}: no such model folder")
    return str(folder.resolve()), folder


class TrainRun:
    """One ``crag train-evaluator`` run: made (every check, the outputs locked), then :meth:`run`, then :meth:`close`."""

    def __init__(self, settings: Settings, job: TrainJob, note: Note = _quiet) -> None:
        from dataclasses import replace

        from .files import Lock, check_output_file
        from .train import check_output_folder

        self.settings, self.job, self.note, self.locks = settings, job, note, []
        if job.questions is None and job.pairs is None and job.synthetic is None:
            raise CragError("give training data: QUESTIONS.jsonl with gold answers, --pairs FILE, or --synthetic N")
        if job.limit is not None and job.questions is None:
            raise CragError("--limit counts gold questions: give QUESTIONS.jsonl")
        if job.save_synthetic is not None:
            self._check_save_synthetic(check_output_file)
        for path in (job.questions, job.pairs):
            if path is not None:
                check_input_file(path)
                if str(path) == "-":
                    raise CragError("training data must be a file, not standard input")
        base_name, base_folder = _base_folder(job.config.base)
        self.config = replace(job.config, base=base_name, threads=settings.threads, strip_mode=settings.strip_mode)
        self.inputs = [x for x in (job.questions, job.pairs, settings.index, base_folder) if x is not None]
        check_output_folder(job.out, self.inputs)  # (an input at --out itself, or inside it, is refused there too)
        try:
            self.locks.append(Lock(job.out, "evaluator folder").__enter__())  # held until close()
            if job.save_synthetic is not None:
                self.locks.append(Lock(job.save_synthetic, "synthetic pairs file").__enter__())
        except CragError:
            self.close()
            raise
        self.generator = None
        if job.synthetic is not None:  # the generator is checked before the index or any model loads
            from . import build
            from .generator import check_model

            check_model(settings.model)
            self.generator = build.generator(settings)

    def _check_save_synthetic(self, check_output_file) -> None:
        job, save = self.job, self.job.save_synthetic
        if job.synthetic is None:
            raise CragError("--save-synthetic writes the pairs of --synthetic N: give --synthetic")
        if save.exists() or save.is_symlink():
            raise CragError(f"--save-synthetic {save} exists: crag writes only a new file")
        check_output_file(save, "synthetic pairs file")
        for name, folder in (("--out", job.out), ("--index", self.settings.index)):  # folders crag replaces whole
            if Path(folder).resolve() in save.resolve().parents:
                raise CragError(f"--save-synthetic {save} is inside {name} {folder}: write it elsewhere")

    def close(self) -> None:
        """Release the locks (whatever happened)."""
        while self.locks:
            self.locks.pop().__exit__(None, None, None)

    def run(self) -> dict:
        """Gather the pairs, split them, train, calibrate; returns the evaluator's card (its manifest)."""
        from .train import split_by_question, train

        data, extra, notes = self._pairs()
        if extra:
            notes.append("validation on gold questions only; the other pairs train")
        train_part, val_part = split_by_question(data, self.config.validation, self.config.seed, train_only=extra)
        return train(
            train_part,
            val_part,
            self.job.out,
            self.config,
            data_note="; ".join(notes),
            log=self.note,
            inputs=self.inputs,
        )

    def _pairs(self) -> tuple[list, list, list[str]]:
        """``(data, extra, notes)``: gold-labelled pairs (or all, without gold questions), training-only pairs."""
        from .train import pairs_from_gold, read_labelled_pairs

        job, settings = self.job, self.settings
        data: list = []  # gold-labelled when gold questions are given, else all
        extra: list = []  # labelled and synthetic pairs beside gold questions: training only
        notes: list[str] = []
        index = None
        if job.questions is not None or job.synthetic is not None:
            from .index import BM25Index

            index = BM25Index.load(settings.index)
        if job.questions is not None:
            gold = gold_questions(job.questions, job.limit, self.note)
            ids = [f"q{i}" for i in range(len(gold))]
            data += pairs_from_gold([(i, q, a) for i, (q, a) in zip(ids, gold)], index, settings.top_k)
            notes.append(
                f"{len(gold)} questions of {job.questions.name} with gold answers; top-{settings.top_k} passages "
                f"of the index labelled positive when a gold alias occurs in them as whole words"
            )
        if job.pairs is not None:
            got = []
            for item in read_labelled_pairs(job.pairs):
                if isinstance(item, str):
                    self.note(f"{job.pairs}: {item}: skipped")
                else:
                    got.append(item)
            (extra if job.questions is not None else data).extend(got)
            notes.append(f"{len(got)} labelled pairs of {job.pairs.name}")
        if job.synthetic is not None:
            got, note = self._synthetic(index)
            (extra if job.questions is not None else data).extend(got)
            notes.append(note)
        return data, extra, notes

    def _synthetic(self, index) -> tuple[list, str]:
        from .train import synthetic_pairs, write_labelled_pairs

        job, settings = self.job, self.settings
        self.note(f"writing questions for {job.synthetic} passages with {settings.model}")

        def progress(done: int, total: int) -> None:
            if done % 10 == 0 or done == total:
                self.note(f"  synthetic {done}/{total}")

        got, counts = synthetic_pairs(
            index, self.generator, job.synthetic, settings.top_k, seed=self.config.seed, progress=progress
        )
        if job.save_synthetic is not None:  # before training: generation is the slow part, and training may still fail
            write_labelled_pairs(got, job.save_synthetic)
            self.note(f"wrote {len(got)} synthetic pairs to {job.save_synthetic}")
        note = (
            f"synthetic: {counts['sampled']} passages sampled, {counts['kept']} questions kept "
            f"({counts['dropped_unparsed']} unparsed, {counts['dropped_long_answer']} answers too long, "
            f"{counts['dropped_not_in_passage']} answers not in their passage, {counts['dropped_not_retrieved']} "
            f"questions that do not retrieve their passage), written by {settings.model}"
        )
        self.note(note)
        return got, note


# --------------------------------------------------------------------------- calibrate


class CalibrateRun:
    """One ``crag calibrate`` run: made (the questions read, ``--write``'s file checked and locked), then :meth:`run`.

    Parameters
    ----------
    settings : Settings
    input : Path
        Questions with gold answers.
    write : Path, optional
        The crag config file to write the thresholds to (checked now, not after minutes of scoring).
    """

    def __init__(
        self,
        settings: Settings,
        input: Path,
        write: Optional[Path] = None,
        limit: Optional[int] = None,
        note: Note = _quiet,
    ) -> None:
        from .files import Lock, check_output_file, refuse_input
        from .config import check_config_file
        from .settings import SettingsError

        self.settings, self.input, self.write_to, self.lock = settings, input, write, None
        check_input_file(input)
        if write is not None:
            try:
                check_output_file(write, "config file")
                refuse_input(write, [input])
                self.lock = Lock(write, "config file").__enter__()  # held until close()
                if write.exists():
                    check_config_file(write)
            except SettingsError as exc:
                self.close()
                raise CragError(str(exc)) from None
            except CragError:
                self.close()
                raise
        self.questions = gold_questions(input, limit, note)

    def close(self) -> None:
        if self.lock is not None:
            self.lock.__exit__(None, None, None)
            self.lock = None

    def run(
        self,
        correct_precision: float = 0.8,
        incorrect_precision: float = 0.8,
        strip_recall: float = 0.9,
        progress: Callable[[int], None] | None = None,
    ):
        """Score the questions' passages and strips, and choose the thresholds (a ``calibrate.Calibration``)."""
        from . import build
        from .calibrate import calibrate, collect

        settings = self.settings
        pipe = build.pipeline(settings, with_generator=False)
        try:
            items, strip_scores, strip_holds = collect(
                self.questions, pipe.retriever, pipe.evaluator, settings.top_k, settings.strip_mode, progress=progress
            )
            return calibrate(items, strip_scores, strip_holds, correct_precision, incorrect_precision, strip_recall)
        except ValueError as exc:
            raise CragError(str(exc)) from None

    def write(self, result) -> None:
        """Set the evaluator and its thresholds in the ``write`` file (comments and other keys kept)."""
        from .config import write_config
        from .settings import SettingsError

        values = {
            "evaluator": self.settings.evaluator,
            "upper": result.upper,
            "lower": result.lower,
            "filter_threshold": result.filter,
        }
        try:
            write_config(self.write_to, values, inputs=(self.input,))
        except (OSError, SettingsError, CragError) as exc:
            raise CragError(f"cannot write {self.write_to}: {exc}") from None


__all__ = [
    "BatchJob",
    "BatchReport",
    "BatchRun",
    "CalibrateRun",
    "TrainJob",
    "TrainRun",
    "check_input_file",
    "gold_questions",
]
