"""What produced a batch's records (the run identity): crag's version, the mode, the settings that change answers, the thresholds in force, and the model, evaluator and index by content."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .. import files
from ..reader.wire import shown_url
from ..pipeline.modes import Mode
from ..version import __version__
from ..reader.prompts import PROMPT_VERSION
from ..action.knowledge import READING_VERSION


RESOLVED_GROUPS = ("index", "thresholds")


def _hash_json(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def index_fingerprint(manifest: dict) -> str:
    """sha256 of what an index retrieves from: its sources' contents and its passage and scoring settings.

    When, where and by which version it was built, its on-disk format and its
    files' modification times are left out: an index rebuilt from the same
    files (after ``touch``, a copy, or a format upgrade that scores the same)
    resumes the same batch.
    """
    kept = {k: v for k, v in manifest.items() if k not in ("created", "created_by", "docs", "format_version")}
    kept["sources"] = [{k: v for k, v in src.items() if k != "mtime_ns"} for src in manifest.get("sources", [])]
    return _hash_json(kept)


def evaluator_fingerprint(spec: str) -> str:
    """The evaluator's name, plus the names and sha256 of its checkpoint's files.

    By content, not by modification time, so that reinstalling crag (which
    rewrites the embedded evaluator's files) does not stop a batch from resuming.
    """
    from ..evaluator import parse_spec

    kind, path = parse_spec(spec)
    if path is None:
        return spec
    entries = []
    if path.is_dir():
        for f in sorted(path.rglob("*")):
            if f.is_file():
                entries.append((f.relative_to(path).as_posix(), _file_sha256(f)))
    return f"{spec} {_hash_json(entries)[:16]}"


def _file_sha256(path: Path) -> str:
    return (files.cached_digest(path) or (0, ""))[1]


def run_identity(settings, mode: Mode | str, thresholds, index_manifest: dict) -> dict:
    """What produced a batch's records: version, mode, settings, thresholds, model, evaluator and index hashes.

    The settings are those the mode's records depend on (:meth:`crag_cli.pipeline.modes.Mode.unused`).
    """
    from ..settings.info import answer_settings, group

    mode = Mode(mode)
    unused = mode.unused(settings.task)  # plain RAG under auto: the evaluator's domain picks the prompt
    identity = {"crag_version": __version__, "prompt_version": PROMPT_VERSION, "mode": mode.value}
    identity["reading_version"] = READING_VERSION if mode is Mode.CRAG else None
    identity.update(
        {
            name: getattr(settings, name)
            for name in answer_settings()
            if group(name) not in unused and group(name) not in RESOLVED_GROUPS
        }
    )
    identity = {k: (str(v) if isinstance(v, Path) else v) for k, v in identity.items()}
    identity |= {k: shown_url(v) for k, v in identity.items() if k.endswith("_url") and isinstance(v, str)}
    if "thresholds" not in unused:
        identity["thresholds"] = {k: v for k, v in thresholds.to_dict().items() if k != "source"}
    else:
        identity["thresholds"] = None
    reader = settings.reader_backend
    identity["reader"] = reader.name
    identity["model_sha256"] = reader.fingerprint(settings.model)
    identity["evaluator_files"] = evaluator_fingerprint(settings.evaluator) if "evaluator" not in unused else None
    identity["index_sha256"] = index_fingerprint(index_manifest) if "retrieval" not in unused else None
    return identity


# Settings added after batches were first written, with the value that behaves as a run made before them did:
# such a run's records resume under that value (and only under it).
ADDED_SETTINGS = {
    "evaluator_precision": "float",
    "read_share": 0.0,
    "evidence": False,
    "reader": "llama-cpp-python",
    "reader_url": None,
    "reader_judge": False,
}


def identity_mismatch(old: dict, new: dict) -> str | None:
    """The first setting that differs between two runs, as ``name (then X, now Y)``, or ``None``.

    A setting the older run does not name (:data:`ADDED_SETTINGS`) is taken at the value it behaved as.

    Examples
    --------
    >>> identity_mismatch({"mode": "crag"}, {"mode": "crag", "read_share": 0.0}) is None
    True
    >>> identity_mismatch({"mode": "crag"}, {"mode": "crag", "read_share": 0.6})
    'read_share (the records were made with 0.0, this run has 0.6)'
    """
    for key in new:
        if key == "crag_version":
            continue
        then = old[key] if key in old else ADDED_SETTINGS.get(key)
        if then != new[key]:
            return f"{key} (the records were made with {then!r}, this run has {new[key]!r})"
    return None
