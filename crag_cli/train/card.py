"""The manifest written beside a trained evaluator (its card) and the README.md made of it (its model card)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Sequence

from ..evaluator import guard_can_lift
from ..version import __version__
from .data import LabelledPair, TrainConfig, question_fingerprint, question_groups


def _what(card: dict) -> str:
    """What was trained, in words: a LoRA adapter, or every layer (``--adapter full``)."""
    if card.get("adapter") == "full":
        return (
            f"every encoder layer of `{card['base']}` trained (its embeddings kept), mean-pooled, and a one-logit head"
        )
    return f"a LoRA adapter and a one-logit head over `{card['base']}`"


def _started(card: dict) -> list[str]:
    """The lines saying which evaluator training continued (``--start-from``), if any."""
    start = card.get("started_from")
    if not start:
        return []
    return [
        f"Training continued an evaluator trained on {start['train_questions']} questions ({start['train_pairs']} "
        f"pairs, {start['seconds']} s; `started_from` in the manifest pins its weights): the table counts this run's "
        "data, the fingerprints and the domain both runs'.",
        "",
    ]


def model_card(card: dict) -> str:
    """The README.md written beside a trained evaluator: data, counts, settings, scores, time."""
    c = card["calibration"]
    lines = [
        "# crag retrieval evaluator",
        "",
        f"A cross-encoder made by `crag train-evaluator` (crag {card['crag_version']}): {_what(card)}; "
        "score = tanh(logit / 2) in [-1, 1].",
        "Use it with `--evaluator minilm:THIS_FOLDER` (or the folder's path alone).",
        "",
        "## Data",
        "",
        card["data"]["note"] or "(no note)",
        "",
        "| | questions | pairs | positive pairs |",
        "|---|---|---|---|",
        f"| training | {card['data']['train_questions']} | {card['data']['train_pairs']} | {card['data']['train_positive']} |",
        f"| validation | {card['data']['validation_questions']} | {card['data']['validation_pairs']} "
        f"| {card['data']['validation_positive']} |",
        "",
        *_started(card),
        "The manifest lists these questions' fingerprints (`data.seen`), so that `crag evaluator-test` and the "
        "benchmarks name a test on them in-sample.",
        "",
        "## Validation after each epoch",
        "",
        "Pair accuracy at score 0 (probability 0.5), pair AUC, action accuracy with thresholds fitted on the "
        "validation questions (Ambiguous = half right).",
        "",
        "| epoch | pair accuracy | AUC | action accuracy | actions |",
        "|---|---|---|---|---|",
    ]
    for i, m in enumerate(card["validation_by_epoch"], 1):
        mark = " (kept)" if i == card["best_epoch"] else ""
        lines.append(f"| {i}{mark} | {m['pair_accuracy']} | {m['auc']} | {m['action_accuracy']} | {m['actions']} |")
    lines += [
        "",
        "## Thresholds (calibrated on the validation questions only)",
        "",
        f"upper {card['thresholds']['upper']}, lower {card['thresholds']['lower']}, strip filter "
        f"{card['thresholds']['filter']}; action accuracy {c['action_accuracy']}, actions {c['actions']}, "
        f"Correct right {c['correct_precision']}, Incorrect right {c['incorrect_precision']}.",
        "",
        "Topic guard: "
        + (
            "none."
            if not card.get("topic_guard")
            else f"a pair whose base-encoder cosine reaches {card['topic_guard']['cosine']} scores at least "
            f"{card['topic_guard']['score']} (the lower threshold): on-topic passages are never discarded."
            if guard_can_lift(card["thresholds"]["upper"], card["thresholds"]["lower"])
            else f"stored (cosine {card['topic_guard']['cosine']}) but off with the stored thresholds (lower not below "
            "upper); it lifts on-topic pairs to a --lower set below --upper."
        ),
        "",
        "Domain: "
        + (
            "none: every question may be judged Correct."
            if not card.get("domain")
            else f"a question whose nearest of the {card['domain']['training_questions']} training questions "
            f"(`{card['domain']['file']}`, base-encoder cosine) is below {card['domain']['cosine']} is out of it, "
            "never judged Correct (crag's --domain-guard); the cut is the "
            f"{card['domain']['quantile']} quantile of the validation questions' ({card['domain']['validation_out']} "
            f"of {card['domain']['validation_questions']} out)."
        ),
        "",
        *[f"- {note}" for note in c.get("notes", [])],
        "",
        "## Settings",
        "",
        "```json",
        json.dumps(card["settings"], indent=1),
        "```",
        "",
        f"{card['trainable_parameters']:,} trainable parameters; trained in {card['seconds']} s.",
        "",
    ]
    return "\n".join(lines)


def manifest(
    config: TrainConfig,
    fitted: dict,
    data_note: str,
    train_pairs: Sequence[LabelledPair],
    val_pairs: Sequence[LabelledPair],
    trainable: int,
    weights: dict[str, str],
    seconds: float,
) -> dict:
    """The manifest (the card) written beside a trained evaluator, which :func:`model_card` renders as its README.md.

    ``fitted`` holds what training found: ``calibration``, ``topic_guard``,
    ``domain``, ``history`` (the validation metrics by epoch) and ``best`` (the
    kept epoch's index).
    """
    calib = fitted["calibration"]
    return {
        "format": 1,
        "kind": "cross-encoder",
        "crag_version": __version__,
        "base": config.base,
        "adapter": config.adapter,
        "max_length": config.max_length,
        "thresholds": {"upper": calib.upper, "lower": calib.lower, "filter": calib.filter},
        "topic_guard": fitted["topic_guard"],
        "domain": fitted["domain"],
        "calibration": {k: v for k, v in calib.to_dict().items()},
        "validation_by_epoch": fitted["history"],
        "best_epoch": fitted["best"] + 1,
        "data": {
            "note": data_note,
            "train_questions": len(set(question_groups(train_pairs))),
            "train_pairs": len(train_pairs),
            "train_positive": sum(p.label for p in train_pairs),
            "validation_questions": len(set(question_groups(val_pairs))),
            "validation_pairs": len(val_pairs),
            "validation_positive": sum(p.label for p in val_pairs),
            # which questions it has seen, so that a test on them is named in-sample (count_seen)
            "seen": {
                "training": sorted({question_fingerprint(p.question) for p in train_pairs}),
                "validation": sorted({question_fingerprint(p.question) for p in val_pairs}),
            },
        },
        "settings": asdict(config),
        "trainable_parameters": trainable,
        "seconds": round(seconds, 1),
        "files": weights,
    }
