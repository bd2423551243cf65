"""Trained cross-encoders (``minilm``, ``minilm:PATH``): a LoRA adapter and a head over a base encoder, or its layers
trained and mean-pooled, with stored thresholds and topic guard."""

from __future__ import annotations

import json
import math
from functools import cached_property
from pathlib import Path
from typing import Sequence

from .base import EvaluatorError, Pair, length_sorted_batches, quiet_transformers, pass_size, with_precision
from .base import EMBEDDED_BASE, EMBEDDED_EVALUATOR, MANIFEST, default_minilm_path, parse_spec
from .cosine import MiniLMEvaluator, shared_encoder
from .evidence import EvidenceFit, read_evidence
from .fused import FusedFit, read_fused
from .t5 import T5Evaluator


# --------------------------------------------------------------------------- trained cross-encoders

# sha256 of the shipped adapter's weights: checked before load, so a changed file is refused
EMBEDDED_ADAPTER_SHA256 = "860f773664777b01f0da3bf5ac7caa2a44c0385e6cc1cc060a2fbea9765c8ced"
EMBEDDED_DOMAIN_SHA256 = "04d897de6b8f93cc24a0577e9d397dd118d5ccce4fc19ae5f852652236c4ffaf"  # its domain-questions.npy


def guard_can_lift(upper: float, lower: float) -> bool:
    """Whether a topic guard may lift scores to ``lower``: only below ``upper``, so it never makes Correct.

    With ``lower`` at or above ``upper`` there is no Ambiguous band to lift to, and the guard is off.
    """
    return lower < upper


def read_trained(path: Path) -> dict:
    """The manifest of a trained evaluator folder, checked for the fields crag needs."""
    path = Path(path)
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EvaluatorError(f"{path} holds no trained evaluator ({MANIFEST} is missing)") from None
    except (OSError, ValueError) as exc:
        raise EvaluatorError(f"corrupt evaluator manifest {path / MANIFEST}: {exc}") from None
    if not isinstance(manifest, dict):
        raise EvaluatorError(f"corrupt evaluator manifest {path / MANIFEST}: not a JSON object")
    missing = [k for k in ("format", "base", "thresholds", "files", "max_length") if k not in manifest]
    if missing:
        raise EvaluatorError(f"corrupt evaluator manifest {path / MANIFEST}: missing {', '.join(missing)}")
    if not isinstance(manifest["files"], dict) or not manifest["files"]:
        raise EvaluatorError(f"corrupt evaluator manifest {path / MANIFEST}: 'files' lists no weights to check")
    return manifest


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".pkl")


def absolute_spec(spec: str) -> str:
    """``spec`` naming the same evaluator from any working folder (a local path made absolute).

    What is sent to other machines (Ray actors): ``minilm:./ev`` becomes the
    folder's absolute path, ``t5:ckpt`` and ``minilm-cosine:model`` keep their
    kind; the embedded evaluators are names and stay as they are.
    """
    kind, path = parse_spec(spec)
    if path is None or Path(path).resolve() == EMBEDDED_EVALUATOR.resolve():
        return spec
    full = str(Path(path).resolve())
    return full if kind == "trained" else f"{kind}:{full}"


def trained_thresholds(spec: str) -> dict | None:
    """The thresholds stored with a trained evaluator (``upper``, ``lower``, ``filter``), or ``None``."""
    kind, path = parse_spec(spec)
    if kind != "trained":
        return None
    return read_trained(path)["thresholds"]


def base_path(base: str) -> Path:
    """Where a trained evaluator's base model lies (``embedded:...`` = the embedded MiniLM)."""
    return default_minilm_path() if base == EMBEDDED_BASE else Path(base)


def verify_files(path: Path, manifest: dict) -> None:
    """Refuse a trained evaluator whose weights differ from the sha256 its manifest (or crag) pins."""
    from ..files import cached_digest

    files = manifest["files"]
    if Path(path).resolve() == EMBEDDED_EVALUATOR.resolve():
        files = {
            **files,
            "adapter_model.safetensors": EMBEDDED_ADAPTER_SHA256,
            "domain-questions.npy": EMBEDDED_DOMAIN_SHA256,
        }
    unlisted = sorted(f.name for f in Path(path).iterdir() if f.suffix in WEIGHT_SUFFIXES and f.name not in files)
    if unlisted:  # a weights file nothing pins could be loaded in place of the checked one
        raise EvaluatorError(f"trained evaluator {path}: {unlisted[0]} is not in its manifest: refusing to load it")
    for name, sha in files.items():
        got = cached_digest(Path(path) / name)  # once per process: the run manifest's fingerprint read it too
        if got is None:
            raise EvaluatorError(f"trained evaluator {path}: {name} is missing or unreadable")
        if got[1] != sha:
            raise EvaluatorError(
                f"trained evaluator {path}: {name} has sha256 {got[1][:12]}..., expected {sha[:12]}...: refusing to load it"
            )


def _base_folder(base: str) -> Path:
    """The base model's folder, which must exist (transformers quieted: it is about to be loaded)."""
    quiet_transformers()
    path = base_path(base)
    if not Path(path).is_dir():
        raise EvaluatorError(f"evaluator base model not found: {path}")
    return path


def load_classifier(base: str, num_labels: int = 1):
    """``(tokenizer, model)``: a base encoder (or T5) with a fresh ``num_labels``-output head."""
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    path = _base_folder(base)
    try:
        config = AutoConfig.from_pretrained(str(path), local_files_only=True, num_labels=num_labels)
        config.problem_type = "multi_label_classification"  # one logit, binary cross-entropy
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        model = AutoModelForSequenceClassification.from_pretrained(str(path), config=config, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise EvaluatorError(f"cannot load evaluator base model from {path}: {exc}") from None
    return tokenizer, model


def load_pooled(base: str):
    """``(tokenizer, model)``: a base encoder, mean-pooled, with a fresh one-logit head (every layer trainable;
    :mod:`crag_cli.evaluator.pooled`)."""
    from .pooled import mean_pooled

    path = _base_folder(base)

    try:
        tokenizer, model = mean_pooled(path)
    except (OSError, ValueError) as exc:
        raise EvaluatorError(f"cannot load evaluator base model from {path}: {exc}") from None
    if is_t5(model):
        raise EvaluatorError(f"{path} is a T5: a full fine-tune takes an encoder (BERT-like) base")
    return tokenizer, model


def is_t5(model) -> bool:
    return getattr(model.config, "model_type", "") in ("t5", "mt5", "umt5")


def encode_pairs(tokenizer, pairs: Sequence[Pair], max_length: int, t5: bool, padding="longest", tensors="pt"):
    """Tokenise (question, passage) pairs: a sentence pair for encoders, ``"q [SEP] p"`` for T5 (as the paper).

    Pairs longer than ``max_length`` lose tokens from the longer side first (the
    passage, unless a question is longer than its passage).
    """
    if t5:
        return tokenizer(
            [f"{q}{T5Evaluator.SEPARATOR}{p}" for q, p in pairs],
            padding=padding,
            truncation=True,
            max_length=max_length,
            return_tensors=tensors,
        )
    return tokenizer(
        [q for q, _ in pairs],
        [p for _, p in pairs],
        padding=padding,
        truncation="longest_first",
        max_length=max_length,
        return_tensors=tensors,
    )


def logit_to_score(z: float) -> float:
    """``tanh(z / 2)``: the sigmoid probability ``p`` of a logit mapped onto [-1, 1] as ``2p - 1``."""
    return math.tanh(z / 2.0)


class CrossEncoderEvaluator:
    """A cross-encoder trained by ``crag train-evaluator``: a LoRA adapter and head over a base encoder, or its
    every layer trained, mean-pooled (``--adapter full``).

    A cross-encoder fitted to one collection judges answers well there but can
    underrate every passage of a domain it never saw (trained on PopQA's entity
    questions, it scores the Python reference's "pass is a null operation" low
    for "What does the pass statement do?"). The *topic guard* stored with it
    (``topic_guard: {"cosine": c, "score": s}``) keeps such passages from being
    discarded: a pair whose embedding cosine (the base encoder, mean-pooled)
    reaches ``c`` scores at least the lower threshold in force (the calibrated
    ``s`` unless :meth:`use_thresholds` says otherwise). The cosine alone can
    thus turn Incorrect into Ambiguous but never make anything Correct: with a
    lower threshold at or above the upper one the guard is off. ``c`` is the
    cosine's own Correct-precision threshold on the validation questions.

    Parameters
    ----------
    path : str or Path
        The trained evaluator's folder (``crag-evaluator.json`` + adapter or ``encoder.safetensors``).
    batch_size : int
        Pairs per forward pass.
    max_length : int
        Input tokens kept per pair (at most the length it was trained with).
    name : str, optional
        How records name it (default: ``minilm:PATH``).
    precision : {"float", "int8"}
        The arithmetic of it and of its guard's encoder (:func:`crag_cli.evaluator.base.with_precision`).
    """

    def __init__(
        self,
        path: str | Path,
        batch_size: int,
        max_length: int,
        name: str | None = None,
        precision: str = "float",
    ) -> None:
        if batch_size < 1:
            raise EvaluatorError("evaluator batch size must be at least 1")
        self.path = Path(path)
        self.batch_size = batch_size
        self.max_length = max_length
        self.name = name or f"minilm:{path}"
        self.precision = precision
        self._model = None
        self._tokenizer = None
        self._t5 = False
        self._guard: dict | None = None
        self._cosine: MiniLMEvaluator | None = None
        self._domain: tuple | None = None  # (training questions' embeddings, cosine cut, base)
        self._in_force: tuple[float, float] | None = None  # (upper, lower) the actions are decided with
        self._stored_upper: float | None = None  # the upper threshold stored with it (read once, on load)
        self.forward_passes = 0

    def use_thresholds(self, upper: float, lower: float) -> None:
        """Tell the guard the thresholds in force (default: the ones stored with the evaluator)."""
        self._in_force = (float(upper), float(lower))

    def guard_floor(self) -> float | None:
        """The score the topic guard lifts an on-topic pair to: the lower threshold in force, or ``None`` (off)."""
        if not self._guard:
            return None
        if self._in_force is None:
            if self._stored_upper is None:
                self._stored_upper = float(read_trained(self.path)["thresholds"]["upper"])
            upper, lower = self._stored_upper, float(self._guard["score"])
        else:
            upper, lower = self._in_force
        return lower if guard_can_lift(upper, lower) else None

    def load(self) -> None:
        """Check the weights' sha256, then load base + adapter, merged, or base + trained layers (it is otherwise
        loaded on the first score)."""
        if self._model is not None:
            return
        import torch
        from safetensors import SafetensorError

        manifest = read_trained(self.path)
        verify_files(self.path, manifest)
        adapter = manifest.get("adapter", "lora")
        if adapter not in ("lora", "full"):
            raise EvaluatorError(f"trained evaluator {self.path}: unknown adapter {adapter!r} (a newer crag made it?)")
        full = adapter == "full"  # every layer trained and stored (pooled.py), not LoRA
        tokenizer, model = load_pooled(manifest["base"]) if full else load_classifier(manifest["base"])
        try:
            if full:
                from .pooled import WEIGHTS

                model.load(self.path / WEIGHTS)
            else:
                from peft import PeftModel

                model = PeftModel.from_pretrained(model, str(self.path)).merge_and_unload()
        except (OSError, ValueError, RuntimeError, KeyError, SafetensorError) as exc:
            raise EvaluatorError(f"cannot load trained evaluator {self.path}: {exc}") from None
        self.max_length = min(self.max_length, int(manifest["max_length"]))
        self._tokenizer, self._model, self._t5 = tokenizer, with_precision(model.eval(), self.precision), is_t5(model)
        self._stored_upper = float(manifest["thresholds"]["upper"])
        self.set_guard(manifest.get("topic_guard"), manifest["base"])
        self._load_domain(manifest)
        torch.set_grad_enabled(False)

    def _load_domain(self, manifest: dict) -> None:
        """Read the domain stored with it (:mod:`crag_cli.evaluator.domain`), if any; its sha256 was checked on load."""
        import numpy as np

        entry = manifest.get("domain")
        if not entry:
            self._domain = None
            return
        if not isinstance(entry, dict) or entry.get("file") not in manifest["files"]:
            raise EvaluatorError(f"trained evaluator {self.path}: its domain file is not pinned in its manifest")
        try:
            known = np.load(self.path / entry["file"], allow_pickle=False).astype(np.float32)
            self._domain = (known, float(entry["cosine"]), manifest["base"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise EvaluatorError(f"trained evaluator {self.path}: cannot read its domain: {exc}") from None
        if self._cosine is None:  # the topic guard's encoder when it has one
            self._cosine = self._encoder(manifest["base"])
        self._cosine.load()  # now, so that no question's time includes loading it

    def knows(self, questions: Sequence[str]) -> list[bool] | None:
        """Whether each question is like those it was trained on (in its domain); ``None``: no domain stored.

        A question is in the domain when the base encoder's cosine to its
        nearest training question reaches the stored cut
        (:func:`crag_cli.evaluator.domain.nearest_cosines`).
        """
        from .domain import nearest_cosines

        self.load()
        if self._domain is None:
            return None
        if not questions:
            return []
        known, cut, _ = self._domain
        return [bool(c >= cut) for c in nearest_cosines(self._cosine.embed(list(questions)), known)]

    def nearness(self, questions: Sequence[str], others: bool = False) -> list[float] | None:
        """Each question's cosine to the nearest question it was trained on (what :meth:`knows` compares with its
        cut); ``None``: no domain stored. ``others``: to the nearest other than itself (for a training question:
        the fused evaluator's fit, :mod:`crag_cli.train.fused`)."""
        import numpy as np

        self.load()
        if self._domain is None:
            return None
        if not questions:
            return []
        known = np.asarray(self._domain[0], dtype=np.float32)
        sims = np.sort(np.asarray(self._cosine.embed(list(questions)), dtype=np.float32) @ known.T, axis=1)
        own = others & (sims[:, -1] > 0.9999) if len(known) > 1 else np.zeros(len(sims), dtype=bool)
        return [float(c) for c in np.where(own, sims[:, -2], sims[:, -1])] if len(known) else [-1.0] * len(questions)

    def set_guard(self, guard: dict | None, base: str) -> None:
        """Use a topic guard (``{"cosine": c, "score": s}``) with the base encoder's cosine, or none."""
        self._guard = guard
        self._cosine = self._encoder(base) if guard else None

    def _encoder(self, base: str) -> MiniLMEvaluator:
        """The base encoder's cosine, for the topic guard and the domain, at this evaluator's precision: the
        process's one copy (:func:`crag_cli.evaluator.cosine.shared_encoder`, the index's dense retriever's too)."""
        return shared_encoder(base_path(base), self.precision)

    def logits(self, pairs: Sequence[Pair]) -> list[float]:
        """The raw logit of every pair, in input order."""
        import torch

        if not pairs:
            return []
        self.load()
        out = [0.0] * len(pairs)
        lengths = [len(q) + len(p) for q, p in pairs]
        for batch in length_sorted_batches(len(pairs), lengths, pass_size(self.batch_size, self.precision)):
            enc = encode_pairs(self._tokenizer, [pairs[i] for i in batch], self.max_length, self._t5)
            enc = enc.to(self._model.device)
            with torch.inference_mode():
                logits = self._model(**enc).logits[:, 0].cpu()
            self.forward_passes += 1
            for j, i in enumerate(batch):
                out[i] = float(logits[j])
        return out

    @cached_property
    def evidence(self) -> EvidenceFit | None:
        """The combined evidence stored with it (:mod:`crag_cli.evaluator.evidence`), or ``None``; read when asked."""
        return read_evidence(read_trained(self.path), self.path)

    @property
    def fused(self) -> FusedFit | None:
        """The fused evaluator's fit stored with it (:mod:`crag_cli.evaluator.fused`), or ``None``; read when asked."""
        return read_fused(read_trained(self.path), self.path)

    def score(self, pairs: Sequence[Pair]) -> list[float]:
        return self.score_logits(pairs)[0]

    def score_logits(self, pairs: Sequence[Pair]) -> tuple[list[float], list[float]]:
        """Scores (with the topic guard) and the raw logits they come from, in one forward pass."""
        logits = self.logits(pairs)
        scores = [logit_to_score(z) for z in logits]
        floor = self.guard_floor()
        below = [i for i, s in enumerate(scores) if s < floor] if floor is not None else []
        if below:  # only a pair below the floor can be lifted: the guard's cosine is computed for those alone
            cut = float(self._guard["cosine"])
            for i, c in zip(below, self._cosine.score([pairs[i] for i in below])):
                if c >= cut:
                    scores[i] = floor
        return scores, logits
