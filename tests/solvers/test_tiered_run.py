"""``efce.solve`` first attempts a run without a time limit with its kernels run as Python, and
keeps it when it ends soon enough (:func:`efce.solvers.warm_up.tiered_run`); otherwise it drops
the attempt unseen and runs compiled, warm-up first, with the same iterates.  A run with a time
limit, or under ``EFCE_KERNELS=compiled``, compiles from the start.

The attempts run in a fresh process: a kernel this process has compiled already (the suite runs
compiled) is always run compiled, so an attempt here would run no kernel as Python."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from efce.experiments.solve import solve
from efce.solvers import warm_up
from tests.paths import ROOT

SMALL = "sheriff:max_bribe=1,max_items=2,rounds=2"

#: Solves SMALL with rm in a fresh process (``EFCE_KERNELS=auto``, a user's default) and prints,
#: as JSON, what each solve gave: first the attempt as configured by argv[1] (the attempt's CPU
#: seconds), then, if argv[2] is "compare", the same run compiled from the start.
_CHILD = """
import json, os, sys
from efce.experiments.solve import solve
from efce.solvers import warm_up
warm_up.INTERPRETED_ATTEMPT_SECONDS = float(sys.argv[1])
def run():
    rows = []
    result = solve(SMALL, "rm", progress=rows.append, iterations=60, target_gap=0.0)
    return {
        "kernels": result.info["kernels"],
        "iterations": result.iterations,
        "point": result.point.tolist(),
        "compile_seconds": result.compile_seconds,
        "rows": [(r.iteration, r.gap) for r in rows],
        "trace": [(r.iteration, r.gap) for r in result.trace],
    }
out = [run()]
if sys.argv[2] == "compare":  # the same run compiled from the start
    os.environ["EFCE_KERNELS"] = "compiled"
    out.append(run())
print(json.dumps(out))
""".replace("SMALL", repr(SMALL))


def _child(seconds: float, compare: bool) -> list[dict]:
    env = dict(os.environ, EFCE_KERNELS="auto")
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(seconds), "compare" if compare else "-"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    return json.loads(child.stdout.splitlines()[-1])


def test_a_small_run_without_a_time_limit_runs_as_python():
    (result,) = _child(warm_up.INTERPRETED_ATTEMPT_SECONDS, compare=False)
    assert result["kernels"] == "interpreted"
    assert result["rows"] == result["trace"] and result["iterations"] == 60


def test_an_attempt_that_outgrows_python_is_run_again_compiled_with_the_same_iterates():
    dropped, compiled = _child(0.0, compare=True)  # the attempt ends at its first kernel call
    assert dropped["kernels"] == "compiled" and compiled["kernels"] == "compiled"
    assert dropped["rows"] == dropped["trace"]  # the attempt's rows were held back, not passed on twice
    assert dropped["point"] == compiled["point"]
    assert dropped["rows"] == compiled["rows"]
    assert dropped["compile_seconds"] is not None and dropped["compile_seconds"] > 0


def test_a_kept_attempt_whose_kernels_were_compiled_already_says_compiled(monkeypatch):
    # This process runs compiled (the suite's mode): every kernel the attempt calls is compiled.
    solve(SMALL, "rm", iterations=5, target_gap=0.0)
    monkeypatch.setenv("EFCE_KERNELS", "auto")
    result = solve(SMALL, "rm", iterations=5, target_gap=0.0)
    assert result.info["kernels"] == "compiled"


def test_a_run_with_a_time_limit_compiles_from_the_start(monkeypatch):
    monkeypatch.setenv("EFCE_KERNELS", "auto")
    attempts = []
    monkeypatch.setattr(warm_up, "interpreted_attempt", lambda seconds: attempts.append(seconds))
    result = solve(SMALL, "rm", iterations=60, target_gap=0.0, time_limit=60.0)
    assert result.info["kernels"] == "compiled" and not attempts


def test_compiled_only_turns_the_attempt_off(monkeypatch):
    monkeypatch.setenv("EFCE_KERNELS", "compiled")
    assert not warm_up.attempts_interpreted({"time_limit": None})
    monkeypatch.setenv("EFCE_KERNELS", "auto")
    assert warm_up.attempts_interpreted({"time_limit": None, "backend": "cpu"})
    assert not warm_up.attempts_interpreted({"time_limit": 1.0})
    assert not warm_up.attempts_interpreted({"time_limit": None, "backend": "cuda"})
