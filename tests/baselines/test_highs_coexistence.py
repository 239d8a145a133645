"""highspy and OR-Tools in one process: decided by behaviour, in both orders, for both layouts.

Up to highspy 1.15 both packages ship a ``libhighs.so.1`` and the second to load fails; from 1.16
highspy links HiGHS into its own extension.  The CI runs this file with the newest and with the
oldest versions the ranges allow, so both layouts are exercised for real; the tests below also
force the clashing layout's path (a worker process) on whichever layout is installed.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from efce.baselines import backends
from tests.paths import ROOT

SHERIFF = "sheriff:max_bribe=2,max_items=2,rounds=2"


def _ships_shared_libhighs(package: str) -> bool:
    import importlib.util

    folders = [Path(folder) for folder in importlib.util.find_spec(package).submodule_search_locations]
    folders += [folder.parent / f"{package}.libs" for folder in folders]  # auditwheel's place
    return any(next(folder.rglob("libhighs.so*"), None) for folder in folders if folder.is_dir())


def test_the_probe_agrees_with_what_the_packages_link():
    """Two independent answers: loading both in a child process, and the files each ships."""
    both_share_a_soname = _ships_shared_libhighs("highspy") and _ships_shared_libhighs("ortools")
    assert backends.highs_copies_coexist() is (not both_share_a_soname)


_SOLVE_IN_ORDER = """
import json, sys
import efce
out = []
for method in sys.argv[1:]:
    result = efce.solve({game!r}, method)
    out.append(dict(method=method, status=result.status, welfare=result.info["welfare"],
                    isolated=result.info["isolated"]))
print(json.dumps(out))
"""


def _solve_in_one_process(*methods, force_clash=False):
    code = _SOLVE_IN_ORDER.format(game=SHERIFF)
    if force_clash:  # the old layout's behaviour, on any installed layout
        code = "from efce.baselines import backends; backends.highs_copies_coexist = lambda: False\n" + code
    child = subprocess.run(
        [sys.executable, "-c", code, *methods], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert child.returncode == 0, child.stderr[-2000:]
    return json.loads(child.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("force_clash", [False, True], ids=["installed-layout", "clashing-layout"])
@pytest.mark.parametrize(
    "order", [("lp-pdlp", "lp-highs"), ("lp-highs", "lp-pdlp")], ids=["pdlp-first", "highs-first"]
)
def test_both_backends_reach_the_optimum_in_one_process(order, force_clash):
    first, second = _solve_in_one_process(*order, force_clash=force_clash)
    assert first["status"] == second["status"] == "converged"
    assert abs(first["welfare"] - second["welfare"]) <= 1e-5
    assert first["isolated"] is False  # nothing else was loaded yet
    clash = force_clash or not backends.highs_copies_coexist()
    assert second["isolated"] is clash
