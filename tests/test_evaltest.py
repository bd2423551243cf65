"""crag evaluator-test: the metrics against references, the report with fakes, the command."""

import json
import random

import pytest
from typer.testing import CliRunner

from crag_cli.action.trigger import Thresholds
from crag_cli.cli import app
from crag_cli.action.evaltest import auc, evaluator_test
from crag_cli.pipeline.fakes import FakeEvaluator, FakeRetriever


def test_auc_equals_scipys_mann_whitney_u_with_ties():
    from scipy.stats import mannwhitneyu

    rng = random.Random(3)
    for _ in range(50):
        n = rng.randint(2, 40)
        scores = [rng.choice([0.1, 0.2, 0.5, rng.random()]) for _ in range(n)]  # many ties
        labels = [rng.random() < 0.4 for _ in range(n)]
        pos = [s for s, y in zip(scores, labels) if y]
        neg = [s for s, y in zip(scores, labels) if not y]
        if not pos or not neg:
            assert auc(scores, labels) is None
            continue
        u = mannwhitneyu(pos, neg, alternative="two-sided").statistic
        assert auc(scores, labels) == pytest.approx(u / (len(pos) * len(neg)))
    assert auc([0.9, 0.1], [True, False]) == 1.0 and auc([0.5, 0.5], [True, False]) == 0.5


def test_report_counts_pairs_actions_and_the_confusion_table():
    passages = ["Oslo is the capital of Norway.", "Bergen is a city.", "Rome is the capital of Italy."]
    ev = FakeEvaluator({"Oslo": 0.9, "Bergen": 0.3, "Rome": 0.2})
    th = Thresholds(upper=0.5, lower=0.25, filter=0.0)
    questions = [
        ("What is the capital of Norway?", ["Oslo"]),  # holds, best 0.9: Correct, right
        ("What is the capital of Peru?", ["Lima"]),
    ]
    report = evaluator_test(questions, FakeRetriever(passages), ev, th, top_k=3)
    # Peru: the same three passages (a fake retriever), best 0.9 -> Correct, but none holds Lima: wrong
    assert report.n == 2 and report.pairs == 6 and report.positive_pairs == 1
    assert report.actions == {"correct": 2, "incorrect": 0, "ambiguous": 0}
    assert report.action_accuracy == 0.5
    assert report.confusion == {
        "holds": {"correct": 1, "incorrect": 0, "ambiguous": 0},
        "does not hold": {"correct": 1, "incorrect": 0, "ambiguous": 0},
    }
    # pairs judged relevant (>= 0.5): the two Oslo passages; one of them (Peru's) is wrong: 5/6 right
    assert report.pair_accuracy == round(5 / 6, 4)
    assert report.auc == 0.9  # the positive (0.9) beats 4 of 5 negatives and ties the fifth (Peru's Oslo): 4.5/5
    assert report.retrieval_holds == 0.5
    assert "action accuracy 50.0%" in report.text() and "does not hold" in report.text()


@pytest.mark.slow
def test_evaluator_test_command(built_index, tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text(
        "\n".join(
            json.dumps(q)
            for q in [
                {"question": "What is the capital of Germany?", "answers": ["Berlin"]},
                {"question": "Who is John Smithson?", "answers": ["politician"]},
                {"question": "No gold here"},
            ]
        )
        + "\n"
    )
    r = CliRunner().invoke(app, ["evaluator-test", str(qs), "--index", str(built_index), "--json", "-k", "3"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert {"n", "pair_accuracy", "action_accuracy", "auc", "actions", "pairs_per_second"} <= set(rep)
    assert rep["n"] == 2 and rep["top_k"] == 3 and sum(rep["actions"].values()) == 2
    assert rep["evaluator"] == "minilm" and rep["pairs_per_second"] > 0
    assert "line 3: skipped: no gold answers" in r.stderr
    r = CliRunner().invoke(app, ["evaluator-test", str(qs), "--index", str(built_index), "--limit", "1"])
    assert r.exit_code == 0 and "1 questions" in r.stdout and "pairs scored per second" in r.stdout
    bad = CliRunner().invoke(app, ["evaluator-test", str(tmp_path / "none.jsonl"), "--index", str(built_index)])
    assert bad.exit_code == 1 and bad.stderr.count("\n") == 1 and "no such file" in bad.stderr
