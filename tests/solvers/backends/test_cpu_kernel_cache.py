"""The CPU kernels' on-disk cache never runs stale code: numba keys a cached kernel on its own
source file only, and the kernels inline or call code of other modules of the backend, so their
cache is also keyed on every module of it (:mod:`efce.solvers.backends.cpu.jit`)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from efce.games.resources.numba_cache import CheckedCache
from efce.solvers.backends.cpu import chain_passes, operator, rules
from efce.solvers.backends.cpu.jit import kernel, kernel_sources, source_stamp

CALLER = """
import sys
from pathlib import Path

import numba

from efce.solvers.backends.cpu.jit import StampedKernels
from helper import step

here = Path(__file__).parent
kernel = StampedKernels([here / "caller.py", here / "helper.py"])


@kernel()
def stamped(x):
    return step(x)


print(stamped(1.0))
"""

HELPER = """
import numba


@numba.njit(inline="always")
def step(x):
    return x + {}
"""


def _run(folder, env):
    child = subprocess.run(
        [sys.executable, "caller.py"], cwd=folder, env=env, capture_output=True, text=True, timeout=300
    )
    assert child.returncode == 0, child.stderr[-2000:]
    return float(child.stdout.split()[-1])


def test_a_kernel_recompiles_when_a_module_it_inlines_changes(tmp_path):
    (tmp_path / "caller.py").write_text(textwrap.dedent(CALLER))
    (tmp_path / "helper.py").write_text(textwrap.dedent(HELPER.format("1.0")))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    assert _run(tmp_path, env) == 2.0
    assert _run(tmp_path, env) == 2.0  # from the cache
    assert any((tmp_path / "cache").rglob("*.nbi"))
    # Only the helper changes: a plain numba.njit(cache=True) kernel would still return 2.0.
    (tmp_path / "helper.py").write_text(textwrap.dedent(HELPER.format("100.0")))
    assert _run(tmp_path, env) == 101.0


def test_every_kernel_is_keyed_on_every_module_of_the_backend():
    for dispatcher in (rules.observe_segments, chain_passes.chain_observe, operator.following_matvec):
        assert isinstance(dispatcher._cache, CheckedCache)
        assert dispatcher._cache.stamp == kernel.cache_class.stamp
    names = {path.name for path in kernel_sources()}
    assert {"rules.py", "chain_passes.py", "operator.py", "gaps.py", "feasibility.py", "jit.py"} <= names


def test_the_stamp_changes_with_any_stamped_file(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 1\n")
    before = source_stamp([a, b], (0, 1))
    assert source_stamp([a, b], (0, 1)) == before
    b.write_text("y = 2\n")
    assert source_stamp([a, b], (0, 1)) != before
    b.write_text("y = 1\n")
    assert source_stamp([a, b], (0, 1)) == before
    assert source_stamp([a, b], (1, 0)) != before  # the constants the kernels freeze count too
