"""HiGHS prints its banner ("Running HiGHS ... Copyright") when a process makes its first solver
object, on file descriptor 1: a library caller's stdout.  It is printed only when asked for
(``verbose=True``, ``--verbose``): :func:`efce.baselines.lp_highs.new_highs`."""

import os
import subprocess
import sys

import pytest

from tests.paths import ROOT

ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
BANNER = "Running HiGHS"


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=600)


@pytest.mark.parametrize("method", ["lp-highs", "lp-cvxpy"])
def test_a_library_call_prints_nothing_on_stdout(method):
    done = _python(f"import efce; print('status', efce.solve('farina-fig2', {method!r}).status)")
    assert done.stdout == "status converged\n", done.stdout
    assert BANNER not in done.stderr


@pytest.mark.parametrize("method", ["lp-highs", "lp-cvxpy"])
def test_verbose_prints_the_banner(method):
    done = _python(f"import efce; efce.solve('farina-fig2', {method!r}, verbose=True)")
    assert BANNER in done.stdout


def test_the_command_line_prints_it_only_with_verbose():
    quiet = subprocess.run(
        [sys.executable, "-P", "-m", "efce", "solve", "farina-fig2", "--method", "lp-highs"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=600,
    )
    loud = subprocess.run(
        [
            sys.executable,
            "-P",
            "-m",
            "efce",
            "solve",
            "farina-fig2",
            "--method",
            "lp-highs",
            "--verbose",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=600,
    )
    assert quiet.returncode == loud.returncode == 0
    assert BANNER not in quiet.stdout + quiet.stderr
    assert BANNER in loud.stderr and BANNER not in loud.stdout  # --json keeps stdout to the object
