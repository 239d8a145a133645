"""Issue 37: the exact side for EFCE, EFCCE and NFCCE, and two-player games with public chance.
Each case runs ``efce solve`` as a user would, in a fresh process, and reports its JSON (times,
welfare, gaps, peak memory).  Targets on a 2-core machine:

* full Sheriff (375,165 pairs): ``lp-pdlp`` optimum of EFCCE and NFCCE, each ≤ 150 s (and of
  EFCE, the README's job's LP, for reference), and the same LPs by Clarabel's interior-point
  method (``lp-cvxpy --lp-solver clarabel``), which solves the coarse ones within that; ``rm
  --objective welfare`` intervals at most 1e-2 wide, each ≤ 120 s;
* ``goofspiel:players=2,ranks=4,prizes=random`` (public chance, 265,393 pairs): ``rm`` to max
  deviation 1e-3 for EFCE ≤ 60 s; ``lp-pdlp`` to its optimum ≤ 300 s;
* ``goofspiel:players=2,ranks=5,prizes=random`` (36M pairs): ``rm`` within its memory estimate
  (``efce info``'s ``estimated_rm_bytes``), with its time to 1e-2 and 1e-3.

    python benchmarks/bench_concepts.py [--only CASE,...] [--out FILE]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

from harness import main

SHERIFF = "sheriff:max_bribe=3,max_items=3,rounds=4"
GOOF4 = "goofspiel:players=2,ranks=4,prizes=random"
GOOF5 = "goofspiel:players=2,ranks=5,prizes=random"
#: The LP by Clarabel's interior-point method, through cvxpy (``lp-cvxpy``).
CLARABEL = ("lp-cvxpy", "--lp-solver", "clarabel")


def _solve(spec: str, *args: str, trace: bool = False) -> dict:
    """``efce solve SPEC ARGS --json`` in a child process: its JSON, its trace rows (``trace``)
    and the whole process's peak resident memory (``/usr/bin/time``-free: from the JSON)."""
    with tempfile.TemporaryDirectory() as folder:
        extra = ["--trace", f"{folder}/trace.csv"] if trace else []
        out = subprocess.run(
            [sys.executable, "-m", "efce", "solve", spec, *args, "--json", *extra],
            capture_output=True,
            text=True,
        )
        result = json.loads(out.stdout)
        if trace:
            import csv

            with open(f"{folder}/trace.csv", newline="") as fh:
                result["trace"] = [
                    {k: float(v) for k, v in row.items() if k in ("iteration", "seconds", "gap")}
                    for row in csv.DictReader(fh)
                ]
    return result


def _keep(result: dict, *keys: str) -> dict:
    return {k: result.get(k) for k in keys if k in result}


def _case_lp(spec: str, concept: str, *method: str):
    """The concept's optimal welfare by an LP method (``lp-pdlp`` unless ``method`` says, e.g.
    ``("lp-cvxpy", "--lp-solver", "clarabel")``: Clarabel's interior-point method)."""

    def run():
        r = _solve(spec, "--method", *(method or ("lp-pdlp",)), "--concept", concept, "--time-limit", "600")
        return _keep(
            r,
            "status",
            "seconds",
            "setup_seconds",
            "compile_seconds",
            "welfare",
            f"{concept}_gap",
            "max_violation",
            "iterations",
            "peak_memory_mib",
        )

    return run


def _case_rm_welfare(spec: str, concept: str):
    def run():
        r = _solve(
            spec, "--method", "rm", "--concept", concept, "--objective", "welfare", "--time-limit", "600"
        )
        return _keep(
            r,
            "status",
            "seconds",
            "setup_seconds",
            "compile_seconds",
            "welfare_interval",
            "interval_width",
            "gap_tolerance",
            "bisection_steps",
            "iterations",
            "peak_memory_mib",
        )

    return run


def _case_rm_to_gap(spec: str, target: float, time_limit: int):
    def run():
        from efce.games.spec import make_game
        from efce.solvers.methods.efce import estimate_efce_bytes

        estimate = estimate_efce_bytes(make_game(spec))
        r = _solve(
            spec, "--method", "rm", "--target-gap", f"{target:g}", "--time-limit", str(time_limit), trace=True
        )
        reached = {
            f"{g:g}": next((row["seconds"] for row in r.get("trace", []) if row["gap"] <= g), None)
            for g in (1e-2, 1e-3)
        }
        out = _keep(
            r,
            "status",
            "seconds",
            "setup_seconds",
            "compile_seconds",
            "efce_gap",
            "iterations",
            "peak_memory_mib",
        )
        out.update(
            seconds_to_gap=reached,
            estimated_rm_mib=round(estimate / 2**20, 1),
            within_estimate=r.get("peak_memory_mib", float("inf")) <= estimate / 2**20,
        )
        return out

    return run


CASES = {
    "sheriff-lp-efce": _case_lp(SHERIFF, "efce"),
    "sheriff-lp-efcce": _case_lp(SHERIFF, "efcce"),
    "sheriff-lp-nfcce": _case_lp(SHERIFF, "nfcce"),
    **{f"sheriff-clarabel-{c}": _case_lp(SHERIFF, c, *CLARABEL) for c in ("efce", "efcce", "nfcce")},
    "sheriff-rm-welfare-efcce": _case_rm_welfare(SHERIFF, "efcce"),
    "sheriff-rm-welfare-nfcce": _case_rm_welfare(SHERIFF, "nfcce"),
    "goofspiel4-rm-efce": _case_rm_to_gap(GOOF4, 1e-3, 600),
    "goofspiel4-lp-efce": _case_lp(GOOF4, "efce"),
    "goofspiel5-rm-efce": _case_rm_to_gap(GOOF5, 1e-3, 3600),
}

if __name__ == "__main__":
    main(CASES, __doc__)
