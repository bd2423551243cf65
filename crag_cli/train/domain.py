"""The evaluator's domain: the questions it was trained on, so that it can tell a question unlike all of them.

A trained evaluator's scores, and the thresholds calibrated on them, hold for
questions like the ones it learned from. On a folder of another kind its
"sure" is not to be trusted (trained on PopQA's entity questions, it judged
questions about scientific articles Correct when the answer was in none of the
passages, so crag never searched the web for them). The domain is the base
encoder's embedding of every training question and a cosine cut: a question
whose nearest training question is below the cut is out of the evaluator's
domain. The cut is a low quantile (:data:`QUANTILE`) of the validation
questions' nearest-neighbour cosines, so that nineteen in twenty questions like
the training ones count as in the domain; no out-of-domain question is used.

``python -m crag_cli.train.domain EVALUATOR QUESTIONS.jsonl`` adds a domain to
an evaluator trained before this existed (the embedded default among them):
its manifest's fingerprints pick its training and validation questions out of
the file it was trained from, and its manifest and model card are written anew.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..evaluator.domain import DOMAIN_FILE, nearest_cosines  # noqa: F401  (what an evaluator reads of its domain)

QUANTILE = 0.05  # the share of in-domain (validation) questions a cut may call out of the domain


def domain_cut(validation_cosines: Sequence[float], quantile: float = QUANTILE) -> float:
    """The cosine cut: the ``quantile`` of the validation questions' nearest-training-question cosines.

    Examples
    --------
    >>> domain_cut([0.9, 0.8, 0.7, 0.6, 0.5], quantile=0.25)
    0.6
    """
    if len(validation_cosines) == 0:
        raise ValueError("the domain needs validation questions")
    return round(float(np.quantile(np.asarray(validation_cosines, dtype=np.float64), quantile)), 4)


def fit_domain(
    embed, training: Sequence[str], validation: Sequence[str], before: np.ndarray | None = None
) -> tuple[np.ndarray, dict]:
    """Embed the training questions and fit the cut on the validation questions.

    ``embed`` maps texts to L2-normalised rows (the base encoder's
    :meth:`crag_cli.evaluator.MiniLMEvaluator.embed`). ``before``: rows of
    questions known already (an evaluator training continues), kept first.
    Returns the known questions' embeddings (float16, to be stored as
    :data:`DOMAIN_FILE`) and the manifest's ``domain`` entry.
    """
    rows = [] if before is None else [np.asarray(before, dtype=np.float32)]
    if len(training) or not rows:
        rows.append(np.asarray(embed(list(training)), dtype=np.float32))
    known = np.concatenate(rows)
    cosines = nearest_cosines(np.asarray(embed(list(validation)), dtype=np.float32), known)
    cut = domain_cut(cosines)
    entry = {
        "file": DOMAIN_FILE,
        "cosine": cut,
        "quantile": QUANTILE,
        "training_questions": len(known),
        "validation_questions": len(validation),
        "validation_out": int((cosines < cut).sum()),
    }
    return known.astype(np.float16), entry


def save_domain(path: Path, known: np.ndarray) -> None:
    """Write the training questions' embeddings (:func:`fit_domain`) to ``path`` (a ``.npy`` file, no pickles)."""
    with open(path, "wb") as f:
        np.save(f, known, allow_pickle=False)


def add_domain(evaluator: Path, questions_file: Path) -> dict:
    """Fit and store the domain of an existing trained evaluator; returns the manifest's new ``domain`` entry.

    Its training and validation questions are those of ``questions_file``
    whose fingerprints its manifest lists. The manifest is written beside
    itself and renamed into place.
    """
    from .. import files
    from ..evaluator import MiniLMEvaluator, base_path
    from ..evaluator.cosine import TRAINED_LENGTH
    from ..evaluator.base import MANIFEST
    from ..evaluator.trained import read_trained
    from ..batch.records import read_questions
    from .data import question_fingerprint, seen_questions
    from .card import model_card

    from transformers import AutoConfig

    manifest = read_trained(evaluator)
    base = base_path(manifest["base"])
    if AutoConfig.from_pretrained(str(base), local_files_only=True).model_type in ("t5", "mt5", "umt5"):
        raise ValueError(f"{evaluator}: a T5 evaluator has no domain (its base is not a sentence encoder)")
    seen = seen_questions(manifest)
    if not seen:
        raise ValueError(f"{evaluator}: its manifest lists no training questions")
    parts: dict[str, list[str]] = {"training": [], "validation": []}
    for line in read_questions(questions_file):  # a line that is not a question cannot be one it was trained on
        part = seen.get(question_fingerprint(line.question)) if line.question else None
        if part and line.question not in parts[part]:
            parts[part].append(line.question)
    if not parts["training"] or not parts["validation"]:
        raise ValueError(f"{questions_file} holds none of {evaluator}'s training or validation questions")
    encoder = MiniLMEvaluator(base, batch_size=64, max_length=TRAINED_LENGTH)
    known, entry = fit_domain(encoder.embed, parts["training"], parts["validation"])
    target = Path(evaluator) / DOMAIN_FILE
    tmp = files.temp_file(target)
    try:
        save_domain(tmp, known)
        tmp.replace(target)
    finally:
        files.remove(tmp)
    manifest["domain"] = entry
    manifest["files"] = {**manifest["files"], DOMAIN_FILE: files.digest(target)[1]}
    files.write_text_atomic(Path(evaluator) / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    files.write_text_atomic(Path(evaluator) / "README.md", model_card(manifest))
    return entry


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("evaluator", type=Path, help="a folder made by crag train-evaluator")
    ap.add_argument("questions", type=Path, help="the questions file it was trained from")
    args = ap.parse_args(argv)
    from ..errors import CragError

    try:
        entry = add_domain(args.evaluator, args.questions)
    except (CragError, ValueError, OSError) as exc:
        print(f"crag: error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    print(json.dumps(entry), file=sys.stderr)


if __name__ == "__main__":
    main()
