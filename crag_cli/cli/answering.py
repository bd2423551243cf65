"""The commands that answer: ``evaluate``, ``ask`` and ``batch``."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import click
import typer
from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from ..errors import CragError
from ..pipeline.modes import MODES, Mode
from ..settings import Settings

from .base import (
    ALL_SETTINGS,
    EVAL_SETTINGS,
    CragCommand,
    JsonOut,
    app,
    err,
    fail,
    setting_options,
)


@app.command(cls=CragCommand)
@setting_options(*EVAL_SETTINGS)
def evaluate(
    ctx: typer.Context,
    settings: Settings,
    question: Annotated[Optional[str], typer.Argument(help="The question (or use --input).")] = None,
    input: Annotated[
        Optional[Path], typer.Option("--input", help="JSONL file of questions, one JSON line each (- = stdin).")
    ] = None,
    json_out: JsonOut = False,
) -> None:
    """Retrieve, score every passage with the evaluator, and show the action it triggers.

    With --input, one JSON line per input line; exit status 1 when any line is an error record.
    """
    from ..app import EvaluateJob, EvaluateRun, evaluation_record

    try:
        run = EvaluateRun(settings, EvaluateJob(question=question, input=input))
        if input is not None:
            if run.records(on_record=_write_line):
                raise typer.Exit(1)
            return
        result = run.result()
    except CragError as exc:
        fail(str(exc))
    if json_out:
        typer.echo(json.dumps(evaluation_record(result), ensure_ascii=False, indent=1, allow_nan=False))
    else:
        _print_evaluation(result, run.pipeline.evaluator.name)


def _write_line(rec: dict) -> None:
    """One JSON line on stdout, flushed (a reader of the pipe sees each record as it is made)."""
    sys.stdout.write(json.dumps(rec, ensure_ascii=False, allow_nan=False) + "\n")
    sys.stdout.flush()


def _print_evaluation(result, evaluator: str) -> None:
    """The evaluator's table of the retrieved passages and the action, on stdout."""
    from ..action.trigger import FUSED

    out = Console(highlight=False)
    table = Table(title=f"Evaluator {evaluator}", show_lines=False)
    for col in ("rank", "bm25", "support", "score", "title", "snippet"):
        table.add_column(col, overflow="fold", no_wrap=col in ("rank", "bm25", "support", "score"))
    th, fused = result.thresholds, result.thresholds.source == FUSED  # fused: the probability decided
    p = result.probabilities if fused else None
    for i, (hit, score) in enumerate(zip(result.hits, result.scores)):
        decisive = p[i] if p is not None else score
        mark = "+" if decisive >= th.upper else ("-" if decisive < th.lower else "?")
        snippet = hit.passage.text[:90] + ("..." if len(hit.passage.text) > 90 else "")
        title = hit.passage.title[:30] + (f" (p. {hit.passage.page})" if hit.passage.page else "")
        support = "" if hit.support is None else f"{hit.support:.2f}"
        shown = f"{score:+.3f}" + ("" if p is None else f" p {p[i]:.2f}")
        table.add_row(str(hit.rank), f"{hit.score:.2f}", support, f"{shown} {mark}", title, snippet)
    out.print(table)
    best = max(p if p is not None else result.scores) if result.scores else None
    out.print(
        f"action: {result.action.value.upper()}  (best {'probability' if p else 'score'} "
        f"{best if best is None else f'{best:+.3f}'}; "
        f"upper {th.upper:+.3f}, lower {th.lower:+.3f}; {th.source}; "
        f"lexical support {'yes' if result.supported else 'no'}; "
        f"in the evaluator's domain: {({True: 'yes', False: 'no'}).get(result.in_domain, 'cannot tell')}"
        + ("" if result.evidence_score is None or p else f"; combined evidence {result.evidence_score:+.3f}")
        + ")",
        markup=False,
    )


# ----------------------------------------------------------------------------- ask
def _show_knowledge(result) -> None:
    """Action, knowledge and sources on stderr: rich panels in a terminal, plain lines otherwise."""
    from ..app import knowledge_notes

    action = result.action.value.upper() if result.action else result.mode
    lines = [f"[{i}] {item.verdict}{item.text}" for i, item in enumerate(result.knowledge_used, 1)]
    sources = [
        f"[{i}] {item.source}" + (f" ({item.title})" if item.title else "")
        for i, item in enumerate(result.knowledge_used, 1)
    ]
    notes = knowledge_notes(result)
    if err.is_terminal:
        err.print(Panel("\n".join(lines) or "(none)", title=f"action: {action}", border_style="cyan"), markup=False)
        err.print(Panel("\n".join(sources + notes) or "(none)", title="sources", border_style="dim"), markup=False)
    else:
        err.print(f"action: {action}", markup=False)
        for line in lines:
            err.print(f"knowledge {line}", markup=False)
        for line in sources:
            err.print(f"source {line}", markup=False)
        for note in notes:
            err.print(note, markup=False)


@app.command(cls=CragCommand)
@setting_options(*ALL_SETTINGS)
def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The question.")],
    settings: Settings,
    json_out: JsonOut = False,
) -> None:
    """Answer one question with the whole pipeline; the answer streams to stdout."""
    from ..app import AskJob, AskRun
    from ..batch.records import to_record

    def on_token(piece: str) -> None:
        sys.stdout.write(piece)
        sys.stdout.flush()

    def note(line: str) -> None:
        if not json_out:
            err.print(line, markup=False)

    try:
        run = AskRun(settings, AskJob(question=question), note=note)
        result = run.run(on_token=None if json_out else on_token, on_knowledge=None if json_out else _show_knowledge)
    except CragError as exc:
        fail(str(exc))
    if json_out:
        typer.echo(json.dumps(to_record(result), ensure_ascii=False, indent=1, allow_nan=False))
    if result.error:
        fail(result.error)


# ----------------------------------------------------------------------------- batch
# crag batch's own options (the settings' options are made from their declarations); hidden=True: an expert
# option, left out of --help and shown by --help-all
QuestionsArg = Annotated[
    Path, typer.Argument(help="JSONL (- = stdin): question, optional id, answers (gold aliases), task.")
]
OutputOpt = Annotated[
    Optional[Path],
    typer.Option("-o", "--output", help="Write records here (default stdout); OUT.partial while running."),
]
ModeOpt = Annotated[str, typer.Option(help=", ".join(MODES[:-1]) + f" or {MODES[-1]}.")]
LimitOpt = Annotated[Optional[int], typer.Option(min=1, help="Process only the first N lines.")]
ResumeOpt = Annotated[
    bool, typer.Option("--resume", help="Keep the records already written to --output and answer the rest.")
]
RetryErrorsOpt = Annotated[
    bool,
    typer.Option("--retry-errors", hidden=True, help="With --resume: also redo the records that ended in an error."),
]
OverwriteOpt = Annotated[
    bool, typer.Option("--overwrite", hidden=True, help="Replace an --output file that crag did not write.")
]
WorkersOpt = Annotated[
    int,
    typer.Option(
        min=1,
        max=64,
        help="Worker processes, each loading the models once; --threads is split between them.",
    ),
]
RayOpt = Annotated[
    bool,
    typer.Option(
        "--ray",
        help="Answer with Ray actors, one per --workers (default 2 with --ray); pip install 'crag-cli\\[ray]'.",
    ),
]
RayAddressOpt = Annotated[
    Optional[str],
    typer.Option(
        metavar="ADDRESS",
        hidden=True,
        help="With --ray (implied): a running Ray cluster, HOST:6379 or ray://HOST:10001.",
    ),
]


@app.command(cls=CragCommand)
@setting_options(*ALL_SETTINGS)
def batch(
    ctx: typer.Context,
    input: QuestionsArg,
    settings: Settings,
    output: OutputOpt = None,
    mode: ModeOpt = Mode.CRAG.value,
    limit: LimitOpt = None,
    resume: ResumeOpt = False,
    retry_errors: RetryErrorsOpt = False,
    overwrite: OverwriteOpt = False,
    workers: WorkersOpt = 1,
    ray: RayOpt = False,
    ray_address: RayAddressOpt = None,
) -> None:
    """Answer every question of a JSONL file; one result record per input line, in input order.

    With -o OUT, records go to OUT.partial as they are done and the file becomes
    OUT when the batch ends; OUT.run.json records the settings, model and index
    that made them. Exit status 1 when any line produced an error record (all
    lines are still written).
    """
    from ..app import BatchJob, BatchRun

    if (ray or ray_address) and ctx.get_parameter_source("workers") is not click.core.ParameterSource.COMMANDLINE:
        workers = 2
    job = BatchJob(
        input=input,
        output=output,
        mode=mode,
        limit=limit,
        resume=resume,
        retry_errors=retry_errors,
        overwrite=overwrite,
        workers=workers,
        ray=ray_address or ("local" if ray else None),
        config=(ctx.obj or {}).get("config"),
    )
    run = None
    try:
        run = BatchRun(settings, job, note=lambda line: err.print(line, markup=False))
        ctx.call_on_close(run.close)  # however the command ends
        with _batch_progress() as on_record:
            report = run.run(on_record=on_record)
    except CragError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        partial = run.partial if run is not None else None
        where = f"; the records so far are in {partial}: go on with --resume" if partial else ""
        err.print(f"crag: interrupted{where}", markup=False)
        raise typer.Exit(130)
    err.print(report.line(), markup=False)
    if report.output is not None:
        err.print(f"wrote {report.output} (run manifest: {report.manifest})", markup=False)
    if report.summary.errors:
        raise typer.Exit(1)


@contextlib.contextmanager
def _batch_progress():
    """A progress bar on a terminal, a line every tenth of the batch otherwise; yields the ``on_record`` callback."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    start = time.perf_counter()
    columns = (
        TextColumn("batch"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
    )
    with Progress(*columns, console=err, disable=not err.is_terminal) as progress:
        bar = progress.add_task("", total=None)

        def on_record(rec: dict, summary) -> None:
            total = summary.lines  # None until known: a large file, or stdin, is read as the batch goes
            acc = f" acc {summary.correct / summary.graded:.1%}" if summary.graded else ""
            progress.update(bar, total=total, completed=summary.total, description=f"{rec.get('action') or ''}{acc}")
            step = max(1, total // 10) if total else 10 ** (len(str(summary.total)) - 1)  # (1-9, 10, 20, ..., 100)
            if not err.is_terminal and summary.answered_now and (summary.total % step == 0 or summary.total == total):
                elapsed = time.perf_counter() - start
                rate = summary.answered_now / elapsed if elapsed > 0 else 0.0
                eta = f", ETA {(total - summary.total) / rate if rate else 0.0:.0f} s" if total else ""
                errors = f", {summary.errors} error(s)" if summary.errors else ""
                err.print(
                    f"batch: {summary.total}/{total or '?'}{acc}{errors}, {elapsed / summary.answered_now:.2f} "
                    f"s/question, {rate:.3f} questions/s{eta}",
                    markup=False,
                )

        yield on_record
