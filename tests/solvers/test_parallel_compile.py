"""A warm-up that compiles shares the work with helper processes (:mod:`efce.solvers.parallel_compile`):
each variant is compiled by one process and loaded from the cache by the others, the run gives
what a warm-up compiled in one process gives, and a warm cache starts no helper.

The cold runs go in fresh processes on an empty cache folder of their own: this process has
compiled the kernels already, and a compiled variant is never compiled again."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from efce.errors import OptionError
from efce.solvers import parallel_compile
from efce.solvers.parallel_compile import MAX_WORKERS, WORKERS_VARIABLE, compile_together, compile_workers
from tests.paths import ROOT

#: Solves two-player Kuhn with CFR+ compiled from the start and prints, as JSON, the helpers
#: started (one list per warm-up that started some), the compile events of this process, the
#: trace and the final strategies.
_CHILD = """
import json
import numpy as np
from numba.core import event
from efce.experiments.solve import solve
from efce.solvers import warm_up

started = []
original = warm_up.compile_together
def spy(*args, **kwargs):
    return original(*args, notice=started.append, **kwargs)
warm_up.compile_together = spy

class Count(event.Listener):
    n = 0
    def on_start(self, _event):
        Count.n += 1
    def on_end(self, _event):
        pass
event.register("numba:compile", Count())
result = solve("kuhn:players=2", "cfr+", iterations=30)
print(json.dumps({
    "helpers": started,
    "compiles": Count.n,
    "trace": [(r.iteration, r.gap) for r in result.trace],
    "point": [np.asarray(p).tolist() for p in result.point],
}))
"""


def _solve(cache: str, workers: int) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, EFCE_KERNELS="compiled", **{WORKERS_VARIABLE: str(workers)})
    child = subprocess.run(
        [sys.executable, "-c", _CHILD], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert child.returncode == 0, child.stderr[-2000:]
    return json.loads(child.stdout.splitlines()[-1])


def test_a_cold_warm_up_shares_its_compiling_with_a_helper_and_gives_the_same_run(tmp_path):
    alone = _solve(str(tmp_path / "alone"), workers=0)
    shared = _solve(str(tmp_path / "shared"), workers=1)
    assert alone["helpers"] == [] and shared["helpers"] == [1]
    # The helper compiled some of the variants: this process compiled fewer of them.
    assert 0 < shared["compiles"] < alone["compiles"]
    assert shared["trace"] == alone["trace"] and shared["point"] == alone["point"]
    # On the cache the helper filled, nothing compiles and no helper starts.
    again = _solve(str(tmp_path / "shared"), workers=1)
    assert again["helpers"] == [] and again["compiles"] == 0 and again["point"] == alone["point"]


_RUNS: list[int] = []


def _records_its_runs(game, progress=None, **settings):
    _RUNS.append(game.num_players)


def test_runs_that_compile_nothing_are_the_whole_warm_up_and_start_no_helper(monkeypatch):
    monkeypatch.setenv(WORKERS_VARIABLE, "2")
    started: list[int] = []
    _RUNS.clear()
    whole = compile_together(_records_its_runs, 2, "none", {}, [None, (1, 5)], notice=started.append)
    assert whole and started == [] and _RUNS == [2, 2]  # one tiny run per size class, here


def test_no_helpers_when_asked_for_none_or_when_the_options_cannot_travel(monkeypatch):
    _RUNS.clear()
    monkeypatch.setenv(WORKERS_VARIABLE, "0")
    assert not compile_together(_records_its_runs, 2, "none", {}, [None])
    monkeypatch.setenv(WORKERS_VARIABLE, "2")
    assert not compile_together(_records_its_runs, 2, "none", {}, [None], threads=1)  # --threads 1
    assert not compile_together(_records_its_runs, 2, "none", {"stop": lambda: None}, [None])
    assert _RUNS == []  # none ran anything: the warm-up's own loop does


@pytest.mark.parametrize("value", ["-1", "two", "1.5"])
def test_a_bad_worker_count_is_refused_in_one_line(monkeypatch, value):
    monkeypatch.setenv(WORKERS_VARIABLE, value)
    with pytest.raises(OptionError, match=f"{WORKERS_VARIABLE} must be a whole number"):
        compile_workers()


def test_the_worker_count_defaults_to_the_other_cores(monkeypatch):
    monkeypatch.delenv(WORKERS_VARIABLE, raising=False)
    monkeypatch.setattr(parallel_compile, "usable_cores", lambda: 2)
    assert compile_workers() == 1
    monkeypatch.setattr(parallel_compile, "usable_cores", lambda: 64)
    assert compile_workers() == MAX_WORKERS
    monkeypatch.setattr(parallel_compile, "usable_cores", lambda: 1)
    assert compile_workers() == 0
    monkeypatch.setenv(WORKERS_VARIABLE, "3")
    assert compile_workers() == 3


def test_a_warm_up_shares_its_compiling_only_when_compiled_on_the_cpu(monkeypatch):
    from efce import games
    from efce.games.resources.compiled import kernel_mode
    from efce.solvers import warm_up

    asked: list[int | None] = []

    def together(*args, threads=None, **kwargs):
        asked.append(threads)
        return False  # the warm-up's own loop runs

    monkeypatch.setattr(warm_up, "compile_together", together)
    monkeypatch.setattr(warm_up, "_WARMED", set())
    game = games.sheriff(max_bribe=1, max_items=1, rounds=1)
    with kernel_mode("compiled"):
        warm_up.warm_up_run(_records_its_runs, game, {"threads": 2})
        warm_up.warm_up_run(_records_its_runs, game, {"threads": 2, "backend": "cuda"})  # a device's loop
    with kernel_mode("auto"):  # a tiny run's calls run as Python: nothing to share
        warm_up.warm_up_run(_records_its_runs, game, {"threads": 3})
    assert asked == [2]


def _compiles_a_new_kernel(game, progress=None, **settings):
    from efce.games.resources.compiled import compiled

    @compiled
    def twice(x):
        return 2 * x

    _RUNS.append(twice(game.num_players))


def test_a_helper_that_cannot_start_leaves_the_warm_up_to_this_process(monkeypatch):
    monkeypatch.setenv(WORKERS_VARIABLE, "1")

    def no_interpreter(*args, **kwargs):
        raise OSError("no Python to start")

    monkeypatch.setattr(parallel_compile.subprocess, "Popen", no_interpreter)
    started: list[int] = []
    _RUNS.clear()
    whole = compile_together(_compiles_a_new_kernel, 2, "none", {}, [None], notice=started.append)
    assert whole and started == [0] and _RUNS == [4]  # it compiled here, and the run went on
