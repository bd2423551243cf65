"""``crag train-evaluator --adapter full``: every encoder layer trained, mean-pooled, stored without the embeddings."""

from __future__ import annotations

import json

import pytest
from safetensors.torch import load_file, save_file

from crag_cli.action.evaltest import auc
from crag_cli.assemble import evaluator_of
from crag_cli.evaluator import MANIFEST, EvaluatorError, build_evaluator
from crag_cli.evaluator.pooled import WEIGHTS
from crag_cli.train import TrainConfig, TrainingError, split_by_question, train

from test_train import toy_pairs


def test_each_adapter_has_its_own_passes_and_learning_rate_unless_given():
    assert (TrainConfig().epochs, TrainConfig().learning_rate) == (3, 5e-4)
    assert (TrainConfig(adapter="full").epochs, TrainConfig(adapter="full").learning_rate) == (1, 3e-5)
    assert TrainConfig(adapter="full", epochs=2, learning_rate=1e-4).epochs == 2
    with pytest.raises(TrainingError, match="unknown adapter 'prefix'"):
        TrainConfig(adapter="prefix")
    with pytest.raises(TrainingError, match="not a T5"):  # refused before any data is gathered
        TrainConfig(adapter="full", base="t5:/models/t5")


@pytest.mark.slow
def test_a_full_fine_tune_is_stored_without_the_embeddings_and_scores_as_trained(tiny_bert, tmp_path):
    pairs = toy_pairs(24)
    train_part, val_part = split_by_question(pairs, 0.25, seed=0)
    out = tmp_path / "ev"
    config = TrainConfig(base=str(tiny_bert), adapter="full", epochs=6, batch_size=8, learning_rate=5e-3, max_length=32)
    card = train(train_part, val_part, out, config, log=lambda m: None)
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["adapter"] == "full" and sorted(manifest["files"]) == ["domain-questions.npy", WEIGHTS]
    assert not (out / "adapter_config.json").exists() and "every encoder layer of" in (out / "README.md").read_text()
    stored = load_file(str(out / WEIGHTS))
    assert stored and all(t.dtype.is_floating_point and t.element_size() == 2 for t in stored.values())  # half
    assert not any(k.startswith(("encoder.embeddings.", "encoder.pooler.")) for k in stored)
    assert "head.weight" in stored and any(".layer.0." in k for k in stored)
    assert card["trainable_parameters"] == sum(t.numel() for t in stored.values())
    ev = evaluator_of(f"minilm:{out}")
    scores = ev.score([(p.question, p.passage) for p in pairs])
    assert auc(scores, [bool(p.label) for p in pairs]) > 0.9  # it learned the toy rule, and loads as trained
    assert ev.score([(pairs[0].question, pairs[0].passage)])[0] == pytest.approx(scores[0], abs=1e-4)
    quantized = build_evaluator(f"minilm:{out}", batch_size=8, max_length=32, evaluator_precision="int8")
    assert auc(quantized.score([(p.question, p.passage) for p in pairs]), [bool(p.label) for p in pairs]) > 0.85
    # weights that do not fit the base are refused, by name (their sha256 pinned anew, as a user might)
    del stored["head.weight"]
    save_file(stored, str(out / WEIGHTS))
    from crag_cli.files import digest

    manifest["files"][WEIGHTS] = digest(out / WEIGHTS)[1]
    (out / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(EvaluatorError, match="does not fit the base: lacks head.weight"):
        evaluator_of(f"minilm:{out}").score([(pairs[0].question, pairs[0].passage)])
