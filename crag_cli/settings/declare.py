"""How a setting is declared (:func:`setting`), and the error a value that cannot be used raises."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..stages import GROUPS


class SettingsError(ValueError):
    """A setting has a value that cannot be used (bad type or range, unknown key, unreadable file)."""


def setting(
    default: Any,
    help: str,
    group: str,
    flags: tuple[str, ...] = (),
    *,
    answers: bool,
    why: str = "",
    everyday: bool = False,
    **constraints: Any,
) -> Any:
    """Declare one setting: default, help text, group, flags, whether it changes answers, pydantic constraints.

    ``group`` is the stage that uses the setting (and so which commands take
    it). ``answers`` says whether a different value can change what a batch
    record says: those settings are a batch's resume identity
    (:func:`crag_cli.settings.info.answer_settings`). It has no default, so
    that every new setting is classified where it is declared.

    ``help`` is one short line (``--help`` adds its range and default; a test
    keeps the whole under 100 characters); ``why`` is the longer account (how
    it acts, why its default), which the settings table in docs/commands.md
    lists under the table. ``everyday`` settings are the ones ``crag COMMAND
    --help`` shows; the others are expert options, shown by ``--help-all``
    and taken by every command line all the same.
    """
    assert group in GROUPS, group
    extra = {"group": group, "flags": list(flags), "answers": answers, "why": why, "everyday": everyday}
    return Field(default, description=help, json_schema_extra=extra, **constraints)
