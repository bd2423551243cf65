"""Plugins by entry point (docs/extending.md): a toy reader backend and a toy document type, registered as an
installed package registers them, by a ``.dist-info`` folder on ``sys.path``, without installing anything."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_safety import invoke

from crag_cli import plugins
from crag_cli.index import BM25Index, build_index

TOY_PLUGIN = '''
from crag_cli.documents import Document, Unreadable
from crag_cli.fakes import FakeGenerator


class ToyBackend:
    name = "toy"

    def accepts(self, model):
        return model.startswith("toy-")

    def problem(self, model):
        return None if model == "toy-1" else "the toy reader has one model: toy-1"

    def canonical(self, model):
        return model

    def user_file(self, model):
        return None

    def fingerprint(self, model):
        return f"{model} of the toy reader 0.1"

    def check(self, model):
        pass

    def create(self, model, options):
        generator = FakeGenerator(f"The toy says: {model}.", options.n_ctx)
        generator.model = model
        return generator


class ToyDocuments:
    """A .toy file: its first line is the title, the rest the text; an empty one is unreadable."""

    name = "toy"
    version = "1"
    suffixes = (".toy",)

    def read(self, path, rel):
        lines = path.read_text(encoding="utf-8").splitlines()
        if not lines:
            raise Unreadable("an empty toy")
        return [Document(id=rel, title=lines[0], text="\\n".join(lines[1:]), source=rel)]


class Greedy(ToyDocuments):
    name = "greedy"
    suffixes = (".greedy", ".TXT")
'''


def install(folder: Path, entry_points: str, monkeypatch, version: str = "0.1") -> Path:
    """The toy package as pip would leave it (its module, and a dist-info folder naming its entry points), found
    first on ``sys.path``; crag's plugins forgotten, so that they are looked up again (and as before the test after
    it)."""
    folder.mkdir(exist_ok=True)
    (folder / "toy_plugin.py").write_text(TOY_PLUGIN)
    info = folder / "toy_plugin-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: toy-plugin\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(entry_points)
    monkeypatch.syspath_prepend(str(folder))
    sys.modules.pop("toy_plugin", None)  # imported again, from here
    monkeypatch.setattr(plugins, "_registries", {})
    return folder


@pytest.fixture(autouse=True)
def _forget_the_toy():
    yield
    sys.modules.pop("toy_plugin", None)


TOY = "[crag.readers]\ntoy = toy_plugin:ToyBackend\n\n[crag.documents]\ntoy = toy_plugin:ToyDocuments\n"


def warnings(r) -> list[str]:
    return [line for line in r.stderr.splitlines() if line.startswith("crag: warning:")]


def test_a_toy_document_type_and_reader_backend_plug_in_by_entry_point(docs_dir, tmp_path, monkeypatch):
    (docs_dir / "harbour.toy").write_text("Harbour notes\nThe harbour wall of Port Elm was rebuilt in 1902.\n")
    (docs_dir / "empty.toy").write_text("")
    ix = tmp_path / "ix"
    before = build_index(docs_dir, ix)  # no plugin yet: the .toy files are not read
    assert ("harbour.toy", "unsupported file type") in before.skipped
    install(tmp_path / "site", TOY, monkeypatch)

    r = invoke("index", docs_dir, "--index", ix)
    assert r.exit_code == 0 and not warnings(r), r.output
    assert "skipped empty.toy: an empty toy" in r.stderr
    toy = [p for p in BM25Index.load(ix).passages if p.doc_id == "harbour.toy"]
    assert [(p.title, p.text) for p in toy] == [("Harbour notes", "The harbour wall of Port Elm was rebuilt in 1902.")]
    manifest = json.loads((ix / "manifest.json").read_text())
    typed = {s["path"]: s.get("document_type") for s in manifest["sources"]}
    assert typed["harbour.toy"] == "toy 1 (toy-plugin 0.1)" and typed["paris.txt"] is None

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

    install(tmp_path / "site", TOY, monkeypatch, version="0.2")  # an upgrade: its files are read again, no other
    report = build_index(docs_dir, ix)
    assert (report.status, report.read, report.reused) == ("built", 2, report.files - 2)
    r = invoke("batch", questions, "--index", ix, "--mode", "rag", "--model", "toy-1", "-o", out, "--resume")
    assert r.exit_code == 1 and "index_sha256" in r.stderr, r.output  # not the index the records were made with


def test_a_broken_plugin_is_one_warning_line_and_crag_goes_on(docs_dir, tmp_path, monkeypatch):
    (docs_dir / "a.greedy").write_text("Greedy\nA greedy file.")
    broken = (
        "[crag.readers]\ntoy = toy_plugin:ToyBackend\nbroken = no_such_module:Reader\n\n"
        "[crag.documents]\nbroken = toy_plugin:Missing\ngreedy = toy_plugin:Greedy\n"
    )
    install(tmp_path / "site", broken, monkeypatch)
    r = invoke("index", docs_dir, "--index", tmp_path / "ix")
    assert r.exit_code == 0 and "indexed 4 documents from 4 files" in r.stderr, r.output
    assert warnings(r) == [
        'crag: warning: crag.documents entry point "broken = toy_plugin:Missing" (toy-plugin 0.1) could not be '
        "loaded (AttributeError: module 'toy_plugin' has no attribute 'Missing'); left out",
        'crag: warning: crag.documents entry point "greedy = toy_plugin:Greedy" (toy-plugin 0.1) claims .txt, '
        "which crag itself reads; left out",
    ]
    assert "skipped a.greedy: unsupported file type" in r.stderr
    r = invoke("ask", "What is in the documents?", "--index", tmp_path / "ix", "--model", "toy-1", "--model-knowledge")
    assert r.exit_code == 0 and "The toy says: toy-1." in r.stdout, r.output
    assert warnings(r) == [
        'crag: warning: crag.readers entry point "broken = no_such_module:Reader" (toy-plugin 0.1) could not be '
        "loaded (ModuleNotFoundError: No module named 'no_such_module'); left out"
    ]
