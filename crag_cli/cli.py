"""The ``crag`` command: a thin typer layer over the library. Data on stdout, everything else on stderr."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from . import __version__
from . import build as builder
from .errors import CragError
from .settings import Settings, SettingsError, load_settings

app = typer.Typer(
    name="crag",
    help="Corrective retrieval-augmented generation (CRAG, Yan et al. 2024) over a local BM25 index.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: int = 1) -> None:
    """One clear line on stderr, then exit non-zero."""
    err.print(f"crag: error: {message}", markup=False, highlight=False)
    raise typer.Exit(code)


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


# ----------------------------------------------------------------------------- shared options
IndexOpt = Annotated[Optional[Path], typer.Option("--index", help="Index directory. (default: .crag-index)")]
TopK = Annotated[Optional[int], typer.Option("-k", "--top-k", help="Passages to retrieve. (default: 10)")]
EvaluatorOpt = Annotated[
    Optional[str], typer.Option("--evaluator", help="minilm (embedded), minilm:PATH or t5:PATH. (default: minilm)")
]
Preset = Annotated[Optional[str], typer.Option("--preset", help="Paper thresholds: popqa, pubqa, arc or bio.")]
Upper = Annotated[Optional[float], typer.Option("--upper", help="Upper threshold: Correct if any score >= it.")]
Lower = Annotated[Optional[float], typer.Option("--lower", help="Lower threshold: Incorrect if all scores < it.")]
Filter = Annotated[Optional[float], typer.Option("--filter-threshold", help="Strips scoring below it are dropped.")]
BatchSize = Annotated[Optional[int], typer.Option("--batch-size", help="Evaluator pairs per forward pass. (default: 32)")]
StripMode = Annotated[
    Optional[str], typer.Option("--strip-mode", help="excerption, fixed_num or selection. (default: excerption)")
]
Strips = Annotated[Optional[int], typer.Option("--strips", help="Strips kept by refinement. (default: 5)")]
Model = Annotated[
    Optional[str], typer.Option("--model", help="qwen2.5-0.5b, smollm2-135m or a .gguf path. (default: qwen2.5-0.5b)")
]
Task = Annotated[Optional[str], typer.Option("--task", help="Prompt: popqa, bio, pubqa or arc. (default: popqa)")]
MaxTokens = Annotated[Optional[int], typer.Option("--max-tokens", help="Tokens to generate. (default: per task)")]
NCtx = Annotated[Optional[int], typer.Option("--n-ctx", help="Model context window. (default: 4096)")]
Temperature = Annotated[Optional[float], typer.Option("--temperature", help="0 = greedy. (default: 0)")]
Seed = Annotated[Optional[int], typer.Option("--seed", help="Sampling seed. (default: 0)")]
Threads = Annotated[Optional[int], typer.Option("--threads", help="CPU threads for generation.")]
RefineOpt = Annotated[
    Optional[bool], typer.Option("--refine/--no-refine", help="Refine knowledge into strips. (default: refine)")
]
Web = Annotated[Optional[str], typer.Option("--web", help="Web search: none, ddgs or searxng. (default: none)")]
SearxUrl = Annotated[Optional[str], typer.Option("--searxng-url", help="Base URL of a SearxNG instance.")]
Rewrite = Annotated[
    Optional[bool], typer.Option("--rewrite/--no-rewrite", help="Rewrite the question into keywords. (default: rewrite)")
]
WebResults = Annotated[Optional[int], typer.Option("--web-results", help="Result pages to fetch. (default: 5)")]
WikiFirst = Annotated[Optional[bool], typer.Option("--wiki-first/--no-wiki-first", help="Wikipedia results first.")]
AllowPrivate = Annotated[
    Optional[bool],
    typer.Option("--allow-private/--no-allow-private", help="Allow fetching loopback/private addresses."),
]
Cache = Annotated[Optional[bool], typer.Option("--cache/--no-cache", help="Use the on-disk web cache. (default: cache)")]
JsonOut = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text.")]

EVAL_KEYS = ("index", "top_k", "evaluator", "preset", "upper", "lower", "filter_threshold", "batch_size")


def _settings(ctx: typer.Context, flags: dict[str, Any]) -> Settings:
    try:
        settings = load_settings(flags, config=(ctx.obj or {}).get("config"))
        builder.check(settings)
        return settings
    except (SettingsError, CragError) as exc:
        fail(str(exc))
        raise  # unreachable


def _flags(values: dict[str, Any], keys) -> dict[str, Any]:
    return {k: values[k] for k in keys if k in values}


def _pipeline(settings: Settings, with_generator: bool):
    try:
        return builder.pipeline(settings, with_generator=with_generator)
    except CragError as exc:
        fail(str(exc))


# ----------------------------------------------------------------------------- index
@app.command()
def index(
    ctx: typer.Context,
    docs: Annotated[Path, typer.Argument(help="Folder (or file) of .txt, .md, .html/.htm and .jsonl documents.")],
    index: IndexOpt = None,
    passage_words: Annotated[int, typer.Option(help="Words per passage (split at sentence ends).")] = 100,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if nothing changed.")] = False,
) -> None:
    """Build a BM25 index of a folder of documents (skipped when the folder is unchanged)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from .index import build_index

    settings = _settings(ctx, {"index": index})
    if not docs.exists():
        fail(f"no such folder: {docs}")
    if passage_words < 10:
        fail("--passage-words must be at least 10")
    with Progress(TextColumn("reading"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                  console=err, transient=True, disable=not err.is_terminal) as progress:  # fmt: skip
        task = progress.add_task("", total=None)

        def on_file(path: str, done: int, total: int) -> None:
            progress.update(task, completed=done, total=total, description=path[-60:])

        try:
            report = build_index(docs, settings.index, passage_words=passage_words, force=force, progress=on_file)
        except CragError as exc:
            report, problem = None, str(exc)
    if report is None:
        fail(problem)
    for path, reason in report.skipped:
        err.print(f"skipped {path}: {reason}", markup=False)
    if report.status == "unchanged":
        err.print(f"index {settings.index} is up to date ({report.passages} passages from {report.files} files); nothing to do")
    else:
        err.print(
            f"indexed {report.documents} documents from {report.files} files into {report.passages} passages "
            f"at {settings.index} in {report.seconds:.1f} s"
            + (f"; skipped {len(report.skipped)}" if report.skipped else "")
        )


# ----------------------------------------------------------------------------- evaluate
def _evaluation_record(result) -> dict:
    from .records import to_record

    rec = to_record(result)
    return {k: rec[k] for k in ("id", "question", "action", "thresholds", "scores", "timings")}


@app.command()
def evaluate(
    ctx: typer.Context,
    question: Annotated[Optional[str], typer.Argument(help="The question (or use --input).")] = None,
    input: Annotated[
        Optional[Path], typer.Option("--input", help="JSONL file of questions, one JSON line each (- = stdin).")
    ] = None,
    index: IndexOpt = None,
    top_k: TopK = None,
    evaluator: EvaluatorOpt = None,
    preset: Preset = None,
    upper: Upper = None,
    lower: Lower = None,
    filter_threshold: Filter = None,
    batch_size: BatchSize = None,
    json_out: JsonOut = False,
) -> None:
    """Retrieve, score every passage with the evaluator, and show the action it triggers."""
    from .records import error_record, read_questions

    if (question is None) == (input is None):
        fail("give a QUESTION or --input FILE.jsonl (one of them)")
    settings = _settings(ctx, _flags(locals(), EVAL_KEYS))
    if question is not None and not question.strip():
        fail("the question is empty")
    if input is not None and str(input) != "-" and not input.is_file():
        fail(f"no such file: {input}")
    pipe = _pipeline(settings, with_generator=False)
    try:
        if input is not None:
            for q in read_questions(input):
                if q.error:
                    rec = error_record(q.id, q.question, q.error, q.line)
                else:
                    result = pipe.evaluate(q.question)
                    result.id = q.id
                    rec = _evaluation_record(result)
                sys.stdout.write(json.dumps(rec, ensure_ascii=False) + "\n")
                sys.stdout.flush()
            return
        result = pipe.evaluate(question.strip())
    except CragError as exc:
        fail(str(exc))
    if json_out:
        typer.echo(json.dumps(_evaluation_record(result), ensure_ascii=False, indent=1))
        return
    out = Console(highlight=False)
    table = Table(title=f"Evaluator {pipe.evaluator.name}", show_lines=False)
    for col in ("rank", "bm25", "score", "title", "snippet"):
        table.add_column(col, overflow="fold", no_wrap=col in ("rank", "bm25", "score"))
    th = result.thresholds
    for hit, score in zip(result.hits, result.scores):
        mark = "+" if score >= th.upper else ("-" if score < th.lower else "?")
        snippet = hit.passage.text[:90] + ("..." if len(hit.passage.text) > 90 else "")
        table.add_row(str(hit.rank), f"{hit.score:.2f}", f"{score:+.3f} {mark}", hit.passage.title[:30], snippet)
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
    lines = [f"[{i}] {item.text}" for i, item in enumerate(result.knowledge_used, 1)]
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


ASK_KEYS = EVAL_KEYS + (
    "strip_mode", "strips", "model", "task", "max_tokens", "n_ctx", "temperature", "seed", "threads", "refine",
    "web", "searxng_url", "rewrite", "web_results", "wiki_first", "allow_private", "cache",
)  # fmt: skip


@app.command()
def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="The question.")],
    index: IndexOpt = None,
    top_k: TopK = None,
    evaluator: EvaluatorOpt = None,
    preset: Preset = None,
    upper: Upper = None,
    lower: Lower = None,
    filter_threshold: Filter = None,
    batch_size: BatchSize = None,
    strip_mode: StripMode = None,
    strips: Strips = None,
    model: Model = None,
    task: Task = None,
    max_tokens: MaxTokens = None,
    n_ctx: NCtx = None,
    temperature: Temperature = None,
    seed: Seed = None,
    threads: Threads = None,
    refine: RefineOpt = None,
    web: Web = None,
    searxng_url: SearxUrl = None,
    rewrite: Rewrite = None,
    web_results: WebResults = None,
    wiki_first: WikiFirst = None,
    allow_private: AllowPrivate = None,
    cache: Cache = None,
    json_out: JsonOut = False,
) -> None:
    """Answer one question with the whole pipeline; the answer streams to stdout."""
    from .records import to_record

    if not question.strip():
        fail("the question is empty")
    settings = _settings(ctx, _flags(locals(), ASK_KEYS))
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
        typer.echo(json.dumps(to_record(result), ensure_ascii=False, indent=1))
    else:
        sys.stdout.write("\n")
        sys.stdout.flush()
    if result.error:
        fail(result.error)


# ----------------------------------------------------------------------------- batch
@app.command()
def batch(
    ctx: typer.Context,
    input: Annotated[
        Path, typer.Argument(help="JSONL (- = stdin): question, optional id, answers (gold aliases), task.")
    ],
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write records here (default stdout).")] = None,
    mode: Annotated[str, typer.Option(help="crag, rag, rag+web or no-retrieval.")] = "crag",
    index: IndexOpt = None,
    top_k: TopK = None,
    evaluator: EvaluatorOpt = None,
    preset: Preset = None,
    upper: Upper = None,
    lower: Lower = None,
    filter_threshold: Filter = None,
    batch_size: BatchSize = None,
    strip_mode: StripMode = None,
    strips: Strips = None,
    model: Model = None,
    task: Task = None,
    max_tokens: MaxTokens = None,
    n_ctx: NCtx = None,
    temperature: Temperature = None,
    seed: Seed = None,
    threads: Threads = None,
    refine: RefineOpt = None,
    web: Web = None,
    searxng_url: SearxUrl = None,
    rewrite: Rewrite = None,
    web_results: WebResults = None,
    wiki_first: WikiFirst = None,
    allow_private: AllowPrivate = None,
    cache: Cache = None,
    limit: Annotated[Optional[int], typer.Option(help="Process only the first N lines.")] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Keep the records already in --output and answer only the lines after them.")
    ] = False,
) -> None:
    """Answer every question of a JSONL file; one result record per input line, written as soon as it is done.

    Exit status 1 when any line produced an error record (all lines are still written).
    """
    import jsonlines
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from .pipeline import MODES
    from .records import completed_records, error_record, read_questions, to_record

    if mode not in MODES:
        fail(f"unknown mode {mode!r}: choose from {', '.join(MODES)}")
    if str(input) != "-" and not input.is_file():
        fail(f"no such file: {input}")
    if resume and output is None:
        fail("--resume needs -o/--output: the file whose records to keep")
    settings = _settings(ctx, _flags(locals(), ASK_KEYS))
    lines = list(read_questions(input))
    if limit is not None:
        lines = lines[:limit]
    if not lines:
        fail(f"{input} holds no question")
    try:
        done = completed_records(output, lines) if resume else []
    except CragError as exc:
        fail(str(exc))
    todo = lines[len(done):]
    if done:
        err.print(f"resuming after the {len(done)} records already in {output}", markup=False)
    if not todo:
        err.print(f"nothing to do: {output} holds a record for every line", markup=False)
    pipe = _pipeline(settings, with_generator=True)
    try:
        if todo:
            pipe.generator.load()
        if todo and mode in ("crag", "rag+web"):
            pipe.evaluator.load()  # so that no question's timings include loading a model
            if pipe.web is not None and getattr(pipe.web, "generator", None) is not None:
                pipe.web.generator.load()
    except CragError as exc:
        fail(str(exc))
    sink = open(output, "a" if resume else "w", encoding="utf-8") if output else sys.stdout
    writer = jsonlines.Writer(sink, flush=True, compact=True)
    actions: Counter = Counter()
    graded = correct = errors = 0

    def count(rec: dict) -> None:
        nonlocal graded, correct, errors
        actions[rec.get("action") or ("error" if rec.get("error") else mode)] += 1
        errors += bool(rec.get("error"))
        if rec.get("correct") is not None:
            graded += 1
            correct += bool(rec["correct"])

    for rec in done:
        count(rec)
    start = time.perf_counter()
    try:
        with Progress(TextColumn("batch"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      TextColumn("{task.description}"), console=err, disable=not err.is_terminal) as progress:  # fmt: skip
            bar = progress.add_task("", total=len(lines), completed=len(done))
            for q in todo:
                if q.error:
                    rec = error_record(q.id, q.question, q.error, q.line)
                else:
                    try:
                        rec = to_record(pipe.run(q.question, id=q.id, answers=q.answers, task=q.task, mode=mode))
                    except Exception as exc:  # one bad question never stops the batch
                        rec = error_record(q.id, q.question, f"{type(exc).__name__}: {exc}", q.line)
                writer.write(rec)
                count(rec)
                acc = f" acc {correct / graded:.1%}" if graded else ""
                progress.update(bar, advance=1, description=f"{rec.get('action') or ''}{acc}")
                finished = int(progress.tasks[0].completed)
                if not err.is_terminal and (finished % max(1, len(lines) // 10) == 0 or finished == len(lines)):
                    rate = (time.perf_counter() - start) / (finished - len(done))
                    err.print(f"batch: {finished}/{len(lines)}{acc}, {rate:.2f} s/question", markup=False)
    finally:
        writer.close()
        if output:
            sink.close()
    elapsed = time.perf_counter() - start
    parts = [f"{len(lines)} questions", ", ".join(f"{k}: {v}" for k, v in sorted(actions.items()))]
    if graded:
        parts.append(f"accuracy {correct}/{graded} = {correct / graded:.1%}")
    if todo:
        parts.append(f"{elapsed / len(todo):.2f} s/question" + (f" (the {len(todo)} answered now)" if done else ""))
    if errors:
        parts.append(f"{errors} error record(s)")
    err.print("summary: " + "; ".join(parts), markup=False)
    if errors:
        raise typer.Exit(1)


# ----------------------------------------------------------------------------- calibrate
@app.command()
def calibrate(
    ctx: typer.Context,
    input: Annotated[Path, typer.Argument(help="JSONL questions with gold 'answers'.")],
    index: IndexOpt = None,
    top_k: TopK = None,
    evaluator: EvaluatorOpt = None,
    batch_size: BatchSize = None,
    strip_mode: StripMode = None,
    correct_precision: Annotated[float, typer.Option(help="Share of Correct decisions that must be right.")] = 0.8,
    incorrect_precision: Annotated[float, typer.Option(help="Share of Incorrect decisions that must be right.")] = 0.8,
    strip_recall: Annotated[float, typer.Option(help="Share of answer-bearing strips the filter must keep.")] = 0.9,
    limit: Annotated[Optional[int], typer.Option(help="Use only the first N questions.")] = None,
    write: Annotated[
        Optional[Path], typer.Option("--write", help="Write upper, lower, filter_threshold and evaluator to this TOML file.")
    ] = None,
    json_out: JsonOut = False,
) -> None:
    """Choose the upper, lower and strip-filter thresholds for an evaluator from questions with gold answers."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from .calibrate import calibrate as choose, collect
    from .records import read_questions
    from .settings import write_config

    if not input.is_file():
        fail(f"no such file: {input}")
    if not (0.5 <= correct_precision <= 1 and 0.5 <= incorrect_precision <= 1 and 0 < strip_recall <= 1):
        fail("--correct-precision and --incorrect-precision must be in [0.5, 1], --strip-recall in (0, 1]")
    settings = _settings(ctx, _flags(locals(), ("index", "top_k", "evaluator", "batch_size", "strip_mode")))
    questions, bad = [], 0
    for q in read_questions(input):
        if q.error or not q.answers:
            bad += 1
            err.print(f"line {q.line}: skipped: {q.error or 'no gold answers'}", markup=False)
            continue
        questions.append((q.question, q.answers))
    questions = questions[:limit] if limit is not None else questions
    if not questions:
        fail(f"{input} holds no question with gold answers")
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
                                 "filter_threshold": result.filter})  # fmt: skip
        except (OSError, SettingsError) as exc:
            fail(f"cannot write {write}: {exc}")
        err.print(f"wrote thresholds to {write}", markup=False)


def run() -> None:  # console-script entry point
    app()
