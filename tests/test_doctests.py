"""The examples in the pure helpers' docstrings are run, so that they stay true."""

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "crag_cli.documents",
        "crag_cli.readers",
        "crag_cli.doctypes",
        "crag_cli.titles",
        "crag_cli.refine",
        "crag_cli.prompts",
        "crag_cli.jsonl",
        "crag_cli.match",
        "crag_cli.generator.template",
        "crag_cli.generator.served",
        "crag_cli.actions",
        "crag_cli.bm25",
        "crag_cli.fakes",
        "crag_cli.train.data",
        "crag_cli.reading",
        "crag_cli.batch.identity",
        "crag_cli.modes",
        "crag_cli.web.fetch",
        "crag_cli.web.unpack",
        "crag_cli.index.store",
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
