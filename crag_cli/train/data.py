"""Training data: labelled pairs from gold answers or a file, the questions' fingerprints (which questions trained an evaluator), and the split by question."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from .. import jsonl
from ..action.calibrate import Item, action_accuracy, choose_action_thresholds
from ..errors import CragError
from ..action.evaltest import auc
from ..files import write_text_atomic
from ..evaluator import (
    EMBEDDED_BASE,
    parse_spec,
    read_trained,
)
from ..action.match import fold, holds_answer
from ..settings.info import default


class TrainingError(CragError):
    """Training data or settings that cannot give an evaluator."""


@dataclass(frozen=True)
class LabelledPair:
    """One training example: a question (``qid`` groups its pairs), a passage and whether it holds the answer."""

    qid: str
    question: str
    passage: str
    label: int
    answers: tuple[str, ...] = ()  # gold or generated answers, when known (to label strips)

    def strip_holds(self, strip: str) -> bool:
        """Whether a strip of this pair's passage holds the answer (by the answers when known, else the label)."""
        return holds_answer(strip, self.answers) if self.answers else bool(self.label)


@dataclass
class TrainConfig:
    """Every setting of a training run (all recorded in the model card)."""

    base: str = EMBEDDED_BASE
    adapter: str = "lora"  # "lora": an adapter over the frozen base; "full": every encoder layer (evaluator/pooled.py)
    epochs: int | None = None  # None: the adapter's own (ADAPTER_DEFAULTS)
    batch_size: int = 16
    learning_rate: float | None = None  # None: the adapter's own
    max_length: int = 256
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.1
    validation: float = 0.2
    seed: int = 0
    threads: int | None = None
    correct_precision: float = 0.8
    incorrect_precision: float = 0.8
    strip_recall: float = 0.9
    strip_mode: str = default("strip_mode")  # the setting (app/train.py); the card records it
    topic_guard: bool = True
    start_from: str | None = None  # a trained evaluator (--adapter full) whose layers and head training continues

    def __post_init__(self) -> None:
        if self.adapter not in ADAPTER_DEFAULTS:
            raise TrainingError(f"unknown adapter {self.adapter!r}: choose {' or '.join(ADAPTER_DEFAULTS)}")
        if self.adapter == "full" and self.base.startswith("t5:"):
            raise TrainingError("--adapter full trains an encoder (BERT-like) base, not a T5: use --adapter lora")
        if self.start_from is not None and self.adapter != "full":
            raise TrainingError("--start-from continues an evaluator's every layer: give --adapter full")
        epochs, rate = ADAPTER_DEFAULTS[self.adapter]
        self.epochs = epochs if self.epochs is None else self.epochs
        self.learning_rate = rate if self.learning_rate is None else self.learning_rate


# each adapter's passes and peak learning rate, where not given: LoRA trains few weights fast; a full fine-tune
# moves every layer a little, once (docs/default-evaluator.md: "The cross-encoder fully fine-tuned")
ADAPTER_DEFAULTS = {"lora": (3, 5e-4), "full": (1, 3e-5)}


# ----------------------------------------------------------------------------- data


def pairs_from_gold(questions: Iterable[tuple[str, str, Sequence[str]]], retriever, top_k: int) -> list[LabelledPair]:
    """Label each question's top-k passages by whether a gold alias occurs in them (whole words).

    Parameters
    ----------
    questions : iterable of (id, question, gold aliases)
    retriever : Retriever
    top_k : int

    Returns
    -------
    list of LabelledPair
    """
    out = []
    for qid, question, answers in questions:
        for hit in retriever.search(question, top_k):
            label = int(holds_answer(hit.passage.text, answers))
            out.append(LabelledPair(qid, question, hit.passage.text, label, tuple(answers)))
    return out


def read_labelled_pairs(path: Path) -> Iterator[LabelledPair | str]:
    """Yield the pairs of a JSONL file of ``question``, ``passage``, ``label`` (0/1); a bad line yields its error.

    Pairs with the same question text (or the same ``qid``, when given) belong
    to one question. An optional ``answers`` list (the question's answers) labels
    the passage's strips for the strip threshold; without it a strip takes the
    passage's label.
    """
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                obj = jsonl.parse(raw, first=lineno == 1)
            except jsonl.BadLine as exc:
                yield f"line {lineno}: {exc}"
                continue
            if not isinstance(obj, dict):
                yield f"line {lineno}: not a JSON object"
                continue
            q, p, y = obj.get("question"), obj.get("passage"), obj.get("label")
            if not isinstance(q, str) or not q.strip() or not isinstance(p, str) or not p.strip():
                yield f"line {lineno}: needs a non-empty 'question' and 'passage'"
                continue
            if y not in (0, 1) or isinstance(y, float) and y not in (0.0, 1.0):
                yield f"line {lineno}: 'label' must be 0 or 1"
                continue
            answers = obj.get("answers", [])
            if not isinstance(answers, list) or not all(isinstance(a, str) and a.strip() for a in answers):
                yield f"line {lineno}: 'answers', when given, must be a list of non-empty strings"
                continue
            qid = obj.get("qid")
            key = str(qid) if qid is not None and str(qid).strip() else question_key(q)
            yield LabelledPair(
                f"pairs:{key}", q.strip(), p, int(y), tuple(a.strip() for a in answers)
            )  # never a gold id


def write_labelled_pairs(pairs: Iterable[LabelledPair], path: Path) -> None:
    """Write ``pairs`` as the JSONL lines :func:`read_labelled_pairs` reads back (``qid`` and ``answers`` kept).

    Written beside ``path`` and renamed into place.
    """
    lines = (
        json.dumps(
            {"qid": p.qid, "question": p.question, "passage": p.passage, "label": p.label, "answers": list(p.answers)},
            ensure_ascii=False,
        )
        + "\n"
        for p in pairs
    )
    write_text_atomic(path, "".join(lines))


def question_key(question: str) -> str:
    """A question's text folded (case, runs of white space), so that one question asked twice is one question."""
    return fold(question)


def question_fingerprint(question: str) -> str:
    """A short stable id of a question's text (16 hex digits of the sha256 of :func:`question_key`).

    A trained evaluator's manifest lists the fingerprints of the questions it
    was trained and calibrated on, so that a test on them can be named
    in-sample without storing the questions themselves.
    """
    return hashlib.sha256(question_key(question).encode("utf-8")).hexdigest()[:16]


def seen_questions(manifest: dict) -> dict[str, str] | None:
    """Fingerprint -> ``"training"`` or ``"validation"`` for the questions a trained evaluator has seen.

    ``None`` when the manifest does not say (evaluators trained before the list was kept).
    """
    seen = (manifest.get("data") or {}).get("seen")
    if not isinstance(seen, dict):
        return None
    out = {fp: "training" for fp in seen.get("training", [])}
    out.update({fp: "validation" for fp in seen.get("validation", [])})
    return out


def seen_by(spec: str) -> dict[str, str] | None:
    """:func:`seen_questions` of the evaluator named by ``spec`` (``None``: not a trained one, or not said)."""
    kind, path = parse_spec(spec)
    return seen_questions(read_trained(path)) if kind == "trained" else None


def count_seen(questions: Iterable[str], seen: dict[str, str]) -> dict[str, int]:
    """How many of ``questions`` an evaluator was trained on and calibrated on (see :func:`seen_questions`)."""
    counts = {"training": 0, "validation": 0}
    for q in questions:
        side = seen.get(question_fingerprint(q))
        if side:
            counts[side] += 1
    return counts


def in_sample(questions: Iterable[str], spec: str) -> dict[str, int] | None:
    """How many of ``questions`` the evaluator named by ``spec`` was trained and calibrated on.

    Parameters
    ----------
    questions : iterable of str
        The questions about to be tested or answered.
    spec : str
        An evaluator as ``--evaluator`` takes it.

    Returns
    -------
    dict or None
        ``{"training": T, "validation": V}`` (see :func:`count_seen`); ``None`` when the evaluator
        does not say (not a trained one, or trained before crag kept fingerprints).

    Raises
    ------
    EvaluatorError
        ``spec`` names a trained evaluator whose manifest cannot be read.
    """
    seen = seen_by(spec)
    return None if seen is None else count_seen(questions, seen)


def question_groups(pairs: Sequence[LabelledPair]) -> list[int]:
    """Per pair, the number of its question: pairs that share a ``qid`` or a question's text are one question.

    Parameters
    ----------
    pairs : sequence of LabelledPair

    Returns
    -------
    list of int
        Group numbers, numbered in order of first appearance. Texts are compared
        folded (:func:`question_key`), so one question filed twice under two ids
        (PopQA's dev set holds four such twins) is one question.
    """
    of_key: dict[tuple[str, str], int] = {}
    fresh = 0
    for p in pairs:
        keys = (("id", p.qid), ("text", question_key(p.question)))
        found = sorted({of_key[k] for k in keys if k in of_key})
        if found:
            g = found[0]
        else:
            g, fresh = fresh, fresh + 1
        for k in keys:
            of_key[k] = g
        for other in found[1:]:  # this pair joins two earlier questions into one (rare: a scan is fine)
            for k, v in of_key.items():
                if v == other:
                    of_key[k] = g
    groups = [of_key[("id", p.qid)] for p in pairs]
    first = {g: i for i, g in reversed(list(enumerate(groups)))}
    rank = {g: r for r, g in enumerate(sorted(first, key=first.get))}
    return [rank[g] for g in groups]


def split_by_question(
    pairs: Sequence[LabelledPair], validation: float, seed: int, train_only: Sequence[LabelledPair] = ()
):
    """``(train, validation)``: the questions shuffled with ``seed``, ``validation`` of them held out.

    Every pair of a question lands on the same side, a question being its
    ``qid`` or its text (:func:`question_groups`). At least one question goes
    to each side when there are two or more. ``train_only`` pairs are added to
    the training side (the command's labelled and synthetic pairs, when gold
    questions are given: the best epoch and the thresholds are then chosen on
    questions like the ones the user will ask), except those asking a
    validation question.
    """
    if not 0 < validation < 1:
        raise TrainingError("--validation must be a share between 0 and 1")
    groups = question_groups(pairs)
    order = list(dict.fromkeys(groups))
    if len(order) < 2:
        raise TrainingError(f"training needs pairs of at least 2 questions (got {len(order)})")
    random.Random(seed).shuffle(order)
    n_val = min(len(order) - 1, max(1, round(validation * len(order))))
    held = set(order[:n_val])
    val = [p for p, g in zip(pairs, groups) if g in held]
    asked = {question_key(p.question) for p in val}
    train = [p for p, g in zip(pairs, groups) if g not in held]
    return train + [p for p in train_only if question_key(p.question) not in asked], val


def question_items(pairs: Sequence[LabelledPair], scores: Sequence[float]) -> list[Item]:
    """One calibration :class:`~crag_cli.action.calibrate.Item` per question (:func:`question_groups`, in order of first appearance)."""
    groups: dict[int, Item] = {}
    for g, p, s in zip(question_groups(pairs), pairs, scores):
        item = groups.setdefault(g, Item([], False))
        item.scores.append(s)
        item.holds = item.holds or bool(p.label)
    return list(groups.values())


def calibration_items(pairs: Sequence[LabelledPair], scores: Sequence[float]) -> list[Item]:
    """The questions the thresholds are calibrated and judged on: :func:`question_items`, and when every one
    of them holds an answer, each again as if the index lacked it.

    Questions written by ``--synthetic`` always hold their answer (their own
    passage), so on them alone every cut calls everything Correct and
    Incorrect is never learned: the calibration would leave no Ambiguous band
    and the action would never search. A question with answer-free passages
    is then added a second time with only those (``holds`` false): what the
    evaluator sees when the folder does not hold the answer. Questions with
    gold answers, some of which do not hold one, are returned unchanged.

    Examples
    --------
    >>> from crag_cli.train.data import LabelledPair
    >>> pairs = [LabelledPair("1", "q?", "yes", 1), LabelledPair("1", "q?", "no", 0)]
    >>> [(i.scores, i.holds) for i in calibration_items(pairs, [0.9, -0.2])]
    [([0.9, -0.2], True), ([-0.2], False)]
    """
    items = question_items(pairs, scores)
    if not items or not all(it.holds for it in items):
        return items
    absent: dict[int, Item] = {}
    for g, p, s in zip(question_groups(pairs), pairs, scores):
        if not p.label:
            absent.setdefault(g, Item([], False)).scores.append(s)
    return items + list(absent.values())


def validation_metrics(pairs: Sequence[LabelledPair], scores: Sequence[float], **precision) -> dict:
    """Pair accuracy (score >= 0, i.e. probability >= 0.5), pair AUC and action accuracy (thresholds fitted
    here, on :func:`calibration_items`)."""
    labels = [bool(p.label) for p in pairs]
    items = calibration_items(pairs, scores)
    upper, lower, _ = choose_action_thresholds(items, **precision)
    acc, counts = action_accuracy(items, upper, lower)
    a = auc(scores, labels)
    return {
        "pair_accuracy": round(sum((s >= 0) == y for s, y in zip(scores, labels)) / len(labels), 4),
        "auc": None if a is None else round(a, 4),
        "action_accuracy": round(acc, 4),
        "actions": counts,
        "questions": len(items),
        "pairs": len(pairs),
    }
