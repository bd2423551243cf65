"""A cross-encoder with every encoder layer trained (``crag train-evaluator --adapter full``): the base encoder,
mean-pooled over the pair's tokens, and a one-logit head.

Mean pooling is how all-MiniLM-L6-v2 was trained as a sentence encoder; its
``[CLS]`` pooler, which a sequence-classification head reads, was not. The
embeddings stay as the base has them (they are shared with every word the
training never saw), so what is stored is the layers and the head: ``WEIGHTS``,
half precision, about 21 MB for all-MiniLM-L6-v2.
"""

from __future__ import annotations

from pathlib import Path

import torch

WEIGHTS = "encoder.safetensors"
FROZEN = ("encoder.embeddings.", "encoder.pooler.")  # kept as the base has them: neither trained nor stored


class MeanPooledCrossEncoder(torch.nn.Module):
    """``head(mean of encoder(question [SEP] passage) over its tokens)``: one logit per pair.

    Parameters
    ----------
    encoder : transformers.PreTrainedModel
        A base encoder (``AutoModel``): what ``last_hidden_state`` comes from.
    """

    def __init__(self, encoder) -> None:
        super().__init__()
        self.encoder = encoder
        self.config = encoder.config  # read as a model's (is_t5)
        self.head = torch.nn.Linear(encoder.config.hidden_size, 1)

    def forward(self, input_ids, attention_mask, token_type_ids=None, labels=None):
        from transformers.modeling_outputs import SequenceClassifierOutput

        types = {} if token_type_ids is None else {"token_type_ids": token_type_ids}  # a DistilBERT takes none
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **types).last_hidden_state
        logits = self.head(mean_pool(hidden, attention_mask))
        loss = None
        if labels is not None:
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype).view_as(logits))
        return SequenceClassifierOutput(loss=loss, logits=logits)

    @property
    def device(self) -> torch.device:
        return next(self.encoder.parameters()).device  # the embeddings' (int8 turns the head's into a method)

    def trained(self) -> dict[str, torch.nn.Parameter]:
        """The parameters training changes and ``WEIGHTS`` stores: every one but the embeddings' and the pooler's."""
        return {k: p for k, p in self.named_parameters() if not k.startswith(FROZEN)}

    def freeze(self) -> int:
        """Freeze the embeddings and the pooler; the number of parameters left to train."""
        trained = self.trained()
        for k, p in self.named_parameters():
            p.requires_grad_(k in trained)
        return sum(p.numel() for p in trained.values())

    def round_as_stored(self) -> None:
        """Round the trained parameters to half precision, as :meth:`save` stores them: what is calibrated is then
        what a user loads."""
        with torch.no_grad():
            for p in self.trained().values():
                p.copy_(p.to(torch.float16).to(p.dtype))

    def save(self, path: Path) -> None:
        """Write the trained parameters to ``path`` (safetensors, half precision)."""
        from safetensors.torch import save_file

        save_file({k: p.detach().to(torch.float16).contiguous() for k, p in self.trained().items()}, str(path))

    def load(self, path: Path) -> None:
        """Read the trained parameters from ``path``; a file that lacks one, or holds another, is refused
        (``ValueError``)."""
        from safetensors.torch import load_file

        state, want = load_file(str(path)), self.trained()
        missing, foreign = sorted(set(want) - set(state)), sorted(set(state) - set(want))
        if missing or foreign:
            raise ValueError(
                f"{path.name} does not fit the base: " + (f"lacks {missing[0]}" if missing else f"holds {foreign[0]}")
            )
        for k, p in want.items():
            if tuple(state[k].shape) != tuple(p.shape):
                raise ValueError(
                    f"{path.name} does not fit the base: {k} is {tuple(state[k].shape)}, not {tuple(p.shape)}"
                )
        with torch.no_grad():
            for k, p in want.items():
                p.copy_(state[k].to(p.dtype))


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The mean of ``hidden`` (batch × tokens × width) over each row's tokens (``attention_mask`` 1), as
    sentence-transformers pools."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def mean_pooled(base: Path) -> tuple[object, MeanPooledCrossEncoder]:
    """``(tokenizer, model)``: the base encoder at ``base`` with a fresh head, mean-pooled."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    return tokenizer, MeanPooledCrossEncoder(AutoModel.from_pretrained(str(base), local_files_only=True))
