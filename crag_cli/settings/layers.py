"""Reading settings from their four layers: flags > ``CRAG_*`` environment variables > ``crag.toml`` > defaults.

Every raw value is validated by :func:`coerce` against its declaration in
:mod:`crag_cli.settings`, so a bad value is one error that names the setting,
the value and where it came from; :func:`write_config` updates a ``crag.toml``
keeping the user's comments.
"""

from __future__ import annotations

import math
import os
import stat
import tomllib
import typing
from pathlib import Path
from typing import Any, Mapping

from pydantic import TypeAdapter, ValidationError

from ..errors import one_line
from ..reader.wire import shown_url
from ..jsonl import has_surrogate
from . import Settings, SettingsError
from .info import choices, field_names, flag, optional, value_type

CONFIG_FILE = "crag.toml"
ENV_PREFIX = "CRAG_"


_METAVAR_WORDS = {int: "an integer", float: "a number", str: "text", Path: "a path"}
_ADAPTERS: dict[str, TypeAdapter] = {}


def _adapter(name: str) -> TypeAdapter:
    if name not in _ADAPTERS:
        info = Settings.model_fields[name]
        _ADAPTERS[name] = TypeAdapter(typing.Annotated[info.annotation, info], config=Settings.model_config)
    return _ADAPTERS[name]


def problem(exc: ValidationError) -> str:
    first = exc.errors(include_url=False)[0]
    msg = first["msg"]
    msg = msg[0].lower() + msg[1:] if msg else msg
    return msg.removeprefix("value error, ")


def coerce(name: str, value: Any, source: str) -> Any:
    """Validate one raw value (a string from the environment or a flag, a TOML value) for setting ``name``.

    Parameters
    ----------
    name : str
        A field of :class:`Settings`.
    value : Any
        The raw value.
    source : str
        Where it came from, for the error message.

    Returns
    -------
    Any
        The value with the field's type, inside its range.

    Raises
    ------
    SettingsError
        When the setting does not exist or the value is not allowed.
    """
    if name not in Settings.model_fields:
        raise SettingsError(f"unknown setting {name!r} in {source}")
    empty = ("", "none") if "none" not in (choices(name) or ()) else ("",)  # --web none is a choice, not empty
    if value is None or (isinstance(value, str) and value.strip().lower() in empty):
        if optional(name):
            return None
        raise SettingsError(_bad(name, value, source, "cannot be empty"))
    if isinstance(value, str):
        value = value.strip()
        if has_surrogate(value):  # bytes that were not UTF-8 on the command line or in the environment
            raise SettingsError(_bad(name, value, source, "not valid UTF-8 text"))
        if value_type(name) is float and not _finite_text(value):
            raise SettingsError(_bad(name, value, source, "input should be a finite number"))
    if isinstance(value, bool) and value_type(name) is not bool:  # TOML true is not the number 1
        raise SettingsError(
            _bad(name, value, source, f"input should be {_METAVAR_WORDS.get(value_type(name), 'text')}")
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise SettingsError(_bad(name, value, source, "input should be a finite number"))
    try:
        return _adapter(name).validate_python(value)
    except ValidationError as exc:
        raise SettingsError(_bad(name, value, source, problem(exc))) from None


def _bad(name: str, value: Any, source: str, problem: str) -> str:
    if isinstance(value, str) and name.endswith("_url"):
        value = shown_url(value)  # a password in a URL is never shown
    return f"bad value {value!r} for {name} (from {source}): {problem}"


def _finite_text(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return True  # not a number at all: the type check says so


def read_config(path: Path) -> dict[str, Any]:
    """Read a ``crag.toml`` file into ``{setting: value}``, every value validated."""
    try:
        data = tomllib.loads(_config_text(Path(path)))
    except FileNotFoundError:
        raise SettingsError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise SettingsError(f"config file {path} is a folder") from None
    except RecursionError:
        raise SettingsError(f"cannot read config file {path}: nested too deeply") from None
    except SettingsError:
        raise
    except (OSError, ValueError, MemoryError) as exc:  # TOMLDecodeError, bad UTF-8, a number past int()'s digit limit
        raise SettingsError(f"cannot read config file {path}: {one_line(exc)}") from None
    source = f"config file {path}"
    return {name: coerce(name, value, source) for name, value in _config_values(data).items()}


def _config_text(path: Path) -> str:
    """The text of config file ``path``, which must be a regular file: a FIFO, a device or a socket is refused
    before it is opened, and one put in the file's place after that check cannot hold the reading (the file is
    opened without blocking and checked again)."""
    _regular(path, os.stat(path).st_mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with open(fd, "rb") as f:
        _regular(path, os.fstat(fd).st_mode)
        return f.read().decode("utf-8-sig")


def _regular(path: Path, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(path)
    if not stat.S_ISREG(mode):
        raise SettingsError(f"config file {path} is not a regular file (a pipe, a device or a socket)")


def _config_values(data: Mapping[str, Any]) -> dict[str, Any]:
    """A parsed ``crag.toml``'s values by setting name: top-level keys, then a ``[crag]`` table's over them."""
    if isinstance(data.get("crag"), dict):
        data = {**{k: v for k, v in data.items() if k != "crag"}, **data["crag"]}
    return {k.replace("-", "_"): v for k, v in data.items()}


def read_env(env: Mapping[str, str]) -> dict[str, Any]:
    """Settings from ``CRAG_*`` environment variables (``CRAG_CONFIG`` and ``CRAG_CACHE_DIR`` are not settings)."""
    out: dict[str, Any] = {}
    names = set(field_names())
    for key, value in env.items():
        if not key.startswith(ENV_PREFIX):
            continue
        name = key[len(ENV_PREFIX) :].lower()
        if name in names:
            out[name] = coerce(name, value, f"environment variable {key}")
    return out


def load_settings(
    flags: Mapping[str, Any] | None = None,
    config: Path | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Settings:
    """Merge the four layers into one validated :class:`Settings`.

    Parameters
    ----------
    flags : mapping, optional
        Values given on the command line; ``None`` values mean "not given".
    config : Path, optional
        An explicit config file (must exist). Otherwise ``CRAG_CONFIG``, otherwise
        ``crag.toml`` in ``cwd`` if it exists.
    env : mapping, optional
        The environment (default ``os.environ``).
    cwd : Path, optional
        Where to look for ``crag.toml`` (default the working directory).

    Raises
    ------
    SettingsError
        A bad value (naming the setting and where it came from), or settings that
        do not work together.
    """
    env = os.environ if env is None else env
    if config is None and env.get(ENV_PREFIX + "CONFIG"):
        config = Path(env[ENV_PREFIX + "CONFIG"])
    if config is None:
        candidate = (cwd or Path.cwd()) / CONFIG_FILE
        config = candidate if os.path.lexists(candidate) else None  # (a folder or a pipe there: said, not ignored)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    if config is not None:
        values.update(read_config(config))
        sources.update(dict.fromkeys(values, f"config file {config}"))
    from_env = read_env(env)
    values.update(from_env)
    sources.update({n: f"environment variable {ENV_PREFIX}{n.upper()}" for n in from_env})
    for name, value in (flags or {}).items():
        if value is not None:
            sources[name] = flag(name).split("/")[0]
            values[name] = coerce(name, value, sources[name])
    try:
        return Settings(**values)
    except ValidationError as exc:
        loc = exc.errors(include_url=False)[0].get("loc") or ()
        if loc and loc[0] in values:
            raise SettingsError(_bad(loc[0], values[loc[0]], sources[loc[0]], problem(exc))) from None
        raise SettingsError(f"settings do not work together: {problem(exc)}") from None


def check_config_file(path: Path) -> None:
    """Raise :class:`SettingsError` unless the existing file ``path`` is a crag config that crag may update.

    That is TOML whose keys are all settings (flat, or in a ``[crag]`` table)
    and that sets at least one: a file of comments only, an empty file, a
    script or another program's TOML is not one.
    """
    try:
        current = read_config(path)
    except SettingsError as exc:
        raise SettingsError(f"{path} is not a crag config file, so it is left alone ({exc})") from None
    if not current:
        raise SettingsError(
            f"{path} holds no crag setting, so it is left alone: crag updates only a config file it wrote "
            "or one with a [crag] table (give a new file name)"
        )


CONFIG_HEADER = "# crag settings: flags > CRAG_* variables > this file > defaults (written by crag calibrate --write)"


def write_config(path: Path, values: Mapping[str, Any], inputs: tuple[Path, ...] = ()) -> None:
    """Set ``values`` in the TOML config at ``path``, keeping everything else in it (comments too).

    A new file gets a header comment and a ``[crag]`` table. An existing file is
    updated only when it is a crag config: TOML whose keys are all settings and
    that holds at least one of them (flat, as earlier crag versions wrote, or in
    a ``[crag]`` table, where the values then go). Any other file (a script, a
    file of comments only, another program's TOML) is left alone. The result is
    written beside ``path`` and renamed into place; a value of ``None`` removes
    the key.

    Raises
    ------
    SettingsError
        When ``path`` is one of ``inputs``, a folder, or a file that is not a crag config.
    """
    import tomlkit

    from ..files import refuse_input, write_text_atomic

    path = Path(path)
    refuse_input(path, inputs)
    if path.exists():
        check_config_file(path)
        try:
            doc = tomlkit.parse(Path(path).read_text(encoding="utf-8-sig"))
        except (OSError, ValueError, RecursionError) as exc:  # tomlkit's ParseError is a ValueError
            raise SettingsError(f"{path} is not a crag config file, so it is left alone ({exc})") from None
        table = doc["crag"] if isinstance(doc.get("crag"), dict) else doc
    else:
        doc = tomlkit.document()
        doc.add(tomlkit.comment(CONFIG_HEADER[2:]))
        table = tomlkit.table()
        doc.add("crag", table)
    for name, value in values.items():
        keys = [k for k in list(table.keys()) if k.replace("-", "_") == name] or [name]
        for extra in keys[1:]:
            del table[extra]
        if value is None:
            table.pop(keys[0], None)
        else:
            table[keys[0]] = str(value) if isinstance(value, Path) else value
    if not path.parent.is_dir():
        raise SettingsError(f"cannot write {path}: no such folder {path.parent}")
    text = tomlkit.dumps(doc)
    merged = _config_values(tomllib.loads(text))  # what the next run reads must be what was meant
    if any(merged.get(k) != (str(v) if isinstance(v, Path) else v) for k, v in values.items() if v is not None):
        raise SettingsError(f"cannot update {path}: its layout hides the new values (a key set twice?); left alone")
    write_text_atomic(path, text)


__all__ = [
    "CONFIG_FILE",
    "ENV_PREFIX",
    "check_config_file",
    "coerce",
    "load_settings",
    "read_config",
    "read_env",
    "write_config",
]
