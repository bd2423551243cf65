"""Each setting's default is declared once, in crag_cli/settings/__init__.py: no parameter or field of the same name elsewhere
in crag_cli carries a default value of its own (a second default that could disagree with the setting's)."""

from __future__ import annotations

import ast
from pathlib import Path

from crag_cli.settings import Settings

PACKAGE = Path(__file__).resolve().parents[1] / "crag_cli"

# Where a parameter or field is named as a setting and keeps a default value: "file:Owner.name" -> why.
ALLOWED = {
    "index/format.py:TokenizerSettings.lower": "lower-casing of the index's tokenizer, not the lower threshold",
    **dict.fromkeys(
        [f"train/data.py:TrainConfig.{n}" for n in ("batch_size", "max_length", "seed")],
        "train-evaluator's own options (--train-batch-size, --train-max-length, --train-seed: TrainConfig is their "
        "one home), not the answering settings of the same names",
    ),
}


def _value(default: ast.expr) -> ast.expr | None:
    """The default value a parameter or field is given, or ``None`` when it is given none of its own.

    ``None`` (Python's "not given") is no value, and neither is a call (a lookup such as
    ``settings_info.default("n_ctx")``, a factory), except ``field(default=...)``, whose value is read.
    """
    if isinstance(default, ast.Call):
        named = {k.arg: k.value for k in default.keywords}
        name = default.func.attr if isinstance(default.func, ast.Attribute) else getattr(default.func, "id", "")
        return _value(named["default"]) if name == "field" and "default" in named else None
    if isinstance(default, ast.Constant) and default.value is None:
        return None
    return default


def second_defaults(source: str, names: set[str], where: str = "") -> dict[str, str]:
    """``{"where:Owner.name": default}`` for each parameter or class field of ``source`` named as one of ``names``
    that carries a default value (:func:`_value`).

    Examples
    --------
    >>> second_defaults("def f(top_k=10, strips=None, seed=default('seed')): pass", {"top_k", "strips", "seed"})
    {':f.top_k': '10'}
    >>> second_defaults("class C:\\n    top_k: int = field(default=-1)\\n    seed: int = 0", {"top_k"})
    {':C.top_k': '-1'}
    """
    found: dict[str, str] = {}

    def visit(node: ast.AST, owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                inner = f"{owner}.{getattr(child, 'name', 'lambda')}".lstrip(".")
                args = child.args
                positional = args.posonlyargs + args.args
                pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
                pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
                for arg, default in pairs:
                    value = _value(default)
                    if arg.arg in names and value is not None:
                        found[f"{where}:{inner}.{arg.arg}"] = ast.unparse(value)
                visit(child, inner)
            elif isinstance(child, ast.ClassDef):
                inner = f"{owner}.{child.name}".lstrip(".")
                for stmt in child.body:
                    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                        value = _value(stmt.value)
                        if stmt.target.id in names and value is not None:
                            found[f"{where}:{inner}.{stmt.target.id}"] = ast.unparse(value)
                visit(child, inner)
            else:
                visit(child, owner)

    visit(ast.parse(source), "")
    return found


def test_no_setting_has_a_second_default_in_crag_cli():
    names = set(Settings.model_fields)
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        found.update(second_defaults(path.read_text(encoding="utf-8"), names, path.relative_to(PACKAGE).as_posix()))
    unexplained = {k: v for k, v in found.items() if k not in ALLOWED}
    assert not unexplained, (
        "settings with a second default (take the value from Settings, or from the caller, instead): "
        + ", ".join(f"{k} = {v}" for k, v in sorted(unexplained.items()))
    )
    assert not set(ALLOWED) - set(found), (
        f"allowed but no longer found (drop them): {sorted(set(ALLOWED) - set(found))}"
    )


def test_the_check_finds_a_second_default_where_the_pipeline_had_them():
    source = "class Pipeline:\n    def __init__(self, retriever, top_k: int = 10, lexical_support=1.0, web=None): ..."
    assert second_defaults(source, set(Settings.model_fields), "pipeline.py") == {
        "pipeline.py:Pipeline.__init__.top_k": "10",
        "pipeline.py:Pipeline.__init__.lexical_support": "1.0",
    }
