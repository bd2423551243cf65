"""Train a retrieval evaluator: a cross-encoder that scores (question, passage) pairs.

``crag train-evaluator`` is this module. Labelled pairs come three ways:

* :func:`pairs_from_gold`: questions with gold answers plus an index; each of a
  question's top-k passages is positive when a gold alias occurs in it as whole
  words, negative otherwise (the paper's PopQA labels);
* :func:`read_labelled_pairs`: ready ``question``, ``passage``, ``label`` lines;
* :func:`synthetic_pairs`: no labels at all; the local reader writes a
  question and its short answer for sampled passages of the user's own index
  (pairs whose answer is not in the passage are dropped); that passage is the
  positive, the retrieved passages that do not hold the answer are negatives.

:func:`split_by_question` keeps every question on one side. :func:`train`
fine-tunes a LoRA adapter and a one-logit head over the base encoder (or, with
``adapter="full"``, every encoder layer, mean-pooled) with
binary cross-entropy, using transformers' ``Trainer`` (scored on the
validation questions after every epoch: pair accuracy, AUC, action accuracy;
the best epoch kept), then calibrates the action and strip thresholds on the
validation questions only and writes the folder that
:class:`~crag_cli.evaluator.CrossEncoderEvaluator` loads, with a model card.

Modules: ``data`` (pairs, fingerprints, split), ``synthetic`` (generated
questions), ``fit`` (training, calibration, the folder), ``start`` (training that
continues a trained evaluator), ``card`` (the folder's manifest and its README.md).
"""

from .data import (
    LabelledPair,
    ADAPTER_DEFAULTS,
    TrainConfig,
    TrainingError,
    calibration_items,
    count_seen,
    in_sample,
    pairs_from_gold,
    question_fingerprint,
    question_groups,
    question_items,
    question_key,
    read_labelled_pairs,
    seen_by,
    seen_questions,
    split_by_question,
    validation_metrics,
    write_labelled_pairs,
)
from .card import model_card
from .fit import OWN_FILES, check_output_folder, fit_topic_guard, train
from .synthetic import MAX_ANSWER_WORDS, SYNTHETIC_PROMPT, parse_synthetic, synthetic_pairs

__all__ = [
    "LabelledPair",
    "ADAPTER_DEFAULTS",
    "TrainConfig",
    "TrainingError",
    "calibration_items",
    "count_seen",
    "in_sample",
    "pairs_from_gold",
    "question_fingerprint",
    "question_groups",
    "question_items",
    "question_key",
    "read_labelled_pairs",
    "seen_by",
    "seen_questions",
    "split_by_question",
    "validation_metrics",
    "write_labelled_pairs",
    "OWN_FILES",
    "check_output_folder",
    "fit_topic_guard",
    "model_card",
    "train",
    "MAX_ANSWER_WORDS",
    "SYNTHETIC_PROMPT",
    "parse_synthetic",
    "synthetic_pairs",
]
