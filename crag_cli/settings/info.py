"""The declarations of :mod:`crag_cli.settings`, read back: what each setting is and how a user meets it.

From a setting's one declaration (a field of :class:`~crag_cli.settings.Settings`)
this module reads

* its place: the group (stage) it belongs to, whether it changes answers (what
  ``--resume`` compares: :func:`answer_settings`), the values a stage takes
  (:func:`stage_settings`);
* its form: the command-line option (:func:`option_decls`, :func:`flag`), the
  type, choices and range a raw value is read as (:func:`value_type`,
  :func:`choices`, :func:`bounds`), the one line of ``--help``
  (:func:`help_text`) and the settings table of docs/commands.md
  (:func:`markdown_table`).

The declarations themselves, and their validation, stay in :mod:`crag_cli.settings`.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

from . import Settings


def field_names() -> list[str]:
    return list(Settings.model_fields)


def group(name: str) -> str:
    return Settings.model_fields[name].json_schema_extra["group"]  # type: ignore[index]


def changes_answers(name: str) -> bool:
    """Whether the setting was declared as one that can change a record's answer."""
    return bool(Settings.model_fields[name].json_schema_extra["answers"])  # type: ignore[index]


def everyday(name: str) -> bool:
    """Whether ``crag COMMAND --help`` shows the setting's option (the others only ``--help-all``)."""
    return bool(Settings.model_fields[name].json_schema_extra["everyday"])  # type: ignore[index]


def why(name: str) -> str:
    """The longer account of a setting, beyond its one line of help (``""`` when the line says it all)."""
    return str(Settings.model_fields[name].json_schema_extra["why"])  # type: ignore[index]


def answer_settings() -> tuple[str, ...]:
    """The settings declared ``answers=True``, in declaration order: what ``--resume`` compares."""
    return tuple(n for n in Settings.model_fields if changes_answers(n))


def stage_settings(settings: "Settings", *groups: str) -> dict[str, Any]:
    """The values of the settings of ``groups``, by name: what :mod:`crag_cli.assemble` hands a stage.

    A stage takes its settings as keyword arguments named as the settings, so a
    new setting of its group reaches it with no wiring in between.
    """
    return {name: getattr(settings, name) for name in names_in(*groups)}


def names_in(*groups: str) -> tuple[str, ...]:
    """The settings of the given groups, in declaration order."""
    return tuple(n for n in Settings.model_fields if group(n) in groups)


def option_decls(name: str) -> tuple[str, ...]:
    """The command-line option of a setting, as click declares it: ``("-k", "--top-k")``, ``("--refine/--no-refine",)``."""
    declared = Settings.model_fields[name].json_schema_extra.get("flags")  # type: ignore[union-attr]
    if declared:
        return tuple(declared)
    dashed = name.replace("_", "-")
    if value_type(name) is bool:
        return (f"--{dashed}/--no-{dashed}",)
    return (f"--{dashed}",)


def flag(name: str) -> str:
    """The option's long name as a user reads it: ``--top-k``, ``--refine/--no-refine``."""
    return option_decls(name)[-1]


def _annotation(name: str) -> tuple[Any, bool]:
    """The field's type without ``None``, and whether ``None`` is allowed."""
    tp = Settings.model_fields[name].annotation
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        args = typing.get_args(tp)
        return next(a for a in args if a is not type(None)), type(None) in args
    return tp, False


def value_type(name: str) -> Any:
    """The field's base type: ``int | None`` -> ``int``; a ``Literal`` -> ``str``."""
    tp = _annotation(name)[0]
    return str if typing.get_origin(tp) is Literal else tp


def choices(name: str) -> tuple[str, ...] | None:
    tp = _annotation(name)[0]
    return typing.get_args(tp) if typing.get_origin(tp) is Literal else None


def optional(name: str) -> bool:
    return _annotation(name)[1]


def default(name: str) -> Any:
    return Settings.model_fields[name].default


def default_text(name: str) -> str | None:
    """The default as a user writes it (``refine``/``no-refine`` for a switch), ``None`` when there is none."""
    dflt = default(name)
    if dflt is None:
        return None
    if isinstance(dflt, bool):
        return flag(name).split("/")[0 if dflt else 1].lstrip("-")
    if isinstance(dflt, float) and dflt.is_integer():
        return str(int(dflt))
    return str(dflt)


def bounds(name: str) -> str:
    """The allowed range as text (``">= 1, <= 1000"``), or ``""``."""
    parts = []
    for m in Settings.model_fields[name].metadata:
        for attr, sym in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            if getattr(m, attr, None) is not None:
                parts.append(f"{sym} {getattr(m, attr)}")
    return ", ".join(parts)


def _short_bounds(name: str) -> str:
    """The allowed range as ``--help`` shows it: ``1 to 1000`` for a closed range, else as :func:`bounds`."""
    limits = {}
    for m in Settings.model_fields[name].metadata:
        for attr in ("ge", "gt", "le", "lt"):
            if getattr(m, attr, None) is not None:
                limits[attr] = getattr(m, attr)
    if set(limits) == {"ge", "le"}:
        return f"{limits['ge']} to {limits['le']}"
    return bounds(name)


def help_text(name: str) -> str:
    """The option's one line of help: description, range, default (``Passages to retrieve (1 to 1000; default: 10)``)."""
    text = (Settings.model_fields[name].description or "").rstrip(".")
    extra = [_short_bounds(name)] if bounds(name) else []
    if default_text(name) is not None:
        extra.append(f"default: {default_text(name)}")
    return f"{text} ({'; '.join(extra)})" if extra else f"{text}."


def markdown_table() -> str:
    """The table of settings in docs/commands.md, made from the declarations (a test checks it is exactly this).

    Under the table: which settings ``--help`` shows, then each setting's longer account (its ``why``).
    """
    rows = [
        "| flag | setting (`crag.toml` key, `CRAG_*` variable) | default | allowed | what |",
        "|---|---|---|---|---|",
    ]
    for name in field_names():
        decls = option_decls(name)
        shown = default_text(name) or "–"
        allowed = " \\| ".join(choices(name) or ()) or bounds(name)
        rows.append(
            f"| {' '.join(f'`{d}`' for d in decls)} | `{name}` | {shown} | {allowed} | "
            f"{Settings.model_fields[name].description} |"
        )
    shown_by_help = ", ".join(f"`{flag(n).split('/')[0]}`" for n in field_names() if everyday(n))
    rows += [
        "",
        f"`crag COMMAND --help` shows the everyday settings ({shown_by_help}) and the command's own everyday "
        "options; `crag COMMAND --help-all` shows every option, each in its panel. Every option works either way.",
        "",
        "More on the settings whose line above is not the whole story:",
        "",
    ]
    rows += [f"- `{flag(n).split('/')[0]}`: {why(n)}" for n in field_names() if why(n)]
    return "\n".join(rows) + "\n"


__all__ = [
    "field_names",
    "group",
    "names_in",
    "flag",
    "option_decls",
    "help_text",
    "markdown_table",
    "everyday",
    "why",
    "answer_settings",
    "changes_answers",
    "stage_settings",
]
