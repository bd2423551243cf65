"""The ``crag`` command: a thin typer layer over the library. Data on stdout, everything else on stderr.

Every error, a mistyped flag included, is one ``crag: error: ...`` line on
stderr and exit status 1. The options that set a :class:`~crag_cli.settings.Settings`
field are generated from its declaration (:func:`setting_options`), so a flag,
its ``CRAG_*`` variable and its ``crag.toml`` key are checked the same way.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import click
import typer
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from typer.core import TyperGroup

try:  # typer >= 0.2x carries its own copy of click
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - older typer uses click itself
    from click import exceptions as click_exceptions

from .version import __version__
from . import build as builder
from . import settings as settings_decl
from .errors import CragError, one_line
from .settings import Settings, SettingsError, load_settings


class CragGroup(TyperGroup):
    """Turns click's usage errors (bad flag values, unknown options) into crag's one-line errors, exit 1."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):  # noqa: D102
        try:
            code = super().main(
                args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False, **extra
            )
        except click_exceptions.NoArgsIsHelpError as exc:
            exc.show()
            code = 0
        except click_exceptions.ClickException as exc:
            hint = ""
            ctx = getattr(exc, "ctx", None)
            if ctx is not None:
                hint = f" (see: {ctx.command_path} --help)"
            sys.stderr.write(f"crag: error: {_lower_first(exc.format_message())}{hint}\n")
            code = 1
        except (typer.Abort, KeyboardInterrupt):
            sys.stderr.write("crag: interrupted\n")
            code = 130
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


app = typer.Typer(
    name="crag",
    cls=CragGroup,
    help="Corrective retrieval-augmented generation (CRAG, Yan et al. 2024) over a local BM25 index.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: int = 1) -> None:
    """One clear line on stderr (the first line of a longer message), then exit non-zero."""
    err.print(f"crag: error: {one_line(message)}", markup=False, highlight=False)
    raise typer.Exit(code)


def warn(message: str) -> None:
    err.print(f"crag: warning: {message}", markup=False, highlight=False)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"crag {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    config: Annotated[Optional[Path], typer.Option(help="Config file (default: ./crag.toml, or $CRAG_CONFIG).")] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Settings come from flags > CRAG_* environment variables > crag.toml > defaults."""
    ctx.obj = {"config": config}


# ----------------------------------------------------------------------------- options from the settings

PANELS = {
    "index": "Index",
    "retrieval": "Retrieval",
    "evaluator": "Evaluator",
    "thresholds": "Action thresholds",
    "refine": "Refinement",
    "generator": "Generator",
    "web": "Web correction",
}
_METAVARS = {int: "INTEGER", float: "NUMBER", Path: "PATH", str: "TEXT"}


def _option(name: str) -> Any:
    """The typer annotation of one setting's option (values reach pydantic as given, so every source is checked alike)."""
    kind = settings_decl.value_type(name)
    panel = PANELS[settings_decl.group(name)]
    help_text = settings_decl.help_text(name)
    if kind is bool:
        return Annotated[
            Optional[bool],
            typer.Option(*settings_decl.option_decls(name), help=help_text, rich_help_panel=panel, show_default=False),
        ]
    options = settings_decl.choices(name)
    metavar = "|".join(options) if options else _METAVARS.get(kind, "TEXT")
    return Annotated[
        Optional[str],
        typer.Option(
            *settings_decl.option_decls(name),
            help=help_text,
            metavar=metavar,
            rich_help_panel=panel,
            show_default=False,
        ),
    ]


def setting_options(*names: str):
    """Give a command one option per named setting; it receives the merged, validated ``settings``.

    The command declares ``ctx: typer.Context`` and ``settings: Settings``; the
    options are added to its signature, and their values merged with the
    environment, the config file and the defaults before it runs.
    """

    def decorate(fn):
        sig = inspect.signature(fn, eval_str=True)
        own = [p for p in sig.parameters.values() if p.name != "settings"]
        added = [
            inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=_option(n)) for n in names
        ]

        @functools.wraps(fn)
        def command(*args, **kwargs):
            given = {n: kwargs.pop(n) for n in names}
            ctx = kwargs.get("ctx") or next(a for a in args if isinstance(a, typer.Context))
            return fn(*args, settings=_settings(ctx, given), **kwargs)

        command.__signature__ = sig.replace(parameters=own + added)
        command.__annotations__ = {p.name: p.annotation for p in own + added}
        del command.__wrapped__  # typer must read the new signature, not fn's
        return command

    return decorate


def _settings(ctx: typer.Context, flags: dict[str, Any]) -> Settings:
    try:
        settings = load_settings(flags, config=(ctx.obj or {}).get("config"))
    except SettingsError as exc:
        fail(str(exc))
        raise  # unreachable
    for message in settings.warnings():
        warn(message)
    return settings


EVAL_SETTINGS = settings_decl.names_in("index", "retrieval", "evaluator", "thresholds")
ALL_SETTINGS = settings_decl.names_in(*settings_decl.GROUPS)
JsonOut = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text.")]


def _pipeline(settings: Settings, with_generator: bool, retrieve: bool = True):
    try:
        return builder.pipeline(settings, with_generator=with_generator, retrieve=retrieve)
    except CragError as exc:
        fail(str(exc))


def _gold_questions(path: Path, limit: int | None) -> list[tuple[str, list[str]]]:
    """(question, gold aliases) of a JSONL file's first ``limit`` usable lines; the others are named on stderr."""
    from .app import gold_questions

    try:
        return gold_questions(path, limit, note=lambda line: err.print(line, markup=False))
    except CragError as exc:
        fail(str(exc))


def _in_sample(questions: list[str], evaluator: str) -> dict[str, int] | None:
    """How many of ``questions`` trained / calibrated ``evaluator`` (``None``: it does not say)."""
    from .train import in_sample

    try:
        return in_sample(questions, evaluator)
    except CragError as exc:
        fail(str(exc))


def _check_question(question: str) -> None:
    """A question given on the command line is not empty and is valid UTF-8 (undecodable bytes reach
    Python as lone surrogates, which no tokenizer or output can take)."""
    from .jsonl import has_surrogate

    if not question.strip():
        fail("the question is empty")
    if has_surrogate(question):
        fail("the question is not valid UTF-8 text (check the terminal's or the script's encoding)")


def _input_file(path: Path) -> None:
    from .app import check_input_file

    try:
        check_input_file(path)
    except CragError as exc:
        fail(str(exc))


# ----------------------------------------------------------------------------- index
# crag index's own options
DocsArg = Annotated[
    Path, typer.Argument(help="Folder (or file) of .txt, .md, .html/.htm, .jsonl, .pdf and .docx documents.")
]
PassageWordsOpt = Annotated[int, typer.Option(min=10, help="Words per passage (split at sentence ends).")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Read and index every file again, even unchanged ones.")]
IncludeHiddenOpt = Annotated[
    bool, typer.Option("--include-hidden", help="Also read hidden files and folders (.git, .venv, ...).")
]


@app.command()
@setting_options("index")
def index(
    ctx: typer.Context,
    docs: DocsArg,
    settings: Settings,
    passage_words: PassageWordsOpt = 100,
    force: ForceOpt = False,
    include_hidden: IncludeHiddenOpt = False,
) -> None:
    """Build a BM25 index of a folder of documents; a rebuild reads only new and changed files.

    The index folder must be new, empty or a crag index: crag never replaces a
    folder it did not write, nor the documents folder or one of its parents.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from .index import build_index

    if not docs.exists():
        fail(f"no such folder: {docs}")
    with Progress(
        TextColumn("reading"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as progress:
        task = progress.add_task("", total=None)

        def on_file(path: str, done: int, total: int) -> None:
            progress.update(task, completed=done, total=total, description=path[-60:])

        try:
            report = build_index(
                docs,
                settings.index,
                passage_words=passage_words,
                force=force,
                progress=on_file,
                include_hidden=include_hidden,
            )
        except CragError as exc:
            report, problem = None, str(exc)
    if report is None:
        fail(problem)
    for line in _index_report(report, settings.index):
        err.print(line, markup=False)


def _index_report(report, index: Path) -> list[str]:
    """What ``crag index`` says on stderr about a build: skipped files, what was left out, the counts."""
    lines = [f"skipped {path}: {reason}" for path, reason in report.skipped]
    left_out = []
    if report.hidden:
        left_out.append(f"{len(report.hidden)} hidden file(s) and folder(s) (--include-hidden reads them)")
    if report.indexes:
        left_out.append(f"{len(report.indexes)} crag index folder(s) ({', '.join(report.indexes[:3])})")
    if left_out:
        lines.append("left out " + " and ".join(left_out))
    if report.cleaned:
        lines.append(f"removed {report.cleaned} temporary folder(s) left by an interrupted crag index")
    if report.status == "unchanged":
        lines.append(
            f"index {index} is up to date ({report.passages} passages from {report.files} files); nothing to do"
        )
        return lines
    reused = (
        f" ({report.read} file(s) read, {report.reused} unchanged taken from the old index)" if report.reused else ""
    )
    skipped = f"; skipped {len(report.skipped)}" if report.skipped else ""
    lines.append(
        f"indexed {report.documents} documents from {report.files} files into {report.passages} passages "
        f"at {index} in {report.seconds:.1f} s{reused}{skipped}"
    )
    return lines


# ----------------------------------------------------------------------------- evaluate
def _evaluation_record(result) -> dict:
    from .records import to_record

    rec = to_record(result)
    return {k: rec[k] for k in ("id", "question", "evaluator", "action", "thresholds", "scores", "timings", "error")}


@app.command()
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
    if (question is None) == (input is None):
        fail("give a QUESTION or --input FILE.jsonl (one of them)")
    if question is not None:
        _check_question(question)
    if input is not None:
        _input_file(input)
    pipe = _pipeline(settings, with_generator=False)
    try:
        if input is not None:
            if _evaluate_file(pipe, input):
                raise typer.Exit(1)
            return
        result = pipe.evaluate(question.strip())
    except CragError as exc:
        fail(str(exc))
    if json_out:
        typer.echo(json.dumps(_evaluation_record(result), ensure_ascii=False, indent=1, allow_nan=False))
    else:
        _print_evaluation(result, pipe.evaluator.name)


def _evaluate_file(pipe, input: Path) -> int:
    """One JSON line on stdout per line of ``input``; returns how many are error records."""
    from .records import error_record, read_questions

    errors = 0
    for q in read_questions(input):
        if q.error:
            rec = error_record(q.id, q.question, q.error, q.line)
        else:
            try:
                result = pipe.evaluate(q.question)
                result.id = q.id
                rec = _evaluation_record(result)
            except CragError:
                raise
            except Exception as exc:  # one bad question never stops the file
                rec = error_record(q.id, q.question, f"{type(exc).__name__}: {exc}", q.line)
        errors += bool(rec.get("error"))
        sys.stdout.write(json.dumps(rec, ensure_ascii=False, allow_nan=False) + "\n")
        sys.stdout.flush()
    return errors


def _print_evaluation(result, evaluator: str) -> None:
    """The evaluator's table of the retrieved passages and the action, on stdout."""
    out = Console(highlight=False)
    table = Table(title=f"Evaluator {evaluator}", show_lines=False)
    for col in ("rank", "bm25", "score", "title", "snippet"):
        table.add_column(col, overflow="fold", no_wrap=col in ("rank", "bm25", "score"))
    th = result.thresholds
    for hit, score in zip(result.hits, result.scores):
        mark = "+" if score >= th.upper else ("-" if score < th.lower else "?")
        snippet = hit.passage.text[:90] + ("..." if len(hit.passage.text) > 90 else "")
        title = hit.passage.title[:30] + (f" (p. {hit.passage.page})" if hit.passage.page else "")
        table.add_row(str(hit.rank), f"{hit.score:.2f}", f"{score:+.3f} {mark}", title, snippet)
    out.print(table)
    best = max(result.scores) if result.scores else None
    out.print(
        f"action: {result.action.value.upper()}  (best score {best if best is None else f'{best:+.3f}'}; "
        f"upper {th.upper:+.3f}, lower {th.lower:+.3f}; {th.source})",
        markup=False,
    )


# ----------------------------------------------------------------------------- ask
def _show_knowledge(result) -> None:
    """Action, knowledge and sources on stderr: rich panels in a terminal, plain lines otherwise."""
    action = result.action.value.upper() if result.action else result.mode
    lines = [f"[{i}] {item.verdict}{item.text}" for i, item in enumerate(result.knowledge_used, 1)]
    sources = [
        f"[{i}] {item.source}" + (f" ({item.title})" if item.title else "")
        for i, item in enumerate(result.knowledge_used, 1)
    ]
    ext = result.external_knowledge
    notes = []
    if ext is not None:
        if ext.query:
            notes.append(f"web query: {ext.query}")
        if ext.error:
            notes.append(f"web: {ext.error}")
    if not result.knowledge_used:
        notes.append("no knowledge: answering without documents")
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


@app.command()
@setting_options(*ALL_SETTINGS)
def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The question.")],
    settings: Settings,
    json_out: JsonOut = False,
) -> None:
    """Answer one question with the whole pipeline; the answer streams to stdout."""
    from .records import to_record

    _check_question(question)
    pipe = _pipeline(settings, with_generator=True)
    try:
        pipe.generator.load()
    except CragError as exc:
        fail(str(exc))

    def on_token(piece: str) -> None:
        sys.stdout.write(piece)
        sys.stdout.flush()

    try:
        result = pipe.run(
            question.strip(),
            on_token=None if json_out else on_token,
            on_knowledge=None if json_out else _show_knowledge,
        )
    except CragError as exc:
        fail(str(exc))
    if json_out:
        typer.echo(json.dumps(to_record(result), ensure_ascii=False, indent=1, allow_nan=False))
    else:
        sys.stdout.write("\n")
        sys.stdout.flush()
        if result.grounded is False:
            err.print("note: the answer occurs nowhere in the knowledge it was given (grounded: false)", markup=False)
    if result.error:
        fail(result.error)


# ----------------------------------------------------------------------------- batch
# crag batch's own options (the settings' options are made from their declarations)
QuestionsArg = Annotated[
    Path, typer.Argument(help="JSONL (- = stdin): question, optional id, answers (gold aliases), task.")
]
OutputOpt = Annotated[
    Optional[Path],
    typer.Option("-o", "--output", help="Write records here (default stdout); OUT.partial while running."),
]
ModeOpt = Annotated[str, typer.Option(help="crag, rag, rag+web or no-retrieval.")]
LimitOpt = Annotated[Optional[int], typer.Option(min=1, help="Process only the first N lines.")]
ResumeOpt = Annotated[
    bool, typer.Option("--resume", help="Keep the records already written to --output and answer the rest.")
]
RetryErrorsOpt = Annotated[
    bool, typer.Option("--retry-errors", help="With --resume: also redo the records that ended in an error.")
]
OverwriteOpt = Annotated[bool, typer.Option("--overwrite", help="Replace an --output file that crag did not write.")]
WorkersOpt = Annotated[
    int,
    typer.Option(
        min=1,
        max=64,
        help="Worker processes, each loading the models once; --threads (default: all cores) is split "
        "between them. Records stay in input order.",
    ),
]
RayOpt = Annotated[
    bool,
    typer.Option(
        "--ray",
        help="Answer with Ray actors, one per --workers (default 2 with --ray): a local Ray on 127.0.0.1, "
        "or the cluster at --ray-address. Needs pip install 'crag-cli\\[ray]'.",
    ),
]
RayAddressOpt = Annotated[
    Optional[str],
    typer.Option(metavar="ADDRESS", help="With --ray (implied): a running Ray cluster, HOST:6379 or ray://HOST:10001."),
]


@app.command()
@setting_options(*ALL_SETTINGS)
def batch(
    ctx: typer.Context,
    input: QuestionsArg,
    settings: Settings,
    output: OutputOpt = None,
    mode: ModeOpt = "crag",
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
    from .app import BatchJob, BatchRun

    if (ray or ray_address) and ctx.get_parameter_source("workers") is not click.core.ParameterSource.COMMANDLINE:
        workers = 2
    job = BatchJob(
        input,
        output,
        mode,
        limit,
        resume,
        retry_errors,
        overwrite,
        workers,
        ray=ray_address or ("local" if ray else None),
        config=(ctx.obj or {}).get("config"),
    )
    try:
        run = BatchRun(settings, job, note=lambda line: err.print(line, markup=False))
        ctx.call_on_close(run.close)  # however the command ends
        with _batch_progress() as on_record:
            report = run.run(on_record=on_record)
    except CragError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        where = f"; the records so far are in {run.partial}: go on with --resume" if run.partial else ""
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
            total = summary.lines
            acc = f" acc {summary.correct / summary.graded:.1%}" if summary.graded else ""
            progress.update(bar, total=total, completed=summary.total, description=f"{rec.get('action') or ''}{acc}")
            step = max(1, total // 10)
            if not err.is_terminal and summary.answered_now and (summary.total % step == 0 or summary.total == total):
                elapsed = time.perf_counter() - start
                rate = summary.answered_now / elapsed if elapsed > 0 else 0.0
                eta = (total - summary.total) / rate if rate else 0.0
                errors = f", {summary.errors} error(s)" if summary.errors else ""
                err.print(
                    f"batch: {summary.total}/{total}{acc}{errors}, {elapsed / summary.answered_now:.2f} "
                    f"s/question, {rate:.3f} questions/s, ETA {eta:.0f} s",
                    markup=False,
                )

        yield on_record


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


@app.command()
@setting_options(*settings_decl.names_in("index", "retrieval", "evaluator"), "strip_mode")
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

    from .app import CalibrateRun

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
@app.command("evaluator-test")
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

    from .evaltest import evaluator_test as measure, in_sample_note

    _input_file(input)
    questions = _gold_questions(input, limit)
    in_sample = _in_sample([q for q, _ in questions], settings.evaluator)
    if in_sample and any(in_sample.values()):  # said before the models load: the user may stop here
        err.print("warning: " + in_sample_note(in_sample, len(questions)), markup=False)
    pipe = _pipeline(settings, with_generator=False)
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
from .train import TrainConfig  # noqa: E402  (its defaults are the options' defaults: one definition)


# crag train-evaluator's own options
TrainQuestionsArg = Annotated[
    Optional[Path], typer.Argument(help="JSONL questions with gold 'answers': their top-k passages are labelled.")
]
TrainOutOpt = Annotated[
    Path,
    typer.Option(
        "--out",
        "-o",
        help="Folder to write the evaluator to: new, empty, or an evaluator crag trained holding only its own files.",
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
        "--synthetic", min=1, help="No labels: the generator writes questions for N sampled passages of the index."
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
TrainEpochsOpt = Annotated[int, typer.Option(min=1, max=100, help="Passes over the training pairs.")]
TrainLearningRateOpt = Annotated[
    float, typer.Option(min=1e-7, max=1.0, help="Peak learning rate (linear warm-up and decay).")
]
TrainBatchSizeOpt = Annotated[int, typer.Option(min=1, max=1024, help="Pairs per training step.")]
TrainMaxLengthOpt = Annotated[int, typer.Option(min=16, max=512, help="Tokens kept per (question, passage) pair.")]
TrainLoraROpt = Annotated[int, typer.Option(min=1, max=256, help="LoRA rank of the adapter.")]
TrainValidationOpt = Annotated[
    float,
    typer.Option(
        min=0.01,
        max=0.9,
        help="Share of questions held out to pick the best epoch and calibrate the thresholds (of the gold questions, when given: other pairs then only train).",
    ),
]
TrainSeedOpt = Annotated[int, typer.Option(min=0, help="Seed of the split, the sampling and the training.")]
TrainTopicGuardOpt = Annotated[
    bool,
    typer.Option(
        "--topic-guard/--no-topic-guard",
        help="Store a topic guard: passages the base encoder's cosine finds on topic are never discarded (encoder bases only).",
    ),
]
TrainLimitOpt = Annotated[Optional[int], typer.Option(min=1, help="Use only the first N gold questions.")]


@app.command("train-evaluator")
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
    epochs: TrainEpochsOpt = TrainConfig.epochs,
    learning_rate: TrainLearningRateOpt = TrainConfig.learning_rate,
    train_batch_size: TrainBatchSizeOpt = TrainConfig.batch_size,
    train_max_length: TrainMaxLengthOpt = TrainConfig.max_length,
    lora_r: TrainLoraROpt = TrainConfig.lora_r,
    validation: TrainValidationOpt = TrainConfig.validation,
    train_seed: TrainSeedOpt = TrainConfig.seed,
    topic_guard: TrainTopicGuardOpt = TrainConfig.topic_guard,
    limit: TrainLimitOpt = None,
) -> None:
    """Train a retrieval evaluator (a cross-encoder with a LoRA adapter) on gold answers, labelled pairs or synthetic questions."""
    from .app import TrainJob, TrainRun

    config = TrainConfig(
        base=base,
        epochs=epochs,
        batch_size=train_batch_size,
        learning_rate=learning_rate,
        max_length=train_max_length,
        lora_r=lora_r,
        lora_alpha=2 * lora_r,
        validation=validation,
        seed=train_seed,
        topic_guard=topic_guard,
    )
    job = TrainJob(out, config, questions, pairs, synthetic, save_synthetic, limit)
    try:
        run = TrainRun(settings, job, note=lambda line: err.print(line, markup=False))
        ctx.call_on_close(run.close)  # the locks are held until the command ends
        card = run.run()
    except CragError as exc:
        fail(str(exc))
    c = card["calibration"]
    best = card["validation_by_epoch"][card["best_epoch"] - 1]
    typer.echo(
        f"wrote {out} (best epoch {card['best_epoch']} of {len(card['validation_by_epoch'])}, {card['seconds']} s)\n"
        f"validation: pair accuracy {best['pair_accuracy']}, AUC {best['auc']}, action accuracy {c['action_accuracy']} "
        f"({c['actions']})\nthresholds: upper {c['upper']}, lower {c['lower']}, filter {c['filter']}\n"
        f"use it with: --evaluator minilm:{out}"
    )


def run() -> None:  # console-script entry point
    app()
