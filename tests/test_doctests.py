"""The examples in the pure helpers' docstrings are run, so that they stay true."""

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "crag_cli.documents.formats",
        "crag_cli.documents.folder",
        "crag_cli.documents.types",
        "crag_cli.documents.titles",
        "crag_cli.action.refine",
        "crag_cli.reader.prompts",
        "crag_cli.jsonl",
        "crag_cli.action.match",
        "crag_cli.reader.template",
        "crag_cli.reader.served",
        "crag_cli.action.trigger",
        "crag_cli.index.bm25",
        "crag_cli.pipeline.fakes",
        "crag_cli.train.data",
        "crag_cli.action.knowledge",
        "crag_cli.batch.identity",
        "crag_cli.pipeline.modes",
        "crag_cli.web.fetch",
        "crag_cli.unpack",
        "crag_cli.index.store",
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
