"""Every public function of the package carries type hints: each parameter (``self``/``cls``
excepted) and the return.

Public: a function or method whose name has no leading underscore, in a module and class whose
names have none either, under the package folders (``efce/``, ``games/``, ``polytopes/``,
``solvers/``, ``baselines/``, ``experiments/``).  The files are read with :mod:`ast`, not
imported, so optional dependencies (numba-cuda) do not hide any.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.paths import ROOT

PACKAGE_FOLDERS = ("efce", "games", "polytopes", "solvers", "baselines", "experiments")


def public_modules() -> list[Path]:
    """The package's modules whose path has no part with a leading underscore (``__init__``
    counts as public: it is the package itself)."""
    found = []
    for folder in PACKAGE_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT).parts
            if any(part.startswith("_") and part != "__init__.py" for part in parts):
                continue
            found.append(path)
    return found


def _is_static(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


def untyped_functions(source: str) -> list[str]:
    """``"name: missing a, b, return"`` for each public function of ``source`` lacking a
    parameter annotation (``self``/``cls`` of a method excepted) or its return annotation."""
    found: list[str] = []

    def visit(body: list[ast.stmt], owner: str | None) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                visit(node.body, node.name)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
                args = node.args
                params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
                params += [a for a in (args.vararg, args.kwarg) if a is not None]
                if owner is not None and not _is_static(node) and params and params[0].arg in ("self", "cls"):
                    params = params[1:]
                missing = [p.arg for p in params if p.annotation is None]
                if node.returns is None:
                    missing.append("return")
                if missing:
                    name = f"{owner}.{node.name}" if owner else node.name
                    found.append(f"{name} (line {node.lineno}): missing {', '.join(missing)}")

    visit(ast.parse(source).body, None)
    return found


def test_the_walk_finds_every_kind_of_missing_annotation():
    source = """
def typed(a: int, *rest: int, key: str = "", **more: float) -> None: ...
def no_return(a: int): ...
def bare_param(a, b: int) -> int: ...
def bare_star(*rest) -> None: ...
def bare_kwargs(**more) -> None: ...
def _private(a): ...
class Public:
    def method(self, x) -> None: ...
    def typed(self, x: int) -> int: ...
    @classmethod
    def build(cls) -> "Public": ...
    @staticmethod
    def helper(x) -> None: ...
    def _hidden(self, x): ...
class _Private:
    def method(self, x): ...
"""
    assert [entry.split(" (")[0] for entry in untyped_functions(source)] == [
        "no_return",
        "bare_param",
        "bare_star",
        "bare_kwargs",
        "Public.method",
        "Public.helper",
    ]


@pytest.mark.parametrize("path", public_modules(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_public_functions_are_annotated(path: Path):
    missing = untyped_functions(path.read_text(encoding="utf-8"))
    assert not missing, f"{path.relative_to(ROOT)}: public functions without type hints: " + "; ".join(
        missing
    )
