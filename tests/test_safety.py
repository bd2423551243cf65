"""Issue 9: nothing lost, nothing leaked. Each test is one reproduction, run on a real file system."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crag_cli.cli import app
from webserver import LocalWeb

runner = CliRunner()


def invoke(*args, input=None, env=None):
    return runner.invoke(app, [str(a) for a in args], input=input, env=env)


def one_error_line(r, *fragments) -> None:
    """The contract for bad input: exit 1, exactly one ``crag: error:`` line naming the problem."""
    assert r.exit_code == 1, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crag: error: "), r.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def snapshot(folder: Path) -> dict:
    """Every file below ``folder`` with its bytes."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def dead_pid() -> int:
    """The id of a process that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# ----------------------------------------------------------------------------- 1-3, 9: the index folder


def test_index_refuses_a_folder_that_is_not_a_crag_index(docs_dir, tmp_path):
    target = tmp_path / "p"
    target.mkdir()
    (target / "thesis.txt").write_text("four years of work")
    one_error_line(invoke("index", docs_dir, "--index", target), "not a crag index", "thesis.txt")
    assert snapshot(target) == {"thesis.txt": b"four years of work"}


def test_index_refuses_the_documents_folder_and_its_parents(docs_dir, tmp_path):
    before = snapshot(tmp_path)
    one_error_line(invoke("index", docs_dir, "--index", docs_dir), "would hold the documents")
    one_error_line(invoke("index", docs_dir, "--index", tmp_path), "would hold the documents")
    one_error_line(invoke("index", docs_dir / "paris.txt", "--index", docs_dir), "would hold the documents")
    assert snapshot(tmp_path) == before


def test_index_refuses_an_existing_file(docs_dir, tmp_path):
    target = tmp_path / "notes"
    target.write_text("mine")
    one_error_line(invoke("index", docs_dir, "--index", target), "is a file")
    assert target.read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "notes"]  # no renamed copy either


def test_index_rebuilds_its_own_index_and_an_empty_folder_but_not_one_with_a_stray_file(docs_dir, tmp_path):
    target = tmp_path / "ix"
    target.mkdir()  # empty: fine
    assert invoke("index", docs_dir, "--index", target).exit_code == 0
    (docs_dir / "new.txt").write_text("Lisbon is the capital of Portugal.")
    assert invoke("index", docs_dir, "--index", target).exit_code == 0  # its own index: replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs", "ix"]  # no temporaries left
    (target / "todo.txt").write_text("a file the user put there")
    one_error_line(invoke("index", docs_dir, "--index", target, "--force"), "not a crag index", "todo.txt")
    assert (target / "todo.txt").read_text() == "a file the user put there"


def test_index_into_the_current_folder_is_one_clear_line(docs_dir, tmp_path, monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    one_error_line(invoke("index", "../docs", "--index", "."), "current folder")
    one_error_line(invoke("index", "../docs", "--index", ".."), "would hold the documents")


# ----------------------------------------------------------------------------- 5: the index never reads itself


def test_index_inside_the_documents_is_not_read_back_and_hidden_files_are_left_out(docs_dir, monkeypatch):
    (docs_dir / ".git").mkdir()
    (docs_dir / ".git" / "config.txt").write_text("[remote] url = https://token@example.org")
    (docs_dir / ".env.md").write_text("SECRET=1")
    monkeypatch.chdir(docs_dir)
    first = invoke("index", ".")
    assert first.exit_code == 0, first.output
    assert "indexed 4 documents from 4 files" in first.stderr and "left out 2 hidden" in first.stderr
    for _ in range(2):
        again = invoke("index", ".")
        assert "up to date" in again.stderr and "4 files" in again.stderr and "crag index folder" in again.stderr
    from crag_cli.index import BM25Index

    passages = BM25Index.load(docs_dir / ".crag-index").passages
    assert not any("#0#" in p.id or "token" in p.text or "SECRET" in p.text for p in passages)
    hidden = invoke("index", ".", "--index", "../with-hidden", "--include-hidden")
    assert "indexed 6 documents from 6 files" in hidden.stderr, hidden.stderr


def test_unchanged_folder_is_decided_from_sizes_and_hashes_without_parsing(docs_dir, tmp_path, monkeypatch):
    assert invoke("index", docs_dir, "--index", tmp_path / "ix").exit_code == 0
    import crag_cli.documents.types as corpus

    def no_parsing(*args, **kwargs):
        raise AssertionError("an unchanged folder must not be parsed")

    monkeypatch.setattr(corpus, "html_main_text", no_parsing)
    r = invoke("index", docs_dir, "--index", tmp_path / "ix")
    assert r.exit_code == 0 and "up to date" in r.stderr


# ----------------------------------------------------------------------------- 12: a damaged manifest


@pytest.mark.parametrize(
    "damage, fragment",
    [
        (lambda m: m.pop("tokenizer"), "no tokenizer settings"),
        (lambda m: m["tokenizer"].update(stemmer="klingon"), "unknown stemmer 'klingon'"),
        (lambda m: m["tokenizer"].update(splitter="(("), "is not a regular expression"),
        (lambda m: m["tokenizer"].update(colour="blue"), "bad tokenizer settings"),
        (lambda m: m.pop("passage_count"), "passage_count"),
    ],
)
def test_a_damaged_manifest_is_one_clear_line(damage, fragment, built_index):
    path = built_index / "manifest.json"
    manifest = json.loads(path.read_text())
    damage(manifest)
    path.write_text(json.dumps(manifest))
    one_error_line(invoke("evaluate", "capital of France?", "--index", built_index), "corrupt index", fragment)


# ----------------------------------------------------------------------------- 7: leftovers of killed runs


def test_stale_temporaries_of_dead_processes_are_removed_and_live_ones_kept(docs_dir, tmp_path):
    from crag_cli.reader import assemble

    dead = dead_pid()
    stale = tmp_path / f".ix.crag-tmp-{dead}-abc123"
    (stale / "bm25").mkdir(parents=True)
    (stale / "passages.jsonl").write_text("{}\n")
    live = tmp_path / f".ix.crag-tmp-{os.getppid()}-def456"
    live.mkdir()
    r = invoke("index", docs_dir, "--index", tmp_path / "ix")
    assert r.exit_code == 0 and "removed 1 temporary" in r.stderr
    assert not stale.exists() and live.exists()

    models = tmp_path / "models"
    models.mkdir()
    part = models / f".m.gguf.crag-tmp-{dead}-xyz.part"
    part.write_bytes(b"half a model")
    legacy = models / "m.gguf.k2j3h4.part"  # earlier crag named them without a process id
    legacy.write_bytes(b"half a model")
    os.utime(legacy, (time.time() - 7200, time.time() - 7200))
    (tmp_path / "a").write_bytes(b"abc")
    import hashlib

    assemble([tmp_path / "a"], models / "m.gguf", hashlib.sha256(b"abc").hexdigest())
    assert sorted(p.name for p in models.iterdir()) == ["m.gguf"]


# ----------------------------------------------------------------------------- 4, 10: outputs


def test_batch_never_writes_over_its_input(built_index, tiny_gguf, tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"question": "capital of Germany?"}) + "\n")
    before = qs.read_bytes()
    one_error_line(invoke("batch", qs, "-o", qs, "--index", built_index, "--model", tiny_gguf), "is the input")
    one_error_line(
        invoke(
            "batch", qs, "-o", tmp_path / "." / "q.jsonl", "--overwrite", "--index", built_index, "--model", tiny_gguf
        ),
        "is the input",
    )
    assert qs.read_bytes() == before


@pytest.mark.slow
def test_calibrate_never_writes_over_its_input_or_a_file_that_is_not_a_config(built_index, tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"question": "capital of Germany?", "answers": ["Berlin"]}) + "\n")
    before = qs.read_bytes()
    one_error_line(invoke("calibrate", qs, "--index", built_index, "--write", qs), "is the input")
    assert qs.read_bytes() == before
    notes = tmp_path / "notes.txt"
    notes.write_text("not toml at all: [")
    one_error_line(invoke("calibrate", qs, "--index", built_index, "--write", notes), "not a crag config")
    assert notes.read_text() == "not toml at all: ["
    cfg = tmp_path / "crag.toml"
    cfg.write_text('model = "smollm2-135m"\n')
    r = invoke("calibrate", qs, "--index", built_index, "--write", cfg)
    assert r.exit_code == 0, r.output
    assert 'model = "smollm2-135m"' in cfg.read_text() and "upper = " in cfg.read_text()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporaries


@pytest.mark.slow
def test_batch_does_not_replace_a_file_it_did_not_write_unless_told(built_index, tiny_gguf, tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"question": "capital of Germany?"}) + "\n")
    out = tmp_path / "results.jsonl"
    out.write_text("my hand-made results\n")
    common = ["--index", built_index, "--model", tiny_gguf, "--max-tokens", "2"]
    one_error_line(invoke("batch", qs, "-o", out, *common), "crag did not write it", "--overwrite")
    assert out.read_text() == "my hand-made results\n"
    assert invoke("batch", qs, "-o", out, "--overwrite", *common).exit_code == 0
    assert json.loads(out.read_text())["question"] == "capital of Germany?"
    assert invoke("batch", qs, "-o", out, *common).exit_code == 0  # its own output: replaced without asking


@pytest.mark.parametrize("where", ["nodir/out.jsonl", "adir/", "adir"])
def test_batch_output_problems_are_found_before_any_model_loads(where, built_index, tmp_path):
    (tmp_path / "adir").mkdir()
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"question": "capital of Germany?"}) + "\n")
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"not a model")  # loading it would fail: the output error must come first
    out = str(tmp_path / where) + ("/" if where.endswith("/") else "")
    r = invoke("batch", qs, "-o", out, "--index", built_index, "--model", garbage)
    one_error_line(r, "folder")
    assert "cannot load model" not in r.stderr


# ----------------------------------------------------------------------------- 6: resume knows what made the records


def _questions(tmp_path, n=3):
    qs = tmp_path / "q.jsonl"
    qs.write_text("".join(json.dumps({"id": f"q{i}", "question": f"capital of Germany? {i}"}) + "\n" for i in range(n)))
    return qs


@pytest.mark.parametrize(
    "change, setting",
    [
        (["--mode", "rag"], "mode"),
        # two batches each: the fast tier keeps the first
        pytest.param(["--upper", "0.3"], "thresholds", marks=pytest.mark.slow),
        pytest.param(["--evaluator", "minilm-cosine:{other}"], "evaluator", marks=pytest.mark.slow),
        pytest.param(["--top-k", "3"], "top_k", marks=pytest.mark.slow),
        pytest.param(["--model", "{other_model}"], "model", marks=pytest.mark.slow),
        pytest.param(["--index", "{other_index}"], "index_sha256", marks=pytest.mark.slow),
    ],
)
def test_resume_refuses_other_settings_naming_the_setting(change, setting, built_index, tiny_gguf, tmp_path, docs_dir):
    from conftest import write_tiny_gguf

    qs = _questions(tmp_path)
    out = tmp_path / "out.jsonl"
    common = ["--index", built_index, "--model", tiny_gguf, "--max-tokens", "2"]
    assert invoke("batch", qs, "-o", out, *common).exit_code == 0
    lines = out.read_text().splitlines(keepends=True)
    out.unlink()
    (tmp_path / "out.jsonl.partial").write_text(lines[0])
    other_index = tmp_path / "ix2"
    (docs_dir / "more.txt").write_text("Rome is the capital of Italy.")
    assert invoke("index", docs_dir, "--index", other_index).exit_code == 0
    fills = {
        "other": str(tmp_path / "nowhere"),
        "other_model": str(write_tiny_gguf(tmp_path / "b.gguf", seed=1)),
        "other_index": str(other_index),
    }
    args = [a.format(**fills) for a in change]
    args = (
        common + args
        if "--index" not in change and "--model" not in change
        else (
            ["--max-tokens", "2"] + args + (["--model", tiny_gguf] if "--index" in change else ["--index", built_index])
        )
    )
    r = invoke("batch", qs, "-o", out, "--resume", *args)
    one_error_line(r, "cannot resume", f"another {setting}")
    assert (tmp_path / "out.jsonl.partial").read_text() == lines[0]


@pytest.mark.slow
def test_resume_ignores_what_the_records_do_not_depend_on(built_index, tiny_gguf, tmp_path, docs_dir):
    qs = _questions(tmp_path)
    out = tmp_path / "out.jsonl"
    common = ["--index", built_index, "--model", tiny_gguf, "--max-tokens", "2", "--mode", "rag", "--task", "popqa"]
    assert invoke("batch", qs, "-o", out, *common).exit_code == 0
    lines = out.read_text().splitlines(keepends=True)
    out.unlink()
    (tmp_path / "out.jsonl.partial").write_text(lines[0])
    # the same documents touched and indexed again from scratch; settings plain RAG never uses
    for f in docs_dir.rglob("*"):
        os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))
    assert invoke("index", docs_dir, "--index", built_index, "--force", "--no-dense").exit_code == 0  # (as built)
    unused = ["--upper", "0.3", "--strips", "2", "--evaluator", "minilm-cosine"]
    r = invoke("batch", qs, "-o", out, "--resume", *common, *unused)
    assert r.exit_code == 0, r.output
    assert "resuming after the 1 records" in r.stderr
    again = [json.loads(x) for x in out.read_text().splitlines()]
    assert again[0] == json.loads(lines[0])  # kept, not redone
    assert [{k: v for k, v in x.items() if k != "timings"} for x in again[1:]] == [
        {k: v for k, v in json.loads(x).items() if k != "timings"} for x in lines[1:]
    ]


def test_evaluator_fingerprint_follows_the_files_content_not_their_times(tmp_path):
    from crag_cli.batch import evaluator_fingerprint

    folder = tmp_path / "ev"
    folder.mkdir()
    (folder / "weights.bin").write_bytes(b"\x00" * 100)
    (folder / "crag-evaluator.json").write_text("{}")
    before = evaluator_fingerprint(str(folder))
    for f in folder.iterdir():  # a reinstall rewrites the same bytes
        f.write_bytes(f.read_bytes())
        os.utime(f, ns=(1, 10**18))
    assert evaluator_fingerprint(str(folder)) == before
    (folder / "weights.bin").write_bytes(b"\x01" * 100)
    assert evaluator_fingerprint(str(folder)) != before


@pytest.mark.slow
def test_records_name_mode_model_and_evaluator_and_retry_errors_redoes_only_errors(built_index, tiny_gguf, tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text(
        json.dumps({"id": "a", "question": "capital of Germany?"})
        + "\n"
        + json.dumps({"id": "b", "question": "capital of France?"})
        + "\n"
    )
    out = tmp_path / "out.jsonl"
    common = ["--index", built_index, "--model", tiny_gguf, "--max-tokens", "2", "--filter-threshold", "-1"]
    assert invoke("batch", qs, "-o", out, *common).exit_code == 0
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert {(r["mode"], r["model"], r["evaluator"]) for r in recs} == {("crag", str(tiny_gguf), "minilm")}
    # pretend the second question failed (a network error, say)
    recs[1] = {"id": "b", "question": "capital of France?", "action": None, "answer": None, "error": "boom"}
    out.unlink()  # ... in a run that was then interrupted: its partial file is left
    (tmp_path / "out.jsonl.partial").write_text("".join(json.dumps(r) + "\n" for r in recs))
    r = invoke("batch", qs, "-o", out, "--resume", *common)
    assert "nothing to do" in r.stderr and r.exit_code == 1  # kept as it was: still an error
    r = invoke("batch", qs, "-o", out, "--resume", "--retry-errors", *common)
    assert r.exit_code == 0, r.output
    assert "redoing 1 error record" in r.stderr
    again = [json.loads(x) for x in out.read_text().splitlines()]
    assert again[0] == recs[0] and again[1]["error"] is None and again[1]["answer"] is not None
    one_error_line(invoke("batch", qs, "-o", out, "--retry-errors", *common), "--retry-errors goes with --resume")


# ----------------------------------------------------------------------------- 8: the web cache and private addresses


@pytest.mark.slow
def test_cached_private_pages_are_not_served_without_allow_private(built_index, tiny_gguf):
    with LocalWeb() as web:
        base = [
            "What is Zorblat Quintana's occupation?",
            "--index",
            built_index,
            "--model",
            tiny_gguf,
            "--upper",
            "1",
            "--lower",
            "1",
            "--web",
            "searxng",
            "--searxng-url",
            web.url,
            "--max-tokens",
            "2",
            "--json",
            "--rewrite",
            "none",
        ]
        first = json.loads(invoke("ask", *base, "--allow-private").stdout)
        assert any("sculptor" in s["text"] for s in first["external_knowledge"]["strips"])
        fetched = len(web.server.requests)
        second = json.loads(invoke("ask", *base).stdout)
        pages = second["external_knowledge"]["pages"]
        assert pages and all(p["error"].startswith("refused") and not p.get("cached") for p in pages)
        assert all(path.startswith("/search") for path, _ in web.server.requests[fetched:])  # no page was fetched
        third = json.loads(invoke("ask", *base, "--allow-private").stdout)  # same policy: the cache serves
        assert any(p.get("cached") for p in third["external_knowledge"]["pages"])


def test_web_cache_deletes_expired_entries_and_stays_within_its_size(tmp_path):
    from crag_cli.web.cache import DiskCache

    cache = DiskCache(tmp_path / "c", ttl=0.2, max_bytes=200_000_000)
    cache.put("old", {"x": 1})
    assert cache.get("old") == {"x": 1}
    time.sleep(0.4)
    cache.close()
    reopened = DiskCache(tmp_path / "c", ttl=3600, max_bytes=200_000_000)
    assert len(reopened) == 0 and reopened.get("old") is None  # deleted when the cache was opened
    reopened.close()
    small = DiskCache(tmp_path / "small", ttl=3600, max_bytes=200_000)
    for i in range(300):
        small.put(f"page:{i}", {"body": "x" * 5000})
    assert small.volume() < 600_000 and small.get("page:299") is not None


# ----------------------------------------------------------------------------- 11, 13, 15: settings, one way for all


@pytest.mark.parametrize("how", ["flag", "env", "toml"])
@pytest.mark.parametrize(
    "name, value, fragment",
    [
        ("max_length", "-5", "greater than or equal to 16"),
        ("top_k", "ten", "valid integer"),
        ("upper", "nan", "finite number"),
        ("upper", "2", "less than or equal to 1"),
        ("max_tokens", "0", "greater than or equal to 1"),
        ("max_tokens", "-5", "greater than or equal to 1"),
        ("temperature", "-1", "greater than or equal to 0"),
        ("searxng_url", "notaurl", "http:// or https://"),
        ("strip_mode", "sentences", "'excerption', 'fixed_num' or 'selection'"),
    ],
)
def test_a_bad_setting_is_refused_the_same_way_from_every_source(how, name, value, fragment, built_index, tmp_path):
    env = None
    args = ["ask", "capital of France?", "--index", built_index, "--model", "smollm2-135m"]
    if how == "flag":
        from crag_cli.settings.info import flag

        args += [flag(name), value]
        source = flag(name)
    elif how == "env":
        env = {f"CRAG_{name.upper()}": value}
        source = f"environment variable CRAG_{name.upper()}"
    else:
        text = value if value.lstrip("-").replace(".", "").isdigit() or value == "nan" else json.dumps(value)
        (tmp_path / "crag.toml").write_text(f"{name} = {text}\n")
        source = "config file"
    r = invoke(*args, env=env)
    one_error_line(r, f"for {name} (from {source}", fragment)


def test_other_bad_values_are_one_line(built_index, tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"question": "x"}) + "\n")
    one_error_line(
        invoke("batch", qs, "--limit", "-1", "--index", built_index), "--limit", "greater than or equal to 1"
    )
    one_error_line(invoke("ask", "x", "--index", built_index, "--web", "searxng"), "needs searxng_url")
    one_error_line(invoke("ask", "x", "--no-such-flag"), "no such option")
    one_error_line(invoke("evaluate", "x", "--index", built_index, "--upper", "0.1", "--lower", "0.2"), "lower")


def test_preset_on_the_cosine_evaluator_warns(built_index):
    r = invoke(
        "evaluate",
        "capital of France?",
        "--index",
        built_index,
        "--preset",
        "popqa",
        "--json",
        "--evaluator",
        "minilm-cosine",
    )
    assert (
        r.exit_code == 0 and "crag: warning: preset 'popqa'" in r.stderr and "Incorrect can then never fire" in r.stderr
    )
    assert json.loads(r.stdout)  # still valid JSON


# ----------------------------------------------------------------------------- 14: a byte-order mark


@pytest.mark.slow
def test_a_byte_order_mark_does_not_spoil_the_first_line(built_index, tiny_gguf, tmp_path):
    qs = tmp_path / "bom.jsonl"
    qs.write_bytes(
        b"\xef\xbb\xbf"
        + json.dumps({"id": "a", "question": "capital of Germany?", "answers": ["Berlin"]}).encode()
        + b"\n"
    )
    r = invoke("batch", qs, "--index", built_index, "--model", tiny_gguf, "--max-tokens", "2")
    assert r.exit_code == 0 and json.loads(r.stdout)["error"] is None
    r = invoke("evaluate", "--input", qs, "--index", built_index)
    assert r.exit_code == 0 and json.loads(r.stdout)["action"]
    r = invoke("calibrate", qs, "--index", built_index)
    assert r.exit_code == 0 and "skipped" not in r.stderr


# ----------------------------------------------------------------------------- 16: one count per record


@pytest.mark.slow
def test_a_failed_generation_is_counted_once(built_index, tiny_gguf, tmp_path):
    qs = tmp_path / "q.jsonl"
    long_question = "capital of Germany " * 300  # does not fit n_ctx 1024 (a byte a token): generation fails
    qs.write_text(
        json.dumps({"id": "ok", "question": "capital of Germany?"})
        + "\n"
        + json.dumps({"id": "long", "question": long_question})
        + "\n"
        + "{oops\n"
    )
    r = invoke("batch", qs, "--index", built_index, "--model", tiny_gguf, "--max-tokens", "2", "--n-ctx", "1024")
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    assert r.exit_code == 1 and [x["id"] for x in recs] == ["ok", "long", "line-3"]
    assert recs[1]["error"].startswith("generation failed")
    summary = next(line for line in r.stderr.splitlines() if line.startswith("summary:"))
    assert "3 questions" in summary and "2 error record(s)" in summary and "error:" not in summary
    counted = sum(int(part.split(": ")[1]) for part in summary.split("; ")[1].split(", "))
    assert counted == 1  # the answered question, under its action; the two errors only as errors


# ----------------------------------------------------------------------------- kills and garbage


@pytest.mark.slow
def test_batch_killed_at_random_points_resumes_to_one_whole_record_per_line(built_index, tiny_gguf, tmp_path):
    import random

    n = 200
    qs = tmp_path / "q.jsonl"
    qs.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "question": f"What is the capital of country {i}?"}) + "\n" for i in range(n)
        )
    )
    out = tmp_path / "out.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "crag_cli",
        "batch",
        str(qs),
        "-o",
        str(out),
        "--resume",
        "--mode",
        "rag",
        "--index",
        str(built_index),
        "--model",
        str(tiny_gguf),
        "--max-tokens",
        "16",
        "--threads",
        "1",
        "-k",
        "3",
        "--n-ctx",
        "2048",
    ]
    env = {**os.environ, "CRAG_CACHE_DIR": str(tmp_path / "cache")}
    partial = tmp_path / "out.jsonl.partial"

    def written() -> int:
        return partial.read_bytes().count(b"\n") if partial.exists() else 0

    rng = random.Random(9)
    # kill points: a few during start-up (by time), the rest when the partial file reaches a random size
    plan = [("time", rng.uniform(0.05, 0.8)) for _ in range(2)]
    plan += [("records", t) for t in sorted(rng.sample(range(5, n - 5), 6))]
    seen = []
    for kind, point in plan:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tmp_path)
        start = time.perf_counter()
        while proc.poll() is None and (time.perf_counter() - start < point if kind == "time" else written() < point):
            time.sleep(0.002)
        proc.kill()  # SIGKILL: no handler runs, possibly in the middle of writing a record
        proc.wait()
        seen.append(written())
    assert 0 < max(seen) < n, seen  # the kills landed mid-run
    final = subprocess.run(cmd, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert final.returncode == 0, final.stderr.decode()
    reference = tmp_path / "reference.jsonl"
    subprocess.run(
        [*cmd[:6], str(reference), *cmd[7:]],
        env=env,
        cwd=tmp_path,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    raw = out.read_bytes()
    assert raw.endswith(b"\n")
    records = [json.loads(line) for line in raw.splitlines()]  # no torn line: every line parses
    assert [r["id"] for r in records] == [f"q{i}" for i in range(n)]  # one each, in order, no duplicates
    assert all(r["error"] is None and r["answer"] is not None for r in records)
    expected = [json.loads(line) for line in reference.read_text().splitlines()]
    assert [r["answer"] for r in records] == [r["answer"] for r in expected]  # as if never interrupted
    assert json.loads((tmp_path / "out.jsonl.run.json").read_text())["complete"] is True
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []  # no temporaries left
    assert not (tmp_path / "out.jsonl.partial").exists()


def _fuzz_lines(rng) -> list[bytes]:
    def text(k):
        return "".join(rng.choice('abcXYZ é中\u2028\x00"\\{}[]:,') for _ in range(k))

    makers = [
        lambda: json.dumps({"question": text(rng.randint(1, 30)), "id": rng.choice([None, 1, "x", [1]])}).encode(),
        lambda: json.dumps(
            {"question": "capital of Germany?", "answers": rng.choice([["Berlin"], "Berlin", [1], None, {}])}
        ).encode(),
        lambda: json.dumps({"question": "capital?", "task": rng.choice(["popqa", "bio", "nope", 3, None])}).encode(),
        lambda: json.dumps(
            rng.choice([[], 1, "q", None, True, {"q": 1}, {"question": None}, {"question": "  "}])
        ).encode(),
        lambda: json.dumps({"question": "x"})[: rng.randint(0, 12)].encode(),  # cut off
        lambda: bytes(rng.randrange(256) for _ in range(rng.randint(1, 40))).replace(b"\n", b""),  # binary noise
        lambda: rng.choice(
            [b" ", b"\t", b"\r", b"  \t ", b"\xef\xbb\xbf", b"\x0b", b"\x1c", b"\xc3", b"NaN", b"1e999"]
        ),
        lambda: text(rng.randint(0, 60)).encode("utf-8", "surrogatepass"),
    ]
    return [rng.choice(makers)() for _ in range(300)]


@pytest.mark.slow
def test_fuzzed_jsonl_gives_exactly_one_record_per_non_blank_line(tiny_gguf, tmp_path):
    import random

    lines = _fuzz_lines(random.Random(12345))
    qs = tmp_path / "fuzz.jsonl"
    qs.write_bytes(b"\n".join(lines) + b"\n")
    expected = [i for i, raw in enumerate(qs.read_bytes().split(b"\n"), 1) if raw.strip(b" \t\r\n")]
    assert 200 < len(expected) < 300  # blank lines are in the mix too
    r = invoke("batch", qs, "--mode", "no-retrieval", "--model", tiny_gguf, "--max-tokens", "1")
    records = [json.loads(line) for line in r.stdout.split("\n")[:-1]]  # (splitlines would also cut at U+2028)
    assert len(records) == len(expected)
    for line_no, rec in zip(expected, records):
        assert rec["error"] is None or rec.get("line") == line_no, (line_no, rec)
    assert r.exit_code == 1  # some lines are errors, all were written


# ----------------------------------------------------------------------------- found in review


@pytest.mark.slow
def test_outputs_that_are_links_or_not_regular_files_are_refused(built_index, tiny_gguf, tmp_path):
    qs = _questions(tmp_path, 1)
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    common = ["--index", built_index, "--model", tiny_gguf, "--max-tokens", "2"]
    (tmp_path / "link.jsonl").symlink_to(precious)
    one_error_line(invoke("batch", qs, "-o", tmp_path / "link.jsonl", "--overwrite", *common), "symbolic link")
    assert invoke("batch", qs, "-o", tmp_path / "out.jsonl", *common).exit_code == 0
    (tmp_path / "out.jsonl.partial").symlink_to(precious)
    one_error_line(invoke("batch", qs, "-o", tmp_path / "out.jsonl", *common), "symbolic link")
    os.mkfifo(tmp_path / "fifo")
    one_error_line(invoke("batch", qs, "-o", tmp_path / "fifo", "--overwrite", *common), "not a regular file")
    assert precious.read_text() == "keep me"


def test_a_folder_with_someone_elses_manifest_is_not_an_index(docs_dir, tmp_path):
    webapp = tmp_path / "webapp"
    webapp.mkdir()
    (webapp / "manifest.json").write_text('{"name": "my app"}')
    one_error_line(invoke("index", docs_dir, "--index", webapp), "not a crag index", "manifest.json")
    assert (webapp / "manifest.json").read_text() == '{"name": "my app"}'


@pytest.mark.slow
def test_an_output_replaced_by_the_user_is_theirs_and_a_partial_run_is_not_thrown_away(
    built_index, tiny_gguf, tmp_path
):
    qs = _questions(tmp_path, 2)
    out = tmp_path / "out.jsonl"
    common = ["--index", built_index, "--model", tiny_gguf, "--max-tokens", "2"]
    assert invoke("batch", qs, "-o", out, *common).exit_code == 0
    out.rename(tmp_path / "archived.jsonl")
    out.write_text("my own file now\n")
    one_error_line(invoke("batch", qs, "-o", out, *common), "changed since crag wrote it", "--overwrite")
    assert out.read_text() == "my own file now\n"
    out.unlink()
    lines = (tmp_path / "archived.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "out.jsonl.partial").write_text(lines[0])  # an interrupted run's records
    one_error_line(invoke("batch", qs, "-o", out, *common), "1 records of an interrupted run", "--resume")
    assert (tmp_path / "out.jsonl.partial").read_text() == lines[0]


@pytest.mark.slow
def test_resume_checks_the_questions_not_only_the_line_numbers(built_index, tiny_gguf, tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text(
        json.dumps({"question": "capital of Germany?"}) + "\n" + json.dumps({"question": "capital of France?"}) + "\n"
    )
    out = tmp_path / "out.jsonl"
    common = ["--index", built_index, "--model", tiny_gguf, "--max-tokens", "2"]
    assert invoke("batch", qs, "-o", out, *common).exit_code == 0
    qs.write_text(
        json.dumps({"question": "capital of France?"}) + "\n" + json.dumps({"question": "capital of Germany?"}) + "\n"
    )
    one_error_line(invoke("batch", qs, "-o", out, "--resume", *common), "cannot resume")


def test_everything_the_run_reads_is_an_input(built_index, tiny_gguf, tmp_path):
    qs = _questions(tmp_path, 1)
    model = tmp_path / "m.gguf"
    model.write_bytes(tiny_gguf.read_bytes())
    before = model.read_bytes()
    one_error_line(
        invoke("batch", qs, "-o", model, "--overwrite", "--index", built_index, "--model", model), "is the input"
    )
    assert model.read_bytes() == before
    one_error_line(
        invoke(
            "batch", qs, "-o", built_index / "passages.jsonl", "--overwrite", "--index", built_index, "--model", model
        ),
        "inside the index",
    )


def test_odd_names_and_links_are_one_line_not_a_traceback(docs_dir, built_index, tiny_gguf, tmp_path):
    qs = _questions(tmp_path, 1)
    one_error_line(
        invoke("batch", qs, "-o", tmp_path / ("a" * 245), "--index", built_index, "--model", tiny_gguf), "too long"
    )
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    r = invoke("index", docs_dir, "--index", loop)
    assert r.exit_code == 1 and r.stderr.startswith("crag: error:") and len(r.stderr.strip().splitlines()) == 1
    odd = tmp_path / ".ix.crag-tmp-99999999999999999999-x"
    odd.mkdir()
    assert invoke("index", docs_dir, "--index", tmp_path / "ix").exit_code == 0
    assert odd.exists()  # not a process id crag can judge: left alone


@pytest.mark.slow
def test_replacing_keeps_links_and_permissions(docs_dir, built_index, tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"question": "capital of Germany?", "answers": ["Berlin"]}) + "\n")
    real = tmp_path / "dotfiles" / "crag.toml"
    real.parent.mkdir()
    real.write_text("top_k = 10\n")
    real.chmod(0o644)
    (tmp_path / "crag.toml").symlink_to(real)
    assert invoke("calibrate", qs, "--index", built_index, "--write", tmp_path / "crag.toml").exit_code == 0
    assert (tmp_path / "crag.toml").is_symlink() and "upper = " in real.read_text()
    assert real.stat().st_mode & 0o777 == 0o644
    old = os.umask(0o022)
    try:
        assert invoke("index", docs_dir, "--index", tmp_path / "ix").exit_code == 0
    finally:
        os.umask(old)
    assert (tmp_path / "ix").stat().st_mode & 0o777 == 0o755


def test_toml_booleans_are_not_numbers(built_index, tmp_path):
    (tmp_path / "crag.toml").write_text("top_k = true\n")
    one_error_line(invoke("evaluate", "x", "--index", built_index), "for top_k (from config file", "an integer")
