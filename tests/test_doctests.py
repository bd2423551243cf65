"""The examples in the docstrings are run, so that they stay true: every module of crag_cli that has one."""

import doctest
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "crag_cli"
WITH_EXAMPLES = sorted(
    ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
    for path in PACKAGE.rglob("*.py")
    if ">>> " in path.read_text(encoding="utf-8")
)


def test_the_modules_with_examples_are_found():
    assert "crag_cli.action.refine" in WITH_EXAMPLES and len(WITH_EXAMPLES) >= 20


@pytest.mark.parametrize("module", WITH_EXAMPLES)
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
