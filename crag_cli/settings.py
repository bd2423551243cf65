"""Settings: one declaration each, read from flags > ``CRAG_*`` environment variables > ``crag.toml`` > defaults.

Every setting is one field of :class:`Settings`: its type, allowed range or
choices, default and help text. From that one declaration follow

* the command-line option (``--top-k``; :func:`crag_cli.cli` generates it),
* the environment variable (``CRAG_TOP_K``),
* the config-file key (``top_k = 5`` in ``crag.toml``, optionally under ``[crag]``),
* the validation, which is the same whichever of the four places a value came
  from: a bad value is one error that names the setting, the value and where it
  came from.

Types, ranges and choices are checked by pydantic (one ``TypeAdapter`` per
field, so that an error can name the layer its value came from); the four
layers are merged here, in a few lines, for the same reason.
"""

from __future__ import annotations

import math
import os
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, Literal, Mapping, Optional
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from .actions import PRESETS
from .errors import one_line
from .jsonl import has_surrogate
from .models import DEFAULT_MODEL, EMBEDDED, embedded
from .prompts import TASKS
from .refine import RANKINGS, STRIP_MODES

CONFIG_FILE = "crag.toml"
ENV_PREFIX = "CRAG_"
WEB_BACKENDS = ("none", "ddgs", "searxng")

# Which settings each command takes, by group (the CLI adds one option per setting).
GROUPS = ("index", "retrieval", "evaluator", "thresholds", "refine", "generator", "web")


class SettingsError(ValueError):
    """A setting has a value that cannot be used (bad type or range, unknown key, unreadable file)."""


def setting(
    default: Any, help: str, group: str, flags: tuple[str, ...] = (), *, answers: bool, **constraints: Any
) -> Any:
    """Declare one setting: default, help text, group, flags, whether it changes answers, pydantic constraints.

    ``group`` is the stage that uses the setting (and so which commands take
    it). ``answers`` says whether a different value can change what a batch
    record says: those settings are a batch's resume identity
    (:func:`answer_settings`). It has no default, so that every new setting is
    classified where it is declared.
    """
    assert group in GROUPS, group
    extra = {"group": group, "flags": list(flags), "answers": answers}
    return Field(default, description=help, json_schema_extra=extra, **constraints)


class Settings(BaseModel):
    """Everything a run of crag can be told. ``None`` means "the evaluator's / task's own default"."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False, frozen=False)

    index: Path = setting(Path(".crag-index"), "Index directory.", "index", answers=True)
    top_k: int = setting(10, "Passages to retrieve.", "retrieval", ("-k", "--top-k"), answers=True, ge=1, le=1000)
    evaluator: str = setting(
        "minilm",
        "Retrieval evaluator: minilm (embedded, trained), minilm:PATH or PATH (made by crag train-evaluator), "
        "t5:PATH, or minilm-cosine (the untrained cosine, for comparison).",
        "evaluator",
        answers=True,
    )
    batch_size: int = setting(10, "Evaluator pairs per forward pass.", "evaluator", answers=False, ge=1, le=4096)
    max_length: int = setting(
        512,
        "Evaluator input tokens kept per pair (MiniLM stops at 256, its training length).",
        "evaluator",
        answers=True,
        ge=16,
        le=512,
    )
    preset: Optional[Literal[tuple(PRESETS)]] = setting(  # type: ignore[valid-type]
        None, f"Paper thresholds for the T5 evaluator: {', '.join(PRESETS)}.", "thresholds", answers=True
    )
    upper: Optional[float] = setting(
        None, "Upper threshold: Correct if any score >= it.", "thresholds", answers=True, ge=-1, le=1
    )
    lower: Optional[float] = setting(
        None, "Lower threshold: Incorrect if all scores < it.", "thresholds", answers=True, ge=-1, le=1
    )
    filter_threshold: Optional[float] = setting(
        None, "Strips scoring below it are dropped.", "thresholds", answers=True, ge=-1, le=1
    )
    strip_mode: Literal[STRIP_MODES] = setting(  # type: ignore[valid-type]
        "excerption", "How passages are cut into strips: " + ", ".join(STRIP_MODES) + ".", "refine", answers=True
    )
    strips: int = setting(
        5,
        "Strips the generator gets: the strongest, of the passages and the web pages together.",
        "refine",
        answers=True,
        ge=1,
        le=100,
    )
    strips_correct: int = setting(
        3,
        "Strips kept when the action is Correct (the evaluator is sure): fewer, stronger evidence.",
        "refine",
        answers=True,
        ge=1,
        le=100,
    )
    refine: bool = setting(True, "Refine knowledge into strips (off: kept passages go whole).", "refine", answers=True)
    ranking: Literal[RANKINGS] = setting(  # type: ignore[valid-type]
        "fused",
        "Strongest strips: fused (the evaluator's score fused with the retrieval order) or evaluator "
        "(the score alone, as in the paper).",
        "refine",
        answers=True,
    )
    knowledge_words: int = setting(
        300,
        "Most words of knowledge the generator gets in crag mode: the strongest strips until this many (at least "
        "one); 300 is what plain RAG with k = 3 gives of 100-word passages.",
        "refine",
        answers=True,
        ge=10,
        le=100000,
    )
    model: str = setting(
        DEFAULT_MODEL,
        "Generator: " + ", ".join(EMBEDDED) + " (the embedded models: docs/models.md) or a .gguf path.",
        "generator",
        answers=True,
    )
    task: Literal[TASKS] = setting("popqa", "Prompt: " + ", ".join(TASKS) + ".", "generator", answers=True)  # type: ignore[valid-type]
    max_tokens: Optional[int] = setting(
        None, "Tokens to generate (default: per task).", "generator", answers=True, ge=1, le=8192
    )
    n_ctx: int = setting(4096, "Model context window in tokens.", "generator", answers=True, ge=256, le=131072)
    temperature: float = setting(0.0, "Sampling temperature; 0 = greedy.", "generator", answers=True, ge=0, le=5)
    seed: int = setting(0, "Sampling seed.", "generator", answers=True, ge=0, le=2**32 - 1)
    threads: Optional[int] = setting(
        None, "CPU threads for generation (default: all cores).", "generator", answers=False, ge=1, le=1024
    )
    web: Literal[WEB_BACKENDS] = setting("none", "Web search: " + ", ".join(WEB_BACKENDS) + ".", "web", answers=True)  # type: ignore[valid-type]
    searxng_url: Optional[str] = setting(None, "Base URL of a SearxNG instance (http or https).", "web", answers=True)
    rewrite: bool = setting(True, "Rewrite the question into search keywords.", "web", answers=True)
    web_results: int = setting(5, "Result pages to fetch.", "web", answers=True, ge=1, le=50)
    strips_scored: int = setting(
        40,
        "Web strips the evaluator scores per question: the best by BM25 within the fetched pages.",
        "web",
        answers=True,
        ge=1,
        le=10000,
    )
    wiki_first: bool = setting(False, "Wikipedia results first.", "web", answers=True)
    allow_private: bool = setting(False, "Allow fetching loopback/private/link-local addresses.", "web", answers=True)
    cache: bool = setting(True, "Use the on-disk web cache.", "web", answers=False)
    fetch_timeout: float = setting(
        10.0, "Connect/read timeout per page and search, seconds.", "web", answers=False, gt=0, le=600
    )
    max_page_bytes: int = setting(
        2_000_000, "A page body is cut at this many bytes.", "web", answers=True, ge=1000, le=10**9
    )
    cache_ttl: float = setting(7 * 24 * 3600.0, "Web cache expiry, seconds.", "web", answers=False, ge=0)
    cache_max_mb: float = setting(
        200.0, "Web cache size bound, MB (oldest entries go first).", "web", answers=False, gt=0
    )

    @field_validator("index", mode="after")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("evaluator")
    @classmethod
    def _evaluator(cls, value: str) -> str:
        from .evaluator import EvaluatorError, parse_spec

        try:
            parse_spec(value)
        except EvaluatorError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        model = embedded(value)
        if model is not None:
            return model.name
        path = Path(value).expanduser()
        if not path.is_file():
            raise ValueError(f"no such model: give a .gguf file or one of {', '.join(EMBEDDED)}")
        return value

    @field_validator("searxng_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL with a host")
        return value.strip().rstrip("/")

    @model_validator(mode="after")
    def _together(self) -> "Settings":
        if self.upper is not None and self.lower is not None and self.lower > self.upper:
            raise ValueError(f"lower ({self.lower}) is above upper ({self.upper})")
        if self.web == "searxng" and not self.searxng_url:
            raise ValueError("web = searxng needs searxng_url (--searxng-url URL)")
        if self.max_tokens is not None and self.max_tokens >= self.n_ctx - 64:
            raise ValueError(f"max_tokens ({self.max_tokens}) leaves no room for a prompt in n_ctx ({self.n_ctx})")
        return self

    def replace(self, **changes: Any) -> "Settings":
        """A validated copy with ``changes`` applied."""
        return Settings.model_validate({**self.model_dump(), **changes})

    def warnings(self) -> list[str]:
        """Settings that are valid but probably not what the user meant."""
        out = []
        family = self.evaluator.partition(":")[0]
        if self.preset is not None and family == "minilm-cosine":
            out.append(
                f"preset {self.preset!r} holds the T5 evaluator's thresholds; on {self.evaluator} cosine scores "
                "(about -0.1 to 0.9) Incorrect can then never fire: calibrate instead (crag calibrate)"
            )
        elif self.preset is not None and family != "t5":
            out.append(
                f"preset {self.preset!r} holds the T5 evaluator's thresholds; {self.evaluator} carries thresholds "
                "calibrated for it, which the preset replaces"
            )
        return out


# --------------------------------------------------------------------------- the declaration, read back


def field_names() -> list[str]:
    return list(Settings.model_fields)


def group(name: str) -> str:
    return Settings.model_fields[name].json_schema_extra["group"]  # type: ignore[index]


def changes_answers(name: str) -> bool:
    """Whether the setting was declared as one that can change a record's answer."""
    return bool(Settings.model_fields[name].json_schema_extra["answers"])  # type: ignore[index]


def answer_settings() -> tuple[str, ...]:
    """The settings declared ``answers=True``, in declaration order: what ``--resume`` compares."""
    return tuple(n for n in Settings.model_fields if changes_answers(n))


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


def help_text(name: str) -> str:
    """The option's help: description, range, default (for ``--help`` and the table in docs/commands.md)."""
    info = Settings.model_fields[name]
    text = info.description or ""
    allowed = bounds(name)
    if allowed:
        text += f" Range: {allowed}."
    if default_text(name) is not None:
        text += f" (default: {default_text(name)})"
    return text


def markdown_table() -> str:
    """The table of settings in docs/commands.md, made from the declarations (a test checks it is exactly this)."""
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
    return "\n".join(rows) + "\n"


_METAVAR_WORDS = {int: "an integer", float: "a number", str: "text", Path: "a path"}
_ADAPTERS: dict[str, TypeAdapter] = {}


def _adapter(name: str) -> TypeAdapter:
    if name not in _ADAPTERS:
        info = Settings.model_fields[name]
        _ADAPTERS[name] = TypeAdapter(typing.Annotated[info.annotation, info], config=Settings.model_config)
    return _ADAPTERS[name]


def _problem(exc: ValidationError) -> str:
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
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
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
        raise SettingsError(_bad(name, value, source, _problem(exc))) from None


def _bad(name: str, value: Any, source: str, problem: str) -> str:
    return f"bad value {value!r} for {name} (from {source}): {problem}"


def _finite_text(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return True  # not a number at all: the type check says so


def read_config(path: Path) -> dict[str, Any]:
    """Read a ``crag.toml`` file into ``{setting: value}``, every value validated."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise SettingsError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise SettingsError(f"config file {path} is a folder") from None
    except RecursionError:
        raise SettingsError(f"cannot read config file {path}: nested too deeply") from None
    except (OSError, ValueError, MemoryError) as exc:  # TOMLDecodeError, bad UTF-8, a number past int()'s digit limit
        raise SettingsError(f"cannot read config file {path}: {one_line(exc)}") from None
    source = f"config file {path}"
    return {name: coerce(name, value, source) for name, value in _config_values(data).items()}


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
        config = candidate if candidate.is_file() else None
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
            raise SettingsError(_bad(loc[0], values[loc[0]], sources[loc[0]], _problem(exc))) from None
        raise SettingsError(f"settings do not work together: {_problem(exc)}") from None


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

    from .files import refuse_input, write_text_atomic

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
    "Settings",
    "SettingsError",
    "load_settings",
    "read_config",
    "write_config",
    "check_config_file",
    "coerce",
    "field_names",
    "names_in",
    "flag",
    "option_decls",
    "help_text",
    "CONFIG_FILE",
    "WEB_BACKENDS",
]
