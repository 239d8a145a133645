"""``subgradient``'s iterations are NumPy and SciPy, no numba kernel (``Method.warms_its_clock``):
made in numba's ``auto`` mode, as a user runs it, with a time limit, its setup runs small kernel
calls as Python and its clock none at all (issue 40: so its first run in the README's job
compiles nothing on the small game).

In a fresh process (a variant compiled earlier in the process would run compiled, unseen), with
the Python-run kernel calls counted at each trace row: between the first row and the last they
do not grow."""

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

rows = []
result = efce.solve("sheriff:max_bribe=1,max_items=2,rounds=2", method="subgradient", time_limit=60,
                    iterations=200, progress=lambda row: rows.append(twin_calls()))
print(json.dumps({"kernels": result.info["kernels"], "rows": rows,
                  "compile_seconds": result.compile_seconds}))
"""


def test_subgradient_iterates_without_kernels_and_runs_its_small_setup_as_python():
    env = {k: v for k, v in os.environ.items() if k != "EFCE_KERNELS"}  # the user's auto mode
    child = subprocess.run(
        [sys.executable, "-c", _CHILD], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert child.returncode == 0, child.stderr[-2000:]
    out = json.loads(child.stdout.splitlines()[-1])
    assert out["kernels"] == "interpreted"  # the setup's small calls ran as Python, not compiled
    assert len(out["rows"]) >= 3
    assert len(set(out["rows"])) == 1, out["rows"]  # no kernel call inside the loop
