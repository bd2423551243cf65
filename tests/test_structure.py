"""crag_cli's modules and functions stay small enough to read whole: no module over 450 lines, no function over 80.

The circle-free import graph, the third part of the same rule, is tests/test_imports.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "crag_cli"
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80


def _sources() -> list[tuple[str, str]]:
    """Every module of crag_cli as (path from the repository root, text)."""
    return [
        (path.relative_to(PACKAGE.parent).as_posix(), path.read_text(encoding="utf-8"))
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def long_modules(sources: list[tuple[str, str]], limit: int = MAX_MODULE_LINES) -> list[str]:
    """``path: N lines`` for each module over ``limit`` lines."""
    return [f"{path}: {n} lines" for path, text in sources if (n := len(text.splitlines())) > limit]


def long_functions(sources: list[tuple[str, str]], limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``path:line name: N lines`` for each function or method (nested ones too) over ``limit`` lines.

    A function's length runs from its ``def`` line to its last line (decorators not counted).
    """
    found = []
    for path, text in sources:
        for node in ast.walk(ast.parse(text, filename=path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    found.append(f"{path}:{node.lineno} {node.name}: {n} lines")
    return found


def test_the_checks_find_what_is_too_long_and_only_it():
    short_def = "def f():\n    return 1\n"
    long_def = "class C:\n    async def m(self):\n" + "        x = 1\n" * 5 + "\n\ndef g():\n    pass\n"
    sources = [("a.py", short_def), ("b.py", long_def)]
    assert long_modules(sources, limit=6) == ["b.py: 11 lines"]
    assert long_functions(sources, limit=5) == ["b.py:2 m: 6 lines"]


def test_no_module_of_crag_cli_is_over_450_lines():
    offenders = long_modules(_sources())
    assert not offenders, f"modules over {MAX_MODULE_LINES} lines (split them):\n" + "\n".join(offenders)


def test_no_function_of_crag_cli_is_over_80_lines():
    offenders = long_functions(_sources())
    assert not offenders, f"functions over {MAX_FUNCTION_LINES} lines (split them):\n" + "\n".join(offenders)


# ----------------------------------------------------------------------------- the package tree
STAGES = ("documents", "index", "evaluator", "action", "web", "reader")  # the paper's stages, each a package
MAX_TOP_MODULES = 12


def _layout() -> dict[str, list[str]]:
    """README's Layout of crag_cli/: each package (``"index"``) or ``""`` (the top level) with the names it lists."""
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Layout", 1)[1].split("```", 2)[1]
    listed, inside = {}, False
    for line in block.splitlines():
        if line.startswith("crag_cli/"):
            inside = True
        elif inside and line.startswith("  ") and not line.startswith("   "):
            head, _, _ = line.strip().partition(":")
            if head.split()[0].endswith("/"):
                name, _, rest = head.partition(" ")
                listed[name.rstrip("/")] = [n.strip() for n in rest.split(",")]
            else:
                listed[""] = head.split()
        elif inside and not line.startswith(" "):
            break
    return listed


def _tree() -> dict[str, list[str]]:
    """crag_cli's packages and their modules (and data folders, ``shipped/``), as the Layout names them."""
    tree = {"": sorted(p.name for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__"))}
    for pkg in sorted(p for p in PACKAGE.iterdir() if (p / "__init__.py").exists()):
        names = [p.stem for p in pkg.glob("*.py") if p.stem != "__init__"]
        names += [f"{p.name}/" for p in pkg.iterdir() if p.is_dir() and p.name != "__pycache__"]
        tree[pkg.name] = sorted(names)
    return tree


def test_readme_layout_names_every_package_and_module_and_nothing_else():
    listed = {k: sorted(v) for k, v in _layout().items()}
    assert listed == _tree(), "README's Layout and crag_cli/ differ: update the Layout section"


def test_the_top_level_is_a_handful_and_no_stage_imports_the_settings():
    top = [p for p in PACKAGE.glob("*.py")]
    assert len(top) <= MAX_TOP_MODULES, sorted(p.name for p in top)
    offenders = []
    for stage in STAGES:
        for path in (PACKAGE / stage).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("settings", "crag_cli"):
                    if "settings" in (node.module or "").split("."):
                        offenders.append(f"{path.relative_to(PACKAGE)}: from {node.module}")
    assert not offenders, "a stage takes its own settings part, never the settings module:\n" + "\n".join(offenders)


def test_every_list_of_the_file_types_crag_reads_names_each_of_them():
    """README, the docs and ``crag index --help`` list crag's own suffixes: a new type must reach each list."""
    import re

    from crag_cli.documents.types import OWN_SUFFIXES

    root = PACKAGE.parent
    places = {  # where each list starts and ends
        "README.md": ("crag index ~/papers", "\n"),
        "docs/commands.md": ("Reads a folder recursively", "Documents are split"),
        "docs/extending.md": ("claims a suffix crag reads itself", "\n\n"),
    }
    for name, (anchor, end) in places.items():
        text = (root / name).read_text(encoding="utf-8")
        paragraph = text[text.index(anchor) :].split(end, 1)[0]
        named = set(re.findall(r"(?<![\w/])\.[a-z]{2,5}\b", paragraph))
        assert named == set(OWN_SUFFIXES), f"{name} ({anchor!r}...) lists {sorted(named)}, not {sorted(OWN_SUFFIXES)}"
