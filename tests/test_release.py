"""One version everywhere: ``crag --version``, crag_cli/version.py, the package metadata and CHANGELOG's top heading."""

import re
from pathlib import Path

from typer.testing import CliRunner

from crag_cli.cli import app
from crag_cli.version import __version__

ROOT = Path(__file__).resolve().parents[1]
SUBSECTIONS = ("Added", "Changed", "Removed", "Fixed", "Security")


def _version_headings() -> list[tuple[str, str]]:
    """(version, date) of each ``## X.Y.Z — YYYY-MM-DD`` heading of CHANGELOG.md, newest first."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    return re.findall(r"^## (\d+\.\d+\.\d+) — (\d{4}-\d\d-\d\d)$", text, re.M)


def test_crag_version_is_version_py_the_metadata_and_the_newest_changelog_heading():
    from setuptools.config.pyprojecttoml import read_configuration

    r = CliRunner().invoke(app, ["--version"])
    assert r.exit_code == 0 and r.stdout.strip() == f"crag {__version__}"
    # the version pip writes into the package metadata (pyproject.toml takes it from version.py);
    # importlib.metadata would read an installed copy, stale until the next pip install -e .
    assert read_configuration(ROOT / "pyproject.toml")["project"]["version"] == __version__
    assert _version_headings()[0][0] == __version__, "bump crag_cli/version.py with CHANGELOG's top heading"


def test_changelog_sections_are_versions_newest_first_each_with_the_usual_subsections():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.*)$", text, re.M)
    if headings[0] == "Unreleased":  # opened above a tagged version (CHANGELOG's first lines)
        headings = headings[1:]
    dated = _version_headings()
    assert len(headings) == len(dated) >= 2, f"every ## heading is 'X.Y.Z — YYYY-MM-DD': {headings}"
    keys = [tuple(map(int, v.split("."))) for v, _ in dated]
    assert keys == sorted(keys, reverse=True) and [d for _, d in dated] == sorted((d for _, d in dated), reverse=True)
    for section in re.split(r"^## .*$", text, flags=re.M)[1:]:
        found = re.findall(r"^### (\w+)", section, re.M)
        assert found and set(found) <= set(SUBSECTIONS), found
        assert found == sorted(found, key=SUBSECTIONS.index), found  # Keep a Changelog's order
