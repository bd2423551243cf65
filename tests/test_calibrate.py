import json

import pytest

from crag_cli.action.calibrate import Item, action_accuracy, calibrate, choose_action_thresholds, choose_filter
from crag_cli.action.match import holds_answer
from crag_cli.cli import app
from typer.testing import CliRunner


def test_holds_answer_is_case_insensitive_and_ignores_empty_aliases():
    assert holds_answer("He was a Politician.", ["politician"])
    assert not holds_answer("anything", [""])


def test_thresholds_reach_the_required_precision():
    # best scores 0.0 .. 0.99; the passages hold the answer exactly when the best score >= 0.5
    items = [Item([i / 100, -0.5], holds=i >= 50) for i in range(100)]
    upper, lower, notes = choose_action_thresholds(items, 0.8, 0.8)
    assert (upper, lower) == (0.5, 0.5)  # a perfect separator: one cut, exactly at the first answer-holding score
    assert notes == ["the two thresholds crossed: using the single best cut"]
    acc, counts = action_accuracy(items, upper, lower)
    assert acc == 1.0 and counts["ambiguous"] == 0


def test_noisy_middle_becomes_ambiguous():
    items = [Item([i / 100], holds=(i >= 70) or (30 <= i < 70 and i % 2 == 0)) for i in range(100)]
    upper, lower, _ = choose_action_thresholds(items, 0.9, 0.9)
    assert 0.3 <= lower < upper <= 0.72
    _, counts = action_accuracy(items, upper, lower)
    assert counts["ambiguous"] > 0 and counts["correct"] > 0 and counts["incorrect"] > 0


def test_unreachable_lower_means_incorrect_only_without_passages():
    items = [Item([i / 10], holds=True) for i in range(10)] + [Item([], holds=False)]
    cal = calibrate(items, [0.1, 0.2], [True, False], 0.8, 0.8)
    assert cal.actions["incorrect"] == 1 and any("no lower threshold" in n for n in cal.notes)


def test_filter_keeps_the_requested_share_of_answer_strips():
    scores = [i / 10 for i in range(10)]
    assert choose_filter(scores, [True] * 10, recall=0.9) == 0.1
    assert choose_filter(scores, [False] * 10) == -1.0


@pytest.mark.slow
def test_calibrate_command_writes_a_config_the_other_commands_read(built_index, tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text(
        "\n".join(
            json.dumps(x)
            for x in [
                {"question": "What is the capital of Germany?", "answers": ["Berlin"]},
                {"question": "What is the capital of France?", "answers": ["Paris"]},
                {"question": "Who painted landscapes in Utrecht?", "answers": ["Anna Example"]},
                {"question": "What is John Smithson's occupation?", "answers": ["politician"]},
                {"question": "What is the largest moon of Saturn?", "answers": ["Titan"]},
                {"question": "no answers here"},
            ]
        )
        + "\n"
    )
    out = tmp_path / "crag.toml"
    r = CliRunner().invoke(app, ["calibrate", str(qs), "--index", str(built_index), "--write", str(out), "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["n"] == 5 and "line 6: skipped: no gold answers" in r.stderr
    assert sum(report["actions"].values()) == 5
    text = out.read_text()
    assert f"upper = {report['upper']}" in text and f"lower = {report['lower']}" in text
    r = CliRunner().invoke(
        app, ["--config", str(out), "evaluate", "capital of Germany?", "--index", str(built_index), "--json"]
    )
    assert json.loads(r.stdout)["thresholds"]["upper"] == pytest.approx(report["upper"])


def test_a_refused_calibrate_or_train_evaluator_leaves_no_lock_behind(built_index, tmp_path, monkeypatch):
    """A command refused after it locked its output lets the lock go: the next run gets the same error."""
    from crag_cli.errors import CragError

    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"question": "no gold answers here"}) + "\n")
    out = tmp_path / "crag.toml"
    for _ in range(2):
        r = CliRunner().invoke(app, ["calibrate", str(qs), "--index", str(built_index), "--write", str(out)])
        assert r.exit_code == 1 and "holds no question with gold answers" in r.output, r.output
    assert not list(tmp_path.glob(".*crag-lock"))

    def missing_extra(model):
        raise CragError(f"model {model} needs an extra that is not installed")

    monkeypatch.setattr("crag_cli.reader.backends.check_model", missing_extra)  # refused after the locks are taken
    args = ["train-evaluator", "--synthetic", "3", "--index", str(built_index), "--out", str(tmp_path / "ev")]
    for _ in range(2):
        r = CliRunner().invoke(app, [*args, "--save-synthetic", str(tmp_path / "pairs.jsonl")])
        assert r.exit_code == 1 and "needs an extra" in r.output, r.output
    assert not list(tmp_path.glob(".*crag-lock"))


def test_gold_questions_stop_reading_at_the_limit(tmp_path):
    """``--limit N`` of calibrate, evaluator-test and train-evaluator reads N usable lines, not the whole file."""
    from crag_cli.app import gold_questions

    path = tmp_path / "gold.jsonl"
    good = '{"question": "Who wrote Hamlet?", "answers": ["Shakespeare"]}\n'
    path.write_bytes(b"not json\n" + good.encode() * 2 + b"\xff broken\n" + good.encode() * 1000)
    notes = []
    questions = gold_questions(path, 2, notes.append)
    assert len(questions) == 2
    assert [note.split(":")[0] for note in notes] == ["line 1"]  # line 4 is past the limit: never read
