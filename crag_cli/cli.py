"""The ``crag`` command: a thin typer layer over the library. Data on stdout, everything else on stderr.

Every error, a mistyped flag included, is one ``crag: error: ...`` line on
stderr and exit status 1. The options that set a :class:`~crag_cli.settings.Settings`
field are generated from its declaration (:func:`setting_options`), so a flag,
its ``CRAG_*`` variable and its ``crag.toml`` key are checked the same way.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
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
            code = super().main(args=args, prog_name=prog_name, complete_var=complete_var,
                                standalone_mode=False, **extra)  # fmt: skip
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
    "index": "Index", "retrieval": "Retrieval", "evaluator": "Evaluator", "thresholds": "Action thresholds",
    "refine": "Refinement", "generator": "Generator", "web": "Web correction",
}  # fmt: skip
_METAVARS = {int: "INTEGER", float: "NUMBER", Path: "PATH", str: "TEXT"}


def _option(name: str) -> Any:
    """The typer annotation of one setting's option (values reach pydantic as given, so every source is checked alike)."""
    kind = settings_decl.value_type(name)
    panel = PANELS[settings_decl.group(name)]
    help_text = settings_decl.help_text(name)
    if kind is bool:
        return Annotated[Optional[bool], typer.Option(*settings_decl.option_decls(name), help=help_text,
                                                      rich_help_panel=panel, show_default=False)]  # fmt: skip
    options = settings_decl.choices(name)
    metavar = "|".join(options) if options else _METAVARS.get(kind, "TEXT")
    return Annotated[Optional[str], typer.Option(*settings_decl.option_decls(name), help=help_text, metavar=metavar,
                                                 rich_help_panel=panel, show_default=False)]  # fmt: skip


def setting_options(*names: str):
    """Give a command one option per named setting; it receives the merged, validated ``settings``.

    The command declares ``ctx: typer.Context`` and ``settings: Settings``; the
    options are added to its signature, and their values merged with the
    environment, the config file and the defaults before it runs.
    """

    def decorate(fn):
        sig = inspect.signature(fn, eval_str=True)
        own = [p for p in sig.parameters.values() if p.name != "settings"]
        added = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=_option(n)) for n in names]

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
    from .records import read_questions

    questions = []
    for q in read_questions(path):
        if q.error or not q.answers:
            err.print(f"line {q.line}: skipped: {q.error or 'no gold answers'}", markup=False)
            continue
        questions.append((q.question, q.answers))
    questions = questions[:limit] if limit is not None else questions
    if not questions:
        fail(f"{path} holds no question with gold answers")
    return questions


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
    if str(path) == "-":
        return
    if path.is_dir():
        fail(f"{path} is a folder, not a JSONL file")
    if not path.is_file():
        fail(f"no such file: {path}")


# ----------------------------------------------------------------------------- index
@app.command()
@setting_options("index")
def index(
    ctx: typer.Context,
    docs: Annotated[Path, typer.Argument(help="Folder (or file) of .txt, .md, .html/.htm, .jsonl, .pdf and .docx documents.")],
    settings: Settings,
    passage_words: Annotated[int, typer.Option(min=10, help="Words per passage (split at sentence ends).")] = 100,
    force: Annotated[
        bool, typer.Option("--force", help="Read and index every file again, even unchanged ones.")
    ] = False,
    include_hidden: Annotated[
        bool, typer.Option("--include-hidden", help="Also read hidden files and folders (.git, .venv, ...).")
    ] = False,
) -> None:
    """Build a BM25 index of a folder of documents; a rebuild reads only new and changed files.

    The index folder must be new, empty or a crag index: crag never replaces a
    folder it did not write, nor the documents folder or one of its parents.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from .index import build_index

    if not docs.exists():
        fail(f"no such folder: {docs}")
    with Progress(TextColumn("reading"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                  console=err, transient=True, disable=not err.is_terminal) as progress:  # fmt: skip
        task = progress.add_task("", total=None)

        def on_file(path: str, done: int, total: int) -> None:
            progress.update(task, completed=done, total=total, description=path[-60:])

        try:
            report = build_index(docs, settings.index, passage_words=passage_words, force=force, progress=on_file,
                                 include_hidden=include_hidden)  # fmt: skip
        except CragError as exc:
            report, problem = None, str(exc)
    if report is None:
        fail(problem)
    for path, reason in report.skipped:
        err.print(f"skipped {path}: {reason}", markup=False)
    left_out = []
    if report.hidden:
        left_out.append(f"{len(report.hidden)} hidden file(s) and folder(s) (--include-hidden reads them)")
    if report.indexes:
        left_out.append(f"{len(report.indexes)} crag index folder(s) ({', '.join(report.indexes[:3])})")
    if left_out:
        err.print("left out " + " and ".join(left_out), markup=False)
    if report.cleaned:
        err.print(f"removed {report.cleaned} temporary folder(s) left by an interrupted crag index", markup=False)
    if report.status == "unchanged":
        err.print(f"index {settings.index} is up to date ({report.passages} passages from {report.files} files); nothing to do")
    else:
        err.print(
            f"indexed {report.documents} documents from {report.files} files into {report.passages} passages "
            f"at {settings.index} in {report.seconds:.1f} s"
            + (f" ({report.read} file(s) read, {report.reused} unchanged taken from the old index)" if report.reused else "")
            + (f"; skipped {len(report.skipped)}" if report.skipped else "")
        )


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
    from .records import error_record, read_questions

    if (question is None) == (input is None):
        fail("give a QUESTION or --input FILE.jsonl (one of them)")
    if question is not None:
        _check_question(question)
    if input is not None:
        _input_file(input)
    pipe = _pipeline(settings, with_generator=False)
    errors = 0
    try:
        if input is not None:
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
            if errors:
                raise typer.Exit(1)
            return
        result = pipe.evaluate(question.strip())
    except CragError as exc:
        fail(str(exc))
    if json_out:
        typer.echo(json.dumps(_evaluation_record(result), ensure_ascii=False, indent=1, allow_nan=False))
        return
    out = Console(highlight=False)
    table = Table(title=f"Evaluator {pipe.evaluator.name}", show_lines=False)
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
    sources = [f"[{i}] {item.source}" + (f" ({item.title})" if item.title else "")
               for i, item in enumerate(result.knowledge_used, 1)]  # fmt: skip
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
@app.command()
@setting_options(*ALL_SETTINGS)
def batch(
    ctx: typer.Context,
    input: Annotated[
        Path, typer.Argument(help="JSONL (- = stdin): question, optional id, answers (gold aliases), task.")
    ],
    settings: Settings,
    output: Annotated[
        Optional[Path],
        typer.Option("-o", "--output", help="Write records here (default stdout); OUT.partial while running."),
    ] = None,
    mode: Annotated[str, typer.Option(help="crag, rag, rag+web or no-retrieval.")] = "crag",
    limit: Annotated[Optional[int], typer.Option(min=1, help="Process only the first N lines.")] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Keep the records already written to --output and answer the rest.")
    ] = False,
    retry_errors: Annotated[
        bool, typer.Option("--retry-errors", help="With --resume: also redo the records that ended in an error.")
    ] = False,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an --output file that crag did not write.")
    ] = False,
    workers: Annotated[
        int,
        typer.Option(
            min=1, max=64,
            help="Worker processes, each loading the models once; --threads (default: all cores) is split "
            "between them. Records stay in input order.",
        ),
    ] = 1,
    ray: Annotated[
        bool,
        typer.Option(
            "--ray",
            help="Answer with Ray actors, one per --workers (default 2 with --ray): a local Ray on 127.0.0.1, "
            "or the cluster at --ray-address. Needs pip install 'crag-cli\\[ray]'.",
        ),
    ] = False,
    ray_address: Annotated[
        Optional[str],
        typer.Option(metavar="ADDRESS", help="With --ray (implied): a running Ray cluster, HOST:6379 or ray://HOST:10001."),
    ] = None,
) -> None:
    """Answer every question of a JSONL file; one result record per input line, in input order.

    With -o OUT, records go to OUT.partial as they are done and the file becomes
    OUT when the batch ends; OUT.run.json records the settings, model and index
    that made them. Exit status 1 when any line produced an error record (all
    lines are still written).
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from .batch import (
        BatchOutput, InProcess, RayPool, WorkerPool, load_models, ray_missing, run_batch, run_identity, split_threads,
    )  # fmt: skip
    from .pipeline import MODES
    from .records import read_questions

    if mode not in MODES:
        fail(f"unknown mode {mode!r}: choose from {', '.join(MODES)}")
    _input_file(input)
    if resume and output is None:
        fail("--resume needs -o/--output: the file whose records to keep")
    if retry_errors and not resume:
        fail("--retry-errors goes with --resume")
    ray = ray_address or ("local" if ray else None)
    if ray is not None:
        if ray_missing():
            fail(ray_missing())
        if ctx.get_parameter_source("workers") is not click.core.ParameterSource.COMMANDLINE:
            workers = 2
    out = None
    if output is not None:
        # everything the run reads is an input: the questions, the model file, the config file
        model_file = Path(settings.model) if Path(settings.model).is_file() else None  # not an embedded name
        inputs = [input, model_file, (ctx.obj or {}).get("config") or Path("crag.toml")]
        out = BatchOutput(output, inputs, resume=resume, retry_errors=retry_errors, overwrite=overwrite)
        ctx.call_on_close(out.unlock)  # however the command ends
        try:
            inside = Path(os.path.abspath(output))
            if Path(os.path.abspath(settings.index)) in inside.parents:
                raise CragError(f"the output {output} is inside the index {settings.index}: crag never writes there")
            for note in out.check():
                err.print(f"crag: note: {note}", markup=False)
        except CragError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"cannot write {output}: {exc.strerror or exc}")
    lines = list(read_questions(input))
    if limit is not None:
        lines = lines[:limit]
    if not lines:
        fail(f"{input} holds no question")
    pipe = _pipeline(settings, with_generator=True, retrieve=mode != "no-retrieval")
    try:
        identity = run_identity(settings, mode, pipe.thresholds, getattr(pipe.retriever, "manifest", {}))
        done = out.done_records(lines, identity) if out is not None else []
    except CragError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot read {output}: {exc.strerror or exc}")
    redo = sum(1 for rec in done if rec.get("error")) if retry_errors else 0
    todo = len(lines) - len(done) + redo
    if done:
        err.print(f"resuming after the {len(done)} records already in {output}"
                  + (f"; redoing {redo} error record(s)" if redo else ""), markup=False)  # fmt: skip
    if not todo:
        err.print(f"nothing to do: {output} holds a record for every line", markup=False)
    if ray is not None:
        answerer = RayPool(settings, mode, workers, ray)  # each actor loads the models itself
        err.print(f"batch: Ray at {ray}, {workers} actors, {split_threads(settings.threads, workers)} generation "
                  "thread(s) each", markup=False)  # fmt: skip
    elif workers > 1:
        answerer = WorkerPool(settings, mode, workers)  # each worker loads the models itself
        err.print(f"batch: {workers} workers, {split_threads(settings.threads, workers)} generation thread(s) each",
                  markup=False)  # fmt: skip
    else:
        answerer = InProcess(pipe, mode)
        try:
            if todo:
                load_models(pipe, mode)  # so that no question's timings include loading a model
        except CragError as exc:
            fail(str(exc))
    if out is not None:
        try:
            out.open(identity, done, lines)
        except OSError as exc:
            fail(f"cannot write {output}: {exc.strerror or exc}")
    start = time.perf_counter()
    with Progress(TextColumn("batch"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  TextColumn("{task.description}"), console=err, disable=not err.is_terminal) as progress:  # fmt: skip
        bar = progress.add_task("", total=len(lines))
        step = max(1, len(lines) // 10)

        def on_record(rec: dict, summary) -> None:
            acc = f" acc {summary.correct / summary.graded:.1%}" if summary.graded else ""
            progress.update(bar, completed=summary.total, description=f"{rec.get('action') or ''}{acc}")
            if not err.is_terminal and summary.answered_now and (summary.total % step == 0 or summary.total == len(lines)):
                elapsed = time.perf_counter() - start
                rate = summary.answered_now / elapsed if elapsed > 0 else 0.0
                eta = (len(lines) - summary.total) / rate if rate else 0.0
                errors = f", {summary.errors} error(s)" if summary.errors else ""
                err.print(f"batch: {summary.total}/{len(lines)}{acc}{errors}, {elapsed / summary.answered_now:.2f} "
                          f"s/question, {rate:.3f} questions/s, ETA {eta:.0f} s", markup=False)  # fmt: skip

        try:
            summary = run_batch(answerer, lines, out, done, retry_errors, on_record=on_record)
        except CragError as exc:  # a worker could not load its models: the partial file keeps what was written
            progress.stop()
            fail(str(exc))
        except OSError as exc:  # the disk filled up, the folder went away: the partial file keeps what was written
            progress.stop()
            fail(f"cannot write {output or 'stdout'}: {exc.strerror or exc}")
        except KeyboardInterrupt:
            progress.stop()
            where = f"; the records so far are in {out.partial}: go on with --resume" if out is not None else ""
            err.print(f"crag: interrupted{where}", markup=False)
            raise typer.Exit(130)
    err.print(summary.line(resumed=len(done)), markup=False)
    if out is not None:
        err.print(f"wrote {output} (run manifest: {out.manifest})", markup=False)
    if summary.errors:
        raise typer.Exit(1)


# ----------------------------------------------------------------------------- calibrate
@app.command()
@setting_options(*settings_decl.names_in("index", "retrieval", "evaluator"), "strip_mode")
def calibrate(
    ctx: typer.Context,
    input: Annotated[Path, typer.Argument(help="JSONL questions with gold 'answers'.")],
    settings: Settings,
    correct_precision: Annotated[
        float, typer.Option(min=0.5, max=1.0, help="Share of Correct decisions that must be right.")
    ] = 0.8,
    incorrect_precision: Annotated[
        float, typer.Option(min=0.5, max=1.0, help="Share of Incorrect decisions that must be right.")
    ] = 0.8,
    strip_recall: Annotated[
        float, typer.Option(min=0.01, max=1.0, help="Share of answer-bearing strips the filter must keep.")
    ] = 0.9,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Use only the first N questions.")] = None,
    write: Annotated[
        Optional[Path], typer.Option("--write", help="Write upper, lower, filter_threshold and evaluator to this TOML file.")
    ] = None,
    json_out: JsonOut = False,
) -> None:
    """Choose the upper, lower and strip-filter thresholds for an evaluator from questions with gold answers."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from .calibrate import calibrate as choose, collect
    from .files import Lock, check_output_file, refuse_input
    from .settings import check_config_file, write_config

    _input_file(input)
    if write is not None:  # checked now, not after minutes of scoring
        try:
            check_output_file(write, "config file")
            refuse_input(write, [input])
            ctx.with_resource(Lock(write, "config file"))  # held until the command ends
            if write.exists():
                check_config_file(write)
        except (SettingsError, CragError) as exc:
            fail(str(exc))
    questions = _gold_questions(input, limit)
    pipe = _pipeline(settings, with_generator=False)
    try:
        with Progress(TextColumn("scoring"), BarColumn(), MofNCompleteColumn(), console=err, transient=True,
                      disable=not err.is_terminal) as progress:  # fmt: skip
            bar = progress.add_task("", total=len(questions))
            items, strip_scores, strip_holds = collect(
                questions, pipe.retriever, pipe.evaluator, settings.top_k, settings.strip_mode,
                progress=lambda done: progress.update(bar, completed=done),
            )  # fmt: skip
        result = choose(items, strip_scores, strip_holds, correct_precision, incorrect_precision, strip_recall)
    except (CragError, ValueError) as exc:
        fail(str(exc))
    report = {"evaluator": settings.evaluator, "top_k": settings.top_k, **result.to_dict()}
    if json_out:
        typer.echo(json.dumps(report, indent=1))
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
            write_config(write, {"evaluator": settings.evaluator, "upper": result.upper, "lower": result.lower,
                                 "filter_threshold": result.filter}, inputs=(input,))  # fmt: skip
        except (OSError, SettingsError, CragError) as exc:
            fail(f"cannot write {write}: {exc}")
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
        with Progress(TextColumn("scoring"), BarColumn(), MofNCompleteColumn(), console=err, transient=True,
                      disable=not err.is_terminal) as progress:  # fmt: skip
            bar = progress.add_task("", total=len(questions))
            report = measure(questions, pipe.retriever, pipe.evaluator, pipe.thresholds, settings.top_k,
                             progress=lambda done: progress.update(bar, completed=done))  # fmt: skip
    except (CragError, ValueError) as exc:
        fail(str(exc))
    report.evaluator = settings.evaluator
    report.in_sample = in_sample
    typer.echo(json.dumps(report.to_dict(), indent=1) if json_out else report.text())


# ----------------------------------------------------------------------------- train-evaluator
from .train import TrainConfig  # noqa: E402  (its defaults are the options' defaults: one definition)

@app.command("train-evaluator")
@setting_options("index", "top_k", "model", "n_ctx", "threads", "strip_mode")
def train_evaluator(
    ctx: typer.Context,
    settings: Settings,
    questions: Annotated[
        Optional[Path], typer.Argument(help="JSONL questions with gold 'answers': their top-k passages are labelled.")
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the evaluator to: new, empty, or an evaluator crag trained holding only its own files.")] = Path("crag-evaluator"),
    pairs: Annotated[
        Optional[Path], typer.Option("--pairs", help="JSONL of ready labelled pairs: question, passage, label 0/1 (optional qid, answers).")
    ] = None,
    synthetic: Annotated[
        Optional[int], typer.Option("--synthetic", min=1, help="No labels: the generator writes questions for N sampled passages of the index.")
    ] = None,
    save_synthetic: Annotated[
        Optional[Path], typer.Option("--save-synthetic", help="Also write the synthetic pairs to this new file, for --pairs in later runs.")
    ] = None,
    base: Annotated[
        str, typer.Option(help="Starting point: minilm (embedded all-MiniLM-L6-v2), a local Hugging Face encoder folder, or t5:PATH.")
    ] = "minilm",
    epochs: Annotated[int, typer.Option(min=1, max=100, help="Passes over the training pairs.")] = TrainConfig.epochs,
    learning_rate: Annotated[float, typer.Option(min=1e-7, max=1.0, help="Peak learning rate (linear warm-up and decay).")] = TrainConfig.learning_rate,
    train_batch_size: Annotated[int, typer.Option(min=1, max=1024, help="Pairs per training step.")] = TrainConfig.batch_size,
    train_max_length: Annotated[int, typer.Option(min=16, max=512, help="Tokens kept per (question, passage) pair.")] = TrainConfig.max_length,
    lora_r: Annotated[int, typer.Option(min=1, max=256, help="LoRA rank of the adapter.")] = TrainConfig.lora_r,
    validation: Annotated[float, typer.Option(min=0.01, max=0.9, help="Share of questions held out to pick the best epoch and calibrate the thresholds (of the gold questions, when given: other pairs then only train).")] = TrainConfig.validation,
    train_seed: Annotated[int, typer.Option(min=0, help="Seed of the split, the sampling and the training.")] = TrainConfig.seed,
    topic_guard: Annotated[
        bool, typer.Option("--topic-guard/--no-topic-guard", help="Store a topic guard: passages the base encoder's cosine finds on topic are never discarded (encoder bases only).")
    ] = TrainConfig.topic_guard,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Use only the first N gold questions.")] = None,
) -> None:
    """Train a retrieval evaluator (a cross-encoder with a LoRA adapter) on gold answers, labelled pairs or synthetic questions."""
    from .train import (
        LabelledPair, check_output_folder, pairs_from_gold, read_labelled_pairs,
        split_by_question, synthetic_pairs, train,
    )  # fmt: skip
    from .files import Lock

    if questions is None and pairs is None and synthetic is None:
        fail("give training data: QUESTIONS.jsonl with gold answers, --pairs FILE, or --synthetic N")
    if limit is not None and questions is None:
        fail("--limit counts gold questions: give QUESTIONS.jsonl")
    if save_synthetic is not None:
        if synthetic is None:
            fail("--save-synthetic writes the pairs of --synthetic N: give --synthetic")
        if save_synthetic.exists() or save_synthetic.is_symlink():
            fail(f"--save-synthetic {save_synthetic} exists: crag writes only a new file")
        try:
            from .files import check_output_file

            check_output_file(save_synthetic, "synthetic pairs file")
        except CragError as exc:
            fail(str(exc))
        for name, folder in (("--out", out), ("--index", settings.index)):  # folders crag replaces whole
            if Path(folder).resolve() in save_synthetic.resolve().parents:
                fail(f"--save-synthetic {save_synthetic} is inside {name} {folder}: write it elsewhere")
    for path in (questions, pairs):
        if path is not None:
            _input_file(path)
            if str(path) == "-":
                fail("training data must be a file, not standard input")
    kind, _, arg = base.partition(":")
    if base == "minilm":
        from .evaluator import EMBEDDED_BASE

        base_name, base_folder = EMBEDDED_BASE, None
    else:
        base_folder = Path(arg if kind == "t5" else base)
        if not base_folder.is_dir():
            fail(f"--base {base}: no such model folder")
        base_name = str(base_folder.resolve())
    inputs = [x for x in (questions, pairs, settings.index, base_folder) if x is not None]
    try:
        check_output_folder(out, inputs)  # (an input at --out itself, or inside it, is refused there too)
        ctx.with_resource(Lock(out, "evaluator folder"))  # held until the command ends
        if save_synthetic is not None:
            ctx.with_resource(Lock(save_synthetic, "synthetic pairs file"))
    except CragError as exc:
        fail(str(exc))
    config = TrainConfig(
        base=base_name, epochs=epochs, batch_size=train_batch_size, learning_rate=learning_rate,
        max_length=train_max_length, lora_r=lora_r, lora_alpha=2 * lora_r, validation=validation, seed=train_seed,
        threads=settings.threads, strip_mode=settings.strip_mode, topic_guard=topic_guard,
    )  # fmt: skip
    gen = None
    if synthetic is not None:  # the generator is checked before the index or any model loads
        try:
            from .generator import check_model

            check_model(settings.model)
            gen = builder.generator(settings)
        except CragError as exc:
            fail(str(exc))
    data: list[LabelledPair] = []  # gold-labelled when gold questions are given, else all
    extra: list[LabelledPair] = []  # labelled and synthetic pairs beside gold questions: training only
    notes: list[str] = []
    index = None
    if questions is not None or synthetic is not None:
        from .index import BM25Index

        try:
            index = BM25Index.load(settings.index)
        except CragError as exc:
            fail(str(exc))
    if questions is not None:
        gold = _gold_questions(questions, limit)
        ids = [f"q{i}" for i in range(len(gold))]
        got = pairs_from_gold([(i, q, a) for i, (q, a) in zip(ids, gold)], index, settings.top_k)
        data += got
        notes.append(f"{len(gold)} questions of {questions.name} with gold answers; top-{settings.top_k} passages "
                     f"of the index labelled positive when a gold alias occurs in them as whole words")  # fmt: skip
    if pairs is not None:
        got = []
        for item in read_labelled_pairs(pairs):
            if isinstance(item, str):
                err.print(f"{pairs}: {item}: skipped", markup=False)
            else:
                got.append(item)
        (extra if questions is not None else data).extend(got)
        notes.append(f"{len(got)} labelled pairs of {pairs.name}")
    if synthetic is not None:
        err.print(f"writing questions for {synthetic} passages with {settings.model}", markup=False)
        try:
            got, counts = synthetic_pairs(
                index, gen, synthetic, settings.top_k, seed=train_seed,
                progress=lambda done, total: err.print(f"  synthetic {done}/{total}", markup=False) if done % 10 == 0 or done == total else None,
            )  # fmt: skip
        except CragError as exc:
            fail(str(exc))
        (extra if questions is not None else data).extend(got)
        if save_synthetic is not None:  # before training: generation is the slow part, and training may still fail
            from .train import write_labelled_pairs

            write_labelled_pairs(got, save_synthetic)
            err.print(f"wrote {len(got)} synthetic pairs to {save_synthetic}", markup=False)
        notes.append(f"synthetic: {counts['sampled']} passages sampled, {counts['kept']} questions kept "
                     f"({counts['dropped_unparsed']} unparsed, {counts['dropped_long_answer']} answers too long, "
                     f"{counts['dropped_not_in_passage']} answers not in their passage, {counts['dropped_not_retrieved']} questions "
                     f"that do not retrieve their passage), written by {settings.model}")  # fmt: skip
        err.print(notes[-1], markup=False)
    try:
        if extra:
            notes.append("validation on gold questions only; the other pairs train")
        train_part, val_part = split_by_question(data, validation, train_seed, train_only=extra)
        card = train(train_part, val_part, out, config, data_note="; ".join(notes), log=lambda m: err.print(m, markup=False),
                     inputs=inputs)  # fmt: skip
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
