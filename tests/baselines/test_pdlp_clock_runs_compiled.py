"""``lp-pdlp`` warms its own clock (``Method.warms_its_clock``): made in numba's ``auto`` mode,
as a user runs it, its setup runs small kernel calls as Python, while the evaluations of its
stages, which its clock times, run compiled code only, since the run compiles them on the zero
plan before the clock starts (issue 40: this is what spares an empty cache the setup's 40-odd
kernel variants).

In a fresh process (a variant compiled earlier in the process would run compiled anyway), with
every call of the gap evaluator recorded with its plan's size and the Python-run kernel calls it
made."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.paths import ROOT

_CHILD = """
import json
import efce
from efce.games.resources.compiled import twin_calls
from efce.solvers.evaluation import gaps

calls = []
evaluate = gaps.EFCEGapEvaluator.__call__

def recorded(self, xi):
    before = twin_calls()
    report = evaluate(self, xi)
    calls.append([len(xi), twin_calls() - before])
    return report

gaps.EFCEGapEvaluator.__call__ = recorded
result = efce.solve("sheriff:max_bribe=1,max_items=2,rounds=2", method="lp-pdlp", time_limit=60)
print(json.dumps({"status": result.status, "kernels": result.info["kernels"],
                  "stages": len(result.trace), "calls": calls}))
"""


def test_lp_pdlp_evaluates_its_stages_compiled_with_its_setup_run_as_python():
    env = {k: v for k, v in os.environ.items() if k != "EFCE_KERNELS"}  # the user's auto mode
    child = subprocess.run(
        [sys.executable, "-c", _CHILD], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert child.returncode == 0, child.stderr[-2000:]
    out = json.loads(child.stdout.splitlines()[-1])
    assert out["status"] == "converged"
    assert out["kernels"] == "interpreted"  # small calls of the setup ran as Python
    # The warm-up's tiny game is evaluated too, with fewer pairs; the game's own plans are
    # evaluated on the zero plan before the clock, at each stage, and in the report.
    pairs = max(size for size, _ in out["calls"])
    own = [python for size, python in out["calls"] if size == pairs]
    assert len(own) >= out["stages"] + 1 >= 2
    assert own == [0] * len(own), out["calls"]
