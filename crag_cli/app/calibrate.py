"""``crag calibrate``: the thresholds chosen from questions with gold answers, and written to ``crag.toml``."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from ..errors import CragError
from ..settings import Settings
from .common import Note, quiet, check_input_file, gold_questions


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
        note: Note = quiet,
    ) -> None:
        from ..files import Lock, check_output_file, refuse_input
        from ..settings.layers import check_config_file
        from ..settings import SettingsError

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
        try:
            self.questions = gold_questions(input, limit, note)
        except CragError:
            self.close()
            raise

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
        from .. import assemble
        from ..action.calibrate import calibrate, collect

        settings = self.settings
        pipe = assemble.pipeline(settings, with_reader=False)
        try:
            items, strip_scores, strip_holds = collect(
                self.questions, pipe.retriever, pipe.evaluator, settings.top_k, settings.strip_mode, progress=progress
            )
            return calibrate(items, strip_scores, strip_holds, correct_precision, incorrect_precision, strip_recall)
        except ValueError as exc:
            raise CragError(str(exc)) from None

    def write(self, result) -> None:
        """Set the evaluator and its thresholds in the ``write`` file (comments and other keys kept)."""
        from ..settings.layers import write_config
        from ..settings import SettingsError

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
