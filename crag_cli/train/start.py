"""Training that continues a trained evaluator (``crag train-evaluator --start-from EVALUATOR --adapter full``).

The new evaluator starts from the earlier one's layers and head instead of
the base's with a fresh head, and trains one more pass on new pairs. It has
then seen both runs' questions, so its manifest lists both (a test on any of
them is named in-sample), its domain is both runs' training questions (the cut
fitted on the new validation questions), and it names what it started from.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import CragError


def check_start(path: Path, base: str) -> dict:
    """The manifest of the evaluator ``path`` that training is to continue, checked before any model loads.

    Parameters
    ----------
    path : Path
        A folder made by ``crag train-evaluator --adapter full``.
    base : str
        The base the new run names (as its manifest stores it): the earlier one's must be the same.

    Raises
    ------
    CragError
        Not such a folder, a corrupt or foreign manifest, another adapter or base, or weights whose sha256
        differs from the manifest's.
    """
    from ..evaluator.trained import read_trained, verify_files

    if not Path(path).is_dir():
        raise CragError(f"--start-from {path}: no such evaluator folder")
    manifest = read_trained(path)
    if manifest.get("adapter", "lora") != "full":
        raise CragError(
            f"--start-from {path}: it is a LoRA adapter; only an evaluator trained with --adapter full continues"
        )
    if manifest["base"] != base:
        raise CragError(f"--start-from {path}: its base is {manifest['base']}, not {base}")
    verify_files(path, manifest)
    return manifest


def load_start(model, path: Path) -> None:
    """Put the trained layers and head stored in ``path`` into ``model`` (a fresh mean-pooled cross-encoder)."""
    from ..evaluator.pooled import WEIGHTS

    try:
        model.load(Path(path) / WEIGHTS)
    except (OSError, ValueError) as exc:
        raise CragError(f"--start-from {path}: {exc}") from None


def known_before(path: Path, manifest: dict | None) -> tuple[np.ndarray | None, set[str]]:
    """The earlier evaluator's domain (its training questions' embeddings) and those questions' fingerprints;
    ``(None, set())`` when there is none, or it stores no domain."""
    entry = (manifest or {}).get("domain")
    if not isinstance(entry, dict) or not entry.get("file"):
        return None, set()
    seen = (manifest.get("data") or {}).get("seen") or {}
    return np.load(Path(path) / entry["file"], allow_pickle=False), set(seen.get("training", []))


def record_start(card: dict, prior: dict) -> None:
    """Make ``card`` (the new evaluator's manifest) say what it has seen: both runs' questions
    (:func:`seen_by_both`), and the evaluator it started from (``started_from``)."""
    card["data"]["seen"] = seen_by_both(card["data"]["seen"], prior)
    card["started_from"] = started_from(prior)


def note_in_sample(prior: dict | None, validation: list[str], calib, log) -> None:
    """Warn, and note in the calibration, when validation questions were training questions of the evaluator
    training started from: its thresholds are then calibrated on questions it learned."""
    from .data import count_seen, seen_questions

    n = count_seen(dict.fromkeys(validation), seen_questions(prior or {}) or {})["training"]
    if n:
        note = (
            f"{n} of the validation questions trained the evaluator training started from (--start-from): the "
            "thresholds are calibrated in-sample for them; keep the split it was trained with (--train-seed)"
        )
        log("warning: " + note)
        calib.notes.append(note)


def started_from(manifest: dict) -> dict:
    """What the new manifest says of the evaluator it started from: its weights' digests, its data, its own start."""
    data = manifest.get("data") or {}
    entry = {
        "files": manifest["files"],
        "train_questions": data.get("train_questions"),
        "train_pairs": data.get("train_pairs"),
        "seconds": manifest.get("seconds"),
    }
    if manifest.get("started_from"):
        entry["started_from"] = manifest["started_from"]
    return entry


def seen_by_both(seen: dict[str, list[str]], manifest: dict) -> dict[str, list[str]]:
    """The fingerprints of the questions both runs trained and validated on (a question trained on by either
    counts as training).

    >>> seen_by_both({"training": ["a"], "validation": ["b"]}, {"data": {"seen": {"training": ["c", "b"]}}})
    {'training': ['a', 'b', 'c'], 'validation': []}
    """
    before = (manifest.get("data") or {}).get("seen") or {}
    training = set(seen["training"]) | set(before.get("training", []))
    validation = (set(seen["validation"]) | set(before.get("validation", []))) - training
    return {"training": sorted(training), "validation": sorted(validation)}
