"""``crag index``: a folder of documents into a BM25 and dense index."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..documents.types import OWN_SUFFIXES
from ..errors import CragError
from ..settings import Settings
from .base import CragCommand, app, err, fail, setting_options

# crag index's own options
DocsArg = Annotated[
    Path, typer.Argument(help=f"Folder (or file) of documents: {' '.join(OWN_SUFFIXES)} and the plugins' types.")
]
PassageWordsOpt = Annotated[int, typer.Option(min=10, help="Words per passage (split at sentence ends).")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Read and index every file again, even unchanged ones.")]
DenseOpt = Annotated[
    bool,
    typer.Option("--dense/--no-dense", help="Also embed every passage for the dense retriever (all-MiniLM-L6-v2)."),
]
IncludeHiddenOpt = Annotated[
    bool, typer.Option("--include-hidden", help="Also read hidden files and folders (.git, .venv, ...).")
]


@app.command(cls=CragCommand)
@setting_options("index")
def index(
    ctx: typer.Context,
    docs: DocsArg,
    settings: Settings,
    passage_words: PassageWordsOpt = 100,
    force: ForceOpt = False,
    include_hidden: IncludeHiddenOpt = False,
    dense: DenseOpt = True,
) -> None:
    """Build a BM25 and dense index of a folder of documents; a rebuild reads only new and changed files.

    The index folder must be new, empty or a crag index: crag never replaces a
    folder it did not write, nor the documents folder or one of its parents.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from ..index import build_index

    if not docs.exists():
        fail(f"no such folder: {docs}")
    encoder = None
    if dense:
        from ..index.dense import MiniLMEncoder

        encoder = MiniLMEncoder()
        try:
            encoder.check()
        except ValueError as exc:
            fail(str(exc))
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
                encoder=encoder,
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
    if report.dense is not None:
        lines.append(f"embedded {report.embedded} passage(s) with {report.dense} for the dense retriever")
    lines.append(
        f"indexed {report.documents} documents from {report.files} files into {report.passages} passages "
        f"at {index} in {report.seconds:.1f} s{reused}{skipped}"
    )
    return lines


# ----------------------------------------------------------------------------- evaluate
