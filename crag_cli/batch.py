"""``crag batch`` as a library: the run over a question file, its output guarantees, its summary.

Guarantees (docs/commands.md, "crag batch"):

* one record per non-blank input line, in input order; a bad line is an error record;
* with ``-o OUT`` the records go to ``OUT.partial`` as they are done and the
  file is renamed to ``OUT`` when the batch ends, so ``OUT`` is always a whole
  run's output; ``OUT.run.json`` (the run manifest) records what produced it;
* ``--resume`` goes on after the records already written, and refuses a file
  produced by other settings, naming the setting; ``--retry-errors`` also redoes
  the records that ended in an error;
* crag never writes over its input, and never over a file it did not write
  (one without its run manifest) unless told to (``--overwrite``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence

from . import files, jsonl
from .version import __version__
from .errors import CragError
from .prompts import PROMPT_VERSION
from .records import QuestionLine, error_record, to_record

RUN_MANIFEST_VERSION = 1
# Setting groups that the identity holds as what they resolve to, not as the settings' values: the index by
# its content's fingerprint (not its path), the thresholds as those in force (``upper = None`` is the evaluator's).
RESOLVED_GROUPS = ("index", "thresholds")


def partial_path(output: Path) -> Path:
    return output.with_name(output.name + ".partial")


def manifest_path(output: Path) -> Path:
    return output.with_name(output.name + ".run.json")


def read_run_manifest(output: Path) -> dict | None:
    """The run manifest beside ``output``, or ``None`` when there is none crag wrote."""
    try:
        data = json.loads(manifest_path(output).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("crag_run") != RUN_MANIFEST_VERSION or data.get("output") != output.name:
        return None
    return data


def _hash_json(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def index_fingerprint(manifest: dict) -> str:
    """sha256 of what an index retrieves from: its sources' contents and its passage and scoring settings.

    When, where and by which version it was built, its on-disk format and its
    files' modification times are left out: an index rebuilt from the same
    files (after ``touch``, a copy, or a format upgrade that scores the same)
    resumes the same batch.
    """
    kept = {k: v for k, v in manifest.items() if k not in ("created", "created_by", "docs", "format_version")}
    kept["sources"] = [{k: v for k, v in src.items() if k != "mtime_ns"} for src in manifest.get("sources", [])]
    return _hash_json(kept)


def model_fingerprint(model: str) -> str:
    """sha256 of the generator's GGUF file (embedded models: their pinned sha256, checked before every load)."""
    from .generator import resolve_model
    from .models import embedded

    known = embedded(model)
    if known is not None and known.split:
        return known.sha256
    return _file_sha256(resolve_model(model))


def evaluator_fingerprint(spec: str) -> str:
    """The evaluator's name, plus the names and sha256 of its checkpoint's files.

    By content, not by modification time, so that reinstalling crag (which
    rewrites the embedded evaluator's files) does not stop a batch from resuming.
    """
    from .evaluator import parse_spec

    kind, path = parse_spec(spec)
    if path is None:
        return spec
    entries = []
    if path.is_dir():
        for f in sorted(path.rglob("*")):
            if f.is_file():
                entries.append((f.relative_to(path).as_posix(), _file_sha256(f)))
    return f"{spec} {_hash_json(entries)[:16]}"


def _file_sha256(path: Path) -> str:
    return (files.cached_digest(path) or (0, ""))[1]


# Setting groups (see settings.GROUPS) whose values a mode's records do not depend on.
UNUSED_GROUPS = {
    "crag": (),
    "rag+web": (),
    "rag": ("evaluator", "thresholds", "refine", "web"),
    "no-retrieval": ("retrieval", "evaluator", "thresholds", "refine", "web"),
}


def run_identity(settings, mode: str, thresholds, index_manifest: dict) -> dict:
    """What produced a batch's records: version, mode, settings, thresholds, model, evaluator and index hashes."""
    from .settings import answer_settings, group

    unused = UNUSED_GROUPS[mode]
    identity = {"crag_version": __version__, "prompt_version": PROMPT_VERSION, "mode": mode}
    identity.update(
        {
            name: getattr(settings, name)
            for name in answer_settings()
            if group(name) not in unused and group(name) not in RESOLVED_GROUPS
        }
    )
    identity = {k: (str(v) if isinstance(v, Path) else v) for k, v in identity.items()}
    if "thresholds" not in unused:
        identity["thresholds"] = {k: v for k, v in thresholds.to_dict().items() if k != "source"}
    else:
        identity["thresholds"] = None
    identity["model_sha256"] = model_fingerprint(settings.model)
    identity["evaluator_files"] = evaluator_fingerprint(settings.evaluator) if "evaluator" not in unused else None
    identity["index_sha256"] = index_fingerprint(index_manifest) if "retrieval" not in unused else None
    return identity


def identity_mismatch(old: dict, new: dict) -> str | None:
    """The first setting that differs between two runs, as ``name (then X, now Y)``, or ``None``."""
    for key in new:
        if key == "crag_version":
            continue
        if old.get(key) != new[key]:
            return f"{key} (the records were made with {old.get(key)!r}, this run has {new[key]!r})"
    return None


# --------------------------------------------------------------------------- reading what is done


def read_records(path: Path, lines: Sequence[QuestionLine], truncate: bool = True) -> list[dict[str, Any]]:
    """The records a batch already wrote to ``path``, checked against the input.

    ``crag batch`` writes one record per non-blank input line, in input order, so a
    usable file holds records for a prefix of ``lines``. A last line cut off by an
    interruption (no newline at its end) is dropped (and cut from the file with
    ``truncate``).

    Raises
    ------
    CragError
        When the file is not a prefix of this input's records.
    """
    if not path.exists():
        return []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
        if truncate:
            with open(path, "r+b") as f:
                f.truncate(len(data))
    records: list[dict[str, Any]] = []
    for n, raw in enumerate(data.splitlines(), 1):
        try:
            rec = jsonl.parse(raw)
        except jsonl.BadLine:
            rec = None
        if not isinstance(rec, dict):
            raise CragError(f"cannot resume: line {n} of {path} is not a JSON record")
        records.append(rec)
    if len(records) > len(lines):
        raise CragError(f"cannot resume: {path} holds {len(records)} records, more than the {len(lines)} input lines")
    for n, (rec, q) in enumerate(zip(records, lines), 1):
        same = rec.get("id") == q.id if q.id is not None else rec.get("line") == q.line
        same = same and rec.get("question") == q.question and (q.error is None or rec.get("error") is not None)
        if not same:
            raise CragError(
                f"cannot resume: record {n} of {path} is for {rec.get('id')!r}, but input line {q.line} is "
                f"{q.id!r}; is this the output of another input file?"
            )
    return records


# --------------------------------------------------------------------------- the output file


class BatchOutput:
    """Where a batch's records go: ``OUT.partial`` while running, ``OUT`` when done, ``OUT.run.json`` beside.

    The run manifest holds the identity (settings, model, index) of the records in
    ``OUT.partial`` and, separately, of the finished ``OUT`` with its size and
    sha256: ``OUT`` counts as crag's own only while it is unchanged.

    Parameters
    ----------
    path : Path
        The output file the user named.
    inputs : sequence of Path
        Files the batch reads (never written over).
    resume, retry_errors, overwrite : bool
        The command's flags.
    """

    def __init__(
        self,
        path: Path,
        inputs: Sequence[Path],
        resume: bool = False,
        retry_errors: bool = False,
        overwrite: bool = False,
    ) -> None:
        self.path = Path(path)
        self.partial = partial_path(self.path)
        self.manifest = manifest_path(self.path)
        self.inputs = tuple(inputs)
        self.resume = resume
        self.retry_errors = retry_errors
        self.overwrite = overwrite
        self._file = None
        self._swap_at: int | None = None
        self._tmp: Path | None = None
        self._lock: files.Lock | None = None

    # ------------------------------------------------------------------ what is there, and whose it is
    def _run(self) -> dict | None:
        return read_run_manifest(self.path)

    def _output_is_ours(self, run: dict | None) -> bool:
        """``OUT`` is crag's own: the run manifest recorded it, and it has not changed since."""
        if run is None or not run.get("output_sha256"):
            return False
        return files.digest(self.path) == (run.get("output_size"), run.get("output_sha256"))

    def check(self) -> list[str]:
        """Lock the output, finish an interrupted last step, and check everything that can be checked
        before a model loads.

        The lock (:class:`~crag_cli.files.Lock`) is held until :meth:`close`, or
        until the process ends.

        Returns
        -------
        list of str
            Notes for stderr: a killed run's lock taken over, its output finished.

        Raises
        ------
        CragError
            Another run writes this output, or the output may not be written.
        """
        files.check_output_file(self.path)
        files.check_name_length(self.partial)
        for target in (self.path, self.partial, self.manifest):
            files.refuse_input(target, self.inputs)
            if target.is_symlink():
                raise CragError(
                    f"{target} is a symbolic link: crag writes only real files it made (omit -o for stdout)"
                )
            if target.exists() and not target.is_file():
                raise CragError(f"{target} is not a regular file: crag leaves it alone (omit -o to write to stdout)")
        notes = []
        if self._lock is None:
            self._lock = files.Lock(self.path, "output").acquire()
            if self._lock.took_over:
                notes.append(f"took over the lock of a run that was killed ({self._lock.took_over})")
        if self._finish_rename():
            notes.append(f"finished the rename of {self.partial.name} to {self.path.name} that a killed run had begun")
        self._check_files()
        return notes

    def _finish_rename(self) -> bool:
        """A run killed after recording its finished output but before renaming it: do the rename now."""
        run = self._run()
        if run is None or not run.get("complete") or not run.get("output_sha256") or not self.partial.is_file():
            return False
        if files.digest(self.partial) != (run.get("output_size"), run.get("output_sha256")):
            return False
        try:
            os.replace(self.partial, self.path)
        except OSError as exc:
            raise CragError(
                f"cannot finish renaming {self.partial} to {self.path.name}: {exc.strerror or exc}"
            ) from None
        return True

    def _check_files(self) -> None:
        run = self._run()
        if self.manifest.exists() and run is None:
            raise CragError(f"{self.manifest} exists and is not a crag run manifest: crag leaves it alone")
        has_output = self.path.exists() and self.path.stat().st_size > 0
        if has_output and not self._output_is_ours(run) and not self.overwrite:
            why = (
                "crag did not write it"
                if run is None or not run.get("output_sha256")
                else "it changed since crag wrote it"
            )
            raise CragError(f"{self.path} exists and {why}: use --overwrite to replace it")
        has_partial = self.partial.exists() and self.partial.stat().st_size > 0
        if has_partial and run is None and not self.overwrite:
            raise CragError(
                f"{self.partial} exists and crag did not write it (no {self.manifest.name}): use --overwrite"
            )
        if has_partial and run is not None and not self.resume and not self.overwrite:
            n = self.partial.read_bytes().count(b"\n")
            raise CragError(
                f"{self.partial} holds {n} records of an interrupted run: --resume to go on, --overwrite to start again"
            )
        if self.resume and self.overwrite:
            raise CragError("--resume and --overwrite contradict each other: choose one")

    def done_records(self, lines: Sequence[QuestionLine], identity: dict) -> list[dict]:
        """The records to keep (``--resume``), after checking they come from the same settings."""
        if not self.resume:
            return []
        run = self._run()
        if self.partial.exists():
            source, made_by = self.partial, (run or {}).get("identity")
        elif self.path.exists() and self.path.stat().st_size > 0:
            if not self._output_is_ours(run):
                raise CragError(f"cannot resume: {self.path} is not an output crag finished, or it changed since")
            source, made_by = self.path, (run or {}).get("output_identity")
        else:
            return []
        if made_by is None:
            raise CragError(
                f"cannot resume: {source} has no run manifest ({self.manifest.name}), so what made it is unknown"
            )
        problem = identity_mismatch(made_by, identity)
        if problem:
            raise CragError(
                f"cannot resume {source}: it was made with another {problem}; use --overwrite to start again"
            )
        return read_records(source, lines, truncate=source == self.partial)

    # ------------------------------------------------------------------ writing
    def open(self, identity: dict, done: list[dict], lines: Sequence[QuestionLine]) -> None:
        """Open the partial file for the records to come, then record in the run manifest what makes them."""
        for target in (self.path, self.partial):
            files.clean_stale(target)
        retry = self.retry_errors and any(rec.get("error") for rec in done)
        from_output = bool(done) and not self.partial.exists()
        if retry or from_output:
            # a fresh file: kept records are copied, redone ones written as they come; it becomes
            # the partial file once the kept prefix is through, so a kill before then loses nothing kept
            self._tmp = files.temp_file(self.partial)
            self._file = open(self._tmp, "w", encoding="utf-8")
            self._swap_at = len(done)
        else:
            flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if done else os.O_TRUNC)
            self._file = os.fdopen(os.open(self.partial, flags, files.default_mode()), "w", encoding="utf-8")
        run = self._run() or {}
        run.update(
            {
                "crag_run": RUN_MANIFEST_VERSION,
                "output": self.path.name,
                "partial": self.partial.name,
                "identity": identity,
                "started": _now(),
                "complete": False,
            }
        )
        files.write_text_atomic(self.manifest, json.dumps(run, indent=1) + "\n")

    def keep(self, index: int, rec: dict) -> None:
        """A record from the earlier run that stays: written only when the file is being rewritten."""
        if self._tmp is not None:
            self._line(rec)
        self._maybe_swap(index)

    def write(self, index: int, rec: dict) -> None:
        self._line(rec)
        self._maybe_swap(index)

    def _line(self, rec: dict) -> None:
        self._file.write(json.dumps(rec, ensure_ascii=False, allow_nan=False) + "\n")
        self._file.flush()

    def _maybe_swap(self, index: int) -> None:
        if self._tmp is not None and index + 1 >= (self._swap_at or 0):
            os.replace(self._tmp, self.partial)
            self._tmp = None

    def close(self, finished: bool, summary: dict | None = None) -> None:
        """Close the partial file; when ``finished``, rename it to the output and record it in the manifest."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._tmp is not None:  # never got past the kept prefix: the earlier partial stays as it was
            files.remove(self._tmp)
            self._tmp = None
        if finished:
            # the manifest vouches for the finished file first, then the file takes its name: a kill between
            # the two leaves OUT.partial with the digest recorded, and the next run finishes the rename
            run = self._run() or {}
            source = self.partial if self.partial.exists() else self.path
            size, digest = files.digest(source) or (None, None)
            run.update(
                complete=True,
                finished=_now(),
                summary=summary or {},
                output_identity=run.get("identity"),
                output_size=size,
                output_sha256=digest,
            )
            files.write_text_atomic(self.manifest, json.dumps(run, indent=1) + "\n")
            if source == self.partial:
                os.replace(self.partial, self.path)
        self.unlock()

    def unlock(self) -> None:
        """Let another run write this output (also done by :meth:`close`)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


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
    seconds: float = 0.0
    answered_now: int = 0
    lines: int = 0  # the batch's lines, done and to do

    def add(self, rec: dict) -> None:
        self.total += 1
        if rec.get("error"):
            self.errors += 1
        else:
            self.actions[rec.get("action") or rec.get("mode") or "answered"] += 1
        if rec.get("grounded") is False:
            self.ungrounded += 1
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
        }

    def line(self, resumed: int = 0) -> str:
        parts = [
            f"{self.total} questions",
            ", ".join(f"{k}: {v}" for k, v in sorted(self.actions.items())) or "none answered",
        ]
        if self.errors:
            parts.append(f"{self.errors} error record(s)")
        if self.ungrounded:
            parts.append(f"{self.ungrounded} answer(s) not found in their knowledge (grounded: false)")
        if self.graded:
            parts.append(f"accuracy {self.correct}/{self.graded} = {self.correct / self.graded:.1%}")
        if self.answered_now:
            parts.append(
                f"{self.seconds / self.answered_now:.2f} s/question"
                + (f" (the {self.answered_now} answered now)" if resumed else "")
            )
        return "summary: " + "; ".join(parts)


def answer(pipeline, q: QuestionLine, mode: str) -> dict:
    """One input line's record: the pipeline's result, or an error record (never raises)."""
    if q.error:
        return error_record(q.id, q.question, q.error, q.line)
    try:
        return to_record(pipeline.run(q.question, id=q.id, answers=q.answers, task=q.task, mode=mode))
    except Exception as exc:  # one bad question never stops the batch
        return error_record(q.id, q.question, f"{type(exc).__name__}: {exc}", q.line)


GROUP_LINES = 8  # input lines whose passages and strips the evaluator scores together (crag mode)


def groups(questions: Iterable[QuestionLine], lines: int = GROUP_LINES) -> Iterator[list[QuestionLine]]:
    """Consecutive questions of the same block of ``lines`` input lines.

    Blocks are fixed by line number, not by what is left to answer, so a
    sequential, parallel or resumed run scores the same questions together.
    """
    group: list[QuestionLine] = []
    for q in questions:
        if group and (q.line - 1) // lines != (group[0].line - 1) // lines:
            yield group
            group = []
        group.append(q)
        if q.line % lines == 0:  # the block's last line: no need to wait for the next question
            yield group
            group = []
    if group:
        yield group


def iter_group(pipeline, group: Sequence[QuestionLine], mode: str) -> Iterator[Answered]:
    """Records of a group of questions (see :func:`groups`), each with the seconds it took, one by one
    as each question is answered.

    In ``crag`` mode the evaluator first scores the group's passages and strips
    together (:meth:`~crag_cli.pipeline.Pipeline.score_ahead`); each question's
    seconds include its share of that.
    """
    t0 = time.perf_counter()
    if mode == "crag":
        try:
            pipeline.score_ahead([q.question for q in group if not q.error])
        except Exception:  # scored again question by question, where a failure becomes that question's record
            pipeline.score_ahead([])
    share = (time.perf_counter() - t0) / len(group)
    for q in group:
        t1 = time.perf_counter()
        rec = answer(pipeline, q, mode)
        yield rec, share + time.perf_counter() - t1


def answer_group(pipeline, group: Sequence[QuestionLine], mode: str) -> list[Answered]:
    """:func:`iter_group` as a list (what a worker process sends back)."""
    return list(iter_group(pipeline, group, mode))


# --------------------------------------------------------------------------- who answers: this process or workers

Answered = tuple  # (record, seconds it took)


class Answerer(Protocol):
    """Turns questions into records, in the order given (lazily: one group is asked for at a time)."""

    def __call__(self, questions: Iterable[QuestionLine]) -> Iterator[Answered]: ...


@dataclass
class InProcess:
    """Answers with one pipeline in this process, one group of questions after another."""

    pipeline: Any
    mode: str

    def __call__(self, questions: Iterable[QuestionLine]) -> Iterator[Answered]:
        for group in groups(questions):
            yield from iter_group(self.pipeline, group, self.mode)  # each record as soon as it is answered


def split_threads(threads: int | None, workers: int) -> int:
    """Generation threads for each of ``workers`` processes sharing ``threads`` (default: all cores).

    Parameters
    ----------
    threads : int or None
        The total (``--threads``); ``None`` means every core of this machine.
    workers : int
        Processes that share them.

    Returns
    -------
    int
        ``threads // workers``, at least 1.
    """
    total = threads or os.cpu_count() or 1
    return max(1, total // workers)


_worker: dict[str, Any] = {}  # in a worker process: its pipeline and mode, or why it could not start


def _worker_start(settings, mode: str, ignore_sigint: bool = True) -> None:
    """A worker's initializer: build the pipeline and load its models once (an error is kept, not raised)."""
    import signal

    if ignore_sigint:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops the workers
    try:
        import torch

        torch.set_num_threads(settings.threads)  # the evaluator's share of the cores too
        from . import build

        pipe = build.pipeline(settings, with_generator=True, retrieve=mode != "no-retrieval")
        load_models(pipe, mode)
        _worker.update(pipeline=pipe, mode=mode)
    except Exception as exc:  # multiprocessing would restart a failing initializer for ever
        _worker["error"] = (
            str(exc) if isinstance(exc, CragError) else f"a worker could not start: {type(exc).__name__}: {exc}"
        )


def _worker_answer(group: list[QuestionLine]) -> list[Answered]:
    if "error" in _worker:
        raise CragError(_worker["error"])
    return answer_group(_worker["pipeline"], group, _worker["mode"])


@dataclass
class WorkerPool:
    """Answers with ``workers`` processes, each building its own pipeline from ``settings`` once.

    The generation threads (``settings.threads``, default all cores) are split
    evenly between the workers (:func:`split_threads`), and the evaluator of
    each worker uses the same share. Records come back in input order (those
    finished early wait), so the output is the sequential run's. Processes are
    spawned, not forked (the models' thread pools do not survive a fork); on
    an exception or Ctrl-C in the parent the workers are terminated and the
    questions in flight are abandoned.
    """

    settings: Any
    mode: str
    workers: int

    def __call__(self, questions: Iterable[QuestionLine]) -> Iterator[Answered]:
        import multiprocessing

        share = self.settings.model_copy(update={"threads": split_threads(self.settings.threads, self.workers)})
        pool = multiprocessing.get_context("spawn").Pool(self.workers, _worker_start, (share, self.mode))
        try:
            for answered in pool.imap(_worker_answer, groups(questions), chunksize=1):
                yield from answered
            pool.close()
        finally:
            pool.terminate()
            pool.join()


class _Replica:
    """A Ray actor's state: one pipeline with its models loaded once (see :class:`RayPool`)."""

    def __init__(self, settings, mode: str) -> None:
        import socket

        self.error: str | None = None
        try:
            _worker_start(settings, mode, ignore_sigint=False)  # a local worker's start; Ray owns the signals
        finally:
            if "error" in _worker:
                self.error = f"a Ray actor on {socket.gethostname()} cannot start: {_worker['error']}"

    def ready(self) -> str | None:
        return self.error

    def answer(self, group: list[QuestionLine]) -> list[Answered]:
        return _worker_answer(group)


def ray_missing() -> str | None:
    """Why ``--ray`` cannot run here (the optional extra is not installed), or ``None``."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return "--ray needs Ray: pip install 'crag-cli[ray]'"
    return None


@dataclass
class RayPool:
    """Answers with ``actors`` Ray actors, each one model replica that loads the models once.

    ``address`` is a running cluster's (``HOST:6379`` or ``ray://HOST:10001``);
    ``"local"`` starts a Ray instance on 127.0.0.1 for this batch and stops it
    after. Every actor asks for ``threads`` CPUs (the generation threads of
    each: ``settings.threads`` split between the actors, as for local workers);
    a cluster with no node that large is refused. Index, model and evaluator
    paths are made absolute and must exist on every node at that path (a shared
    file system, or the same copy on each); an actor that cannot see them,
    cannot load a model, or dies ends the batch with one error line. Each actor
    gets its next group of questions (:func:`groups`) as soon as it returns one;
    the records come back in input order (at most ``2 × actors`` finished groups
    wait for a slower one).
    """

    settings: Any
    mode: str
    actors: int
    address: str = "local"

    def __call__(self, questions: Iterable[QuestionLine]) -> Iterator[Answered]:
        import ray

        from .evaluator import absolute_spec

        threads = split_threads(self.settings.threads, self.actors)
        update: dict[str, Any] = {
            "threads": threads,
            "index": Path(os.path.abspath(self.settings.index)),
            "evaluator": absolute_spec(self.settings.evaluator),
        }
        if Path(self.settings.model).is_file():  # a path, not an embedded name: the same path on every node
            update["model"] = os.path.abspath(self.settings.model)
        share = self.settings.model_copy(update=update)
        started = not ray.is_initialized()
        if started:
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "warning"}
            if self.address == "local":
                options.update(
                    address="local", _node_ip_address="127.0.0.1", num_cpus=max(os.cpu_count() or 1, threads)
                )
            else:
                options["address"] = self.address
            try:
                ray.init(**options)
            except Exception as exc:
                raise CragError(f"cannot reach the Ray cluster at {self.address}: {_first_line(exc)}") from None
        replicas: list = []
        try:
            largest = max((n["Resources"].get("CPU", 0) for n in ray.nodes() if n.get("Alive")), default=0)
            if largest < threads:
                raise CragError(
                    f"each Ray actor needs {threads} CPUs (--threads split between {self.actors} actors), "
                    f"but the largest node has {largest:g}: lower --threads"
                )
            Replica = ray.remote(num_cpus=threads)(_Replica)
            replicas = [Replica.remote(share, self.mode) for _ in range(self.actors)]
            for problem in _ray_get(ray, [r.ready.remote() for r in replicas]):
                if problem:
                    raise CragError(problem)
            for answered in _ordered(ray, replicas, groups(questions), window=2 * self.actors):
                yield from answered
        finally:
            for r in replicas:
                ray.kill(r)
            if started:
                ray.shutdown()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _ray_get(ray, refs):
    """``ray.get``, with a Ray failure (an actor died, a task crashed) as one :class:`CragError` line."""
    try:
        return ray.get(refs)
    except ray.exceptions.RayError as exc:
        raise CragError(f"a Ray actor failed: {type(exc).__name__}: {_first_line(exc)}") from None


def _ordered(ray, replicas: list, questions: Iterable, window: int) -> Iterator:
    """Hand each free actor the next group of questions; yield what they return in input order."""
    free = list(replicas)
    flying: dict = {}  # object ref -> (position, actor)
    done: dict[int, Answered] = {}
    todo = enumerate(questions)
    next_out, given, exhausted = 0, 0, False
    while True:
        while free and not exhausted and given - next_out < window:
            try:
                i, q = next(todo)
            except StopIteration:
                exhausted = True
                break
            actor = free.pop()
            flying[actor.answer.remote(q)] = (i, actor)
            given += 1
        if not flying:
            return
        ready, _ = ray.wait(list(flying), num_returns=1)
        for ref in ready:
            i, actor = flying.pop(ref)
            done[i] = _ray_get(ray, ref)
            free.append(actor)
        while next_out in done:
            yield done.pop(next_out)
            next_out += 1


def load_models(pipeline, mode: str) -> None:
    """Load the models a mode uses now, so that no question's timings include loading one."""
    if pipeline.generator is not None:
        pipeline.generator.load()
    if mode in ("crag", "rag+web"):
        pipeline.evaluator.load()
        if pipeline.web is not None and getattr(pipeline.web, "generator", None) is not None:
            pipeline.web.generator.load()


def run_batch(
    answerer: Answerer,
    lines: Sequence[QuestionLine],
    output: BatchOutput | None,
    done: Sequence[dict] = (),
    retry_errors: bool = False,
    on_record: Callable[[dict, Summary], None] | None = None,
    stream=None,
) -> Summary:
    """Answer ``lines`` in order; records to ``output`` (or ``stream``, default stdout).

    Records in ``done`` (an earlier run's) are kept, except error records when
    ``retry_errors``; the rest go to ``answerer`` (:class:`InProcess` or
    :class:`WorkerPool`), whose records are written in input order.
    ``KeyboardInterrupt`` leaves the partial file whole (and the manifest
    incomplete) and propagates.
    """
    summary = Summary(lines=len(lines))
    stream = stream or sys.stdout
    finished = False
    keep = [i < len(done) and not (retry_errors and done[i].get("error")) for i in range(len(lines))]
    answers = answerer(q for q, kept in zip(lines, keep) if not kept)
    try:
        for i, q in enumerate(lines):
            if keep[i]:
                rec = done[i]
                if output is not None:
                    output.keep(i, rec)
            else:
                rec, seconds = next(answers)
                summary.answered_now += 1
                summary.seconds += seconds
                if output is not None:
                    output.write(i, rec)
                else:
                    stream.write(json.dumps(rec, ensure_ascii=False, allow_nan=False) + "\n")
                    stream.flush()
            summary.add(rec)
            if on_record is not None:
                on_record(rec, summary)
        finished = True
    finally:
        answers.close()  # stops the workers of a pool
        if output is not None:
            output.close(finished, summary.to_dict() if finished else None)
    return summary
