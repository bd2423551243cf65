"""``t5:PATH``: a local ``T5ForSequenceClassification`` checkpoint with one label, as the evaluator released with CRAG."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..errors import one_line
from .base import MANIFEST
from .base import EvaluatorError, Pair, length_sorted_batches, quiet_transformers, pass_size, with_precision


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
    precision : {"float", "int8"}
        Its arithmetic (:func:`crag_cli.evaluator.base.with_precision`).
    """

    SEPARATOR = " [SEP] "

    def __init__(self, path: str | Path, batch_size: int, max_length: int, precision: str = "float") -> None:
        if batch_size < 1:
            raise EvaluatorError("evaluator batch size must be at least 1")
        self.path = Path(path)
        self.batch_size = batch_size
        self.max_length = max_length
        self.precision = precision
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

    def knows(self, questions: Sequence[str]) -> None:
        """It stores no domain: it cannot tell."""
        return None

    def load(self) -> None:
        """Load the model now (it is otherwise loaded on the first score)."""
        if self._model is not None:
            return
        self.check()
        import torch
        from transformers import AutoTokenizer, T5ForSequenceClassification

        quiet_transformers()
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
            model = T5ForSequenceClassification.from_pretrained(str(self.path), local_files_only=True)
        except (OSError, ValueError) as exc:
            raise EvaluatorError(f"cannot load T5 evaluator from {self.path}: {one_line(exc)}") from None
        if model.config.num_labels != 1:
            raise EvaluatorError(
                f"T5 evaluator at {self.path} has {model.config.num_labels} labels; a CRAG evaluator has 1"
            )
        self._model = with_precision(model.eval(), self.precision)
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
        for batch in length_sorted_batches(
            len(texts), [len(t) for t in texts], pass_size(self.batch_size, self.precision)
        ):
            enc = self._tokenizer(
                [texts[i] for i in batch],
                padding="longest",
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            ).to(self._model.device)
            with torch.inference_mode():
                logits = self._model(**enc).logits[:, 0].cpu()
            self.forward_passes += 1
            for j, i in enumerate(batch):
                out[i] = max(-1.0, min(1.0, float(logits[j])))
        return out
