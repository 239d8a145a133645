"""One compute-backend layer: outside :mod:`efce.solvers.backends` no module reads or sets numba's
thread count, imports the CPU backend's kernel modules, or compiles a kernel of an iteration loop
(the builders of games and models keep theirs)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.paths import ROOT

#: The package's folders (each installs as ``efce.<folder>``) and its own ``efce`` folder.
FOLDERS = ("efce", "games", "polytopes", "solvers", "baselines", "experiments")
BACKENDS = ROOT / "solvers" / "backends"

#: Compiled functions allowed outside the backend layer: builders (DECOMPOSE, relevant pairs,
#: infoset trees, trigger tables and layouts), chain validation, and the array helpers they share.
BUILDERS = {
    "games/arrays.py": {"lower_bound", "find_in_row"},
    "games/infoset_tree.py": None,  # every function: the infoset tree's builders
    "games/relevant.py": None,
    "polytopes/chain.py": {"_first_invalid_step", "_first_invalid_run_step"},
    "polytopes/decompose.py": None,
    "solvers/evaluation/payoff_operator.py": {"_rows", "_sort_lines", "_line_table"},
    "solvers/methods/trigger.py": {"_build_layout"},
}


def package_modules(outside_backends: bool = True):
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "__pycache__" in path.parts or (outside_backends and BACKENDS in path.parents):
                continue
            yield path


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    parts = parts[1:] if parts[0] == "efce" else parts
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("efce", *parts))


def imported_modules(path: Path) -> list[str]:
    """Absolute names of the modules ``path`` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rsplit(".", 1)[0]
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            names.append(module)
            names += [f"{module}.{alias.name}" for alias in node.names]
    return names


def compiled_functions(path: Path) -> set[str]:
    """Functions of ``path`` decorated by numba (``numba.njit``, ``njit``, ``numba.jit``...)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                text = ast.unparse(decorator)
                if "numba" in text or "njit" in text or text.startswith(("jit", "overload", "intrinsic")):
                    out.add(node.name)
    return out


def test_no_module_outside_the_backends_reads_or_sets_numbas_thread_count():
    words = ("get_num_threads", "set_num_threads", "NUMBA_NUM_THREADS")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in package_modules()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if any(word in line for word in words)
    ]
    assert not found, found
    # ... while the backend layer does (the grep above would pass on an empty package)
    inside = [p for p in BACKENDS.rglob("*.py") if "get_num_threads" in p.read_text(encoding="utf-8")]
    assert inside


def test_no_module_outside_the_backends_imports_their_kernels():
    """Outside the layer only its interface is imported (``efce.solvers.backends``: the registry
    and the protocol), never a backend's package (``.cpu``, ``.cuda``) or kernel module."""
    backends = ("efce.solvers.backends.cpu", "efce.solvers.backends.cuda")
    found = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in package_modules()
        for name in imported_modules(path)
        if name in backends or name.startswith(tuple(b + "." for b in backends))
    ]
    assert not found, found
    # the scan sees the interface's imports (it would pass on a package that imports nothing)
    assert any(
        name == "efce.solvers.backends.get_backend"
        for name in imported_modules(ROOT / "solvers" / "methods" / "efce.py")
    )


def test_only_builders_are_compiled_outside_the_backends():
    unexpected = []
    for path in package_modules():
        functions = compiled_functions(path)
        if not functions:
            continue
        allowed = BUILDERS.get(path.relative_to(ROOT).as_posix(), set())
        if allowed is None:
            continue
        unexpected += [f"{path.relative_to(ROOT)}: {name}" for name in sorted(functions - allowed)]
    assert not unexpected, unexpected


def test_the_python_only_modules_of_the_cpu_backend_compile_nothing():
    """The kernels' cache stamp leaves out the CPU backend's Python-only modules
    (:data:`efce.solvers.backends.cpu.jit.PYTHON_ONLY`): they must hold no compiled code."""
    from efce.solvers.backends.cpu.jit import PYTHON_ONLY, kernel_sources

    folder = BACKENDS / "cpu"
    for name in PYTHON_ONLY:
        path = folder / name
        assert not compiled_functions(path), name
        assert not any(m == "numba" or m.startswith("numba.") for m in imported_modules(path)), name
    stamped = {p.name for p in kernel_sources()}
    assert stamped >= {p.name for p in folder.glob("*.py")} - set(PYTHON_ONLY)
    assert "arrays.py" in stamped  # the helpers shared with the builders
