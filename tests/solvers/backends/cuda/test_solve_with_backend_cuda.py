"""``rm`` with ``backend="cuda"`` through the public entries (``efce.solve`` and ``efce solve
--backend cuda --json``) under numba-cuda's simulator: the CPU's contract — options, trace rows,
JSON keys, statuses, Ctrl-C with the trace kept, the welfare objective, no compilation after the
warm-up — with the reported plan in Ξ and its gap the CPU evaluator's; and the refusal that
needs numba-cuda to be importable (a model over the GPU's free memory).  The refusals of a
machine without numba-cuda or without a GPU are in :mod:`.test_backend_cuda_refusals`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import efce
from efce.errors import MemoryBudgetExceeded
from efce.games import load
from efce.games.relevant import relevant_pairs
from efce.polytopes.feasibility import FeasibilityCheck
from efce.solvers.evaluation.gaps import EFCEGapEvaluator
from efce.solvers.methods.welfare import solve_optimal_welfare
from tests.experiments.kernel_loads import in_a_fresh_process
from tests.experiments.signals import marker_environment, reached, signal_and_wait, wait_until
from tests.paths import GAME_DATA, ROOT

from .simulator import requires_simulator

pytestmark = requires_simulator

EFCE = [sys.executable, "-P", "-m", "efce"]
#: The child runs this source tree under the simulator (``-P`` keeps the working folder out of
#: its path).
SIMULATED = {
    **os.environ,
    "NUMBA_ENABLE_CUDASIM": "1",
    "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
}


@pytest.fixture(scope="module")
def three_doors():
    return load(GAME_DATA / "three_doors.efg")


def test_solve_runs_rm_on_the_gpu_with_the_cpus_keys_rows_and_a_plan_the_cpu_confirms(three_doors):
    options = {"target_gap": 2e-2, "iterations": 40}
    gpu = efce.solve(three_doors, "rm", backend="cuda", **options)
    cpu = efce.solve(three_doors, "rm", **options)
    assert gpu.status == cpu.status == "converged"
    assert gpu.info["backend"] == "cuda" and cpu.info["backend"] == "cpu"
    assert "simulator" in gpu.info["device"]
    assert set(gpu.info) == set(cpu.info) | {"device"}
    assert [set(row.extra) for row in gpu.trace] == [set(cpu.trace[0].extra)] * len(gpu.trace)
    assert gpu.trace[-1].iteration == gpu.iterations and gpu.trace[-1].gap <= 2e-2
    # The device's first launches are compiled outside the clock.
    assert gpu.compile_seconds is not None and gpu.compile_seconds > 0
    # The plan copied back once: in the polytope, its gap and welfare the CPU evaluator's.
    pairs = relevant_pairs(three_doors)
    assert FeasibilityCheck(three_doors, pairs)(gpu.point) <= 1e-9
    report = EFCEGapEvaluator(three_doors, pairs)(gpu.point)
    assert gpu.info["efce_gap"] == pytest.approx(report.gap, abs=1e-9)
    assert gpu.info["welfare"] == pytest.approx(report.welfare, abs=1e-9)
    assert gpu.trace[-1].gap == pytest.approx(report.gap, abs=1e-9)  # the last checkpoint's scalar
    assert gpu.info["feasible_iterates"] and gpu.info["plan_violation"] <= 1e-9


def test_welfare_objective_on_the_gpu_brackets_the_lp_optimum_as_the_cpu_does(three_doors):
    optimum = efce.solve(three_doors, "lp-highs", objective="welfare").info["welfare"]
    options = {"tolerance": 0.3, "gap_tolerance": 0.1, "step_iterations": 30, "iterations": 300}
    gpu = solve_optimal_welfare(three_doors, backend="cuda", **options)
    cpu = solve_optimal_welfare(three_doors, **options)
    lower, upper = gpu.info["welfare_interval"]
    assert gpu.info["backend"] == "cuda" and gpu.status == "converged" and upper - lower <= 0.3
    # The upper end is certified on the GPU (no EFCE reaches it); the lower end is the welfare
    # of the returned plan, a 0.1-EFCE, whose gap and welfare the CPU evaluator confirms.
    assert upper >= optimum - 1e-12 and lower <= optimum + 0.3
    assert [s["outcome"] for s in gpu.info["steps"]] == [s["outcome"] for s in cpu.info["steps"]]
    assert "infeasible" in {s["outcome"] for s in gpu.info["steps"]}
    assert gpu.info["welfare_interval"] == pytest.approx(cpu.info["welfare_interval"], abs=1e-6)
    report = EFCEGapEvaluator(three_doors, relevant_pairs(three_doors))(gpu.point)
    assert report.gap <= 0.1 and report.welfare == pytest.approx(lower, abs=1e-9)


def test_a_model_over_the_gpus_free_memory_is_refused_before_it_is_built(monkeypatch, three_doors):
    from efce.solvers.backends.cuda import CUDABackend

    def not_built(*args, **kwargs):
        raise AssertionError("the model was built before the memory check")

    monkeypatch.setattr(CUDABackend, "free_bytes", lambda self: 1e6)
    monkeypatch.setattr("efce.solvers.methods.efce.build_efce_model", not_built)
    monkeypatch.setattr("efce.solvers.methods.welfare.build_efce_model", not_built)
    for objective in ("feasibility", "welfare"):
        with pytest.raises(MemoryBudgetExceeded, match="too large for the GPU") as caught:
            efce.solve(three_doors, "rm", backend="cuda", objective=objective, iterations=5)
        assert "\n" not in str(caught.value)


def test_layouts_over_the_gpus_free_memory_are_refused_before_anything_is_copied(monkeypatch, three_doors):
    # The pre-build estimate fits the game families it was measured on; the layouts' exact
    # count (run_device_bytes) refuses any game it would let through, before any copy.
    from efce.solvers.backends.cuda import CUDABackend, saddle

    def not_copied(*args, **kwargs):
        raise AssertionError("a chain was copied to the GPU before the exact check")

    monkeypatch.setattr(CUDABackend, "free_bytes", lambda self: 1000.0)
    monkeypatch.setattr("efce.solvers.backends.cuda.backend.estimate_cuda_bytes", lambda game, **kw: 0)
    monkeypatch.setattr(saddle, "DeviceChain", not_copied)
    with pytest.raises(MemoryBudgetExceeded, match="too large for the GPU: its arrays take") as caught:
        efce.solve(three_doors, "rm", backend="cuda", iterations=5)
    assert "\n" not in str(caught.value)


def test_cli_json_has_the_cpus_keys_plus_the_device_and_says_the_simulator_on_stderr(tmp_path):
    def solve(*args):
        done = subprocess.run(
            [*EFCE, "solve", "farina-fig1", "--method", "rm", "--json", *args],
            capture_output=True,
            text=True,
            env=SIMULATED,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout), done.stderr

    gpu, err = solve("--backend", "cuda", "--trace", str(tmp_path / "trace.csv"))
    cpu, _ = solve()
    assert "simulator" in err and "NUMBA_ENABLE_CUDASIM" in err
    assert set(gpu) == set(cpu) | {"device"} and gpu["backend"] == "cuda"
    assert gpu["status"] == cpu["status"] == "converged" and gpu["compile_seconds"] > 0
    assert gpu["efce_gap"] <= 1e-9 and gpu["welfare"] == pytest.approx(cpu["welfare"])
    assert (tmp_path / "trace.csv").read_text().count("\n") >= 2  # header and a row


def test_ctrl_c_stops_the_gpu_loop_with_status_interrupted_and_the_trace_kept(tmp_path):
    trace, marker_file = tmp_path / "trace.csv", tmp_path / "markers"
    game = str(GAME_DATA / "three_doors.efg")
    proc = subprocess.Popen(
        [*EFCE, "solve", game, "--method", "rm", "--backend", "cuda", "--target-gap", "0"]
        + ["--iterations", "100000000", "--json", "--trace", str(trace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**marker_environment(marker_file), "NUMBA_ENABLE_CUDASIM": "1"},
    )
    try:
        # Into the timed loop, past the warm-up (on an empty numba cache it compiles for a
        # minute, and no stop is honoured inside a compilation), then a few simulated steps.
        assert wait_until(lambda: reached(marker_file, "honouring", pid=proc.pid), proc=proc)
        time.sleep(2.0)
        assert proc.poll() is None, proc.communicate()
        out, err, took = signal_and_wait(proc, signal.SIGINT)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert result["status"] == "interrupted" and result["backend"] == "cuda"
    assert result["iterations"] >= 2, result
    assert took < 10.0, f"{took:.1f} s from SIGINT to the exit"  # a simulated step takes ~0.4 s
    rows = trace.read_text().splitlines()
    assert len(rows) >= 2  # the checkpoints before the signal are kept
    assert result["plan_violation"] <= 1e-9


def test_after_the_warm_up_a_gpu_run_compiles_and_loads_no_kernel_in_its_setup_loop_or_report():
    # A device run builds its model with the CPU's kernels (DECOMPOSE, the operator's tables, the
    # device layouts) and reports with them: its warm-up must load them, or their compilation
    # (half a minute on an empty cache, where no stop is honoured) falls inside the run.
    options = {"backend": "cuda", "iterations": 3, "target_gap": 0.0}
    case = {"method": "rm", "game": str(GAME_DATA / "three_doors.efg"), "options": options}
    loads = in_a_fresh_process(case, env=SIMULATED, timeout=900)
    assert loads["status"] == "iteration_limit"
    assert any("polytopes.decompose" in name for name in loads["warm_up"]), loads["warm_up"]
    assert loads["run"] == [], "compiled or loaded after the warm-up"
