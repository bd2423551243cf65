"""The application layer: what a command does, for the CLI and the Python API alike.

A command here takes settings and inputs, checks what can be checked before
any model loads, runs, and returns a report. It never prints: notes for the
user go to a callback, progress to another, and every failure is a
:class:`~crag_cli.errors.CragError` whose message is the one line the CLI
prints. ``crag_cli.cli`` parses flags, calls, and prints; ``crag_cli.api``
calls the same functions, so the library has what the command line has
(resume, workers, Ray).
"""

from .ask import AskJob, AskRun, answer_notes, knowledge_notes
from .batch import BatchJob, BatchReport, BatchRun
from .calibrate import CalibrateRun
from .common import check_input_file, check_question, gold_questions
from .evaluate import EvaluateJob, EvaluateRun, evaluation_record
from .train import TrainJob, TrainRun

__all__ = [
    "AskJob",
    "AskRun",
    "BatchJob",
    "BatchReport",
    "BatchRun",
    "CalibrateRun",
    "EvaluateJob",
    "EvaluateRun",
    "TrainJob",
    "TrainRun",
    "answer_notes",
    "check_input_file",
    "check_question",
    "evaluation_record",
    "gold_questions",
    "knowledge_notes",
]
