"""A module's private names (``_name``) are its own: no module of the package imports another
module's private name, neither ``from module import _name`` nor ``module._name`` through an
imported module.  What two modules share is public, documented, in one home."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

from tests.paths import ROOT

#: Repository folder → the package it installs as.
PACKAGES = {
    "efce": "efce",
    "games": "efce.games",
    "polytopes": "efce.polytopes",
    "solvers": "efce.solvers",
    "baselines": "efce.baselines",
    "experiments": "efce.experiments",
}


def _module_name(path: Path) -> str:
    folder, *rest = path.relative_to(ROOT).with_suffix("").parts
    name = ".".join([PACKAGES[folder], *rest])
    return name.removesuffix(".__init__")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def private_imports(path: Path) -> list[str]:
    """``file:line: what`` for each private name of another module that ``path`` imports."""
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found, modules = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            target = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            if not target or not target.startswith("efce"):
                continue
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {target} import {alias.name}")
                elif _is_module(f"{target}.{alias.name}"):
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            modules.update(
                a.asname or a.name.partition(".")[0] for a in node.names if a.name.startswith("efce")
            )
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and _private(node.attr)
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_imports_another_modules_private_names():
    offenders = [
        hit
        for folder in PACKAGES
        for path in sorted((ROOT / folder).rglob("*.py"))
        for hit in private_imports(path)
    ]
    assert not offenders, offenders


def test_the_scan_sees_both_forms(monkeypatch):
    # A module of the package that reaches into another: both forms are reported.
    fake = ROOT / "experiments" / "_scan_probe.py"
    fake_text = (
        "from efce.experiments.cli import _COMMANDS\n"
        "from .sweep import grid\n"
        "from efce.experiments import cli\n"
        "print(grid._pattern, cli.main, cli.__name__)\n"
    )
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: fake_text)
    hits = private_imports(fake)
    assert [h.split(": ", 1)[1] for h in hits] == [
        "from efce.experiments.cli import _COMMANDS",
        "grid._pattern",
    ]
