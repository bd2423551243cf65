"""The benchmark's web stand-in and its metrics."""

import json

import httpx
import pytest

import popqa  # the benchmarks folder is on the path (conftest)
from webstandin import start_in_thread

from crag_cli.web.search import SearxngBackend  # noqa: E402
from crag_cli.web.fetch import Fetcher, page_text  # noqa: E402


def test_standin_is_a_searxng_api_with_html_pages(tmp_path):
    web = tmp_path / "web.jsonl"
    rows = [
        {"id": "w0", "title": "Ole Krarup", "text": "Ole Krarup was a Danish politician and professor of law."},
        {"id": "w1", "title": "Ole Krarup", "text": "He died in 2017."},
        {"id": "w2", "title": "Blue Train (album)", "text": "Blue Train is a jazz album by John Coltrane."},
        {"id": "w3", "title": "Seal hunting", "text": "Seal hunting is an occupation in the Arctic."},
    ]
    web.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    server, url = start_in_thread(web)
    try:
        results = SearxngBackend(url, timeout=10.0, allow_private=False).search("Ole Krarup, occupation", 5)
        assert results[0].title == "Ole Krarup" and results[0].url == f"{url}/wiki/Ole_Krarup"
        assert httpx.get(f"{url}/search", params={"q": "x"}).status_code == 403  # like SearxNG without format=json
        page = Fetcher(allow_private=True, timeout=10.0, max_bytes=2_000_000).fetch_all([results[0].url])[0]
        title, text = page_text(page)
        assert "Danish politician" in text and "He died in 2017." in text
        assert "Random article" not in text and "Creative Commons" not in text
        assert (
            Fetcher(allow_private=True, timeout=10.0, max_bytes=2_000_000).fetch_all([f"{url}/wiki/Nope"])[0].error
            == "HTTP 404"
        )
    finally:
        server.shutdown()


def test_summarise_metrics():
    questions = {
        "a": {"answers": ["paris"], "prop": "capital"},
        "b": {"answers": ["rome"], "prop": "capital", "answer_in_web": True, "answer_in_local": False},
        "c": {"answers": ["oslo", "pol"], "prop": "city", "answer_in_web": True, "answer_in_local": False},
    }
    passages = {"p1": "Paris is in France", "p2": "Nothing here"}
    records = [
        {
            "id": "a",
            "action": "correct",
            "answer": "Paris.",
            "prompt_tokens": 100,
            "scores": [{"id": "p1"}],
            "internal_knowledge": [{"text": "Paris is in France"}],
            "timings": {"retrieve": 0.1, "evaluate": 0.2, "generate": 1.0, "total": 1.3},
        },
        {
            "id": "b",
            "action": "incorrect",
            "answer": "Milan",
            "prompt_tokens": 50,
            "scores": [{"id": "p2"}],
            "external_knowledge": {"backend": "searxng", "strips": [{"text": "Rome is in Italy"}]},
            "timings": {"rewrite": 0.5, "search": 1.0, "generate": 1.0, "total": 2.5},
        },
        {
            "id": "c",
            "action": "ambiguous",
            "answer": "policy",
            "prompt_tokens": None,
            "scores": [{"id": "p1"}],
            "timings": {"total": 0.2},
            "error": "generation failed",
        },
    ]
    m = popqa.summarise(records, passages, questions)
    assert m["n"] == 3 and m["accuracy"] == round(1 / 3, 4)  # "pol" is not the answer "policy" as a whole word
    assert m["accuracy_substring"] == round(2 / 3, 4)  # ... but is inside it
    assert m["reader_efficiency"] == 0.5  # a and b hold an answer in their knowledge; a is answered
    assert m["reader_efficiency_by_relation"] == {"capital": [1, 2]}
    assert m["actions"] == {"correct": 1, "incorrect": 1, "ambiguous": 1}
    assert m["action_accuracy"] == round(2.5 / 3, 4)  # right, right, half
    assert m["prompt_tokens"] == 75.0
    assert m["stage_seconds"]["search"] == 0.5  # rewrite + search, averaged over 3
    assert m["seconds_per_question"] == round(4.0 / 3, 3) and m["errors"] == 1
    assert m["knowledge_holds_answer"] == round(2 / 3, 4)
    assert m["web_used"] == 1 and m["web_strips_hold_answer"] == 1.0
    assert m["web_only"] == {"n": 2, "to_web": 1, "answered": 0}  # b went to the web but answered Milan; c never did
    assert "| crag | 2 | 1 (50%) | 0 (0%) |" in popqa.table({"crag": m})
    assert "| crag | 3 | 33.3% | 66.7% | 50.0% | 1/1/1 | 83.3% | 66.7% |" in popqa.table({"crag": m})
    assert "| crag | 1/2 |" in popqa.table({"crag": m})  # per relation
    assert "IN-SAMPLE" not in popqa.table({"crag": m})
    m["in_sample"] = {"training": 2, "validation": 1}  # what popqa.main sets for an evaluator that saw them
    assert "- **crag**: IN-SAMPLE: 2 of these 3 questions trained this evaluator and 1 calibrated it" in popqa.table(
        {"crag": m}
    )
    rag = popqa.summarise([dict(records[0], mode="rag", internal_knowledge=None)], passages, questions)
    assert rag["knowledge_holds_answer"] == 1.0  # rag's knowledge is the retrieved passages
    # SQuAD token F1 and recall, per action and for local against web-only questions, and the slowest
    assert m["f1"] == round((1.0 + 0.0 + 0.0) / 3, 4) and m["token_recall"] == round(1 / 3, 4)
    assert m["by_place"] == {"web-only": {"n": 2, "span": 0.0, "f1": 0.0, "recall": 0.0, "knowledge": 0.5}}
    assert m["by_action"]["correct"] == {"n": 1, "span": 1.0, "f1": 1.0, "recall": 1.0, "knowledge": 1.0}
    assert [r["id"] for r in m["slowest"]] == ["b", "a", "c"] and m["max_seconds"] == 2.5
    assert "| crag | web-only | 2 | 0.0% | 0.0 | 0.0 | 50.0% | |" in popqa.table({"crag": m})
    assert "| crag | b | incorrect | 2.5 | 0.0 | 0.0 | 0.0 | 1.0 | 1.0 | 0.5 |" in popqa.table({"crag": m})


@pytest.mark.slow
def test_run_mode_reuses_a_finished_prefix_and_resumes_an_interrupted_run(built_index, tiny_gguf, tmp_path):
    ids = ["q1", "q2", "q3"]
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        "".join(json.dumps({"id": i, "question": f"Who is {i}?", "answers": ["x"]}) + "\n" for i in ids)
    )
    out = tmp_path / "out"
    out.mkdir()
    run = lambda ids: popqa.run_mode("no-retrieval", questions, built_index, "", str(tiny_gguf), out, ids)  # noqa: E731
    first = run(ids)
    assert [r["id"] for r in first] == ids and all(r["error"] is None for r in first)
    records = out / "records-no-retrieval.jsonl"
    lines = records.read_text().splitlines(keepends=True)
    records.unlink()  # as if the batch had been killed on the second record: its partial file is left
    (out / "records-no-retrieval.jsonl.partial").write_text(lines[0] + lines[1][:10])
    again = run(ids)
    assert "resuming after the 1 records" in (out / "log-no-retrieval.txt").read_text()
    assert records.read_text().startswith(lines[0]) and [r["id"] for r in again] == ids
    assert [r["answer"] for r in again] == [r["answer"] for r in first]  # greedy: same answers
    before = records.read_text()
    assert [r["id"] for r in run(ids[:2])] == ids[:2] and records.read_text() == before  # reused, not rerun


@pytest.mark.slow
def test_run_mode_passes_the_task_and_answers_again_for_another_task(built_index, tiny_gguf, tmp_path, capsys):
    ids = ["q1", "q2"]
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        "".join(json.dumps({"id": i, "question": f"Who is {i}?", "answers": ["x"]}) + "\n" for i in ids)
    )
    out = tmp_path / "out"
    out.mkdir()
    run = lambda task: popqa.run_mode("no-retrieval", questions, built_index, "", str(tiny_gguf), out, ids, None, task)  # noqa: E731
    assert {r["task"] for r in run(None)} == {"auto"}  # crag's default task
    assert {r["task"] for r in run("docqa")} == {"docqa"}  # not the auto records reused
    assert "made with another evaluator or task" in capsys.readouterr().err
    assert {r["task"] for r in run("docqa")} == {"docqa"}
    assert "reusing the first 2 records" in capsys.readouterr().err  # made for docqa: not answered a third time


def test_paired_comparison_matches_scipy_mcnemar_and_a_hand_count():
    from scipy.stats import binomtest

    rag = [{"id": f"q{i}", "correct_word": c} for i, c in enumerate([1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0])]
    crag = [{"id": f"q{i}", "correct_word": c} for i, c in enumerate([1, 1, 1, 1, 0, 1, 1, 1, 0, 1, 0, 0])]
    v = popqa.paired(crag, rag)
    assert v["n"] == 12 and v["only_mode"] == 6 and v["only_baseline"] == 1
    assert v["difference"] == round(5 / 12, 4)
    assert v["p_value"] == float(f"{binomtest(1, 7, 0.5).pvalue:.3g}")
    lo, hi = v["ci95"]
    assert lo < 5 / 12 < hi and 0 < lo  # clearly better here
    f1 = popqa.paired_f1(
        [{"id": "x", "f1": 0.5}, {"id": "y", "f1": 1.0}], [{"id": "x", "f1": 0.25}, {"id": "y", "f1": 0.25}]
    )
    assert f1["n"] == 2 and f1["difference"] == 0.5 and f1["ci95"][0] < 0.5 < f1["ci95"][1]
    same = popqa.paired(rag, rag)
    assert same["difference"] == 0 and same["p_value"] == 1.0 and same["ci95"] == [0.0, 0.0]
    assert "| crag | rag | 12 | +41.7 pts |" in popqa.paired_table({"crag": {"vs_rag": v}})  # an older results.json
    both = popqa.paired_table({"crag": {"vs": {"rag-k3": v, "rag": same}}})
    assert "| crag | rag-k3 | 12 | +41.7 pts |" in both and "| crag | rag | 12 | +0.0 pts |" in both
    assert popqa.paired_table({"rag": {}}) == ""


def test_spread_sample_covers_the_whole_file():
    lines = [f"q{i}" for i in range(700)]
    sample = popqa.spread_sample(lines, 200)
    assert len(sample) == len(set(sample)) == 200
    assert sample[0] == "q0" and sample[-1] == "q696"  # every 3.5th line, to the end
    assert popqa.spread_sample(lines, None) == lines == popqa.spread_sample(lines, 900)


def test_throughput_runs_and_differing_answers():
    import throughput

    assert throughput.parse_run("2x1") == (2, 1, False, 1) and throughput.parse_run("1X0") == (1, 0, False, 1)
    assert throughput.parse_run("ray2x1") == (2, 1, True, 1) and throughput.parse_run("p4") == (1, 0, False, 4)
    a = [{"id": "q1", "answer": "Paris", "action": "correct"}, {"id": "q2", "answer": "Rome", "action": "incorrect"}]
    b = [dict(a[0]), dict(a[1], action="ambiguous")]
    assert throughput.differing(a, a) == [] and throughput.differing(b, a) == ["q2"]


def test_timing_pair_interval_brackets_the_ratio_and_is_exact_when_every_group_agrees():
    import numpy as np
    from timing_pair import bootstrap_ratio

    b = np.array([4.0, 6.0, 5.0, 7.0, 3.0, 5.0])
    assert bootstrap_ratio(2 * b, b) == (2.0, 2.0)  # every group twice as slow: no doubt about the ratio
    a = np.array([5.0, 5.5, 6.5, 6.0, 3.5, 8.0])
    lo, hi = bootstrap_ratio(a, b)
    assert lo < a.sum() / b.sum() < hi and hi - lo > 0.05


def test_cross_fitting_folds_cover_every_question_once_and_train_on_the_others():
    from split_popqa import folds, split

    lines = [json.dumps({"id": f"q{i}", "question": f"Who is {i}?"}) for i in range(700)]
    parts = folds(lines, 200, 3)
    tests = [set(test) for _, test in parts]
    assert [len(t) for t in tests] == [200, 250, 250] and set().union(*tests) == set(lines)
    assert all(set(train) == set(lines) - test for (train, _), test in zip(parts, tests))
    assert parts[0] == split(lines, 200) == (parts[0][0], popqa.spread_sample(lines, 200))  # fold 1: the held-out part
    ids = [[json.loads(x)["id"] for x in test[:3]] for _, test in parts]
    assert ids[1] == ["q1", "q4", "q6"] and ids[2] == ["q2", "q5", "q8"]  # the rest dealt in turn
    # a question filed twice (two ids, one text) never trains the evaluator that is tested on its twin
    twin = json.dumps({"id": "q-twin", "question": "  WHO IS 0? "})  # q0 is in fold 1 (the spread sample's first)
    parts = folds(lines + [twin], 200, 3)
    fold_of_twin = next(i for i, (_, test) in enumerate(parts) if twin in test)
    assert twin not in parts[0][1] and lines[0] in parts[0][1]
    assert twin not in parts[0][0] and lines[0] not in parts[fold_of_twin][0]  # neither trains on the other
    assert twin in parts[3 - fold_of_twin][0]  # the third fold's evaluator may train on both


def test_run_mode_answers_again_when_the_records_were_made_with_another_evaluator():
    rows = [{"id": "q1", "evaluator": "minilm"}, {"id": "q2", "evaluator": "minilm"}]
    assert popqa.made_with(rows, "minilm") and popqa.made_with(rows, None)  # None: a mode that does not evaluate
    assert not popqa.made_with(rows, "/tmp/fold-2-evaluator")
    assert not popqa.made_with(rows + [{"id": "q3", "evaluator": "/tmp/fold-2-evaluator"}], "minilm")
    tasks = [{"id": "q1", "evaluator": "minilm", "task": "popqa"}]
    assert popqa.made_with(tasks, "minilm", "popqa") and not popqa.made_with(tasks, "minilm", "docqa")


def test_crossfit_joins_the_folds_runs_into_one_report(built_index, tmp_path):
    import shutil

    import crossfit

    def run(name, answers, evaluator):
        folder = tmp_path / name
        folder.mkdir()
        shutil.copytree(built_index, folder / "index")
        qs = [
            {"id": f"{name}-{i}", "question": "What is it?", "answers": ["paris"], "prop": "capital"}
            for i in range(len(answers))
        ]
        (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
        crag = [
            {"id": q["id"], "mode": "crag", "evaluator": evaluator, "action": "correct", "answer": a, "scores": []}
            for q, a in zip(qs, answers)
        ]
        rag = [{"id": q["id"], "mode": "rag", "answer": "Rome", "scores": []} for q in qs]
        (folder / "records-crag.jsonl").write_text("".join(json.dumps(r) + "\n" for r in crag))
        (folder / "records-rag-k3.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rag))
        return folder

    one = run("f1", ["Paris", "Rome"], "minilm")
    two = run("f2", ["Paris", "Paris", "Oslo"], "/ev/fold-2")
    results, folds = crossfit.join([one, two], ["crag", "rag-k3"])
    assert results["crag"]["n"] == 5 and results["crag"]["accuracy"] == 0.6 and results["rag-k3"]["accuracy"] == 0.0
    assert results["crag"]["vs"]["rag-k3"]["only_mode"] == 3
    assert [(f["n"], f["evaluators"], f["accuracy"]["crag"]) for f in folds] == [
        (2, ["minilm"], 0.5),
        (3, ["/ev/fold-2"], 0.6667),
    ]
    assert "| " + str(two) + " | 3 | /ev/fold-2 | 66.7% | 0.0% |" in crossfit.fold_table(folds, ["crag", "rag-k3"])
    with pytest.raises(ValueError, match="another run asked"):
        crossfit.join([one, one], ["crag"])
    (two / "records-rag-k3.jsonl").write_text("")  # a fold whose plain RAG has not run yet
    with pytest.raises(ValueError, match="no records for all 3 questions"):
        crossfit.join([one, two], ["crag", "rag-k3"])


def test_pair_records_reads_gzipped_records_as_plain_ones(tmp_path, capsys):
    import gzip

    import pair_records

    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "a", "question": "Capital?", "answers": ["Paris"]}) + "\n")
    rows = "".join(json.dumps({"id": "a", "answer": answer}) + "\n" for answer in ["Paris"])
    plain, zipped = tmp_path / "records-crag.jsonl", tmp_path / "records-rag-k5.jsonl.gz"
    plain.write_text(rows)
    zipped.write_bytes(gzip.compress(rows.encode()))
    assert pair_records.read_records(zipped) == pair_records.read_records(plain) == [{"id": "a", "answer": "Paris"}]
    pair_records.main(["--questions", str(questions), str(plain), str(zipped)])
    assert "+0.0 (0 / 0)" in capsys.readouterr().out


@pytest.mark.slow
def test_knowledge_recall_counts_actions_and_where_the_span_is(docs_dir, tmp_path, capsys):
    import knowledge_recall

    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "docs").symlink_to(docs_dir, target_is_directory=True)
    (bench / "questions.dev.jsonl").write_text(
        json.dumps(
            {"id": "1", "question": "What is the capital of Germany?", "answers": ["Berlin"], "answer_in_local": True}
        )
        + "\n"
        + json.dumps(
            {
                "id": "2",
                "question": "Who painted fishermen?",
                "answers": ["Zorblat"],
                "answer_in_local": False,
                "answer_in_web": True,
            }
        )
        + "\n"
    )
    knowledge_recall.main(["--data", str(bench), "--index", str(tmp_path / "ix"), "--set", "refine=false"])
    out = capsys.readouterr().out
    assert "refine=false" in out
    local = next(line for line in out.splitlines() if line.startswith("| local |"))
    web = next(line for line in out.splitlines() if line.startswith("| web-only |"))
    cells = [c.strip() for c in local.split("|")[1:-1]]
    assert cells[1] == "1" and cells[4:8] == ["100.0%"] * 4  # Berlin is in the top 3 (so 5, 7, 10)
    assert cells[10] == "100.0%" and cells[11] == "100.0%"  # the reader reads it, in the first strip it reads
    assert [c.strip() for c in web.split("|")[1:-1]][3:5] == ["0.0%"] * 2  # no local passage names Zorblat
    # --web serves web.jsonl: the web-only question's reader reads the web's strip that names Zorblat
    page = {"id": "w1", "title": "Fishermen at sea", "text": "The painting of fishermen at sea is by Zorblat."}
    (bench / "web.jsonl").write_text(json.dumps(page) + "\n")
    knowledge_recall.main(["--data", str(bench), "--index", str(tmp_path / "ix"), "--web"])
    out = capsys.readouterr().out
    assert "the web stand-in" in out
    web = [c.strip() for c in next(x for x in out.splitlines() if x.startswith("| web-only |")).split("|")[1:-1]]
    assert web[2] != "1/0/0" and web[10] == "100.0%" and float(web[13]) >= 1  # reached the web; its strip read


def test_a_rerun_into_the_same_folder_serves_the_web_where_the_interrupted_crag_batch_found_it(tmp_path):
    # crag batch --resume refuses another --searxng-url, so the stand-in comes back on its earlier port.
    web = tmp_path / "web.jsonl"
    web.write_text(json.dumps({"id": "w1", "title": "Page", "text": "Some text."}) + "\n")
    out = tmp_path / "out"
    out.mkdir()
    assert popqa.previous_web_port(out) == 0
    first, url = popqa.start_web(web, out)
    first.shutdown()
    first.server_close()
    (out / "records-crag.jsonl.run.json").write_text(json.dumps({"identity": {"searxng_url": url}}))
    again, url_again = popqa.start_web(web, out)
    try:
        assert url_again == url
        # While that port is taken, any free one.
        other, url_other = popqa.start_web(web, out)
        other.shutdown()
        other.server_close()
        assert url_other != url
    finally:
        again.shutdown()
        again.server_close()


@pytest.mark.slow
def test_prompt_cache_answers_a_prompt_seen_before_as_the_reader_did(built_index, tiny_gguf, tmp_path):
    """A second run over the same prompts is answered from the cache: the same records, no new reply cached."""
    ids = ["q1", "q2"]
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        "".join(
            json.dumps({"id": i, "question": f"What is the capital of {c}?", "answers": ["x"]}) + "\n"
            for i, c in zip(ids, ("Germany", "France"))
        )
    )
    cache = tmp_path / "cache.jsonl"
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        out.mkdir()
        runs.append(popqa.run_mode("rag-k5", questions, built_index, "", str(tiny_gguf), out, ids, None, None, cache))
        if name == "a":
            cached = cache.read_text()
            assert len(cached.splitlines()) >= 2  # one reply a prompt at least (a docqa retry adds one)
    assert cache.read_text() == cached  # nothing new: every prompt was answered from the cache
    assert [r["answer"] for r in runs[0]] == [r["answer"] for r in runs[1]]
    assert [r["prompt_tokens"] for r in runs[0]] == [r["prompt_tokens"] for r in runs[1]]


def test_not_found_is_counted_apart_for_questions_the_folder_cannot_answer():
    questions = {
        "a": {"answers": ["x"]},
        "b": {"answers": []},
        "c": {"answers": [], "answer_in_web": True},
        "d": {"answers": ["y"]},
    }
    records = [
        {"id": "a", "basis": "none"},
        {"id": "b", "basis": "none"},
        {"id": "c"},
        {"id": "d", "basis": "knowledge"},
    ]
    shares = popqa.not_found_shares(records, questions)
    assert shares["answerable"] == {"n": 2, "not_found": 1, "share": 0.5}
    assert shares["unanswerable"]["not_found"] == 1 and shares["web_answerable"] == {
        "n": 1,
        "not_found": 0,
        "share": 0.0,
    }
    assert "| crag | 1 / 2 | 1 / 1 | 0 / 1 |" in popqa.not_found_table({"crag": {"not_found": shares}})


def test_domain_archives_agree_with_their_manifest_and_pack_again_to_the_same_bytes(tmp_path, monkeypatch):
    import data

    assert data.check() == [] and "docs6qa" in data.domains()
    shipped = (data.ARCHIVES / "docs6qa.tar.xz").read_bytes()
    data.unpack("docs6qa", tmp_path / "src")
    monkeypatch.setattr(data, "ARCHIVES", tmp_path)
    monkeypatch.setattr(data, "SUMS", tmp_path / "SHA256SUMS")
    assert data.pack("docs6qa", tmp_path / "src").read_bytes() == shipped  # sorted names, fixed time and owner
    assert data.check(["docs6qa"]) == []
    (tmp_path / "src" / "docs6qa" / "web.jsonl").write_text("{}\n")
    data.pack("docs6qa", tmp_path / "src")
    monkeypatch.setattr(data, "SUMS", tmp_path / "other")
    (tmp_path / "other").write_text((tmp_path / "SHA256SUMS").read_text().replace("docs6qa/web.jsonl", "docs6qa/x"))
    assert data.check(["docs6qa"]) == [
        "docs6qa/web.jsonl: in the archive, not in SHA256SUMS",
        "docs6qa/x: in SHA256SUMS, not in the archive",
    ]


def test_unpacking_never_replaces_a_file_and_a_missing_domain_path_is_unpacked_on_demand(tmp_path, monkeypatch):
    import data

    mine = tmp_path / "docs6qa" / "web.jsonl"
    mine.parent.mkdir()
    mine.write_text("mine\n")
    with pytest.raises(FileExistsError):
        data.unpack("docs6qa", tmp_path)
    assert mine.read_text() == "mine\n" and not (tmp_path / "docs6qa" / "questions.jsonl").exists()
    mine.unlink()
    assert data.unpack("docs6qa", tmp_path) == tmp_path / "docs6qa"
    data.unpack("docs6qa", tmp_path)  # again: the same bytes are there, nothing to do
    monkeypatch.setattr(data, "HERE", tmp_path / "bench")
    wanted = tmp_path / "bench" / "docs5qa" / "questions.heldout.jsonl"
    assert data.on_demand(str(wanted)) == wanted and wanted.is_file()
    assert data.on_demand(str(tmp_path / "elsewhere")) == tmp_path / "elsewhere"  # not a domain's: left alone


def test_a_domains_questions_py_makes_the_shipped_question_files_and_the_check_catches_a_changed_answer(
    tmp_path, capsys
):
    import data
    import docs_questions

    here = data.unpack("docs6qa", tmp_path)
    shipped = {p.name: p.read_bytes() for p in here.glob("questions*.jsonl")}
    assert len(shipped) == 4
    for name in shipped:
        (here / name).unlink()
    docs_questions.make(here)
    assert {p.name: p.read_bytes() for p in here.glob("questions*.jsonl")} == shipped
    assert docs_questions.check(here) == 0 and capsys.readouterr().out.endswith("OK\n")
    rows = docs_questions.load_jsonl(here / "questions.jsonl")
    rows[0]["answers"] = ["an answer no doc holds"]
    docs_questions.write_jsonl(here / "questions.jsonl", rows)
    assert docs_questions.check(here) == 1
    out = capsys.readouterr().out
    assert "FAIL docs6qa-001: answer 'an answer no doc holds' not found in why.md" in out
    assert "questions.jsonl differs from the rows questions.py makes" in out


def test_a_paraphrase_that_gives_the_answer_away_or_repeats_the_question_is_not_training_data():
    from paraphrase_questions import rewrite

    row = {"question": "Who wrote the Grand Model plan?", "answers": ["Locke", "John Locke"]}
    assert rewrite('Question: "Who drafted the plan called the Grand Model?"', row) == (
        "Who drafted the plan called the Grand Model?"
    )
    assert rewrite("Did John Locke draft the Grand Model?", row) is None  # holds a gold answer
    assert rewrite("Was it LOCKE who drafted it?", row) is None  # whole words, any case
    assert rewrite("Who penned the Grand Model by Lockean thinkers?", row) is not None  # not a whole word
    assert rewrite("who wrote the  grand model plan?", row) is None  # the question again
    assert rewrite("Who drafted it?\nAnswer: Locke", row) is None  # not one line
    assert rewrite("The plan was drafted by whom", row) is None  # not a question


def test_a_written_question_is_kept_only_with_a_short_answer_from_its_passage_that_it_does_not_give_away():
    from generate_questions import common, parse, spread

    passage = "Pass --maxfail=2 to stop after two failures. The `tmp_path` fixture gives a fresh directory."
    assert parse("Answer: --maxfail=2\nQuestion: How do I stop the run after a few failures?", passage) == (
        "How do I stop the run after a few failures?",
        "maxfail=2",
    )
    assert parse("Answer: `tmp_path`\n\nQuestion: Where do I get a scratch folder?", passage)[1] == "tmp_path"
    assert parse("Answer: tmp_path\nQuestion: What does tmp_path give?", passage) is None  # given away
    assert parse("Answer: tmp_dir\nQuestion: Where do I get a scratch folder?", passage) is None  # not in it
    assert parse("Answer: tmp\nQuestion: Where do I get a scratch folder?", passage) is None  # not whole words
    long = "Answer: The fixture gives a fresh directory for each test run.\nQuestion: What is tmp_path?"
    assert parse(long, passage) is None  # over six words
    assert parse("tmp_path\nQuestion: Where do I get a scratch folder?", passage) is None  # not the two lines
    assert parse("Answer: tmp_path\nQuestion: A scratch folder.", passage) is None  # not a question
    assert parse("Answer: 2\nQuestion: How many failures stop the run?", passage) is None  # no letter
    folder = [passage] + ["Pytest collects tests."] * 2 + ["Markers select tests."] * 97
    assert common("pytest", folder) and not common("tmp_path", folder)  # in 3 of 100 passages, and in 1
    prose = "word " * 40
    ps = [{"id": f"{d}#{i}", "doc_id": d, "text": prose} for d in "abc" for i in range(4)]
    ps.append({"id": "c#code", "doc_id": "c", "text": ">>> f(x) = 1 " * 40})
    picked = spread(ps, 9, seed=3)
    assert [p["doc_id"] for p in picked] == list("abc" * 3) and "c#code" not in {p["id"] for p in picked}
    assert picked == spread(ps, 9, seed=3) and len(spread(ps, 99, seed=3)) == 12


def test_two_cross_encoders_logits_are_compared_over_the_same_questions_with_an_interval():
    from retrieval_fused import paired_auc

    labels = [[True, False, False], [False, True, False], [False, False, True], [True, False, False]]
    a = [[0.9, 0.1, 0.2], [0.3, 0.8, 0.1], [0.2, 0.1, 0.7], [0.6, 0.5, 0.4]]
    assert paired_auc(a, a, labels) == (0.0, 0.0, 0.0)  # the same scores: no difference, none by chance
    worse = [row[::-1] for row in a]  # every question's passages ranked backwards
    diff, low, high = paired_auc(a, worse, labels)
    assert diff == pytest.approx(17 / 32 - 1) and low <= diff <= high < 0  # 17 of the 32 positive-negative pairs


def test_a_faq_question_comes_out_of_its_docs_file_and_is_answered_by_its_own_sections_prose():
    from faq_questions import aliases, sections

    rst = (
        "Tasks\n=====\n\nTasks run on workers.\n\n"
        "=====================================\nCan I retry a :class:`~app.Task` later?\n"
        "=====================================\n\n"
        "Yes: call retry with a countdown of seconds.\n\n.. code-block:: python\n\n    task.retry(countdown=5)\n\n"
        "How do I stop a worker?\n-----------------------\nSend it the TERM signal and it finishes its tasks.\n"
        "Workers\n-------\nThey are processes.\n"
    )
    text, found = sections(rst)
    assert [q for q, _ in found] == ["Can I retry a Task later?", "How do I stop a worker?"]
    assert "retry a" not in text and "stop a worker" not in text  # the question is the user's, not the folder's
    assert "Tasks\n=====" in text and "Workers\n-------\nThey are processes." in text  # other headings stay
    assert found[1][1] == "Send it the TERM signal and it finishes its tasks."  # up to the next heading
    assert aliases(found[0][1]) == ["Yes: call retry with a countdown of seconds."]  # no code
    _, md = sections("# Guide\n\n## Why is my build slow?\n\nThe cache is cold on the first run of the day.\n")
    assert md == [("Why is my build slow?", "The cache is cold on the first run of the day.")]
    assert aliases(md[0][1]) == ["The cache is cold on the first run"]  # its first eight words
    assert sections("Why?\n----\nBecause.\n")[1] == []  # under three words: not a user's question
