"""Training: a LoRA adapter and a one-logit head over the base encoder (or every layer of it, mean-pooled), the best epoch kept, thresholds and topic guard calibrated, the folder written beside its name and renamed into place, with a model card."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

from ..action.calibrate import action_accuracy, calibrate, choose_action_thresholds
from ..errors import CragError
from ..evaluator import (
    MANIFEST,
    encode_pairs,
    guard_can_lift,
    is_t5,
    load_classifier,
    load_pooled,
    logit_to_score,
    read_trained,
)
from ..index import is_crag_index

from .card import manifest, model_card
from .start import known_before, load_start, note_in_sample, record_start
from .data import (
    LabelledPair,
    TrainConfig,
    TrainingError,
    question_fingerprint,
    question_groups,
    calibration_items,
    validation_metrics,
)


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


WEAK_AUC = 0.6  # a validation AUC below this is warned about: the evaluator barely ranks the passages


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
    import torch

    from .. import files
    from ..evaluator.pooled import MeanPooledCrossEncoder

    _check_pairs(train_pairs, val_pairs)
    out = Path(out)
    check_output_folder(out)
    files.clean_stale(out)
    start = time.time()
    tokenizer, model, t5 = _model_to_train(config)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    what = f"LoRA r={config.lora_r} + head" if config.adapter == "lora" else "every encoder layer + head"
    log(f"training {trainable:,} parameters ({what}) on {len(train_pairs)} pairs, validating on {len(val_pairs)}")
    train_ds = _PairDataset(tokenizer, train_pairs, config.max_length, t5)
    val_ds = _PairDataset(tokenizer, val_pairs, config.max_length, t5)
    work = files.temp_dir(out)
    try:
        model, history = _fit(model, tokenizer, train_ds, val_ds, val_pairs, config, work)
        if isinstance(model, MeanPooledCrossEncoder):  # stored in half precision: calibrate that
            model.round_as_stored()
        best = max(range(len(history)), key=lambda i: (history[i]["action_accuracy"], -i))
        # calibrate on the validation questions only (never on the training ones)
        from ..evaluator import CrossEncoderEvaluator

        scorer = CrossEncoderEvaluator.__new__(CrossEncoderEvaluator)
        CrossEncoderEvaluator.__init__(scorer, work, batch_size=64, max_length=config.max_length)
        scorer._tokenizer, scorer._model, scorer._t5 = tokenizer, model, t5
        torch.set_grad_enabled(False)
        calib, guard = _calibrate_on_validation(scorer, val_pairs, config, t5, log)
        prior = read_trained(Path(config.start_from)) if config.start_from else None
        domain_known, domain = _fit_domain(config, train_pairs, val_pairs, t5, log, prior)
        _note_weak_auc(history[best].get("auc") if history else None, calib, log)
        note_in_sample(prior, [p.question for p in val_pairs], calib, log)
        final = files.temp_dir(out)
        try:
            weights = _save_weights(final, model, config.base, domain_known, domain)
            fitted = {"calibration": calib, "topic_guard": guard, "domain": domain, "history": history, "best": best}
            card = manifest(config, fitted, data_note, train_pairs, val_pairs, trainable, weights, time.time() - start)
            if prior is not None:  # it has seen both runs' questions
                record_start(card, prior)
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


def _check_pairs(train_pairs: Sequence[LabelledPair], val_pairs: Sequence[LabelledPair]) -> None:
    """Refuse a split that leaves a side empty, or one without both positives and negatives."""
    if not train_pairs or not val_pairs:
        raise TrainingError("training needs pairs on both sides of the split")
    for side, pairs in (("training", train_pairs), ("validation", val_pairs)):
        if not any(p.label for p in pairs) or all(p.label for p in pairs):
            raise TrainingError(f"the {side} pairs need both positives and negatives")


def _model_to_train(config: TrainConfig):
    """The base encoder's tokenizer, the model to train (a LoRA adapter and head over the encoder, or the
    mean-pooled encoder whose layers all train: ``config.adapter``), and whether it is a T5."""
    import torch
    from peft import LoraConfig, TaskType, get_peft_model
    from transformers import set_seed

    if config.threads:
        torch.set_num_threads(config.threads)
    set_seed(config.seed)
    torch.set_grad_enabled(True)
    if config.adapter == "full":
        tokenizer, model = load_pooled(config.base)
        model.freeze()
        if config.start_from is not None:
            load_start(model, Path(config.start_from))
        return tokenizer, model, False
    tokenizer, model = load_classifier(config.base)
    t5 = is_t5(model)
    lora = LoraConfig(
        task_type=TaskType.SEQ_CLS,
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules="all-linear",
    )
    return tokenizer, get_peft_model(model, lora), t5


def _fit(model, tokenizer, train_ds, val_ds, val_pairs, config: TrainConfig, work: Path) -> tuple[object, list[dict]]:
    """Train with transformers' Trainer, checkpoints in ``work``; the best epoch's model and every epoch's metrics.

    Each epoch is scored on the validation pairs (:func:`validation_metrics`);
    the best by action accuracy is the model returned.
    """
    import numpy as np
    import torch
    from transformers import DataCollatorWithPadding, Trainer, TrainingArguments
    from transformers.utils import logging as hf_logging

    precision = _precision(config)
    history: list[dict] = []

    def compute_metrics(pred) -> dict:
        logits = np.asarray(pred.predictions).reshape(-1)
        metrics = validation_metrics(val_pairs, [logit_to_score(float(z)) for z in logits], **precision)
        history.append(metrics)
        return {k: v for k, v in metrics.items() if isinstance(v, float)}

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
    return trainer.model.eval(), history


def _calibrate_on_validation(scorer, val_pairs, config: TrainConfig, t5: bool, log: Callable[[str], None]):
    """The action and strip thresholds, calibrated on the validation pairs, and the topic guard (``None`` if none)."""
    from ..action.refine import decompose

    precision = _precision(config)
    val_input = [(p.question, p.passage) for p in val_pairs]
    val_scores = scorer.score(val_input)
    strips = [(p, s) for p in val_pairs for s in decompose(p.passage, config.strip_mode)]
    strip_scores = scorer.score([(p.question, s) for p, s in strips])
    items = calibration_items(val_pairs, val_scores)
    calib = calibrate(
        items,
        strip_scores,
        [p.label == 1 and p.strip_holds(s) for p, s in strips],
        config.correct_precision,
        config.incorrect_precision,
        config.strip_recall,
    )
    if len(items) > len(set(question_groups(val_pairs))):
        calib.notes.append(
            "every validation question holds its answer: each also counted with only its answer-free "
            f"passages, as if the index lacked the answer ({len(items)} questions calibrated on)"
        )
    guard = None
    if config.topic_guard and not t5:
        guard, guard_report = fit_topic_guard(scorer, config.base, val_pairs, val_input, calib, precision)
        if guard_report["off"]:
            log("warning: " + guard_report["note"])
        else:
            log(f"topic guard: cosine >= {guard['cosine']} lifts a score to {guard['score']}; " + guard_report["note"])
        calib.notes.append(guard_report["note"])
        calib.action_accuracy, calib.actions = guard_report["action_accuracy"], guard_report["actions"]
    return calib, guard


def _fit_domain(config: TrainConfig, train_pairs, val_pairs, t5: bool, log: Callable[[str], None], prior=None):
    """The questions the evaluator knows (:mod:`crag_cli.train.domain`) and its domain; ``(None, None)`` for a T5.

    They are embedded by the base encoder, as the topic guard's are; with ``prior`` (the manifest of the evaluator
    training started from), its known questions too.
    """
    if t5:
        return None, None
    from ..evaluator import MiniLMEvaluator, base_path
    from ..evaluator.cosine import TRAINED_LENGTH
    from .domain import fit_domain  # here: `python -m crag_cli.train.domain` imports this package

    before, old = known_before(Path(config.start_from or "."), prior)
    domain_known, domain = fit_domain(
        MiniLMEvaluator(base_path(config.base), batch_size=64, max_length=TRAINED_LENGTH).embed,
        [q for q in dict.fromkeys(p.question for p in train_pairs) if question_fingerprint(q) not in old],
        list(dict.fromkeys(p.question for p in val_pairs)),
        before,
    )
    log(
        f"domain: a question whose nearest training question has a cosine below {domain['cosine']} is out "
        f"of it ({domain['validation_out']} of {domain['validation_questions']} validation questions)"
    )
    return domain_known, domain


def _precision(config: TrainConfig) -> dict[str, float]:
    """The precisions the action thresholds are chosen for, as :func:`validation_metrics` takes them."""
    return {"correct_precision": config.correct_precision, "incorrect_precision": config.incorrect_precision}


def _note_weak_auc(best_auc: float | None, calib, log: Callable[[str], None]) -> None:
    """Warn, and note in the calibration, when the best epoch's validation AUC is below :data:`WEAK_AUC`."""
    if best_auc is not None and best_auc < WEAK_AUC:
        note = (
            f"validation AUC {best_auc}: this evaluator tells the passages that hold the answer from the "
            "others little better than chance (0.5); compare it with the default on your questions "
            "(crag evaluator-test) before you use it"
        )
        log("warning: " + note)
        calib.notes.append(note)


def _save_weights(final: Path, model, base: str, domain_known, domain: dict | None) -> dict[str, str]:
    """Write the adapter and head, or the trained layers (and the domain's questions) into ``final``; their
    digests, by file name."""
    from .. import files
    from ..evaluator.pooled import WEIGHTS as POOLED_WEIGHTS, MeanPooledCrossEncoder
    from .domain import DOMAIN_FILE, save_domain

    if isinstance(model, MeanPooledCrossEncoder):
        model.save(final / POOLED_WEIGHTS)
    else:
        model.save_pretrained(str(final), safe_serialization=True)
    adapter_config = final / "adapter_config.json"  # name the base as crag does, not this machine's path
    if adapter_config.is_file():
        cfg = json.loads(adapter_config.read_text(encoding="utf-8"))
        cfg["base_model_name_or_path"] = base
        adapter_config.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if domain is not None:
        save_domain(final / DOMAIN_FILE, domain_known)
    for f in final.iterdir():
        os.chmod(f, files.default_mode())
    return {
        f.name: files.digest(f)[1]
        for f in sorted(final.iterdir())
        if f.suffix == ".safetensors" or f.name == DOMAIN_FILE
    }


def fit_topic_guard(scorer, base: str, val_pairs, val_input, calib, precision: dict) -> tuple[dict, dict]:
    """The topic guard of a trained evaluator, fitted on the validation questions.

    Its cosine cut is where the base encoder's cosine, used alone as an
    evaluator, would fire Correct (``choose_action_thresholds``' upper on the
    validation questions); a pair at or above it scores at least the calibrated
    ``lower``. Returns the guard and how the validation questions fare with it.
    """
    from ..evaluator import MiniLMEvaluator, base_path
    from ..evaluator.cosine import TRAINED_LENGTH

    cosine = MiniLMEvaluator(base_path(base), batch_size=64, max_length=TRAINED_LENGTH)
    cos_scores = cosine.score(val_input)
    cut, _, _ = choose_action_thresholds(calibration_items(val_pairs, cos_scores), **precision)
    guard = {"cosine": cut, "score": calib.lower}
    raw = [s for s in scorer.score(val_input)]
    acc_raw, counts_raw = action_accuracy(calibration_items(val_pairs, raw), calib.upper, calib.lower)
    if not guard_can_lift(calib.upper, calib.lower):  # as the evaluator will score: the guard is off
        note = (
            f"the topic guard is off with these thresholds (lower {calib.lower} is not below upper "
            f"{calib.upper}: no Ambiguous band to lift on-topic passages to), so on documents unlike the "
            f"training questions passages may be discarded; validation action accuracy {acc_raw:.4f} {counts_raw}"
        )
        return guard, {"action_accuracy": round(acc_raw, 4), "actions": counts_raw, "note": note, "off": True}
    guarded = [max(s, calib.lower) if c >= cut else s for s, c in zip(raw, cos_scores)]
    acc, counts = action_accuracy(calibration_items(val_pairs, guarded), calib.upper, calib.lower)
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
    from .. import files

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
