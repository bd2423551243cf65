"""ruff's lint rules and its formatter (pyproject.toml, [tool.ruff]) hold for the package, the tests and the benchmarks."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_no_error():
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    proc = subprocess.run([ruff, "check", "crag_cli", "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_leaves_every_file_as_it_is():
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    proc = subprocess.run(
        [ruff, "format", "--check", "crag_cli", "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, "run: ruff format crag_cli tests benchmarks\n" + proc.stdout + proc.stderr


def test_every_package_of_crag_cli_is_installed():
    """pyproject.toml lists the packages by name: a new one left out would be missing from a wheel."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "crag_cli").rglob("__init__.py")}
    assert listed == found
