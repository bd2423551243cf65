"""Train a retrieval evaluator: a cross-encoder that scores (question, passage) pairs.

``crag train-evaluator`` is this module. Labelled pairs come three ways:

* :func:`pairs_from_gold`: questions with gold answers plus an index; each of a
  question's top-k passages is positive when a gold alias occurs in it as whole
  words, negative otherwise (the paper's PopQA labels);
* :func:`read_labelled_pairs`: ready ``question``, ``passage``, ``label`` lines;
* :func:`synthetic_pairs`: no labels at all; the local generator writes a
  question and its short answer for sampled passages of the user's own index
  (pairs whose answer is not in the passage are dropped); that passage is the
  positive, the retrieved passages that do not hold the answer are negatives.

:func:`split_by_question` keeps every question on one side. :func:`train`
fine-tunes a LoRA adapter and a one-logit head over the base encoder with
binary cross-entropy, using transformers' ``Trainer`` (scored on the
validation questions after every epoch: pair accuracy, AUC, action accuracy;
the best epoch kept), then calibrates the action and strip thresholds on the
validation questions only and writes the folder that
:class:`~crag_cli.evaluator.CrossEncoderEvaluator` loads, with a model card.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from . import jsonl
from .version import __version__
from .calibrate import Item, action_accuracy, calibrate, choose_action_thresholds
from .errors import CragError
from .evaltest import auc
from .files import write_text_atomic
from .evaluator import (
    EMBEDDED_BASE,
    MANIFEST,
    encode_pairs,
    guard_can_lift,
    is_t5,
    load_classifier,
    logit_to_score,
    parse_spec,
    read_trained,
)
from .index import is_crag_index
from .match import contains_phrase, holds_answer


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
    epochs: int = 3
    batch_size: int = 16
    learning_rate: float = 5e-4
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
    strip_mode: str = "excerption"
    topic_guard: bool = True


# ----------------------------------------------------------------------------- data


def pairs_from_gold(
    questions: Iterable[tuple[str, str, Sequence[str]]], retriever, top_k: int = 10
) -> list[LabelledPair]:
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
    return " ".join(question.casefold().split())


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


SYNTHETIC_PROMPT = (
    "Read the passage and write one factual question that it answers, and the question's short answer "
    "(a name, a date or a few words copied from the passage). The question must name what it is about, "
    "so that it can be understood without the passage.\n"
    "Reply with exactly two lines:\nQuestion: ...\nAnswer: ...\n\n"
    "<passage>\n{passage}\n</passage>"
)
# Longer "answers" are paragraphs, not spans. A sentence copied from the passage is kept: documentation
# answers "what does X do?" with one (it must still occur in the passage word for word).
MAX_ANSWER_WORDS = 20


def parse_synthetic(reply: str) -> tuple[str, str] | None:
    """``(question, answer)`` from a ``Question: ... / Answer: ...`` reply, or ``None``.

    Lines may be marked up (``**Question:**``); an answer of more than
    :data:`MAX_ANSWER_WORDS` words is returned as it is (the caller drops it).
    """
    question = answer = None
    for line in reply.splitlines():
        head, _, rest = line.strip().partition(":")
        head, rest = head.strip(" *_#").lower(), rest.strip(" *_")
        if head == "question" and rest and question is None:
            question = rest
        elif head == "answer" and rest and answer is None:
            answer = rest.rstrip(".")
    if not question or not answer:
        return None
    return question, answer


def synthetic_pairs(
    index,
    generator,
    n: int,
    top_k: int = 10,
    seed: int = 0,
    max_tokens: int = 64,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[LabelledPair], dict]:
    """Questions written by the generator for ``n`` sampled passages of ``index``, labelled by retrieval.

    For each sampled passage the generator writes a question and a short answer.
    The pair is dropped when the answer does not occur in the passage (whole
    words) or occurs in the question itself, and when the question does not
    retrieve its own passage among its top-k (a question too vague to find its
    source, "What is the name of the place?", is no question a user asks of
    the index: the round-trip filter of synthetic question generation). The
    passage is the positive; the question's retrieved top-k passages that do
    not hold the answer are the negatives (a retrieved passage that holds it,
    other than the source, is left out: it may well answer the question too).

    Returns
    -------
    (pairs, counts)
        ``counts``: ``sampled``, ``kept``, ``dropped_unparsed``, ``dropped_long_answer``,
        ``dropped_not_in_passage``, ``dropped_not_retrieved``.
    """
    rng = random.Random(seed)
    passages = [p for p in index.passages if len(p.text.split()) >= 20] or list(index.passages)
    chosen = rng.sample(passages, min(n, len(passages)))
    counts = {
        "sampled": len(chosen),
        "kept": 0,
        "dropped_unparsed": 0,
        "dropped_long_answer": 0,
        "dropped_not_in_passage": 0,
        "dropped_not_retrieved": 0,
    }
    out: list[LabelledPair] = []
    for done, passage in enumerate(chosen, 1):
        reply = generator.generate(
            [{"role": "user", "content": SYNTHETIC_PROMPT.format(passage=passage.text)}], max_tokens
        ).text
        parsed = parse_synthetic(reply)
        if parsed is None:
            counts["dropped_unparsed"] += 1
        elif len(parsed[1].split()) > MAX_ANSWER_WORDS:
            counts["dropped_long_answer"] += 1
        else:
            question, answer = parsed
            if not contains_phrase(passage.text, answer) or contains_phrase(question, answer):
                counts["dropped_not_in_passage"] += 1
                hits = None
            else:  # searched only for a question whose answer is in its passage
                hits = index.search(question, top_k)
                if all(hit.passage.id != passage.id for hit in hits):
                    counts["dropped_not_retrieved"] += 1
                    hits = None
            if hits is not None:
                counts["kept"] += 1
                qid = f"synthetic:{question_key(question)}"  # two passages that gave one question: one question
                out.append(LabelledPair(qid, question, passage.text, 1, (answer,)))
                for hit in hits:
                    if hit.passage.id != passage.id and not contains_phrase(hit.passage.text, answer):
                        out.append(LabelledPair(qid, question, hit.passage.text, 0, (answer,)))
        if progress is not None:
            progress(done, len(chosen))
    return out, counts


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
    pairs: Sequence[LabelledPair], validation: float, seed: int = 0, train_only: Sequence[LabelledPair] = ()
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
    """One calibration :class:`~crag_cli.calibrate.Item` per question (:func:`question_groups`, in order of first appearance)."""
    groups: dict[int, Item] = {}
    for g, p, s in zip(question_groups(pairs), pairs, scores):
        item = groups.setdefault(g, Item([], False))
        item.scores.append(s)
        item.holds = item.holds or bool(p.label)
    return list(groups.values())


def validation_metrics(pairs: Sequence[LabelledPair], scores: Sequence[float], **precision) -> dict:
    """Pair accuracy (score >= 0, i.e. probability >= 0.5), pair AUC and action accuracy (thresholds fitted here)."""
    labels = [bool(p.label) for p in pairs]
    items = question_items(pairs, scores)
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


# ----------------------------------------------------------------------------- training


class _PairDataset:
    """Tokenised pairs for the Trainer (a map-style dataset)."""

    def __init__(self, tokenizer, pairs: Sequence[LabelledPair], max_length: int, t5: bool) -> None:
        enc = encode_pairs(
            tokenizer, [(p.question, p.passage) for p in pairs], max_length, t5, padding=False, tensors=None
        )
        self.rows = [{k: enc[k][i] for k in enc} | {"labels": [float(p.label)]} for i, p in enumerate(pairs)]

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict:
        return self.rows[i]


OWN_FILES = (MANIFEST, "README.md", "adapter_config.json")  # with the weights its manifest lists


def check_output_folder(out: Path, inputs: Sequence[Path] = ()) -> None:
    """Refuse an ``--out`` that crag may not replace; checked before training and again before the rename.

    ``out`` must be a new name, an empty folder, or a trained evaluator crag
    wrote and nothing else (its manifest, model card, adapter config and the
    weights the manifest lists): a file, a symbolic link, the current folder or
    one of its parents, a folder holding any other file, and a folder holding
    one of ``inputs`` (the training data, the index) are refused, as is a
    parent folder that does not exist or cannot be written.
    """
    given = Path(out)
    if given.is_symlink():
        raise TrainingError(f"--out {given} is a symbolic link: crag writes only a folder of its own")
    out = Path(os.path.abspath(given))
    if out.exists() and not out.is_dir():
        raise TrainingError(f"--out {given} is a file, not a folder: crag leaves it alone")
    real = out.resolve()  # through any linked parent folder
    cwd = Path.cwd().resolve()
    if real == cwd or real in cwd.parents:
        raise TrainingError(f"--out {given} is the current folder or one of its parents: choose a new folder")
    for path in inputs:
        full = Path(path).resolve()
        if full == real or real in full.parents or full in real.parents and is_crag_index(full):
            raise TrainingError(
                f"--out {given} and the input {path} overlap: crag never writes over or into its inputs"
            )
    if out.is_dir():
        entries = sorted(e.name for e in out.iterdir())
        if entries:
            try:
                manifest = read_trained(out)
            except CragError:
                raise TrainingError(
                    f"--out {given} is a folder that is not a crag evaluator: crag replaces only its own; choose a "
                    "new or empty folder"
                ) from None
            own = set(OWN_FILES) | set(manifest["files"])  # read_trained checked it is a non-empty mapping
            foreign = [e for e in entries if e not in own]
            if foreign:
                raise TrainingError(
                    f"--out {given} holds {foreign[0]!r}, which crag did not write there: crag replaces only a "
                    "folder of its own files"
                )
    if not out.parent.is_dir():
        raise TrainingError(f"cannot write {given}: no such folder {out.parent}")
    if not os.access(out.parent, os.W_OK | os.X_OK):
        raise TrainingError(f"cannot write {given}: the folder {out.parent} is not writable")


def train(
    train_pairs: Sequence[LabelledPair],
    val_pairs: Sequence[LabelledPair],
    out: Path,
    config: TrainConfig,
    data_note: str = "",
    log: Callable[[str], None] = lambda m: print(m, file=sys.stderr),
    inputs: Sequence[Path] = (),
) -> dict:
    """Fine-tune, keep the best epoch, calibrate on the validation questions, write ``out``; return the card.

    The folder is built beside ``out`` and renamed into place, so ``out`` is
    either the old evaluator or the new one, never half of one; ``out`` is
    checked (:func:`check_output_folder`, with ``inputs``) before training and
    again just before the rename.
    """
    import numpy as np
    import torch
    from peft import LoraConfig, TaskType, get_peft_model
    from transformers import DataCollatorWithPadding, Trainer, TrainingArguments, set_seed
    from transformers.utils import logging as hf_logging

    from . import files
    from .refine import decompose

    if not train_pairs or not val_pairs:
        raise TrainingError("training needs pairs on both sides of the split")
    for side, pairs in (("training", train_pairs), ("validation", val_pairs)):
        if not any(p.label for p in pairs) or all(p.label for p in pairs):
            raise TrainingError(f"the {side} pairs need both positives and negatives")
    out = Path(out)
    check_output_folder(out)
    files.clean_stale(out)
    start = time.time()
    if config.threads:
        torch.set_num_threads(config.threads)
    set_seed(config.seed)
    torch.set_grad_enabled(True)
    tokenizer, model = load_classifier(config.base)
    t5 = is_t5(model)
    lora = LoraConfig(
        task_type=TaskType.SEQ_CLS,
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules="all-linear",
    )
    model = get_peft_model(model, lora)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    log(
        f"training {trainable:,} parameters (LoRA r={config.lora_r} + head) on {len(train_pairs)} pairs, "
        f"validating on {len(val_pairs)}"
    )
    train_ds = _PairDataset(tokenizer, train_pairs, config.max_length, t5)
    val_ds = _PairDataset(tokenizer, val_pairs, config.max_length, t5)
    precision = {"correct_precision": config.correct_precision, "incorrect_precision": config.incorrect_precision}
    history: list[dict] = []

    def compute_metrics(pred) -> dict:
        logits = np.asarray(pred.predictions).reshape(-1)
        metrics = validation_metrics(val_pairs, [logit_to_score(float(z)) for z in logits], **precision)
        history.append(metrics)
        return {k: v for k, v in metrics.items() if isinstance(v, float)}

    work = files.temp_dir(out)
    try:
        args = TrainingArguments(
            output_dir=str(work / "checkpoints"),
            num_train_epochs=config.epochs,
            per_device_train_batch_size=config.batch_size,
            per_device_eval_batch_size=max(32, config.batch_size),
            learning_rate=config.learning_rate,
            **_warmup(0.1),
            weight_decay=0.01,
            lr_scheduler_type="linear",
            eval_strategy="epoch",
            save_strategy="epoch",
            save_total_limit=2,
            load_best_model_at_end=True,
            metric_for_best_model="action_accuracy",
            greater_is_better=True,
            seed=config.seed,
            data_seed=config.seed,
            use_cpu=not torch.cuda.is_available(),
            report_to=[],
            logging_strategy="epoch",
            dataloader_num_workers=0,
            disable_tqdm=False,
            save_only_model=True,
        )
        hf_logging.set_verbosity_error()
        trainer = Trainer(
            model=model,
            args=args,
            train_dataset=train_ds,
            eval_dataset=val_ds,
            data_collator=DataCollatorWithPadding(tokenizer),
            compute_metrics=compute_metrics,
        )
        with contextlib.redirect_stdout(sys.stderr):  # the Trainer's logs are progress, not data
            trainer.train()
        model = trainer.model.eval()
        best = max(range(len(history)), key=lambda i: (history[i]["action_accuracy"], -i))
        # calibrate on the validation questions only (never on the training ones)
        from .evaluator import CrossEncoderEvaluator

        scorer = CrossEncoderEvaluator.__new__(CrossEncoderEvaluator)
        CrossEncoderEvaluator.__init__(scorer, work, batch_size=64, max_length=config.max_length)
        scorer._tokenizer, scorer._model, scorer._t5 = tokenizer, model, t5
        torch.set_grad_enabled(False)
        val_input = [(p.question, p.passage) for p in val_pairs]
        val_scores = scorer.score(val_input)
        strips = [(p, s) for p in val_pairs for s in decompose(p.passage, config.strip_mode)]
        strip_scores = scorer.score([(p.question, s) for p, s in strips])
        calib = calibrate(
            question_items(val_pairs, val_scores),
            strip_scores,
            [p.label == 1 and p.strip_holds(s) for p, s in strips],
            config.correct_precision,
            config.incorrect_precision,
            config.strip_recall,
        )
        guard = None
        if config.topic_guard and not t5:
            guard, guard_report = fit_topic_guard(scorer, config.base, val_pairs, val_input, calib, precision)
            if guard_report["off"]:
                log("warning: " + guard_report["note"])
            else:
                log(
                    f"topic guard: cosine >= {guard['cosine']} lifts a score to {guard['score']}; "
                    + guard_report["note"]
                )
            calib.notes.append(guard_report["note"])
            calib.action_accuracy, calib.actions = guard_report["action_accuracy"], guard_report["actions"]
        final = files.temp_dir(out)
        try:
            model.save_pretrained(str(final), safe_serialization=True)
            adapter_config = final / "adapter_config.json"  # name the base as crag does, not this machine's path
            if adapter_config.is_file():
                cfg = json.loads(adapter_config.read_text(encoding="utf-8"))
                cfg["base_model_name_or_path"] = config.base
                adapter_config.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            for f in final.iterdir():
                os.chmod(f, files.default_mode())
            weights = {f.name: files.digest(f)[1] for f in sorted(final.iterdir()) if f.suffix == ".safetensors"}
            card = {
                "format": 1,
                "kind": "cross-encoder",
                "crag_version": __version__,
                "base": config.base,
                "adapter": "lora",
                "max_length": config.max_length,
                "thresholds": {"upper": calib.upper, "lower": calib.lower, "filter": calib.filter},
                "topic_guard": guard,
                "calibration": {k: v for k, v in calib.to_dict().items()},
                "validation_by_epoch": history,
                "best_epoch": best + 1,
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
                "seconds": round(time.time() - start, 1),
                "files": weights,
            }
            (final / MANIFEST).write_text(json.dumps(card, indent=1) + "\n", encoding="utf-8")
            (final / "README.md").write_text(model_card(card), encoding="utf-8")
            check_output_folder(out, inputs)  # again: training took a while, and the folder may have changed
            _replace_folder(final, out)
        except BaseException:
            files.remove(final)
            raise
    finally:
        files.remove(work)
    return card


def fit_topic_guard(scorer, base: str, val_pairs, val_input, calib, precision: dict) -> tuple[dict, dict]:
    """The topic guard of a trained evaluator, fitted on the validation questions.

    Its cosine cut is where the base encoder's cosine, used alone as an
    evaluator, would fire Correct (``choose_action_thresholds``' upper on the
    validation questions); a pair at or above it scores at least the calibrated
    ``lower``. Returns the guard and how the validation questions fare with it.
    """
    from .evaluator import MiniLMEvaluator, base_path

    cosine = MiniLMEvaluator(base_path(base), batch_size=64)
    cos_scores = cosine.score(val_input)
    cut, _, _ = choose_action_thresholds(question_items(val_pairs, cos_scores), **precision)
    guard = {"cosine": cut, "score": calib.lower}
    raw = [s for s in scorer.score(val_input)]
    acc_raw, counts_raw = action_accuracy(question_items(val_pairs, raw), calib.upper, calib.lower)
    if not guard_can_lift(calib.upper, calib.lower):  # as the evaluator will score: the guard is off
        note = (
            f"the topic guard is off with these thresholds (lower {calib.lower} is not below upper "
            f"{calib.upper}: no Ambiguous band to lift on-topic passages to), so on documents unlike the "
            f"training questions passages may be discarded; validation action accuracy {acc_raw:.4f} {counts_raw}"
        )
        return guard, {"action_accuracy": round(acc_raw, 4), "actions": counts_raw, "note": note, "off": True}
    guarded = [max(s, calib.lower) if c >= cut else s for s, c in zip(raw, cos_scores)]
    acc, counts = action_accuracy(question_items(val_pairs, guarded), calib.upper, calib.lower)
    note = f"validation action accuracy {acc:.4f} {counts} with the topic guard, {acc_raw:.4f} {counts_raw} without"
    return guard, {"action_accuracy": round(acc, 4), "actions": counts, "note": note, "off": False}


def _warmup(ratio: float) -> dict:
    """A warm-up over ``ratio`` of the steps: ``warmup_ratio`` (transformers 4) or a float ``warmup_steps`` (5)."""
    import inspect

    from transformers import TrainingArguments

    params = inspect.signature(TrainingArguments.__init__).parameters
    return {"warmup_ratio": ratio} if "warmup_ratio" in params else {"warmup_steps": ratio}


def _replace_folder(new: Path, out: Path) -> None:
    """Rename ``new`` to ``out``; an old evaluator at ``out`` is moved aside first and removed after."""
    from . import files

    old = None
    if out.exists():
        if any(out.iterdir()):
            old = files.temp_dir(out)
            os.rmdir(old)
            os.replace(out, old)
        else:
            out.rmdir()
    try:
        os.replace(new, out)
    except OSError as exc:
        if old is not None:
            try:
                os.replace(old, out)  # the old evaluator goes back where it was
            except OSError:
                raise TrainingError(
                    f"cannot write {out} ({exc.strerror or exc}); the evaluator that was there is "
                    f"at {old}: move it back before crag's next run cleans it up"
                ) from None
        raise
    if old is not None:
        files.remove(old)


def model_card(card: dict) -> str:
    """The README.md written beside a trained evaluator: data, counts, settings, scores, time."""
    c = card["calibration"]
    lines = [
        "# crag retrieval evaluator",
        "",
        f"A cross-encoder made by `crag train-evaluator` (crag {card['crag_version']}): a LoRA adapter "
        f"and a one-logit head over `{card['base']}`; score = tanh(logit / 2) in [-1, 1].",
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
