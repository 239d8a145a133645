"""Docstring examples are executed: every module of the package whose source holds ``>>>``
examples runs them through :func:`doctest.testmod` (outputs compared as written, with ``...``
allowed and whitespace normalized)."""

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

#: Modules whose examples are known to be stale, with the reason (kept short: fix, then remove).
KNOWN_STALE: dict[str, str] = {}


def _modules_with_examples():
    names = ["efce", "efce.errors"]
    for sub in ("games", "polytopes", "solvers", "baselines", "experiments"):
        package = importlib.import_module(f"efce.{sub}")
        names.append(package.__name__)
        names += [
            info.name
            for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}.")
            if not info.name.endswith(("__main__", "openspiel", "_worker"))
        ]
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec and spec.origin and ">>>" in Path(spec.origin).read_text(encoding="utf-8"):
            yield name


MODULES = sorted(_modules_with_examples())


def test_some_modules_have_examples():
    assert len(MODULES) >= 5, MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    if name in KNOWN_STALE:
        pytest.xfail(KNOWN_STALE[name])
    module = importlib.import_module(name)
    result = doctest.testmod(
        module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False, report=True
    )
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed"
