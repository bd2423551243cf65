"""The typer app, its error handling, the options made from the settings, and helpers every command uses."""

from __future__ import annotations

import copy
import functools
import inspect
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from typer.core import TyperCommand, TyperGroup

try:  # typer >= 0.2x carries its own copy of click
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - older typer uses click itself
    from click import exceptions as click_exceptions

from ..version import __version__
from .. import assemble as builder
from ..settings import info
from ..errors import CragError, one_line, os_problem, shorten
from ..settings.layers import load_settings
from ..settings import Settings, SettingsError
from ..stages import GROUPS


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
            sys.stderr.write(f"crag: error: {one_line(_lower_first(exc.format_message()))}{hint}\n")
            code = 1
        except (typer.Abort, KeyboardInterrupt):
            sys.stderr.write("crag: interrupted\n")
            code = 130
        except OSError as exc:  # a path the system refuses (too long, a loop, not a folder) that no check caught
            sys.stderr.write(f"crag: error: {os_problem(exc)}\n")
            code = 1
        except RuntimeError as exc:  # Python 3.11's Path.resolve() reports a symbolic link loop so
            if not str(exc).startswith("Symlink loop"):
                raise
            sys.stderr.write(f"crag: error: {one_line(exc)}\n")
            code = 1
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


class CragCommand(TyperCommand):
    """A crag command: its flags show no type in the help (typer would print ``<bool>`` as if they took a value).

    Expert options are declared ``hidden=True`` (a setting not declared
    ``everyday``, a command's own option marked so): click leaves a hidden
    option out of ``--help`` but parses it like any other, so it works on every
    command line. ``--help-all`` (see :func:`setting_options`) shows them.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            _no_flag_type(param)

    def get_help_option(self, ctx):  # noqa: D102 - click's --help, a flag like the others
        option = super().get_help_option(ctx)
        if option is not None:
            _no_flag_type(option)
        return option


def _no_flag_type(param: Any) -> None:
    if getattr(param, "is_flag", False) and param.metavar is None:
        param.metavar = ""


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
    err.print(f"crag: warning: {shorten(message)}", markup=False, highlight=False)


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
    "action": "Action thresholds",
    "refine": "Refinement",
    "reader": "Reader",
    "web": "Web correction",
}
_METAVARS = {int: "INTEGER", float: "NUMBER", Path: "PATH", str: "TEXT"}


def _option(name: str) -> Any:
    """The typer annotation of one setting's option (values reach pydantic as given, so every source is checked alike).

    A setting not declared ``everyday`` is an expert option: hidden from ``--help``, shown by ``--help-all``.
    """
    kind = info.value_type(name)
    common = {
        "help": info.help_text(name),
        "rich_help_panel": PANELS[info.group(name)],
        "show_default": False,
        "hidden": not info.everyday(name),
    }
    if kind is bool:
        return Annotated[Optional[bool], typer.Option(*info.option_decls(name), **common)]
    options = info.choices(name)
    metavar = "|".join(options) if options else _METAVARS.get(kind, "TEXT")
    return Annotated[Optional[str], typer.Option(*info.option_decls(name), metavar=metavar, **common)]


def _show_all(ctx: typer.Context, value: bool) -> None:
    """``--help-all``: the command's help with its expert (hidden) options shown too, each in its panel.

    An eager flag, as ``--help`` is: click runs its callback before the other
    parameters are checked (a missing QUESTION does not stop it). It prints the
    help of a copy of the command whose parameters are copies with ``hidden``
    off, so the one help formatter draws both helps and the command itself is
    left as it was.
    """
    if not value or ctx.resilient_parsing:
        return
    full = copy.copy(ctx.command)
    full.params = [copy.copy(p) for p in ctx.command.params]
    for param in full.params:
        param.hidden = False
    typer.echo(full.get_help(ctx), color=ctx.color)
    raise typer.Exit()


HelpAllOpt = Annotated[
    bool,
    typer.Option(
        "--help-all", is_eager=True, callback=_show_all, help="Show every option, the expert ones too, and exit."
    ),
]


def setting_options(*names: str):
    """Give a command one option per named setting; it receives the merged, validated ``settings``.

    The command declares ``ctx: typer.Context`` and ``settings: Settings``; the
    options are added to its signature, and their values merged with the
    environment, the config file and the defaults before it runs. Every such
    command also gets ``--help-all`` (:func:`_show_all`; on ``crag index``,
    which has no expert option, it shows what ``--help`` does); it is
    registered with ``cls=CragCommand``.
    """

    def decorate(fn):
        sig = inspect.signature(fn, eval_str=True)
        own = [p for p in sig.parameters.values() if p.name != "settings"]
        added = [
            inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=_option(n)) for n in names
        ]
        added.append(
            inspect.Parameter("help_all", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=HelpAllOpt)
        )

        @functools.wraps(fn)
        def command(*args, **kwargs):
            kwargs.pop("help_all", None)
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


EVAL_SETTINGS = info.names_in("index", "retrieval", "evaluator", "thresholds", "action")
ALL_SETTINGS = info.names_in(*GROUPS)
JsonOut = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text.")]


def _pipeline(settings: Settings, with_reader: bool, retrieve: bool = True):
    try:
        return builder.pipeline(settings, with_reader=with_reader, retrieve=retrieve)
    except CragError as exc:
        fail(str(exc))


def _gold_questions(path: Path, limit: int | None) -> list[tuple[str, list[str]]]:
    """(question, gold aliases) of a JSONL file's first ``limit`` usable lines; the others are named on stderr."""
    from ..app import gold_questions

    try:
        return gold_questions(path, limit, note=lambda line: err.print(line, markup=False))
    except CragError as exc:
        fail(str(exc))


def _in_sample(questions: list[str], evaluator: str) -> dict[str, int] | None:
    """How many of ``questions`` trained / calibrated ``evaluator`` (``None``: it does not say)."""
    from ..train import in_sample

    try:
        return in_sample(questions, evaluator)
    except CragError as exc:
        fail(str(exc))


def _input_file(path: Path) -> None:
    from ..app import check_input_file

    try:
        check_input_file(path)
    except CragError as exc:
        fail(str(exc))
