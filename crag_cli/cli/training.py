"""The commands about the evaluator: ``calibrate``, ``evaluator-test`` and ``train-evaluator``."""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..settings import info
from ..errors import CragError
from ..settings import Settings

from .base import (
    EVAL_SETTINGS,
    CragCommand,
    JsonOut,
    _gold_questions,
    _in_sample,
    _input_file,
    _pipeline,
    app,
    err,
    fail,
    setting_options,
)


# ----------------------------------------------------------------------------- calibrate
# crag calibrate's own options
GoldQuestionsArg = Annotated[Path, typer.Argument(help="JSONL questions with gold 'answers'.")]
CorrectPrecisionOpt = Annotated[
    float, typer.Option(min=0.5, max=1.0, help="Share of Correct decisions that must be right.")
]
IncorrectPrecisionOpt = Annotated[
    float, typer.Option(min=0.5, max=1.0, help="Share of Incorrect decisions that must be right.")
]
StripRecallOpt = Annotated[
    float, typer.Option(min=0.01, max=1.0, help="Share of answer-bearing strips the filter must keep.")
]
WriteOpt = Annotated[
    Optional[Path],
    typer.Option("--write", help="Write upper, lower, filter_threshold and evaluator to this TOML file."),
]


@app.command(cls=CragCommand)
@setting_options(*info.names_in("index", "retrieval", "evaluator"), "strip_mode")
def calibrate(
    ctx: typer.Context,
    input: GoldQuestionsArg,
    settings: Settings,
    correct_precision: CorrectPrecisionOpt = 0.8,
    incorrect_precision: IncorrectPrecisionOpt = 0.8,
    strip_recall: StripRecallOpt = 0.9,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Use only the first N questions.")] = None,
    write: WriteOpt = None,
    json_out: JsonOut = False,
) -> None:
    """Choose the upper, lower and strip-filter thresholds for an evaluator from questions with gold answers."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from ..app import CalibrateRun

    columns = (TextColumn("scoring"), BarColumn(), MofNCompleteColumn())
    try:
        run = CalibrateRun(settings, input, write, limit, note=lambda line: err.print(line, markup=False))
        ctx.call_on_close(run.close)  # the lock is held until the command ends
        with Progress(*columns, console=err, transient=True, disable=not err.is_terminal) as progress:
            bar = progress.add_task("", total=len(run.questions))
            result = run.run(
                correct_precision,
                incorrect_precision,
                strip_recall,
                progress=lambda done: progress.update(bar, completed=done),
            )
    except CragError as exc:
        fail(str(exc))
    if json_out:
        typer.echo(json.dumps({"evaluator": settings.evaluator, "top_k": settings.top_k, **result.to_dict()}, indent=1))
    else:
        typer.echo(
            f"evaluator {settings.evaluator}, {result.n} questions (passages hold the answer for {result.holds_rate:.1%})\n"
            f"upper = {result.upper}\nlower = {result.lower}\nfilter_threshold = {result.filter}\n"
            f"action accuracy {result.action_accuracy:.1%} (ambiguous = half right); actions {result.actions}; "
            f"Correct right {result.correct_precision}, Incorrect right {result.incorrect_precision}"
        )
    for note in result.notes:
        err.print(f"note: {note}", markup=False)
    if write is not None:
        try:
            run.write(result)
        except CragError as exc:
            fail(str(exc))
        err.print(f"wrote thresholds to {write}", markup=False)


# ----------------------------------------------------------------------------- evaluator-test
@app.command("evaluator-test", cls=CragCommand)
@setting_options(*EVAL_SETTINGS)
def evaluator_test(
    ctx: typer.Context,
    input: Annotated[Path, typer.Argument(help="JSONL questions with gold 'answers' (- = stdin).")],
    settings: Settings,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Use only the first N questions.")] = None,
    json_out: JsonOut = False,
) -> None:
    """Measure an evaluator on questions with gold answers: pair accuracy, AUC, action accuracy, confusion, speed."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from ..action.evaltest import evaluator_test as measure, in_sample_note

    _input_file(input)
    questions = _gold_questions(input, limit)
    in_sample = _in_sample([q for q, _ in questions], settings.evaluator)
    if in_sample and any(in_sample.values()):  # said before the models load: the user may stop here
        err.print("warning: " + in_sample_note(in_sample, len(questions)), markup=False)
    pipe = _pipeline(settings, with_reader=False)
    try:
        pipe.evaluator.load()  # so that pairs per second counts scoring, not loading
        with Progress(
            TextColumn("scoring"),
            BarColumn(),
            MofNCompleteColumn(),
            console=err,
            transient=True,
            disable=not err.is_terminal,
        ) as progress:
            bar = progress.add_task("", total=len(questions))
            report = measure(
                questions,
                pipe.retriever,
                pipe.evaluator,
                pipe.thresholds,
                settings.top_k,
                progress=lambda done: progress.update(bar, completed=done),
            )
    except (CragError, ValueError) as exc:
        fail(str(exc))
    report.evaluator = settings.evaluator
    report.in_sample = in_sample
    typer.echo(json.dumps(report.to_dict(), indent=1) if json_out else report.text())


# ----------------------------------------------------------------------------- train-evaluator
from ..train import ADAPTER_DEFAULTS, TrainConfig  # noqa: E402  (its defaults are the options' defaults: one definition)


# crag train-evaluator's own options; hidden=True: an expert option (the training's hyperparameters), left out
# of --help and shown by --help-all
TrainQuestionsArg = Annotated[
    Optional[Path], typer.Argument(help="JSONL questions with gold 'answers': their top-k passages are labelled.")
]
TrainOutOpt = Annotated[
    Path,
    typer.Option(
        "--out",
        "-o",
        help="Folder to write the evaluator to: new, empty, or one crag trained (holding only its files).",
    ),
]
TrainPairsOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--pairs", help="JSONL of ready labelled pairs: question, passage, label 0/1 (optional qid, answers)."
    ),
]
TrainSyntheticOpt = Annotated[
    Optional[int],
    typer.Option(
        "--synthetic", min=1, help="No labels: the reader writes questions for N sampled passages of the index."
    ),
]
TrainSaveSyntheticOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--save-synthetic", help="Also write the synthetic pairs to this new file, for --pairs in later runs."
    ),
]
TrainBaseOpt = Annotated[
    str,
    typer.Option(
        help="Starting point: minilm (embedded all-MiniLM-L6-v2), a local Hugging Face encoder folder, or t5:PATH."
    ),
]
Adapter = enum.Enum("Adapter", {name: name for name in ADAPTER_DEFAULTS}, type=str)  # the choices, one definition
TrainAdapterOpt = Annotated[
    Adapter, typer.Option(help="What trains: a LoRA adapter (small, fast) or every encoder layer, mean-pooled (full).")
]
TrainEpochsOpt = Annotated[
    Optional[int],
    typer.Option(
        min=1,
        max=100,
        hidden=True,
        help="Passes over the training pairs (unless given: "
        + ", ".join(f"{e} for {a}" for a, (e, _) in ADAPTER_DEFAULTS.items())
        + ").",
    ),
]
TrainLearningRateOpt = Annotated[
    Optional[float],
    typer.Option(
        min=1e-7,
        max=1.0,
        hidden=True,
        help="Peak learning rate, warm-up then decay (unless given: "
        + ", ".join(f"{r:g} for {a}" for a, (_, r) in ADAPTER_DEFAULTS.items())
        + ").",
    ),
]
TrainBatchSizeOpt = Annotated[int, typer.Option(min=1, max=1024, hidden=True, help="Pairs per training step.")]
TrainMaxLengthOpt = Annotated[
    int, typer.Option(min=16, max=512, hidden=True, help="Tokens kept per (question, passage) pair.")
]
TrainLoraROpt = Annotated[int, typer.Option(min=1, max=256, hidden=True, help="LoRA rank of the adapter.")]
TrainValidationOpt = Annotated[
    float,
    typer.Option(
        min=0.01,
        max=0.9,
        hidden=True,
        help="Share of questions held out to pick the best epoch and calibrate the thresholds.",
    ),
]
TrainSeedOpt = Annotated[
    int, typer.Option(min=0, hidden=True, help="Seed of the split, the sampling and the training.")
]
TrainTopicGuardOpt = Annotated[
    bool,
    typer.Option(
        "--topic-guard/--no-topic-guard",
        hidden=True,
        help="Store a topic guard: passages the base encoder finds on topic are never discarded.",
    ),
]
TrainStartFromOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--start-from",
        metavar="EVALUATOR",
        help="Continue this evaluator (one trained with --adapter full): its layers and head, not a fresh head.",
    ),
]
TrainLimitOpt = Annotated[Optional[int], typer.Option(min=1, help="Use only the first N gold questions.")]


@app.command("train-evaluator", cls=CragCommand)
@setting_options("index", "top_k", "model", "n_ctx", "threads", "strip_mode")
def train_evaluator(
    ctx: typer.Context,
    settings: Settings,
    questions: TrainQuestionsArg = None,
    out: TrainOutOpt = Path("crag-evaluator"),
    pairs: TrainPairsOpt = None,
    synthetic: TrainSyntheticOpt = None,
    save_synthetic: TrainSaveSyntheticOpt = None,
    base: TrainBaseOpt = "minilm",
    adapter: TrainAdapterOpt = Adapter(TrainConfig.adapter),
    epochs: TrainEpochsOpt = None,
    learning_rate: TrainLearningRateOpt = None,
    train_batch_size: TrainBatchSizeOpt = TrainConfig.batch_size,
    train_max_length: TrainMaxLengthOpt = TrainConfig.max_length,
    lora_r: TrainLoraROpt = TrainConfig.lora_r,
    validation: TrainValidationOpt = TrainConfig.validation,
    train_seed: TrainSeedOpt = TrainConfig.seed,
    topic_guard: TrainTopicGuardOpt = TrainConfig.topic_guard,
    start_from: TrainStartFromOpt = None,
    limit: TrainLimitOpt = None,
) -> None:
    """Train a retrieval evaluator (a cross-encoder: a LoRA adapter, or every layer) on gold answers, labelled pairs or synthetic questions."""
    from ..app import TrainJob, TrainRun

    try:
        config = TrainConfig(
            base=base,
            adapter=adapter.value,
            epochs=epochs,
            batch_size=train_batch_size,
            learning_rate=learning_rate,
            max_length=train_max_length,
            lora_r=lora_r,
            lora_alpha=2 * lora_r,
            validation=validation,
            seed=train_seed,
            topic_guard=topic_guard,
            start_from=None if start_from is None else str(start_from),
        )
        job = TrainJob(out, config, questions, pairs, synthetic, save_synthetic, limit)
        run = TrainRun(settings, job, note=lambda line: err.print(line, markup=False))
        ctx.call_on_close(run.close)  # the locks are held until the command ends
        card = run.run()
    except CragError as exc:  # a setting TrainConfig refuses too
        fail(str(exc))
    c = card["calibration"]
    best = card["validation_by_epoch"][card["best_epoch"] - 1]
    typer.echo(
        f"wrote {out} (best epoch {card['best_epoch']} of {len(card['validation_by_epoch'])}, {card['seconds']} s)\n"
        f"validation: pair accuracy {best['pair_accuracy']}, AUC {best['auc']}, action accuracy {c['action_accuracy']} "
        f"({c['actions']})\nthresholds: upper {c['upper']}, lower {c['lower']}, filter {c['filter']}\n"
        f"use it with: --evaluator minilm:{out}"
    )
