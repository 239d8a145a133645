"""Run every code block of ``docs/*.md`` and ``CONTRIBUTING.md`` (and check the README's install
commands).

Conventions of the documentation (keep them in sync with the top of ``docs/guide.md``):

* ```` ```python ```` blocks of one file run **in document order in one namespace** (a fresh
  ``dict`` per file), so later blocks may use names defined by earlier ones; matplotlib uses the
  Agg backend;
* ```` ```bash ```` blocks: every line starting with ``efce `` is run, at its place in the
  document order, through ``experiments.cli.main(shlex.split(line)[1:])`` and must return 0;
  other lines (comments, shell commands) are not run;
* ```` ```bash no-test ```` blocks (installation, ``--preset paper``, long runs) are not run, nor
  is any line containing ``--preset paper``;
* ```` ```text ```` blocks are expected outputs and are not executed; the printed output of a
  ```` ```python ```` block must equal the ```` ```text ```` block that directly follows it, on
  this CPU and (:func:`test_doc_outputs_do_not_depend_on_cpu_features`) with the CPU's vector
  extensions switched off in numpy, OpenBLAS and numba, so that a page never shows what only
  one kind of CPU prints.

All blocks of one file run in a fresh temporary working directory (blocks may write files there,
e.g. ``fig2.efg`` or ``trace.csv``, and later blocks may read them).
"""

from __future__ import annotations

import contextlib
import io
import os
import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

# The pages, and the contributing guide (its local-rule walk-through is checked code).
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "CONTRIBUTING.md"]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.S | re.M)


def code_blocks(text: str) -> list[tuple[str, str, int]]:
    """``(info string, body, line number)`` of every fenced block, in order."""
    return [
        (m.group(1).strip(), m.group(2), text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)
    ]


def _normalized(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def run_efce(line: str) -> int:
    from efce.experiments.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        return main(shlex.split(line)[1:])


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_doc_code_blocks(path: Path, tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{path.stem}"}
    ran = 0
    blocks = code_blocks(path.read_text())
    for index, (info, body, line) in enumerate(blocks):
        words = info.split()
        lang, options = (words[0], words[1:]) if words else ("", [])
        if "no-test" in options:
            continue
        if lang == "python":
            code = compile(body, f"{path.name}:{line}", "exec")
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(code, namespace)
            ran += 1
            following = blocks[index + 1] if index + 1 < len(blocks) else None
            if following and following[0] == "text":
                assert _normalized(printed.getvalue()) == _normalized(following[1]), (
                    f"{path.name}:{following[2]}: the shown output differs from what the code prints"
                )
        elif lang == "bash":
            for offset, command in enumerate(body.splitlines(), start=1):
                command = command.strip()
                if not command.startswith("efce ") or "--preset paper" in command:
                    continue
                assert run_efce(command) == 0, f"{path.name}:{line + offset}: `{command}` failed"
                ran += 1
    if path.name in ("guide.md", "tutorial.md", "algorithms.md"):
        assert ran > 0 or path.name == "algorithms.md", f"no runnable block in {path.name}"


def _vector_extensions_off() -> dict:
    """Environment variables that make numpy, OpenBLAS and numba compute as on a CPU without
    AVX-512, AVX2 and FMA: other kernels for ``exp``, sums and BLAS, so other last bits."""
    try:
        from numpy._core._multiarray_umath import __cpu_baseline__, __cpu_features__
    except ImportError:  # numpy < 2
        from numpy.core._multiarray_umath import __cpu_baseline__, __cpu_features__
    wide = [
        name
        for name, present in __cpu_features__.items()
        if present and name not in __cpu_baseline__ and name.startswith(("AVX", "FMA"))
    ]
    return {
        "NPY_DISABLE_CPU_FEATURES": " ".join(wide),
        "OPENBLAS_CORETYPE": "Prescott",
        "NUMBA_CPU_NAME": "x86-64",
    }


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 vector extensions")
@pytest.mark.parametrize(
    "path", [p for p in DOCS if p.name in ("tutorial.md", "guide.md")], ids=lambda p: p.name
)
def test_doc_outputs_do_not_depend_on_cpu_features(path: Path):
    env = dict(os.environ, **_vector_extensions_off())
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); import pytest; "
        f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '--rootdir', {str(ROOT)!r}, "
        f"{str(Path(__file__).resolve())!r} + '::test_doc_code_blocks[{path.name}]']))"
    )
    child = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT, timeout=900
    )
    assert child.returncode == 0, (
        f"{path.name} prints something else without "
        f"{env['NPY_DISABLE_CPU_FEATURES'] or 'vector extensions'}:\n" + child.stdout[-3000:]
    )


def test_readme_install_commands():
    """The README's first ```bash block starts with the two commands: install + main job, and
    install + tests."""
    blocks = [b for b in code_blocks((ROOT / "README.md").read_text()) if b[0].split()[:1] == ["bash"]]
    assert blocks, "README.md has no ```bash block"
    lines = [ln.strip() for ln in blocks[0][1].splitlines() if ln.strip()]
    assert len(lines) >= 2
    install_main, install_tests = lines[0], lines[1]
    assert "pip install -e ." in install_main and "efce compare" in install_main
    assert 'pip install -e ".[test]"' in install_tests and "pytest" in install_tests


def test_docs_exist_and_link():
    names = {p.name for p in DOCS}
    assert {"guide.md", "tutorial.md", "algorithms.md"} <= names
    guide = (ROOT / "docs" / "guide.md").read_text()
    assert "results.md" in guide
