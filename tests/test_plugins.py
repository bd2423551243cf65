"""Plugins by entry point: docs/extending.md's toy reader backend and toy document type (the page's own code
blocks), registered as an installed package registers them, by a ``.dist-info`` folder on ``sys.path``, without
installing anything; and a broken entry point."""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

import pytest
from test_safety import invoke

from crag_cli import plugins
from crag_cli.index import BM25Index, build_index

DOCS = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def _code(language: str) -> list[str]:
    """The code blocks of docs/extending.md in ``language``: the toy plugin is the one the page walks through."""
    return re.findall(rf"```{language}\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)


PYPROJECT = tomllib.loads(_code("toml")[0])["project"]  # crag-toy's: its name, version and entry points
MODULE = "crag_toy"
TOY_PLUGIN = "\n\n".join(_code("python")) + (
    "\n\nclass Greedy(ToyDocuments):\n    name = 'greedy'\n    suffixes = ('.greedy', '.TXT')\n"  # claims .txt
)
TOY = PYPROJECT["entry-points"]


def install(folder: Path, monkeypatch, entry_points: dict = TOY, version: str = PYPROJECT["version"]) -> Path:
    """The toy package as pip would leave it (its module, and a dist-info folder naming its entry points), found
    first on ``sys.path``; crag's plugins forgotten, so that they are looked up again (and as before the test after
    it)."""
    folder.mkdir(exist_ok=True)
    (folder / f"{MODULE}.py").write_text(TOY_PLUGIN)
    info = folder / f"{MODULE}-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {PYPROJECT['name']}\nVersion: {version}\n")
    groups = [
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in named.items()) for group, named in entry_points.items()
    ]
    (info / "entry_points.txt").write_text("\n".join(groups))
    monkeypatch.syspath_prepend(str(folder))
    sys.modules.pop(MODULE, None)  # imported again, from here
    plugins.clear()  # as docs/extending.md says: crag loads plugins once per process
    return folder


@pytest.fixture(autouse=True)
def _forget_the_toy():
    yield
    sys.modules.pop(MODULE, None)
    plugins.clear()


def warnings(r) -> list[str]:
    return [line for line in r.stderr.splitlines() if line.startswith("crag: warning:")]


def test_a_toy_document_type_and_reader_backend_plug_in_by_entry_point(docs_dir, tmp_path, monkeypatch):
    (docs_dir / "harbour.toy").write_text("Harbour notes\n# draft\nThe harbour wall of Port Elm was rebuilt in 1902.\n")
    (docs_dir / "empty.toy").write_text("")
    ix = tmp_path / "ix"
    before = build_index(docs_dir, ix)  # no plugin yet: the .toy files are not read
    assert ("harbour.toy", "unsupported file type") in before.skipped
    install(tmp_path / "site", monkeypatch)

    r = invoke("index", docs_dir, "--index", ix)
    assert r.exit_code == 0 and not warnings(r), r.output
    assert "skipped empty.toy: an empty toy" in r.stderr
    assert "skipped harbour.toy comments: a toy comment" in r.stderr  # a part of a file, told by skip()
    toy = [p for p in BM25Index.load(ix).passages if p.doc_id == "harbour.toy"]
    assert [(p.title, p.text) for p in toy] == [("Harbour notes", "The harbour wall of Port Elm was rebuilt in 1902.")]
    manifest = json.loads((ix / "manifest.json").read_text())
    typed = {s["path"]: s.get("document_type") for s in manifest["sources"]}
    assert typed["harbour.toy"] == "toy 1 (crag-toy 0.1)" and typed["paris.txt"] is None

    r = invoke("ask", "What is in the documents?", "--index", ix, "--model", "toy-1", "--model-knowledge")
    assert r.exit_code == 0 and "The toy says: toy-1." in r.stdout, r.output
    r = invoke("ask", "q", "--index", ix, "--model", "toy-2")
    assert r.exit_code == 1 and "the toy reader has one model: toy-1" in r.stderr, r.output

    questions, out = tmp_path / "q.jsonl", tmp_path / "out.jsonl"
    questions.write_text(json.dumps({"id": "1", "question": "When was the harbour wall of Port Elm rebuilt?"}) + "\n")
    r = invoke("batch", questions, "--index", ix, "--mode", "rag", "--model", "toy-1", "-o", out)
    assert r.exit_code == 0, r.output
    record = json.loads(out.read_text())
    assert (record["answer"], record["model"]) == ("The toy says: toy-1.", "toy-1")
    assert record["scores"][0]["title"] == "Harbour notes"  # the toy document, retrieved and read
    identity = json.loads(Path(f"{out}.run.json").read_text())["identity"]
    assert (identity["reader"], identity["model_sha256"]) == ("toy", "toy-1 of the toy reader 0.1")

    install(tmp_path / "site", monkeypatch, version="0.2")  # an upgrade: its files are read again, no other
    report = build_index(docs_dir, ix)
    assert (report.status, report.read, report.reused) == ("built", 2, report.files - 2)
    r = invoke("batch", questions, "--index", ix, "--mode", "rag", "--model", "toy-1", "-o", out, "--resume")
    assert r.exit_code == 1 and "index_sha256" in r.stderr, r.output  # not the index the records were made with


def test_a_broken_plugin_is_one_warning_line_and_crag_goes_on(docs_dir, tmp_path, monkeypatch):
    (docs_dir / "a.greedy").write_text("Greedy\nA greedy file.")
    broken = {
        "crag.readers": {**TOY["crag.readers"], "broken": "no_such_module:Reader"},
        "crag.documents": {"broken": "crag_toy:Missing", "greedy": "crag_toy:Greedy"},
    }
    install(tmp_path / "site", monkeypatch, broken)
    r = invoke("index", docs_dir, "--index", tmp_path / "ix")
    assert r.exit_code == 0 and "indexed 4 documents from 4 files" in r.stderr, r.output
    assert warnings(r) == [
        'crag: warning: crag.documents entry point "broken = crag_toy:Missing" (crag-toy 0.1) could not be '
        "loaded (AttributeError: module 'crag_toy' has no attribute 'Missing'); left out",
        'crag: warning: crag.documents entry point "greedy = crag_toy:Greedy" (crag-toy 0.1) claims .txt, '
        "which crag itself reads; left out",
    ]
    assert "skipped a.greedy: unsupported file type" in r.stderr
    r = invoke("ask", "What is in the documents?", "--index", tmp_path / "ix", "--model", "toy-1", "--model-knowledge")
    assert r.exit_code == 0 and "The toy says: toy-1." in r.stdout, r.output
    assert warnings(r) == [
        'crag: warning: crag.readers entry point "broken = no_such_module:Reader" (crag-toy 0.1) could not be '
        "loaded (ModuleNotFoundError: No module named 'no_such_module'); left out"
    ]
