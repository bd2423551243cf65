"""The Python API: what `crag ask` and `crag batch` give, from a library call."""

import json

import pytest
from typer.testing import CliRunner

import crag_cli
from crag_cli.cli import app
from crag_cli.errors import CragError
from crag_cli.settings import SettingsError


@pytest.mark.slow
def test_answer_gives_the_records_crag_batch_writes(built_index, tiny_gguf, tmp_path):
    questions = [
        {"id": "q1", "question": "capital of France?", "answers": ["Paris"]},
        {"id": "q2", "question": ""},  # a bad line: an error record, and the rest go on
        {"id": "q3", "question": "Where is Lyon?"},
    ]
    qs = tmp_path / "q.jsonl"
    qs.write_text("".join(json.dumps(q) + "\n" for q in questions))
    out = tmp_path / "out.jsonl"
    common = ["--index", str(built_index), "--model", str(tiny_gguf), "--max-tokens", "4", "--threads", "1"]
    CliRunner().invoke(app, ["batch", str(qs), "-o", str(out), *common])
    expected = [json.loads(line) for line in out.read_text().splitlines()]

    crag = crag_cli.open(index=str(built_index), model=str(tiny_gguf), max_tokens=4, threads=1)
    got = list(crag.answer(questions))
    drop = lambda r: {k: v for k, v in r.items() if k != "timings"}  # noqa: E731
    assert [drop(r) for r in got] == [drop(r) for r in expected] and got[1]["error"]
    result = crag.ask("capital of France?", answers=["Paris"])
    assert result.answer == got[0]["answer"] and result.action == got[0]["action"]
    streamed = []  # passages kept whatever the evaluator scores them, so that there is an answer to stream
    kept = crag_cli.open(index=str(built_index), model=str(tiny_gguf), max_tokens=4, threads=1, filter_threshold=-1)
    result = kept.ask("capital of France?", on_token=streamed.append)
    assert result.answer and "".join(streamed).strip() == result.answer.strip()
    assert [r["id"] for r in crag.answer(["Where is Lyon?", "capital of France?"])] == ["line-1", "line-2"]


def test_bad_settings_and_index_are_clear_errors(built_index, tmp_path):
    with pytest.raises(SettingsError, match="top_k"):
        crag_cli.open(index=str(built_index), top_k=0)
    with pytest.raises(SettingsError, match="unknown mode"):
        crag_cli.open(index=str(built_index), mode="bogus")
    with pytest.raises(CragError, match="no index at"):
        crag_cli.open(index=str(tmp_path / "nowhere"), model="qwen2.5-coder-0.5b")


def test_batch_is_crag_batch_with_its_output_and_resume(built_index, tiny_gguf, tmp_path):
    """Crag.batch runs the command's own code: the same file, the same run manifest, and --resume."""
    questions = [{"id": f"q{i}", "question": q} for i, q in enumerate(["capital of France?", "", "Where is Lyon?"])]
    qs = tmp_path / "q.jsonl"
    qs.write_text("".join(json.dumps(q) + "\n" for q in questions))
    cli_out, api_out = tmp_path / "cli.jsonl", tmp_path / "api.jsonl"
    common = ["--index", str(built_index), "--model", str(tiny_gguf), "--max-tokens", "4", "--threads", "1"]
    CliRunner().invoke(app, ["batch", str(qs), "-o", str(cli_out), *common])

    crag = crag_cli.open(index=str(built_index), model=str(tiny_gguf), max_tokens=4, threads=1)
    seen = []
    report = crag.batch(qs, api_out, on_record=lambda rec, summary: seen.append(summary.total))
    drop = lambda text: [{k: v for k, v in json.loads(x).items() if k != "timings"} for x in text.splitlines()]  # noqa: E731
    assert drop(api_out.read_text()) == drop(cli_out.read_text())
    assert seen == [1, 2, 3] and report.summary.errors == 1 and report.resumed == 0
    assert report.manifest.is_file() and json.loads(report.manifest.read_text())["identity"]["mode"] == "crag"

    lines = api_out.read_text().splitlines(keepends=True)
    api_out.unlink()
    (tmp_path / "api.jsonl.partial").write_text(lines[0])  # a run stopped after its first record
    notes = []
    report = crag.batch(qs, api_out, resume=True, note=notes.append)
    assert report.resumed == 1 and any("resuming after the 1 records" in n for n in notes)
    assert drop(api_out.read_text()) == drop(cli_out.read_text())
    with pytest.raises(CragError, match="--resume needs -o/--output"):
        crag.batch(qs, resume=True)
    with pytest.raises(CragError, match="no such file"):
        crag.batch(tmp_path / "missing.jsonl", tmp_path / "x.jsonl")
