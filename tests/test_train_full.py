"""``crag train-evaluator --adapter full``: every encoder layer trained, mean-pooled, stored without the embeddings."""

from __future__ import annotations

import json
from dataclasses import replace

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


@pytest.mark.slow
def test_training_can_continue_an_evaluator_and_it_then_has_seen_both_runs_questions(tiny_bert, tmp_path):
    from crag_cli.errors import CragError
    from crag_cli.train import question_fingerprint
    from crag_cli.train.start import check_start

    first = toy_pairs(24)
    later = [type(p)(p.qid, p.question + " again", p.passage, p.label) for p in toy_pairs(24, seed=1)]
    config = TrainConfig(base=str(tiny_bert), adapter="full", epochs=6, batch_size=8, learning_rate=5e-3, max_length=32)
    train(*split_by_question(first, 0.25, seed=0), tmp_path / "a", config, log=lambda m: None)
    a = json.loads((tmp_path / "a" / MANIFEST).read_text())
    # a learning rate too small to move a weight: what the second run stores is what it started from
    still = TrainConfig(base=str(tiny_bert), adapter="full", batch_size=8, learning_rate=1e-12, max_length=32)
    card = train(
        *split_by_question(later, 0.25, seed=0),
        tmp_path / "b",
        replace(still, start_from=str(tmp_path / "a")),
        log=lambda m: None,
    )
    train(*split_by_question(later, 0.25, seed=0), tmp_path / "fresh", still, log=lambda m: None)
    pairs = [(p.question, p.passage) for p in later]
    labels = [bool(p.label) for p in later]
    scores_a, scores_b = (evaluator_of(f"minilm:{tmp_path / n}").score(pairs) for n in ("a", "b"))
    assert scores_b == pytest.approx(scores_a, abs=2e-3) and auc(scores_b, labels) > 0.8
    assert auc(evaluator_of(f"minilm:{tmp_path / 'fresh'}").score(pairs), labels) < 0.7  # a fresh head has not learned
    assert card["started_from"]["files"] == a["files"] and card["started_from"]["train_questions"] == 18
    seen = set(card["data"]["seen"]["training"])
    assert set(a["data"]["seen"]["training"]) <= seen and question_fingerprint(later[0].question) in seen | set(
        card["data"]["seen"]["validation"]
    )
    assert card["domain"]["training_questions"] == 18 + 18  # both runs' training questions, none twice
    assert "Training continued an evaluator trained on 18 questions" in (tmp_path / "b" / "README.md").read_text()
    # validation questions the earlier evaluator trained on are said: its thresholds would be calibrated in-sample
    other_split = train(
        *split_by_question(first, 0.25, seed=1),
        tmp_path / "c",
        replace(still, start_from=str(tmp_path / "a")),
        log=lambda m: None,
    )
    assert any("calibrated in-sample" in n for n in other_split["calibration"]["notes"])
    assert not any("in-sample" in n for n in card["calibration"]["notes"])
    # what cannot be continued is refused before any model loads
    with pytest.raises(TrainingError, match="give --adapter full"):
        TrainConfig(base=str(tiny_bert), start_from=str(tmp_path / "a"))
    with pytest.raises(CragError, match="its base is"):
        check_start(tmp_path / "a", "embedded:all-MiniLM-L6-v2")
    with pytest.raises(CragError, match="no such evaluator folder"):
        check_start(tmp_path / "nothing", str(tiny_bert))
    (tmp_path / "a" / WEIGHTS).write_bytes(b"changed")
    with pytest.raises(CragError, match="refusing to load it"):
        check_start(tmp_path / "a", str(tiny_bert))
