import json

import pytest
from conftest import crag_process, vm_peak
from typer.testing import CliRunner

from crag_cli import __version__
from crag_cli.action.trigger import decide, supported
from crag_cli.assemble import evaluator_of
from crag_cli.action.match import holds_answer
from crag_cli.cli import app

runner = CliRunner()


def invoke(*args, input=None):
    return runner.invoke(app, [str(a) for a in args], input=input)


def test_version():
    r = invoke("--version")
    assert r.exit_code == 0 and r.stdout.strip() == f"crag {__version__}"


def test_index_then_unchanged_then_errors(docs_dir, tmp_path):
    r = invoke("index", docs_dir, "--index", tmp_path / "ix")
    assert r.exit_code == 0, r.output
    assert "indexed 4 documents from 4 files" in r.stderr
    assert r.stdout == ""
    r = invoke("index", docs_dir, "--index", tmp_path / "ix")
    assert r.exit_code == 0 and "up to date" in r.stderr and "nothing to do" in r.stderr
    (docs_dir / "bad.txt").write_bytes(b"\xff\xfe bad")
    r = invoke("index", docs_dir, "--index", tmp_path / "ix")
    assert "skipped bad.txt: not UTF-8" in r.stderr
    (tmp_path / "empty").mkdir()
    r = invoke("index", tmp_path / "empty", "--index", tmp_path / "ix2")
    assert r.exit_code == 1 and r.stderr.count("\n") == 1 and "no documents to index" in r.stderr
    r = invoke("index", tmp_path / "missing", "--index", tmp_path / "ix3")
    assert r.exit_code == 1 and "no such folder" in r.stderr


def recorded_action(rec: dict) -> str:
    """The action a record's scores, supports and thresholds give: what the record says it is."""
    th, scores = rec["thresholds"], [s["score"] for s in rec["scores"]]
    support = supported(scores, [s.get("support") for s in rec["scores"]], th["filter"], th["lexical_support"])
    return decide(scores, th["upper"], th["lower"], support).value


def test_evaluate_json_and_table(built_index):
    r = invoke("evaluate", "What is the capital of Germany?", "--index", built_index, "--json")
    assert r.exit_code == 0, r.output
    rec = json.loads(r.stdout)
    th = rec["thresholds"]
    assert rec["action"] == recorded_action(rec)
    assert rec["scores"][0]["title"] == "Berlin" and th["lexical_support"] == 0.5
    assert all(-1 <= s["score"] <= 1 for s in rec["scores"])
    r = invoke("evaluate", "What is the capital of Germany?", "--index", built_index, "--upper", "-1", "--lower", "-1")
    assert r.exit_code == 0 and "action: CORRECT" in r.stdout and "upper -1.000" in r.stdout


def test_evaluate_input_file_one_line_each_with_error_records(built_index, tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text('{"id": "a", "question": "capital of France?"}\nnot json\n{"question": ""}\n')
    r = invoke("evaluate", "--input", qs, "--index", built_index, "--evaluator", "minilm")
    assert r.exit_code == 1, r.output  # as in batch: every line written, exit 1 because some are error records
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [line["id"] for line in lines] == ["a", "line-2", "line-3"]
    assert lines[0]["scores"] and lines[1]["error"].startswith("malformed JSON") and lines[2]["error"]


@pytest.mark.parametrize(
    "args, message",
    [
        (("What?", "--index", "nowhere"), "no index at nowhere"),
        (("  ",), "the question is empty"),
        (
            ("What?", "--top-k", "0"),
            "bad value '0' for top_k (from --top-k): input should be greater than or equal to 1",
        ),
    ],
)
def test_evaluate_bad_input_is_one_line(args, message, built_index):
    r = invoke("evaluate", *args)
    assert r.exit_code == 1 and message in r.stderr and r.stderr.count("\n") == 1


def test_ask_streams_answer_to_stdout_and_knowledge_to_stderr(built_index, tiny_gguf):
    r = invoke(
        "ask",
        "What is the capital of Germany?",
        "--index",
        built_index,
        "--model",
        tiny_gguf,
        "--evaluator",
        "minilm-cosine",
        "--upper",
        "0",
        "--lower",
        "-1",
        "--max-tokens",
        "8",
        "--refine",
    )
    assert r.exit_code == 0, r.output
    assert "action: CORRECT" in r.stderr and "Berlin" in r.stderr and "source [1] berlin.md#0" in r.stderr
    assert "Berlin" not in r.stdout  # stdout holds only the (random) answer
    r2 = invoke(
        "ask",
        "What is the capital of Germany?",
        "--index",
        built_index,
        "--model",
        tiny_gguf,
        "--evaluator",
        "minilm-cosine",
        "--upper",
        "0",
        "--lower",
        "-1",
        "--max-tokens",
        "8",
        "--refine",
        "--json",
    )
    rec = json.loads(r2.stdout)
    assert rec["answer"] and r.stdout.startswith(rec["answer"])  # streamed raw; the record's is cleaned
    assert rec["action"] == "correct" and rec["internal_knowledge"]
    assert set(rec["timings"]) >= {"retrieve", "evaluate", "refine", "generate", "total"}


@pytest.mark.slow
def test_a_question_outside_the_default_evaluators_domain_is_not_correct_unless_the_guard_is_off(
    built_index, tiny_gguf
):
    """The embedded evaluator (trained on PopQA) is not trusted to be sure about a kind of question PopQA never asks."""
    common = ["--index", built_index, "--upper", "-1", "--lower", "-1"]  # the evaluator alone would judge it Correct
    r = invoke("ask", "What is the population of Berlin?", "--model", tiny_gguf, "--max-tokens", "4", *common)
    assert r.exit_code == 0, r.output
    assert "action: AMBIGUOUS" in r.stderr and "unlike those the evaluator was trained on" in r.stderr
    assert "answered as --task docqa (--task auto" in r.stderr  # the default task follows the domain
    r = invoke(
        "ask", "What is the population of Berlin?", "--model", tiny_gguf, "--max-tokens", "4", *common, "--any-domain"
    )
    assert r.exit_code == 0 and "action: CORRECT" in r.stderr and "unlike those" in r.stderr
    r = invoke("ask", "What is the capital of Germany?", "--model", tiny_gguf, "--max-tokens", "4", *common)
    assert r.exit_code == 0 and "action: CORRECT" in r.stderr and "answered as" not in r.stderr  # popqa's, unsaid
    r = invoke("evaluate", "What is the capital of Germany?", *common, "--json")
    rec = json.loads(r.stdout)
    assert r.exit_code == 0 and rec["in_domain"] is True and rec["action"] == "correct"  # an entity question: its own
    fit = evaluator_of("minilm").evidence  # --evidence: the combined evidence stored with the evaluator decides
    for question, with_evidence, score in (
        ("When was the Eiffel Tower built?", "correct", 0.94),  # its passage holds most of the question's words
        ("What is the population of Berlin?", "ambiguous", 0.15),
    ):
        rec = json.loads(invoke("evaluate", question, "--index", built_index, "--json").stdout)
        assert (rec["action"], rec["in_domain"], rec["evidence_score"]) == ("ambiguous", False, None)  # the default
        rec = json.loads(invoke("evaluate", question, "--index", built_index, "--json", "--evidence").stdout)
        assert (rec["action"], rec["in_domain"]) == (with_evidence, False), question
        assert rec["evidence_score"] == pytest.approx(score, abs=0.01) and (score >= fit.threshold) == (
            with_evidence == "correct"
        )
    ask = ("ask", "When was the Eiffel Tower built?", "--index", built_index, "--model", tiny_gguf, "--max-tokens", "4")
    r = invoke(*ask, "--evidence")
    assert r.exit_code == 0 and "action: CORRECT" in r.stderr and "BM25 support and rank combined (+0.94)" in r.stderr


@pytest.mark.slow
def test_the_default_task_answers_a_question_about_other_documents_with_docqas_prompt_in_crag_and_rag(
    built_index, tiny_gguf, tmp_path
):
    """``--task auto`` (the default): the embedded evaluator's domain picks the prompt, in crag and plain RAG alike."""
    questions = tmp_path / "q.jsonl"
    lines = [
        {"id": "doc", "question": "What is the population of Berlin?"},
        {"id": "entity", "question": "What is the capital of Germany?"},
        {"id": "asked", "question": "What is the population of Berlin?", "task": "popqa"},
    ]
    questions.write_text("".join(json.dumps(line) + "\n" for line in lines))
    for mode in ("crag", "rag"):
        out = tmp_path / f"{mode}.jsonl"
        r = invoke(
            "batch", str(questions), "-o", str(out), "--mode", mode, "--index", built_index, "--model", tiny_gguf,
            "--max-tokens", "4", "--overwrite",
        )  # fmt: skip
        assert r.exit_code == 0, r.output
        recs = {rec["id"]: rec for rec in map(json.loads, out.read_text().splitlines())}
        assert [recs[i]["prompt_task"] for i in ("doc", "entity", "asked")] == ["docqa", "popqa", "popqa"], mode
        assert recs["doc"]["task"] == "auto" and recs["doc"]["in_domain"] is False and recs["doc"]["evaluator"]


@pytest.mark.slow
def test_ask_with_nothing_read_says_not_found_unless_asked_for_the_models_memory(built_index, tiny_gguf):
    common = ("--index", built_index, "--model", tiny_gguf, "--max-tokens", "4")
    r = invoke("ask", "Xyzzy plugh frobnicate?", *common, "--json")  # no word of it is in the folder
    rec = json.loads(r.stdout)
    assert r.exit_code == 0 and rec["action"] == "incorrect" and rec["scores"] == []
    assert rec["external_knowledge"]["backend"] == "none"
    assert rec["answer"] is None and rec["basis"] == "none" and rec["error"] is None
    assert rec["not_found"] == "Not found in the indexed documents; web search is off."
    assert rec["prompt_tokens"] is None  # the model was not asked

    r = invoke("ask", "Xyzzy plugh frobnicate?", *common)
    assert r.exit_code == 0 and r.stdout == "Not found in the indexed documents; web search is off.\n"
    assert "nothing read: no answer" in r.stderr

    r = invoke("ask", "Xyzzy plugh frobnicate?", *common, "--model-knowledge", "--json")
    rec = json.loads(r.stdout)
    assert rec["answer"] is not None and rec["basis"] == "model" and "not_found" not in rec


@pytest.mark.slow
def test_ask_incorrect_with_the_web_off_reads_the_doubted_passages_and_says_so(built_index, tiny_gguf):
    """The evaluator judges every passage below the lower threshold and there is no web: the passages are
    read all the same (retrieval order), the record and stderr say the evaluator doubted them."""
    common = ("--index", built_index, "--model", tiny_gguf, "--upper", "1", "--lower", "1", "--max-tokens", "4")
    r = invoke("ask", "What is the capital of Germany?", *common, "--any-domain", "--json")
    rec = json.loads(r.stdout)
    assert r.exit_code == 0 and rec["action"] == "incorrect" and rec["doubted"] is True
    assert rec["internal_knowledge"] and "Berlin" in rec["internal_knowledge"][0]["text"]
    assert rec["reading"] == "the doubted passages (no web)" and rec["prompt_tokens"] > 0
    r = invoke("ask", "What is the capital of Germany?", *common, "--any-domain")
    assert r.exit_code == 0 and "the evaluator doubted the passages read" in r.stderr
    assert "Not found" not in r.stdout


def test_ask_missing_model(built_index, tmp_path):
    r = invoke("ask", "What?", "--index", built_index, "--model", tmp_path / "x.gguf")
    assert r.exit_code == 1 and "no such model" in r.stderr and r.stderr.count("\n") == 1


def test_batch_streams_records_and_summarises(built_index, tiny_gguf, tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text(
        json.dumps({"id": "q1", "question": "capital of Germany?", "answers": ["berlin", "\u0000"]})
        + "\n"
        + "{broken json\n"
        + json.dumps({"question": "Where was Anna Example born?", "task": "popqa"})
        + "\n"
        + json.dumps({"id": "q4", "question": "capital of France?", "task": "nope"})
        + "\n"
    )
    out = tmp_path / "out.jsonl"
    args = ("--index", built_index, "--model", tiny_gguf, "--max-tokens", "4", "--filter-threshold", "-1")
    r = invoke("batch", qs, "-o", out, *args)
    assert r.exit_code == 1  # some lines were errors, all were written
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [x["id"] for x in recs] == ["q1", "line-2", "line-3", "q4"]
    assert recs[0]["correct"] == holds_answer(recs[0]["answer"], ["berlin"]) and recs[0]["answers"] == [
        "berlin",
        "\u0000",
    ]
    assert recs[1]["error"].startswith("malformed JSON") and recs[1]["line"] == 2
    th = recs[2]["thresholds"]
    assert recs[2]["error"] is None
    assert recs[2]["action"] == recorded_action(recs[2]) and th["lexical_support"] == 0.5
    assert "unknown task" in recs[3]["error"]
    assert "summary: 4 questions" in r.stderr and "s/question" in r.stderr
    assert "accuracy 0/1" in r.stderr or "accuracy 1/1" in r.stderr
    assert r.stdout == ""


@pytest.mark.slow
def test_an_unreadable_question_line_is_line_n_and_a_record_of_one_with_a_null_id_still_resumes(
    built_index, tiny_gguf, tmp_path
):
    """docs/how-it-works.md, "Result record": the id is "the input id, or line-N" (was null for a line not read)."""
    qs = tmp_path / "q.jsonl"
    qs.write_bytes(
        json.dumps({"id": "a", "question": "capital of Germany?"}).encode()
        + b"\n"
        + '{"question": "Où est Genève?"}'.encode("latin-1")  # not UTF-8
        + b"\n{broken json\n"
        + json.dumps({"question": "capital of France?"}).encode()
        + b"\n"
    )
    out = tmp_path / "out.jsonl"
    common = ["--index", built_index, "--model", tiny_gguf, "--max-tokens", "4", "--mode", "rag"]
    r = invoke("batch", qs, "-o", out, *common)
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert r.exit_code == 1 and [x["id"] for x in recs] == ["a", "line-2", "line-3", "line-4"]
    assert recs[1]["error"] == "line is not UTF-8" and recs[1]["line"] == 2
    # the partial file of a run that wrote the null id of before resumes, keeping its records
    lines = out.read_text().splitlines(keepends=True)
    manifest = json.loads((tmp_path / "out.jsonl.run.json").read_text())
    (tmp_path / "old.jsonl.run.json").write_text(json.dumps(dict(manifest, output="old.jsonl", complete=False)))
    (tmp_path / "old.jsonl.partial").write_text(lines[0] + json.dumps(dict(recs[1], id=None)) + "\n")
    r = invoke("batch", qs, "-o", tmp_path / "old.jsonl", "--resume", *common)
    assert r.exit_code == 1 and "resuming after the 2 records" in r.stderr, r.output
    kept = [json.loads(line) for line in (tmp_path / "old.jsonl").read_text().splitlines()]
    assert [x["id"] for x in kept] == ["a", None, "line-3", "line-4"]  # the kept records as they were


@pytest.mark.slow
def test_batch_limit_reads_only_the_lines_it_answers(tiny_gguf, tmp_path):
    """A 40 MB question file with --limit 3: before, every line was parsed first (390 MB of address space more
    than a one-line file, 9 s before the first question); a MemoryError under the 100 MB more given here."""
    one, big = tmp_path / "one.jsonl", tmp_path / "big.jsonl"
    one.write_text(json.dumps({"question": "q 1?"}) + "\n")
    with open(big, "w") as f:
        f.writelines(f'{{"question": "q {i}?"}}\n' for i in range(1, 1_500_001))
    args = ["--limit", "3", "--mode", "no-retrieval", "--model", tiny_gguf, "--max-tokens", "2", "--threads", "1"]
    base = vm_peak(crag_process("batch", one, *args, cwd=tmp_path))
    r = crag_process("batch", big, *args, "-o", tmp_path / "out.jsonl", cwd=tmp_path, limit=base + (100 << 20))
    assert r.returncode == 0 and "summary: 3 questions" in r.stderr, r.stderr[-2000:]
    recs = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [(x["id"], x["question"]) for x in recs] == [("line-1", "q 1?"), ("line-2", "q 2?"), ("line-3", "q 3?")]


@pytest.mark.slow
def test_batch_progress_has_no_total_until_a_file_too_large_to_count_first_ends(tiny_gguf, tmp_path, monkeypatch):
    import crag_cli.batch.records as records

    monkeypatch.setattr(records, "COUNT_BYTES", 0)  # every file too large to count before the batch
    qs = tmp_path / "q.jsonl"
    qs.write_text("".join(json.dumps({"question": f"q {i}?"}) + "\n" for i in range(12)))
    r = invoke("batch", qs, "--mode", "no-retrieval", "--model", tiny_gguf, "--max-tokens", "2")
    shown = [line.split(",")[0] for line in r.stderr.splitlines() if line.startswith("batch: ")]
    assert r.exit_code == 0 and shown[0] == "batch: 1/?" and shown[-1] == "batch: 12/12", r.stderr
    assert "ETA" not in r.stderr.splitlines()[0] and "summary: 12 questions" in r.stderr


def _without_timings(text):
    return [{k: v for k, v in json.loads(line).items() if k != "timings"} for line in text.splitlines()]


@pytest.mark.slow
def test_batch_resume_after_interruption_equals_an_uninterrupted_run(built_index, tiny_gguf, tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text(
        json.dumps({"id": "q1", "question": "capital of Germany?", "answers": ["berlin"]})
        + "\n"
        + "{broken json\n"
        + json.dumps({"question": "Where was Anna Example born?"})
        + "\n"
        + json.dumps({"id": "q4", "question": "capital of France?", "answers": ["paris"]})
        + "\n"
    )
    common = ["--index", built_index, "--model", tiny_gguf, "--max-tokens", "4"]
    full = tmp_path / "full.jsonl"
    assert invoke("batch", qs, "-o", full, *common).exit_code == 1  # line 2 is an error record
    assert not (tmp_path / "full.jsonl.partial").exists()
    manifest = json.loads((tmp_path / "full.jsonl.run.json").read_text())
    assert manifest["complete"] is True and manifest["identity"]["model"] == str(tiny_gguf)
    lines = full.read_text().splitlines(keepends=True)
    # the state a kill leaves: the run manifest, and a partial file cut in the third record
    part = tmp_path / "part.jsonl"
    (tmp_path / "part.jsonl.run.json").write_text(json.dumps(dict(manifest, output="part.jsonl", complete=False)))
    (tmp_path / "part.jsonl.partial").write_text(lines[0] + lines[1] + lines[2][:25])
    r = invoke("batch", qs, "-o", part, "--resume", *common)
    assert r.exit_code == 1, r.output
    assert "resuming after the 2 records" in r.stderr and "summary: 4 questions" in r.stderr
    assert part.read_text().startswith(lines[0] + lines[1])  # kept records are untouched
    assert _without_timings(part.read_text()) == _without_timings(full.read_text())
    assert not (tmp_path / "part.jsonl.partial").exists()
    before = part.read_text()
    r = invoke("batch", qs, "-o", part, "--resume", *common)
    assert "nothing to do" in r.stderr and part.read_text() == before
    # records that crag's reading rule of before chose the knowledge for are not this run's: never mixed
    old = dict(manifest, output="old.jsonl", complete=False, identity=dict(manifest["identity"], reading_version=1))
    (tmp_path / "old.jsonl.run.json").write_text(json.dumps(old))
    (tmp_path / "old.jsonl.partial").write_text(lines[0])
    r = invoke("batch", qs, "-o", tmp_path / "old.jsonl", "--resume", *common)
    assert r.exit_code == 1 and "reading_version" in r.stderr, r.output


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["other input", "longer", "not json", "not ours", "no output"])
def test_batch_resume_refuses_a_file_that_is_not_this_inputs_output(kind, built_index, tiny_gguf, tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"id": "a", "question": "capital of Germany?"}) + "\n")
    out = tmp_path / "out.jsonl"
    common = ["--index", built_index, "--model", tiny_gguf, "--max-tokens", "4"]
    if kind != "not ours":
        assert invoke("batch", qs, "-o", out, *common).exit_code == 0  # crag's own output, with its run manifest
        out.unlink()
        out = tmp_path / "out.jsonl.partial"  # what an interrupted run leaves
    content = {
        "other input": json.dumps({"id": "zzz", "answer": "x"}) + "\n",
        "longer": (json.dumps({"id": "a"}) + "\n") * 2,
        "not json": "hello\n",
        "not ours": "my own notes\n",
        "no output": "",
    }[kind]
    out.write_text(content)
    args = ["-o", tmp_path / "out.jsonl"] if kind != "no output" else []
    r = invoke("batch", qs, *args, "--resume", *common)
    assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1
    expected = {"no output": "--resume needs -o", "not ours": "crag did not write it"}.get(kind, "cannot resume")
    assert expected in r.stderr
    assert out.read_text() == content  # nothing overwritten


def test_batch_to_stdout_and_rag_mode(built_index, tiny_gguf, tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"question": "capital of Germany?"}) + "\n")
    r = invoke("batch", qs, "--index", built_index, "--model", tiny_gguf, "--max-tokens", "4", "--mode", "rag")
    assert r.exit_code == 0, r.output
    rec = json.loads(r.stdout)
    assert rec["mode"] == "rag" and rec["action"] is None and rec["scores"][0]["score"] is None


@pytest.mark.slow
def test_batch_and_evaluate_read_stdin(built_index, tiny_gguf):
    lines = json.dumps({"id": "a", "question": "capital of Germany?"}) + "\n{oops\n"
    r = invoke(
        "batch", "-", "--index", built_index, "--model", tiny_gguf, "--max-tokens", "4", "--mode", "rag", input=lines
    )
    recs = [json.loads(line) for line in r.stdout.splitlines()]
    assert r.exit_code == 1 and [x["id"] for x in recs] == ["a", "line-2"] and recs[1]["error"].startswith("malformed")
    r = invoke("evaluate", "--input", "-", "--index", built_index, input=lines)
    assert [json.loads(line)["id"] for line in r.stdout.splitlines()] == ["a", "line-2"]


@pytest.mark.slow
def test_config_file_and_env_reach_the_command(built_index, tmp_path, monkeypatch):
    (tmp_path / "crag.toml").write_text(
        f'index = "{built_index}"\nupper = -1.0\nlower = -1.0\nfilter_threshold = -1.0\n'
    )
    r = invoke("evaluate", "capital of Germany?", "--json")
    assert json.loads(r.stdout)["action"] == "correct"
    monkeypatch.setenv("CRAG_UPPER", "1.0")
    monkeypatch.setenv("CRAG_LOWER", "1.0")
    # every score under lower, but a passage holds the question's words: Ambiguous, unless the support needed is raised
    assert json.loads(invoke("evaluate", "capital of Germany?", "--json").stdout)["action"] == "ambiguous"
    monkeypatch.setenv("CRAG_LEXICAL_SUPPORT", "1")  # a passage must hold every term, and "1850" is in none
    assert (
        json.loads(invoke("evaluate", "capital of Germany in 1850?", "--any-domain", "--json").stdout)["action"]
        == "incorrect"
    )
    monkeypatch.setenv("CRAG_TOP_K", "many")
    r = invoke("evaluate", "capital of Germany?")
    assert r.exit_code == 1 and "CRAG_TOP_K" in r.stderr


@pytest.mark.slow
def test_no_refine_gives_whole_passages(built_index, tiny_gguf):
    from crag_cli.index import BM25Index

    r = invoke(
        "ask",
        "What is the capital of Germany?",
        "--index",
        built_index,
        "--model",
        tiny_gguf,
        "--upper",
        "-1",
        "--lower",
        "-1",
        "--filter-threshold",
        "-1",
        "--max-tokens",
        "2",
        "--no-refine",
        "--json",
    )
    rec = json.loads(r.stdout)
    texts = {p.id: p.text for p in BM25Index.load(built_index).passages}
    assert [k["text"] for k in rec["internal_knowledge"]] == [texts[s["id"]] for s in rec["scores"]]
    assert "refine" not in rec["timings"]


# ----------------------------------------------------------------------------- help


def _help(*args: str) -> str:
    r = runner.invoke(app, list(args), terminal_width=100, env={"COLUMNS": "100"})
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.mark.parametrize("command", ["ask", "batch"])
def test_help_shows_the_everyday_options_in_60_lines_and_help_all_every_option(command):
    from crag_cli.settings.info import everyday, field_names, flag

    short, full = _help(command, "--help"), _help(command, "--help-all")
    assert len(short.splitlines()) <= 60, short
    assert max(len(line) for line in short.splitlines()) <= 100
    assert "--help-all" in short and "--close-support" not in short and "--close-support" in full
    assert "Refinement" not in short and "Refinement" in full  # an expert panel, shown by --help-all only
    for name in field_names():
        row = f"│ {flag(name).split('/')[0]} "  # the option's own row, not a mention in another's help
        assert row in full, name
        assert (row in short) == everyday(name), name
    assert "<bool>" not in short + full  # a flag takes no value: it shows no type


def test_every_option_of_every_command_has_one_line_of_help_of_at_most_100_characters():
    import typer

    from crag_cli.settings.info import field_names, help_text

    for name in field_names():
        assert "\n" not in help_text(name) and len(help_text(name)) <= 100, (name, help_text(name))
    group = typer.main.get_command(app)
    commands = [group, *group.commands.values()]
    for command in commands:
        ctx = command.make_context(command.name, [], resilient_parsing=True)
        for param in command.get_params(ctx):
            text = getattr(param, "help", None) or ""
            if param.param_type_name == "option":
                assert text and "\n" not in text and len(text) <= 100, (command.name, param.name, text)


def test_an_expert_option_works_without_help_all(tmp_path):
    import typer

    group = typer.main.get_command(app)
    ctx = group.commands["ask"].make_context("ask", ["Who?", "--read-words", "500", "--no-refine"])
    assert ctx.params["read_words"] == "500" and ctx.params["refine"] is False
    ctx = group.commands["batch"].make_context("batch", ["q.jsonl", "--overwrite", "--ray-address", "h:6379"])
    assert ctx.params["overwrite"] is True and ctx.params["ray_address"] == "h:6379"
    r = invoke("ask", "Who?", "--read-words", "500", "--index", tmp_path / "none")
    assert r.exit_code == 1 and "no such option" not in r.stderr
