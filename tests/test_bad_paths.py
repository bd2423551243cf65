"""Paths the system refuses (too long, a loop of links, a file where a folder belongs) and huge echoed values are one
short ``crag: error:`` line, never a traceback, whatever command meets them."""

from __future__ import annotations

import json
import os

import pytest
from test_safety import invoke, one_error_line

LONG = "a" * 300  # over NAME_MAX (255) on every common file system
MAX_LINE = 600  # characters an error line may take: its paths, a 300-character name or a huge value shortened


def short_error(r, *fragments) -> None:
    one_error_line(r, *fragments)
    assert len(r.stderr.strip()) < MAX_LINE, r.stderr[:500]
    assert "Traceback" not in r.output


def _gold(tmp_path):
    path = tmp_path / "gold.jsonl"
    path.write_text(json.dumps({"question": "Who wrote Hamlet?", "answers": ["Shakespeare"]}) + "\n")
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["ask", "x", "--index", LONG, "--model", "{gguf}"],
        ["index", LONG],
        ["index", "{docs}", "--index", LONG],
        ["batch", LONG + ".jsonl"],
        ["evaluate", "x", "--index", LONG],
        ["evaluate", "--input", LONG, "--index", "{index}"],
        ["evaluator-test", LONG, "--index", "{index}"],
        ["calibrate", LONG, "--index", "{index}"],
        ["calibrate", "{gold}", "--index", "{index}", "--write", LONG],
        ["train-evaluator", "--synthetic", "5", "--index", "{index}", "--out", LONG],
        ["batch", "{gold}", "--index", "{index}", "-o", LONG],
    ],
    ids=lambda args: " ".join(a.replace(LONG, "LONG") for a in args),
)
def test_a_name_longer_than_the_system_allows_is_one_short_line(
    args, docs_dir, built_index, tiny_gguf, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    values = {"docs": docs_dir, "index": built_index, "gold": _gold(tmp_path), "gguf": tiny_gguf}
    r = invoke(*[a.format(**values) if a.startswith("{") else a for a in args])
    short_error(r, " characters)")


@pytest.mark.slow
def test_a_ten_megabyte_value_in_the_config_file_is_cut_in_the_error(built_index, tiny_gguf, tmp_path):
    config = tmp_path / "crag.toml"
    for key, other in (("model", ["--index", built_index]), ("index", ["--model", tiny_gguf])):
        config.write_text(f'{key} = "{"a" * 10_000_000}"\n')
        r = invoke("ask", "x", *other, env={"CRAG_CONFIG": str(config)})
        short_error(r, "(10,000,000 characters)")


@pytest.mark.parametrize("args", [["batch", "{gold}", "-o", "A"], ["calibrate", "{gold}", "--write", "A"]])
def test_an_output_that_is_a_loop_of_symbolic_links_is_one_line(args, built_index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.symlink("B", tmp_path / "A")
    os.symlink("A", tmp_path / "B")
    gold = _gold(tmp_path)
    r = invoke(*[a.format(gold=gold) for a in args], "--index", built_index)
    short_error(r, "loop of symbolic links")
    assert os.readlink(tmp_path / "A") == "B" and os.readlink(tmp_path / "B") == "A"  # left as they were


@pytest.mark.parametrize("cache", ["{file}", "{file}/below", "/tmp/" + LONG])
def test_a_cache_folder_that_cannot_be_one_is_said_before_the_model_is_assembled(cache, built_index, tmp_path):
    from crag_cli.reader.models import embedded

    model = embedded("qwen2.5-coder-0.5b")  # split across packages: assembled into the cache folder
    if model.missing_packages():
        pytest.skip("the qwen2.5-coder-0.5b packages are not installed")
    file = tmp_path / "a-file"
    file.write_text("mine\n")
    r = invoke(
        "ask", "x", "--index", built_index, "--model", model.name, env={"CRAG_CACHE_DIR": cache.format(file=file)}
    )
    short_error(r, "cache folder")
    assert file.read_text() == "mine\n"
