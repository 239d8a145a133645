"""``--backend cuda`` where it cannot run is refused in one line, before any game is built and in
seconds: numba-cuda not installed (hidden from the child), no CUDA driver or GPU (this machine
without ``NUMBA_ENABLE_CUDASIM``, which the toolkit never sets itself)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time

import pytest

import efce
from efce.errors import OptionError
from efce.solvers.backends import get_backend
from tests.paths import ROOT

EFCE = [sys.executable, "-P", "-m", "efce"]
#: The child runs this source tree, with the simulator off whatever this process set.
ENV = {
    **{k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"},
    "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
}
#: The command line with numba-cuda hidden (``find_spec`` answers None for a None entry).
WITHOUT_NUMBA_CUDA = [
    sys.executable,
    "-P",
    "-c",
    "import sys; sys.modules['numba_cuda'] = None; from efce.experiments.cli import main; sys.exit(main())",
]
SOLVE = ["solve", "farina-fig1", "--method", "rm", "--backend", "cuda"]
#: The issue's bound, from the command to its exit.
REFUSAL_SECONDS = 5.0

has_gpu = shutil.which("nvidia-smi") is not None or os.path.exists("/dev/nvidia0")


def refused(command: list[str]) -> str:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=60)
    took = time.monotonic() - started
    assert done.returncode != 0 and done.stdout == "", (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("efce: error: --backend cuda"), done.stderr
    assert took < REFUSAL_SECONDS, f"the refusal took {took:.1f} s"
    return lines[0]


def test_without_numba_cuda_the_command_names_the_missing_extra():
    line = refused([*WITHOUT_NUMBA_CUDA, *SOLVE])
    assert "numba-cuda" in line and "efce-toolkit[cuda]" in line


@pytest.mark.skipif(importlib.util.find_spec("numba_cuda") is None, reason="numba-cuda is not installed")
@pytest.mark.skipif(has_gpu, reason="this machine has an NVIDIA GPU")
def test_without_a_gpu_the_command_says_so_and_never_runs_the_simulator_silently():
    line = refused([*EFCE, *SOLVE])
    assert "no usable CUDA GPU" in line


def test_the_library_refuses_before_the_game_is_built(monkeypatch):
    def not_built(spec):
        raise AssertionError("the game was built before the backend was checked")

    monkeypatch.setitem(sys.modules, "numba_cuda", None)
    monkeypatch.setattr("efce.games.spec.make_game", not_built)
    with pytest.raises(OptionError, match="needs numba-cuda, which is not installed"):
        efce.solve("farina-fig1", "rm", backend="cuda")
    with pytest.raises(OptionError, match="needs numba-cuda"):
        get_backend("cuda")


@pytest.mark.parametrize("method", ["cfr", "trigger", "lp-highs"])
def test_other_methods_refuse_the_backend_option(method):
    with pytest.raises(OptionError, match=f"{method} does not use --backend; it is an option of rm"):
        efce.solve("farina-fig1", method, backend="cuda")
