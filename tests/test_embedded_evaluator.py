"""The shipped default evaluator: pinned, and safe on a domain it was not trained on."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from crag_cli.cli import app


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
    r = CliRunner().invoke(app, ["evaluate", "--input", str(root / "tests" / "data" / "sample_corpus_questions.jsonl"),
                                 "--index", str(tmp_path / "ix"), "--json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    actions = {rec["id"]: rec["action"] for rec in map(json.loads, r.stdout.splitlines())}
    assert len(actions) == 16 and actions["in-1"] != "incorrect"
    assert [q for q, a in actions.items() if q.startswith("out-") and a == "correct"] == []
