"""crag train-evaluator: data from gold answers, labelled pairs or synthetic questions; training; the folder it writes."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from crag_cli.action.trigger import resolve_thresholds
from crag_cli.cli import app
from crag_cli.errors import CragError
from crag_cli.assemble import evaluator_of
from crag_cli.evaluator import MANIFEST, CrossEncoderEvaluator, EvaluatorError, parse_spec
from crag_cli.action.evaltest import auc
from crag_cli.pipeline.fakes import FakeReader
from crag_cli.index import BM25Index
from crag_cli.train import (
    LabelledPair,
    TrainConfig,
    TrainingError,
    check_output_folder,
    pairs_from_gold,
    parse_synthetic,
    question_groups,
    question_key,
    read_labelled_pairs,
    split_by_question,
    synthetic_pairs,
    train,
    write_labelled_pairs,
)


def toy_pairs(n_questions: int = 12, seed: int = 0) -> list[LabelledPair]:
    """Separable data: a passage that says 'yes answer here' holds the answer, 'no not here' does not."""
    rng = random.Random(seed)
    out = []
    for q in range(n_questions):
        question = rng.choice(["what is the capital of france", "who is the painter", "what city was it born in"])
        question += f" number {q}"  # one text per question: two ids asking one text are one question
        for k in range(4):
            label = int(k == 0 or rng.random() < 0.2)
            text = "yes answer here " + rng.choice(["paris", "berlin", "river"]) if label else "no not here city"
            out.append(LabelledPair(f"q{q}", question, text, label))
    return out


def test_split_keeps_each_question_on_one_side_and_is_seeded():
    pairs = toy_pairs(20)
    train_part, val_part = split_by_question(pairs, 0.25, seed=3)
    assert {p.qid for p in train_part}.isdisjoint({p.qid for p in val_part})
    assert len(train_part) + len(val_part) == len(pairs) and len({p.qid for p in val_part}) == 5
    assert split_by_question(pairs, 0.25, seed=3) == (train_part, val_part)
    assert split_by_question(pairs, 0.25, seed=4)[1] != val_part
    with pytest.raises(TrainingError, match="at least 2 questions"):
        split_by_question(pairs[:4], 0.5, seed=0)
    extra = [LabelledPair(f"pairs:{p.qid}", p.question, p.passage, p.label) for p in toy_pairs(6, seed=1)]
    with_extra = split_by_question(pairs, 0.25, seed=3, train_only=extra)
    assert with_extra == (train_part + extra, val_part)  # the same validation questions; the extra pairs only train


def test_split_keeps_a_question_filed_twice_on_one_side():
    # PopQA's dev set files "Who was the director of College?" under two ids: one question, one side
    pairs = toy_pairs(20)
    twins = [LabelledPair(f"twin-{p.qid}", "  " + p.question.upper() + " ", p.passage, p.label) for p in pairs[::3]]
    assert question_groups(pairs + twins)[len(pairs) :] == question_groups(pairs)[::3]
    for seed in range(8):
        train_part, val_part = split_by_question(pairs + twins, 0.3, seed=seed)
        keys = [{question_key(p.question) for p in part} for part in (train_part, val_part)]
        assert keys[0].isdisjoint(keys[1]) and len(train_part) + len(val_part) == len(pairs) + len(twins)
    # pairs given only to train never ask a validation question
    extra = [LabelledPair(f"pairs:{p.qid}", p.question, "other text", 0) for p in pairs]
    train_part, val_part = split_by_question(pairs, 0.25, seed=3, train_only=extra)
    asked = {p.question for p in val_part}
    assert len(asked) == 5 and not asked & {p.question for p in train_part}
    assert len(train_part) == len(pairs) + len(extra) - 2 * len(val_part)
    # two ids joined by a shared text later on are still one question
    chain = [LabelledPair("a", "Who?", "x", 1), LabelledPair("b", "What?", "y", 0), LabelledPair("a", "What?", "z", 0)]
    assert question_groups(chain) == [0, 0, 0]
    merge = [
        LabelledPair("a", "X?", "", 0),
        LabelledPair("b", "Y?", "", 0),
        LabelledPair("c", "Z?", "", 0),
        LabelledPair("a", "Y?", "", 0),
    ]
    assert question_groups(merge) == [0, 0, 1, 0]


def test_split_without_twins_is_a_seeded_shuffle_of_the_ids():
    # duplicate-free input splits exactly as a shuffle of its question ids (the split evaluators were made with)
    pairs = toy_pairs(30)
    for seed in (0, 5):
        ids = list(dict.fromkeys(p.qid for p in pairs))
        random.Random(seed).shuffle(ids)
        held = set(ids[: round(0.2 * len(ids))])
        train_part, val_part = split_by_question(pairs, 0.2, seed=seed)
        assert val_part == [p for p in pairs if p.qid in held] and train_part == [p for p in pairs if p.qid not in held]


def test_labelled_pairs_file_reports_bad_lines(tmp_path):
    f = tmp_path / "pairs.jsonl"
    f.write_text(
        "\n".join(
            [
                json.dumps({"question": "Who?", "passage": "Him.", "label": 1}),
                json.dumps({"question": "Who?", "passage": "Her.", "label": 0}),
                json.dumps({"question": "Who?", "passage": "x", "label": 2}),
                "not json",
                json.dumps({"question": "", "passage": "x", "label": 0}),
                json.dumps({"question": "Who?", "passage": "Them.", "label": 1, "answers": "Them"}),
                json.dumps(
                    {"question": "Where?", "passage": "In Lyon, by the river.", "label": 1, "answers": ["Lyon"]}
                ),
            ]
        )
        + "\n"
    )
    got = list(read_labelled_pairs(f))
    pairs = [g for g in got if isinstance(g, LabelledPair)]
    errors = [g for g in got if isinstance(g, str)]
    assert [(p.passage, p.label) for p in pairs[:2]] == [("Him.", 1), ("Her.", 0)] and pairs[0].qid == pairs[1].qid
    assert [e.split(":")[0] for e in errors] == ["line 3", "line 4", "line 5", "line 6"]
    # the answers, when given, label the strips; without them a strip takes its passage's label
    assert (
        pairs[2].answers == ("Lyon",) and pairs[2].strip_holds("In Lyon") and not pairs[2].strip_holds("by the river.")
    )
    assert pairs[0].answers == () and pairs[0].strip_holds("anything")


def test_written_pairs_read_back_the_same(built_index, tmp_path):  # synthetic pairs, saved for --pairs
    pairs, _ = synthetic_pairs(
        BM25Index.load(built_index),
        FakeReader("Question: What is the capital of Germany?\nAnswer: Berlin"),
        n=20,
        top_k=5,
        seed=0,
    )
    pairs += [
        LabelledPair("synthetic:b", "Wo liegt Köln?", "Köln liegt am Rhein.", 1, ("am Rhein",)),
        LabelledPair("synthetic:b", "Wo liegt Köln?", "Bonn liegt auch dort.", 0, ("am Rhein",)),
    ]
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "synthetic.jsonl"
    write_labelled_pairs(pairs, out)
    back = list(read_labelled_pairs(out))
    assert [(p.question, p.passage, p.label, p.answers) for p in back] == [
        (p.question, p.passage, p.label, p.answers) for p in pairs
    ]
    same = lambda ids: [a == b for a in ids for b in ids]  # noqa: E731  (which pairs share a question)
    assert same([p.qid for p in back]) == same([p.qid for p in pairs])
    assert sorted(x.name for x in out.parent.iterdir()) == ["synthetic.jsonl"]  # no temporary left beside it


def test_gold_labels_are_whole_word_aliases(built_index):
    index = BM25Index.load(built_index)
    pairs = pairs_from_gold([("a", "What is the capital of Germany?", ["Berlin"])], index, top_k=3)
    assert pairs and all(p.qid == "a" for p in pairs)
    assert all(p.label == int("berlin" in p.passage.lower()) for p in pairs) and any(p.label for p in pairs)


def test_synthetic_pairs_keep_answers_found_in_their_passage(built_index):
    index = BM25Index.load(built_index)
    gen = FakeReader("Question: What is the capital of Germany?\nAnswer: Berlin")
    pairs, counts = synthetic_pairs(index, gen, n=100, top_k=5, seed=0)
    eligible = [p for p in index.passages if len(p.text.split()) >= 20]  # passages long enough to ask about
    assert eligible and counts["sampled"] == min(100, len(eligible))
    assert counts["kept"] == sum(1 for p in pairs if p.label == 1) >= 1
    assert (
        counts["kept"] + counts["dropped_not_in_passage"] + counts["dropped_unparsed"] + counts["dropped_long_answer"]
        == counts["sampled"]
    )
    assert counts["dropped_not_retrieved"] == 0
    positives = [p for p in pairs if p.label]
    assert all("Berlin" in p.passage for p in positives)
    assert all("berlin" not in p.passage.lower() for p in pairs if not p.label)  # negatives never hold the answer
    assert len(gen.messages) == counts["sampled"] and "<passage>" in gen.messages[0][0]["content"]


def test_synthetic_questions_that_do_not_find_their_passage_are_dropped(built_index):
    index = BM25Index.load(built_index)
    vague = FakeReader(
        "Question: Which painter was it?\nAnswer: Berlin"
    )  # names nothing of Berlin's passage: it is not found
    assert not any(h.passage.id for h in index.search("Which painter was it?", 5) if "Berlin" in h.passage.text)
    pairs, counts = synthetic_pairs(index, vague, n=100, top_k=5, seed=0)
    assert pairs == [] and counts["dropped_not_retrieved"] >= 1 and counts["kept"] == 0
    named = FakeReader("Question: Which city is the capital of Germany?\nAnswer: Berlin")
    assert synthetic_pairs(index, named, n=100, top_k=5, seed=0)[1]["kept"] >= 1


def test_synthetic_sentence_answers_are_counted_apart_and_dropped(built_index):
    index = BM25Index.load(built_index)
    gen = FakeReader(
        "Question: What is the capital of Germany?\nAnswer: " + "The capital of Germany is the city of Berlin, " * 3
    )
    pairs, counts = synthetic_pairs(index, gen, n=3, top_k=5, seed=0)
    assert pairs == [] and counts["dropped_long_answer"] == counts["sampled"] == 3 and counts["dropped_unparsed"] == 0


def test_parse_synthetic():
    assert parse_synthetic("Question: Who painted it?\nAnswer: Anna Example.") == ("Who painted it?", "Anna Example")
    assert parse_synthetic("I cannot do that.") is None
    assert parse_synthetic("**Question:** Who painted it?\n**Answer:** Anna Example") == (
        "Who painted it?",
        "Anna Example",
    )
    assert parse_synthetic("Question: Who painted it?") is None


def test_synthetic_questions_alone_still_calibrate_an_incorrect_side():
    from collections import Counter

    from crag_cli.action.trigger import decide
    from crag_cli.action.calibrate import choose_action_thresholds
    from crag_cli.train import calibration_items, question_items

    # questions written by --synthetic: each holds its answer in its own passage; scores overlap as in life
    pairs, scores = [], []
    for q in range(20):
        pairs += [LabelledPair(f"s{q}", f"q{q}?", "own", 1)] + [LabelledPair(f"s{q}", f"q{q}?", "other", 0)] * 4
        scores += [-0.6 + 0.06 * q] + [-0.9 + 0.045 * q - 0.1 * i for i in range(4)]
    unanswered = [s for i, s in enumerate(scores) if i % 5]  # what the evaluator sees without the own passage
    absent = [max(unanswered[4 * q : 4 * q + 4]) for q in range(20)]

    def actions(upper, lower):
        return Counter(decide([b], upper, lower).value for b in absent)

    upper, lower, notes = choose_action_thresholds(question_items(pairs, scores))
    assert upper == lower and "Incorrect only when nothing is retrieved" in notes[0]  # no band, no Incorrect side
    alone = actions(upper, lower)
    assert alone["correct"] >= 13  # most questions the folder cannot answer would never reach the web
    items = calibration_items(pairs, scores)
    assert len(items) == 40 and sum(it.holds for it in items) == 20
    assert sorted(it.best for it in items if not it.holds) == sorted(absent)
    upper, lower, _ = choose_action_thresholds(items)
    now = actions(upper, lower)
    assert upper > lower and now["incorrect"] >= 10 and now["correct"] <= 3  # an Ambiguous band, and Incorrect
    assert sum(decide(it.scores, upper, lower).value != "incorrect" for it in items if it.holds) >= 18
    gold = pairs[:5] + [LabelledPair("g", "g?", "none", 0)] * 3  # a gold question with no answer retrieved
    assert calibration_items(gold, scores[:8]) == question_items(gold, scores[:8])  # gold data: unchanged


@pytest.mark.slow
def test_train_writes_a_loadable_calibrated_evaluator(tiny_bert, tmp_path):
    pairs = toy_pairs(24)
    train_part, val_part = split_by_question(pairs, 0.25, seed=0)
    out = tmp_path / "ev"
    config = TrainConfig(base=str(tiny_bert), epochs=6, batch_size=8, learning_rate=5e-3, max_length=32, lora_r=4)
    card = train(train_part, val_part, out, config, data_note="toy data", log=lambda m: None)
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["thresholds"] == card["thresholds"] and len(card["validation_by_epoch"]) == 6
    assert 1 <= card["best_epoch"] <= 6 and card["data"]["validation_questions"] == 6
    assert "Validation after each epoch" in (out / "README.md").read_text()
    assert json.loads((out / "adapter_config.json").read_text())["base_model_name_or_path"] == str(tiny_bert)
    # the thresholds a user gets are the ones calibrated with it
    th = resolve_thresholds(f"minilm:{out}")
    assert (th.upper, th.lower, th.filter) == tuple(card["thresholds"][k] for k in ("upper", "lower", "filter"))
    ev = evaluator_of(f"minilm:{out}")
    assert isinstance(ev, CrossEncoderEvaluator) and parse_spec(str(out)) == ("trained", out)
    scores = ev.score([(p.question, p.passage) for p in pairs])
    assert all(-1 <= s <= 1 for s in scores)
    assert auc(scores, [bool(p.label) for p in pairs]) > 0.9  # it learned the toy rule
    # its domain: the training questions, and a cut that keeps nineteen in twenty validation questions in it
    from crag_cli.train.domain import DOMAIN_FILE, add_domain

    domain = card["domain"]
    assert (
        manifest["domain"] == domain
        and DOMAIN_FILE in manifest["files"]
        and "Domain: a question" in (out / "README.md").read_text()
    )
    assert domain["training_questions"] == len({p.question for p in train_part})
    assert ev.knows([train_part[0].question]) == [True]  # a question it was trained on is in its domain
    # an evaluator made before domains existed gets the same one from the questions file it was trained from
    known = np.load(out / DOMAIN_FILE)
    (out / DOMAIN_FILE).unlink()
    del manifest["domain"], manifest["files"][DOMAIN_FILE]
    (out / MANIFEST).write_text(json.dumps(manifest))
    qfile = tmp_path / "questions.jsonl"
    qfile.write_text("".join(json.dumps({"question": p.question}) + "\n" for p in pairs))
    assert add_domain(out, qfile) == domain and np.array_equal(np.load(out / DOMAIN_FILE), known)
    assert evaluator_of(f"minilm:{out}").knows([train_part[0].question]) == [True]
    qfile.unlink()
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["domain"]["cosine"] = 1.01  # a cut no question reaches: every question is out of the domain
    (out / MANIFEST).write_text(json.dumps(manifest))
    assert evaluator_of(f"minilm:{out}").knows([train_part[0].question, "Who am I?"]) == [False, False]
    del manifest["files"][DOMAIN_FILE]  # a domain file its manifest does not pin is refused
    (out / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(EvaluatorError, match="not pinned"):
        evaluator_of(f"minilm:{out}").knows(["Who am I?"])
    manifest["domain"] = None  # no domain: it cannot tell, and crag does not guard
    (out / MANIFEST).write_text(json.dumps(manifest))
    (out / DOMAIN_FILE).unlink()
    assert evaluator_of(f"minilm:{out}").knows(["Who am I?"]) is None
    assert not any("little better than chance" in n for n in card["calibration"]["notes"])
    # every toy question holds its answer: the card says the calibration also saw them without it
    assert any("as if the index lacked the answer (12 questions" in n for n in card["calibration"]["notes"])
    # batched equals one by one
    assert ev.score([(pairs[0].question, pairs[0].passage)])[0] == pytest.approx(scores[0], abs=1e-5)
    # retraining into the same folder replaces it; nothing else is left beside it
    train(train_part, val_part, out, TrainConfig(**{**config.__dict__, "epochs": 1}), log=lambda m: None)
    assert len(json.loads((out / MANIFEST).read_text())["validation_by_epoch"]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ev"]


@pytest.mark.slow
def test_an_evaluator_that_cannot_rank_the_passages_is_warned_about(tiny_bert, tmp_path):
    # validation passages that say the same whatever their label: no evaluator can rank them (AUC 0.5)
    train_part, val_part = split_by_question(toy_pairs(8), 0.25, seed=0)
    blind = [LabelledPair(p.qid, p.question, "a passage", p.label) for p in val_part]
    said: list[str] = []
    card = train(
        train_part,
        blind,
        tmp_path / "ev",
        TrainConfig(base=str(tiny_bert), epochs=1, max_length=32, lora_r=2),
        log=said.append,
    )
    assert card["validation_by_epoch"][0]["auc"] == 0.5
    assert any(m.startswith("warning: validation AUC 0.5") for m in said)
    assert any("little better than chance" in n for n in card["calibration"]["notes"])


@pytest.mark.slow
def test_a_changed_adapter_is_refused(tiny_bert, tmp_path):
    pairs = toy_pairs(8)
    out = tmp_path / "ev"
    train(
        *split_by_question(pairs, 0.25, seed=0),
        out,
        TrainConfig(base=str(tiny_bert), epochs=1, max_length=32, lora_r=2),
        log=lambda m: None,
    )
    weights = out / "adapter_model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    with pytest.raises(EvaluatorError, match="sha256"):
        evaluator_of(f"minilm:{out}").score([("a", "b")])
    weights.write_bytes(bytes(data[:-1]) + bytes([data[-1] ^ 1]))  # back as trained
    (out / "adapter_model.bin").write_bytes(b"a pickle nothing pins")  # a weights file the manifest does not list
    with pytest.raises(EvaluatorError, match="adapter_model.bin is not in its manifest"):
        evaluator_of(f"minilm:{out}").score([("a", "b")])
    (out / "adapter_model.bin").unlink()
    manifest = json.loads((out / MANIFEST).read_text())
    (out / MANIFEST).write_text(json.dumps(dict(manifest, files={})))  # a manifest that pins nothing
    with pytest.raises(EvaluatorError, match="lists no weights"):
        evaluator_of(f"minilm:{out}").score([("a", "b")])


@pytest.mark.slow
def test_output_folder_must_be_crags(tmp_path, tiny_bert, monkeypatch):
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "chapter1.txt").write_text("precious")
    pairs = toy_pairs(8)
    with pytest.raises(CragError, match="not a crag evaluator"):
        train(
            *split_by_question(pairs, 0.25, seed=0),
            tmp_path / "thesis",
            TrainConfig(base=str(tiny_bert)),
            log=lambda m: None,
        )
    assert (tmp_path / "thesis" / "chapter1.txt").read_text() == "precious"
    # an evaluator folder the user has put something of their own in is not crag's alone any more
    out = tmp_path / "ev"
    train(
        *split_by_question(pairs, 0.25, seed=0),
        out,
        TrainConfig(base=str(tiny_bert), epochs=1, max_length=32, lora_r=2),
        log=lambda m: None,
    )
    (out / "questions.jsonl").write_text("mine")
    with pytest.raises(TrainingError, match="holds 'questions.jsonl', which crag did not write"):
        check_output_folder(out)
    assert (out / "questions.jsonl").read_text() == "mine"
    (out / "questions.jsonl").unlink()
    check_output_folder(out)  # crag's own files only: it may be replaced
    with pytest.raises(TrainingError, match="overlap"):
        check_output_folder(out, [out / "q.jsonl"])  # an input inside it
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "thesis")
    with pytest.raises(TrainingError, match="symbolic link"):
        check_output_folder(link)
    with pytest.raises(TrainingError, match="current folder"):
        check_output_folder(Path("."))
    # a rename that fails at the last step puts the old evaluator back, whole
    before = {f.name: f.read_bytes() for f in out.iterdir()}
    real_replace, calls = os.replace, []

    def failing_replace(src, dst):
        if Path(dst) == out:
            calls.append(Path(src))
            if len(calls) == 1:  # the new folder onto --out, after the old one was set aside
                raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    import crag_cli.train.fit as train_module

    monkeypatch.setattr(train_module.os, "replace", failing_replace)
    with pytest.raises(OSError, match="No space left"):
        train(
            *split_by_question(pairs, 0.25, seed=0),
            out,
            TrainConfig(base=str(tiny_bert), epochs=1, max_length=32, lora_r=2, seed=7),
            log=lambda m: None,
        )
    monkeypatch.undo()
    assert {f.name: f.read_bytes() for f in out.iterdir()} == before and len(calls) == 2  # tried, then restored
    with pytest.raises(TrainingError, match="both positives and negatives"):
        train(
            [p for p in pairs if p.label], pairs, tmp_path / "new", TrainConfig(base=str(tiny_bert)), log=lambda m: None
        )


CITIES = [
    ("Lyon", "France", "Rhone"),
    ("Bonn", "Germany", "Rhine"),
    ("Turin", "Italy", "Po"),
    ("Seville", "Spain", "Guadalquivir"),
    ("Porto", "Portugal", "Douro"),
    ("Ghent", "Belgium", "Scheldt"),
    ("Utrecht", "Netherlands", "Vecht"),
    ("Basel", "Switzerland", "Birsig"),
]


def city_index(tmp_path: Path, filler: str = "") -> Path:
    """An index of one short document per city of :data:`CITIES` (``filler`` lengthens each)."""
    from crag_cli.index import build_index

    docs = tmp_path / "docs"
    docs.mkdir()
    for i, (city, country, river) in enumerate(CITIES):
        twin = CITIES[(i + 1) % len(CITIES)][0]
        (docs / f"{city}.txt").write_text(
            f"{city} is a city in {country}{filler}. The city lies on the river {river}. It is a twin town of {twin}."
        )
    build_index(docs, tmp_path / "index")
    return tmp_path / "index"


def test_train_evaluator_command(tiny_bert, tmp_path):
    built_index = city_index(tmp_path)
    qs = tmp_path / "q.jsonl"
    qs.write_text(
        "\n".join(
            json.dumps({"question": f"Which river does the city of {c} lie on?", "answers": [r]}) for c, _, r in CITIES
        )
        + "\n"
    )
    out = tmp_path / "ev"
    r = CliRunner().invoke(
        app,
        [
            "train-evaluator",
            str(qs),
            "--index",
            str(built_index),
            "--out",
            str(out),
            "--base",
            str(tiny_bert),
            "--epochs",
            "1",
            "--validation",
            "0.5",
            "-k",
            "4",
            "--train-max-length",
            "48",
        ],
    )
    assert r.exit_code == 0, r.output
    assert f"--evaluator minilm:{out}" in r.stdout
    card = json.loads((out / MANIFEST).read_text())
    assert card["settings"]["max_length"] == 48 and card["settings"]["epochs"] == 1
    assert card["data"]["train_questions"] == 4 and card["data"]["validation_questions"] == 4
    r = CliRunner().invoke(
        app, ["evaluator-test", str(qs), "--index", str(built_index), "--evaluator", f"minilm:{out}", "--json"]
    )
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["thresholds"]["upper"] == card["thresholds"]["upper"]
    # a test on the questions it learnt from is named in-sample, on stderr and in the report
    assert report["in_sample"] == {"training": 4, "validation": 4}
    assert "IN-SAMPLE: 4 of these 8 questions trained this evaluator and 4 calibrated it" in r.stderr
    other = tmp_path / "other.jsonl"  # the same facts asked in other words: not seen
    other.write_text(
        "\n".join(json.dumps({"question": f"On which river is {c}?", "answers": [r]}) for c, _, r in CITIES[:3]) + "\n"
    )
    r = CliRunner().invoke(
        app, ["evaluator-test", str(other), "--index", str(built_index), "--evaluator", f"minilm:{out}", "--json"]
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["in_sample"] == {"training": 0, "validation": 0}
    assert "IN-SAMPLE" not in r.stderr


class CityQuestions:
    """A reader stand-in that asks, of each passage it is shown, which river its city lies on."""

    model = "fake"

    def __init__(self):
        self.calls = 0

    def generate(self, messages, max_tokens, on_token=None):
        from crag_cli.reader import Generation

        self.calls += 1
        text = messages[-1]["content"].split("<passage>\n", 1)[1]
        city = text.split()[0]
        river = next(r for c, _, r in CITIES if c == city)
        return Generation(f"Question: Which river does {city} lie on?\nAnswer: {river}", 10, 10)


@pytest.mark.slow
def test_synthetic_pairs_beside_gold_questions_only_train_and_can_be_saved(tiny_bert, tiny_gguf, tmp_path, monkeypatch):
    from crag_cli import assemble

    index = city_index(tmp_path, ", with old streets, markets and bridges")  # 20 words: long enough to be sampled
    qs = tmp_path / "q.jsonl"
    qs.write_text(
        "\n".join(json.dumps({"question": f"In which country is {c}?", "answers": [k]}) for c, k, _ in CITIES) + "\n"
    )
    gen = CityQuestions()
    monkeypatch.setattr(assemble, "reader", lambda settings: gen)
    saved, out = tmp_path / "synthetic.jsonl", tmp_path / "ev"
    args = [
        "train-evaluator",
        str(qs),
        "--index",
        str(index),
        "--out",
        str(out),
        "--base",
        str(tiny_bert),
        "--epochs",
        "1",
        "--validation",
        "0.5",
        "-k",
        "4",
        "--train-max-length",
        "48",
        "--model",
        str(tiny_gguf),
        "--synthetic",
        "8",
    ]
    r = CliRunner().invoke(app, args + ["--save-synthetic", str(saved)])
    assert r.exit_code == 0, r.output
    card = json.loads((out / MANIFEST).read_text())
    # validation: half of the 8 gold questions, no synthetic one; training: the other 4 and the 8 synthetic
    assert card["data"]["validation_questions"] == 4 and card["data"]["train_questions"] == 4 + 8
    written = list(read_labelled_pairs(saved))
    assert sum(p.label for p in written) == 8 and {p.answers[0] for p in written if p.label} == {r for *_, r in CITIES}
    # a saved file is never overwritten, and that is said before any model loads
    before, calls = saved.read_text(), gen.calls
    r = CliRunner().invoke(app, args + ["--save-synthetic", str(saved), "--out", str(tmp_path / "ev2")])
    assert r.exit_code == 1 and "exists" in r.stderr and saved.read_text() == before and gen.calls == calls
    r = CliRunner().invoke(app, args[:-2] + ["--save-synthetic", str(tmp_path / "s2.jsonl")])
    assert r.exit_code == 1 and "give --synthetic" in r.stderr
    r = CliRunner().invoke(app, args + ["--save-synthetic", str(out / "s.jsonl")])  # inside the folder crag replaces
    assert r.exit_code == 1 and "inside --out" in r.stderr and gen.calls == calls and not (out / "s.jsonl").exists()
    # the saved pairs train again through --pairs, again beside gold questions, again only on the training side
    r = CliRunner().invoke(app, args[:-2] + ["--pairs", str(saved), "--out", str(tmp_path / "ev3")])
    assert r.exit_code == 0, r.output
    card3 = json.loads((tmp_path / "ev3" / MANIFEST).read_text())
    assert (card3["data"]["validation_questions"], card3["data"]["train_questions"]) == (4, 12)


def test_train_evaluator_command_errors(built_index, tmp_path):
    runner = CliRunner()
    r = runner.invoke(app, ["train-evaluator", "--index", str(built_index)])
    assert r.exit_code == 1 and r.stderr.count("\n") == 1 and "give training data" in r.stderr
    afile = tmp_path / "afile"
    afile.write_text("mine")
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"question": "Q?", "answers": ["A"]}) + "\n")
    r = runner.invoke(app, ["train-evaluator", str(qs), "--index", str(built_index), "--out", str(afile)])
    assert r.exit_code == 1 and "is a file" in r.stderr and afile.read_text() == "mine"
    r = runner.invoke(app, ["train-evaluator", str(qs), "--index", str(built_index), "--base", str(tmp_path / "no")])
    assert r.exit_code == 1 and "no such model folder" in r.stderr
    for extra, said in (
        (["--start-from", str(tmp_path)], "give --adapter full"),  # refused in one line, not a traceback
        (["--adapter", "full", "--start-from", str(tmp_path / "no")], "no such evaluator folder"),
        (["--adapter", "full", "--start-from", str(tmp_path)], "holds no trained evaluator"),
    ):
        r = runner.invoke(app, ["train-evaluator", str(qs), "--index", str(built_index), *extra])
        assert r.exit_code == 1 and r.stderr.count("\n") == 1 and said in r.stderr, r.stderr
    pairs_file = tmp_path / "pairs.jsonl"
    pairs_file.write_text(json.dumps({"question": "Q?", "passage": "P", "label": 1}) + "\n")
    r = runner.invoke(app, ["train-evaluator", "--pairs", str(pairs_file), "--limit", "5", "--index", str(built_index)])
    assert r.exit_code == 1 and "--limit counts gold questions" in r.stderr  # not silently ignored
    (tmp_path / "data").mkdir()
    inside = tmp_path / "data" / "q.jsonl"
    inside.write_text(qs.read_text())
    r = runner.invoke(app, ["train-evaluator", str(inside), "--index", str(built_index), "--out", str(inside.parent)])
    assert r.exit_code == 1 and "overlap" in r.stderr and inside.read_text() == qs.read_text()  # the data's folder
    with pytest.raises(EvaluatorError, match="holds no trained evaluator"):
        parse_spec(f"minilm:{tmp_path}")


@pytest.mark.slow
def test_topic_guard_lifts_on_topic_pairs_to_its_floor_and_never_above(tiny_bert, tmp_path, monkeypatch):
    pairs = toy_pairs(8)
    out = tmp_path / "ev"
    card = train(
        *split_by_question(pairs, 0.25, seed=0),
        out,
        TrainConfig(base=str(tiny_bert), epochs=1, max_length=32, lora_r=2),
        log=lambda m: None,
    )
    assert card["topic_guard"]["score"] == card["thresholds"]["lower"]
    ev = evaluator_of(f"minilm:{out}")
    inputs = [(p.question, p.passage) for p in pairs]
    raw = [s for s in CrossEncoderEvaluator(out, batch_size=32, max_length=512).logits(inputs)]
    from crag_cli.evaluator import logit_to_score

    plain = [logit_to_score(z) for z in raw]
    ev.load()
    ev.set_guard({"cosine": -1.0, "score": card["thresholds"]["lower"]}, card["base"])  # every pair is "on topic"
    ev.use_thresholds(upper=0.9, lower=0.25)  # the floor is the lower threshold in force
    embedded = []
    cosine_score = ev._cosine.score
    monkeypatch.setattr(ev._cosine, "score", lambda ps: embedded.extend(ps) or cosine_score(ps))
    guarded = ev.score(inputs)
    assert all(g >= 0.25 for g in guarded)
    assert embedded == [x for x, p in zip(inputs, plain) if p < 0.25]  # the guard embeds only the pairs it could lift
    scores, logits = ev.score_logits(inputs)  # what --evidence combines: the raw logits, never a lifted score
    assert scores == guarded and logits == pytest.approx(raw, abs=1e-5) and any(g > p for g, p in zip(guarded, plain))
    mid = sorted(plain)[len(plain) // 2]
    ev.use_thresholds(upper=0.999, lower=mid)  # a floor with pairs on both sides
    embedded.clear()
    assert ev.score(inputs) == pytest.approx([max(p, mid) for p in plain], abs=1e-5)
    assert 0 < len(embedded) < len(inputs) and embedded == [x for x, p in zip(inputs, plain) if p < mid]
    ev.use_thresholds(upper=0.9, lower=0.25)
    assert all(
        g == pytest.approx(p, abs=1e-5) if p >= 0.25 else g == 0.25 for g, p in zip(guarded, plain)
    )  # raised to 0.25
    from crag_cli import assemble
    from crag_cli.settings import Settings

    in_force = assemble.evaluator(Settings(evaluator=f"minilm:{out}", upper=0.8, lower=0.1))  # --upper/--lower reach it
    from crag_cli.evaluator import absolute_spec

    monkeypatch.chdir(tmp_path)  # what a Ray actor is sent names the same evaluator from any folder
    assert absolute_spec("minilm:ev") == absolute_spec("ev") == str(out.resolve())
    assert absolute_spec("minilm") == "minilm" and absolute_spec("minilm-cosine") == "minilm-cosine"
    in_force.load()
    in_force.set_guard({"cosine": -1.0, "score": card["thresholds"]["lower"]}, card["base"])
    assert in_force.guard_floor() == 0.1
    assert all(g < 0.9 for g, p in zip(guarded, plain) if p < 0.9)  # never made Correct by the guard
    ev.use_thresholds(upper=0.2, lower=0.2)  # a floor at the upper threshold would make Correct: the guard is off
    assert ev.score(inputs) == pytest.approx(plain, abs=1e-5)
    ev.use_thresholds(upper=0.9, lower=0.25)
    ev.set_guard({"cosine": 1.01, "score": 0.25}, card["base"])  # no pair is on topic
    assert ev.score(inputs) == pytest.approx(plain, abs=1e-5)


def test_topic_guard_report_says_off_when_the_thresholds_leave_no_ambiguous_band(tiny_bert):
    # a calibration with lower == upper leaves nothing to lift to: the card must report what the evaluator will do
    from types import SimpleNamespace

    from crag_cli.action.calibrate import action_accuracy
    from crag_cli.train import calibration_items, fit_topic_guard

    pairs = toy_pairs(8)
    inputs = [(p.question, p.passage) for p in pairs]
    scorer = SimpleNamespace(score=lambda xs: [0.5 if "yes" in passage else -0.5 for _, passage in xs])
    raw = scorer.score(inputs)
    for upper, lower in ((0.0, 0.0), (-0.2, 0.3)):
        calib = SimpleNamespace(upper=upper, lower=lower)
        guard, report = fit_topic_guard(scorer, str(tiny_bert), pairs, inputs, calib, {})
        assert report["off"] and "guard is off" in report["note"]
        acc, counts = action_accuracy(calibration_items(pairs, raw), upper, lower)
        assert report["actions"] == counts and report["action_accuracy"] == round(acc, 4)
    guard, report = fit_topic_guard(scorer, str(tiny_bert), pairs, inputs, SimpleNamespace(upper=0.9, lower=0.0), {})
    assert not report["off"] and guard["score"] == 0.0
