"""Evaluator specs (``minilm``, ``minilm-cosine``, ``t5:PATH``, ``minilm:PATH``, ``PATH``): parsed, named, built."""

from __future__ import annotations


from .base import Evaluator, parse_spec
from .cosine import TRAINED_LENGTH, MiniLMEvaluator
from .t5 import T5Evaluator
from .trained import CrossEncoderEvaluator


def build_evaluator(spec: str, batch_size: int, max_length: int, evaluator_precision: str) -> Evaluator:
    """Build an evaluator from its name (see :func:`parse_spec`) and the evaluator settings of the same names.

    :func:`crag_cli.assemble.evaluator_of` builds one with the settings' defaults.
    """
    precision = evaluator_precision  # the setting's name; each evaluator's parameter
    kind, path = parse_spec(spec)
    if kind == "trained":
        return CrossEncoderEvaluator(path, batch_size=batch_size, max_length=max_length, name=spec, precision=precision)
    if kind == "minilm-cosine":
        return MiniLMEvaluator(
            path, batch_size=batch_size, max_length=min(max_length, TRAINED_LENGTH), precision=precision
        )
    return T5Evaluator(
        path, batch_size=batch_size, max_length=max_length, precision=precision
    )  # checked when it loads (rag mode does only with --task auto, for a domain a T5 evaluator does not have)
