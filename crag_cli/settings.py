"""Settings: command-line flags > ``CRAG_*`` environment variables > ``crag.toml`` > defaults.

Every field of :class:`Settings` can be set in all four places. The config file
is ``crag.toml`` in the working directory, or the file named by ``--config`` or
``CRAG_CONFIG``; its keys are the field names (``top_k = 5``), optionally inside
a ``[crag]`` table. Environment variables are the upper-cased field names with a
``CRAG_`` prefix (``CRAG_TOP_K=5``).
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

CONFIG_FILE = "crag.toml"
ENV_PREFIX = "CRAG_"


class SettingsError(ValueError):
    """A setting has a value that cannot be used (bad type, unknown key, unreadable file)."""


@dataclass
class Settings:
    """Everything a run of crag can be told. ``None`` means "the evaluator's / task's own default"."""

    index: Path = Path(".crag-index")
    top_k: int = 10
    evaluator: str = "minilm"
    preset: str | None = None
    upper: float | None = None
    lower: float | None = None
    filter_threshold: float | None = None
    strip_mode: str = "excerption"
    strips: int = 5
    batch_size: int = 32
    max_length: int = 512
    model: str = "qwen2.5-0.5b"
    task: str = "popqa"
    max_tokens: int | None = None
    n_ctx: int = 4096
    temperature: float = 0.0
    seed: int = 0
    threads: int | None = None
    refine: bool = True
    web: str = "none"
    searxng_url: str | None = None
    rewrite: bool = True
    web_results: int = 5
    wiki_first: bool = False
    allow_private: bool = False
    fetch_timeout: float = 10.0
    max_page_bytes: int = 2_000_000
    cache: bool = True
    cache_ttl: float = 7 * 24 * 3600.0

    def replace(self, **changes: Any) -> "Settings":
        return dataclasses.replace(self, **changes)


def field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(Settings)]


def _hints() -> dict[str, Any]:
    return typing.get_type_hints(Settings)


def _base_type(tp: Any) -> Any:
    """``int | None`` -> ``int``; plain types unchanged."""
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0]
    return tp


def _optional(tp: Any) -> bool:
    return (isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union) and type(
        None
    ) in typing.get_args(tp)


def coerce(name: str, value: Any, source: str) -> Any:
    """Convert ``value`` (a string from the environment, or a TOML value) to the type of field ``name``.

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
        The value with the field's type.

    Raises
    ------
    SettingsError
        When the field does not exist or the value does not convert.
    """
    hints = _hints()
    if name not in hints:
        raise SettingsError(f"unknown setting {name!r} in {source}")
    tp = hints[name]
    base = _base_type(tp)
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        if _optional(tp):
            return None
        raise SettingsError(f"setting {name!r} in {source} cannot be empty")
    try:
        if base is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if base is int:
            if isinstance(value, bool):
                raise ValueError(value)
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if base is float:
            if isinstance(value, bool):
                raise ValueError(value)
            return float(value)
        if base is Path:
            return Path(str(value)).expanduser()
        return str(value)
    except (TypeError, ValueError):
        raise SettingsError(
            f"setting {name!r} in {source} must be {getattr(base, '__name__', base)}, got {value!r}"
        ) from None


def read_config(path: Path) -> dict[str, Any]:
    """Read a ``crag.toml`` file into ``{field: value}`` with values of the fields' types."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SettingsError(f"config file not found: {path}") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"cannot read config file {path}: {exc}") from None
    if isinstance(data.get("crag"), dict):
        data = {**{k: v for k, v in data.items() if k != "crag"}, **data["crag"]}
    source = f"config file {path}"
    return {k.replace("-", "_"): coerce(k.replace("-", "_"), v, source) for k, v in data.items()}


def read_env(env: Mapping[str, str]) -> dict[str, Any]:
    """Settings from ``CRAG_*`` environment variables (``CRAG_CONFIG`` is not a setting)."""
    out: dict[str, Any] = {}
    names = set(field_names())
    for key, value in env.items():
        if not key.startswith(ENV_PREFIX) or key == ENV_PREFIX + "CONFIG":
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
    """Merge the four layers into one :class:`Settings`.

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
    """
    env = os.environ if env is None else env
    if config is None and env.get(ENV_PREFIX + "CONFIG"):
        config = Path(env[ENV_PREFIX + "CONFIG"])
    if config is None:
        candidate = (cwd or Path.cwd()) / CONFIG_FILE
        config = candidate if candidate.is_file() else None
    values: dict[str, Any] = {}
    if config is not None:
        values.update(read_config(config))
    values.update(read_env(env))
    for name, value in (flags or {}).items():
        if value is not None:
            values[name] = coerce(name, value, f"--{name.replace('_', '-')}")
    return Settings(**values)


def write_config(path: Path, values: Mapping[str, Any]) -> None:
    """Set ``values`` in the TOML config at ``path``, keeping its other keys.

    Written as flat ``key = value`` lines (only the scalar types Settings uses).
    """
    current: dict[str, Any] = {}
    if path.exists():
        current = {k: v for k, v in read_config(path).items()}
    current.update(values)
    lines = []
    for key in sorted(current):
        value = current[key]
        if value is None:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, float)):
            text = repr(value)
        else:
            text = '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
        lines.append(f"{key} = {text}")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(path)


__all__ = [
    "Settings",
    "SettingsError",
    "load_settings",
    "read_config",
    "write_config",
    "coerce",
    "field_names",
    "CONFIG_FILE",
]
