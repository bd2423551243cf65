"""The output file of a batch: ``OUT.partial`` while it runs, renamed to ``OUT`` at the end, its run manifest, and what ``--resume`` keeps."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from .. import files, jsonl
from ..errors import CragError
from .records import QuestionLine, Questions

from .identity import identity_mismatch


RUN_MANIFEST_VERSION = 1


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


# --------------------------------------------------------------------------- reading what is done


def read_records(path: Path, lines: Sequence[QuestionLine] | Questions, truncate: bool = True) -> list[dict[str, Any]]:
    """The records a batch already wrote to ``path``, checked against the input.

    ``crag batch`` writes one record per non-blank input line, in input order, so a
    usable file holds records for a prefix of ``lines`` (of a :class:`Questions`,
    only that prefix is read, and kept for the batch). A last line cut off by an
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
    head = lines.prefix(len(records)) if isinstance(lines, Questions) else list(lines[: len(records)])
    if len(records) > len(head):
        raise CragError(f"cannot resume: {path} holds {len(records)} records, more than the {len(head)} input lines")
    for n, (rec, q) in enumerate(zip(records, head), 1):
        if q.error is not None and rec.get("id") is None:  # an unreadable line's record from before it was line-N
            same = rec.get("line") == q.line
        else:
            same = rec.get("id") == q.id
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

    def done_records(self, lines: Sequence[QuestionLine] | Questions, identity: dict) -> list[dict]:
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
    def open(self, identity: dict, done: list[dict], lines: Iterable[QuestionLine] = ()) -> None:
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
