"""``crag batch --workers N``: the same output as one process, in input order, with the same guarantees."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from crag_cli.batch import split_threads
from crag_cli.cli import app

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def _questions(path, n):
    lines = [
        json.dumps({"id": f"q{i}", "question": f"capital of {c}?", "answers": ["berlin"]})
        for i, c in zip(range(n), ["Germany", "France", "Italy", "Spain", "Norway", "Chile"] * n)
    ]
    lines.insert(2, "{broken json")
    path.write_text("\n".join(lines) + "\n")
    return path


def _without_timings(text):
    return [{k: v for k, v in json.loads(line).items() if k != "timings"} for line in text.splitlines()]


def test_split_threads():
    assert split_threads(4, 2) == 2 and split_threads(5, 2) == 2 and split_threads(1, 3) == 1
    assert split_threads(None, 1) == (os.cpu_count() or 1)


@pytest.mark.slow
def test_workers_write_what_one_process_writes_and_resume_it(built_index, tiny_gguf, tmp_path):
    qs = _questions(tmp_path / "q.jsonl", 6)
    common = ["--index", built_index, "--model", tiny_gguf, "--max-tokens", "4"]
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    assert invoke("batch", qs, "-o", one, *common, "--threads", "1").exit_code == 1  # line 3 is an error record
    r = invoke("batch", qs, "-o", two, *common, "--threads", "2", "--workers", "2")  # 1 thread each
    assert r.exit_code == 1, r.output
    assert "2 workers, 1 generation thread(s) each" in r.stderr and "summary: 7 questions" in r.stderr
    assert _without_timings(two.read_text()) == _without_timings(one.read_text())  # same records, input order
    manifest = json.loads((tmp_path / "two.jsonl.run.json").read_text())
    assert manifest["complete"] is True and not (tmp_path / "two.jsonl.partial").exists()
    # an interrupted parallel run resumes, in parallel, to the same file
    lines = two.read_text().splitlines(keepends=True)
    (tmp_path / "part.jsonl.run.json").write_text(json.dumps(dict(manifest, output="part.jsonl", complete=False)))
    (tmp_path / "part.jsonl.partial").write_text("".join(lines[:3]) + lines[3][:20])
    r = invoke("batch", qs, "-o", tmp_path / "part.jsonl", "--resume", *common, "--threads", "2", "--workers", "2")
    assert "resuming after the 3 records" in r.stderr, r.output
    assert _without_timings((tmp_path / "part.jsonl").read_text()) == _without_timings(one.read_text())


@pytest.mark.slow
def test_parallel_answers_groups_at_once_over_one_reader_and_writes_what_one_at_a_time_writes(
    built_index, tiny_gguf, tmp_path
):
    qs = _questions(tmp_path / "q.jsonl", 20)  # 21 lines: three groups of 8 lines
    common = ["--index", built_index, "--model", tiny_gguf, "--max-tokens", "4"]
    one, many = tmp_path / "one.jsonl", tmp_path / "many.jsonl"
    assert invoke("batch", qs, "-o", one, *common).exit_code == 1  # line 3 is an error record
    r = invoke("batch", qs, "-o", many, *common, "--parallel", "3")
    assert r.exit_code == 1 and "3 questions at once over one reader" in r.stderr, r.output
    assert _without_timings(many.read_text()) == _without_timings(one.read_text())  # same records, input order
    lines = many.read_text().splitlines(keepends=True)
    manifest = json.loads((tmp_path / "many.jsonl.run.json").read_text())
    (tmp_path / "part.jsonl.run.json").write_text(json.dumps(dict(manifest, output="part.jsonl", complete=False)))
    (tmp_path / "part.jsonl.partial").write_text("".join(lines[:10]))
    r = invoke("batch", qs, "-o", tmp_path / "part.jsonl", "--resume", *common, "--parallel", "2")
    assert "resuming after the 10 records" in r.stderr, r.output
    assert _without_timings((tmp_path / "part.jsonl").read_text()) == _without_timings(one.read_text())


@pytest.mark.slow
def test_a_worker_that_cannot_load_its_model_is_one_error_line(built_index, tmp_path):
    qs = _questions(tmp_path / "q.jsonl", 2)
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a model")
    r = invoke("batch", qs, "-o", tmp_path / "out.jsonl", "--index", built_index, "--model", bad, "--workers", "2")
    assert r.exit_code == 1
    errors = [line for line in r.stderr.splitlines() if line.startswith("crag: error:")]
    assert len(errors) == 1 and "cannot load model" in errors[0], r.stderr
    assert not (tmp_path / "out.jsonl").exists()  # nothing was finished, nothing renamed into place


def _ctrl_c_as_in_a_terminal():
    """A test run started in the background by a script (``pytest &``) ignores SIGINT, and so would crag under it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_ctrl_c_stops_the_workers_and_leaves_a_resumable_file(built_index, tiny_gguf, tmp_path):
    qs = _questions(tmp_path / "q.jsonl", 400)
    out = tmp_path / "out.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "crag_cli",
        "batch",
        str(qs),
        "-o",
        str(out),
        "--index",
        str(built_index),
        "--model",
        str(tiny_gguf),
        "--max-tokens",
        "4",
        "--workers",
        "2",
        "--threads",
        "2",
    ]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )
    partial = tmp_path / "out.jsonl.partial"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not partial.exists() or partial.read_text().count("\n") < 3):
        time.sleep(0.2)
    assert proc.poll() is None, "the batch ended before it could be interrupted: give it more questions"
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole process group gets it
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "go on with --resume" in stderr
    kept = partial.read_text().splitlines()
    assert kept and all(json.loads(line) for line in kept)  # whole records only
    lines = qs.read_text().splitlines()
    expected = [json.loads(line).get("id") if line.startswith('{"') else f"line-{n}" for n, line in enumerate(lines, 1)]
    assert [json.loads(line)["id"] for line in kept] == expected[: len(kept)]  # in input order
    time.sleep(1)
    ps = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True).stdout.splitlines()
    alive = [line for line in ps if "spawn_main" in line and " Z" not in line]
    assert not alive, ps  # no worker left behind


@pytest.mark.slow
def test_ray_actors_write_what_one_process_writes(built_index, tiny_gguf, tmp_path):
    """A real local Ray (127.0.0.1, 2 CPUs, 2 actors of 1 thread each) against a sequential run of 1 thread."""
    qs = _questions(tmp_path / "q.jsonl", 6)
    common = ["--index", built_index, "--model", tiny_gguf, "--max-tokens", "4"]
    one, ray = tmp_path / "one.jsonl", tmp_path / "ray.jsonl"
    assert invoke("batch", qs, "-o", one, *common, "--threads", "1").exit_code == 1  # line 3 is an error record
    r = invoke("batch", qs, "-o", ray, *common, "--threads", "2", "--ray")
    assert r.exit_code == 1, r.output
    assert "Ray at local, 2 actors, 1 generation thread(s) each" in r.stderr and "summary: 7 questions" in r.stderr
    assert _without_timings(ray.read_text()) == _without_timings(one.read_text())  # same records, input order
    assert json.loads((tmp_path / "ray.jsonl.run.json").read_text())["complete"] is True
    # an actor that cannot use the model ends the batch with one line, before any question
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a model")
    r = invoke("batch", qs, "-o", tmp_path / "bad.jsonl", "--index", built_index, "--model", bad, "--ray")
    errors = [line for line in r.stderr.splitlines() if line.startswith("crag: error:")]
    assert r.exit_code == 1 and len(errors) == 1 and "a Ray actor on" in errors[0] and "cannot load model" in errors[0]
    assert not (tmp_path / "bad.jsonl").exists()


def test_ray_without_its_extra_is_one_line(built_index, tiny_gguf, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if 'crag-cli[ray]' were not installed
    r = invoke("batch", _questions(tmp_path / "q.jsonl", 2), "--index", built_index, "--model", tiny_gguf, "--ray")
    assert r.exit_code == 1 and r.stderr == "crag: error: --ray needs Ray: pip install 'crag-cli[ray]'\n"


def test_groups_follow_line_blocks_so_a_resumed_run_scores_the_same_questions_together():
    from crag_cli.batch import groups
    from crag_cli.batch.records import QuestionLine

    qs = [QuestionLine(n, None, f"q{n}", None, None) for n in (1, 2, 4, 5, 6, 9, 12, 13)]
    assert [[q.line for q in g] for g in groups(qs, 4)] == [[1, 2, 4], [5, 6], [9, 12], [13]]
    resumed = [q for q in qs if q.line >= 6]  # lines 1-5 done before: line 6 still goes with 5's block, alone now
    assert [[q.line for q in g] for g in groups(resumed, 4)] == [[6], [9, 12], [13]]


def test_a_full_group_is_answered_without_waiting_for_the_next_question():
    from crag_cli.batch import groups
    from crag_cli.batch.records import QuestionLine

    def stream():  # a live source: asking past line 4 would be an error here
        for n in range(1, 5):
            yield QuestionLine(n, None, f"q{n}", None, None)
        raise AssertionError("read past the full group")

    assert [q.line for q in next(groups(stream(), 4))] == [1, 2, 3, 4]
