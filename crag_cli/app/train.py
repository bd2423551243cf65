"""``crag train-evaluator``: the data gathered, the outputs locked, the evaluator trained and calibrated."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import CragError
from ..settings import Settings
from .common import Note, quiet, check_input_file, gold_questions


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
        from ..evaluator import EMBEDDED_BASE

        return EMBEDDED_BASE, None
    folder = Path(arg if kind == "t5" else base)
    if not folder.is_dir():
        raise CragError(f"--base {base}: no such model folder")
    return str(folder.resolve()), folder


class TrainRun:
    """One ``crag train-evaluator`` run: made (every check, the outputs locked), then :meth:`run`, then :meth:`close`."""

    def __init__(self, settings: Settings, job: TrainJob, note: Note = quiet) -> None:
        from dataclasses import replace

        from ..files import Lock, check_output_file
        from ..train import check_output_folder

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
        start = None if job.config.start_from is None else Path(job.config.start_from)
        if start is not None:
            from ..train.start import check_start

            check_start(start, base_name)
        self.config = replace(
            job.config,
            base=base_name,
            threads=settings.threads,
            strip_mode=settings.strip_mode,
            start_from=None if start is None else str(start.resolve()),
        )
        self.inputs = [x for x in (job.questions, job.pairs, settings.index, base_folder, start) if x is not None]
        check_output_folder(job.out, self.inputs)  # (an input at --out itself, or inside it, is refused there too)
        self.reader = None
        try:
            self.locks.append(Lock(job.out, "evaluator folder").__enter__())  # held until close()
            if job.save_synthetic is not None:
                self.locks.append(Lock(job.save_synthetic, "synthetic pairs file").__enter__())
            if job.synthetic is not None:  # the reader is checked before the index or any model loads
                from .. import assemble

                settings.reader_backend.check(settings.model)
                self.reader = assemble.reader(settings)
        except CragError:
            self.close()
            raise

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
        from ..train import split_by_question, train

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
        from ..train import pairs_from_gold, read_labelled_pairs

        job, settings = self.job, self.settings
        data: list = []  # gold-labelled when gold questions are given, else all
        extra: list = []  # labelled and synthetic pairs beside gold questions: training only
        notes: list[str] = []
        index = None
        if job.questions is not None or job.synthetic is not None:
            from ..index import BM25Index, Retrieval

            index = BM25Index.load(settings.index)
        if job.questions is not None:
            gold = gold_questions(job.questions, job.limit, self.note)
            ids = [f"q{i}" for i in range(len(gold))]
            retrieval = Retrieval(index, settings.retrieval)  # hard negatives from each retriever it searches by
            data += pairs_from_gold([(i, q, a) for i, (q, a) in zip(ids, gold)], retrieval, settings.top_k)
            notes.append(
                f"{len(gold)} questions of {job.questions.name} with gold answers; top-{settings.top_k} passages "
                f"({retrieval.by}) of the index labelled positive when a gold alias occurs in them as whole words"
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
        from ..train import synthetic_pairs, write_labelled_pairs

        job, settings = self.job, self.settings
        self.note(f"writing questions for {job.synthetic} passages with {settings.model}")

        def progress(done: int, total: int) -> None:
            if done % 10 == 0 or done == total:
                self.note(f"  synthetic {done}/{total}")

        got, counts = synthetic_pairs(
            index, self.reader, job.synthetic, settings.top_k, seed=self.config.seed, progress=progress
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
