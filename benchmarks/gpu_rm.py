"""The CUDA backend of ``efce solve --method rm`` against the CPU engine, on the paper's three
Battleship instances (issue 32): one command for a machine with an NVIDIA GPU, under 8 minutes on
an H100/H200 host with 16 cores.

For each game: build the model (timed), time iterations of the CPU engine on all cores and of the
GPU loop (:class:`efce.solvers.backends.cuda.saddle.CudaSaddlePoint`), checkpoints excluded, both
in ``efce solve --method rm``'s default configuration (PRM+, alternating updates, linear
averaging); then run one game (large by default) on the GPU from iteration 1 to max deviation
``--target-gap`` (1e-3) under the solver's checkpoint schedule, timing iterations and checkpoints,
and check the reported plan on the CPU: its Definition-3 violation
(:class:`efce.polytopes.feasibility.FeasibilityCheck`) and its max deviation by the CPU evaluator.
Prints a table and writes the numbers as JSON (``--out``).

    python benchmarks/gpu_rm.py [--games small medium large] [--out gpu_rm.json] [--budget 450]
    NUMBA_ENABLE_CUDASIM=1 python benchmarks/gpu_rm.py --games farina-fig1 --block-size 8 \\
        --gpu-iterations 3 --target-gap 0.05     # end to end without a GPU, under the simulator

``--budget`` (seconds, whole script) is a guard: a stage that would start past it is skipped and
reported as such, and the run to the target stops at the budget with status ``time_limit``.
The rm path imports none of cvxpy, highspy, ortools or dask (the device machine has none of
them); the JSON's ``heavy_modules_loaded`` says which were loaded, and the script fails if any was.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

GAMES = {
    "small": "battleship:rows=3,cols=2,ship_sizes=[1],shots=3",
    "medium": "battleship:rows=3,cols=2,ship_sizes=[1],shots=4",
    "large": "battleship:rows=3,cols=2,ship_sizes=[2],shots=4",
}
#: Modules the device machine lacks: the rm path must not import them.
HEAVY = ("cvxpy", "highspy", "ortools", "dask")
#: Seconds kept back from the target run for checking its plan on the CPU.
CHECK_RESERVE = 60.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", default=list(GAMES), help="small, medium, large or game specs")
    parser.add_argument("--out", default="gpu_rm.json")
    parser.add_argument("--budget", type=float, default=450.0, help="seconds for the whole script")
    parser.add_argument("--cpu-iterations", type=int, default=5, help="timed CPU iterations per game")
    parser.add_argument("--gpu-iterations", type=int, default=30, help="timed GPU iterations per game")
    parser.add_argument("--warmup", type=int, default=2, help="untimed iterations first (compilation)")
    parser.add_argument("--target-gap", type=float, default=1e-3)
    parser.add_argument("--target-game", default=None, help="the game run to the target (default: the last)")
    parser.add_argument("--max-iterations", type=int, default=5000, help="of the run to the target")
    parser.add_argument("--block-size", type=int, default=256, help="GPU threads per block")
    args = parser.parse_args()
    started = time.perf_counter()

    def remaining() -> float:
        return args.budget - (time.perf_counter() - started)

    import numba

    from efce.solvers.backends.cuda.saddle import CudaSaddlePoint, _cuda

    cuda = _cuda()
    simulated = _simulated()
    device = "numba-cuda simulator (no GPU)" if simulated else _device_name(cuda)
    specs = [GAMES.get(g, g) for g in args.games]
    target = GAMES.get(args.target_game, args.target_game) if args.target_game else specs[-1]
    results = {
        "device": device,
        "simulator": simulated,
        "host": {"cpu_threads": numba.get_num_threads(), "python": platform.python_version()},
        "versions": _versions(),
        "configuration": {"local": "prm+", "updates": "alternating", "averaging": "linear",
                          "block_size": args.block_size, "target_gap": args.target_gap},
        "games": [],
    }  # fmt: skip
    for spec in specs:
        if remaining() <= 0:
            results["games"].append({"game": spec, "skipped": "budget spent"})
            continue
        row = bench_game(spec, args, CudaSaddlePoint, remaining, run_to_target=spec == target)
        results["games"].append(row)
        print_row(row, flush=True)
    results["heavy_modules_loaded"] = sorted(m for m in HEAVY if m in sys.modules)
    results["seconds"] = time.perf_counter() - started
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=1)
    print_table(results)
    print(f"wrote {args.out}")
    if results["heavy_modules_loaded"]:
        sys.exit(f"the rm path imported {', '.join(results['heavy_modules_loaded'])}")


def _device_name(cuda) -> str:
    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
    _, total = cuda.current_context().get_memory_info()
    major, minor = device.compute_capability
    return f"{name} ({total / 2**30:.0f} GiB, compute capability {major}.{minor})"


def _simulated() -> bool:
    """numba-cuda's simulator (it reads the variable when numba.cuda is imported)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("numpy", "numba", "numba-cuda", "efce-toolkit"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def bench_game(spec: str, args, CudaSaddlePoint, remaining, *, run_to_target: bool) -> dict:
    """One game: build, CPU iterations, GPU iterations, and (``run_to_target``) the GPU run to
    the target with its plan checked on the CPU."""
    from efce.games.spec import make_game
    from efce.solvers.methods.efce import build_efce_model

    row: dict = {"game": spec}
    t = time.perf_counter()
    game = make_game(spec)
    model = build_efce_model(game)
    row["build_seconds"] = time.perf_counter() - t
    row["relevant_pairs"] = int(model.operator.shape[0])
    row["trigger_entries"] = int(model.operator.shape[1])
    if remaining() > 0:
        row["cpu"] = time_cpu(model, args.cpu_iterations, args.warmup, budget=max(remaining() / 4, 1.0))
    else:
        row["cpu"] = {"skipped": "budget spent"}
    if remaining() <= 0:
        row["gpu"] = {"skipped": "budget spent"}
        return row
    t = time.perf_counter()
    gpu = CudaSaddlePoint(model, "prm+", block_size=args.block_size)
    gpu.synchronize()
    row["gpu"] = {"setup_seconds": time.perf_counter() - t, "device_bytes": gpu.device_bytes}
    row["gpu"].update(time_gpu(gpu, args.gpu_iterations, args.warmup, budget=max(remaining() / 4, 1.0)))
    if "seconds_per_iteration" in row["gpu"] and "seconds_per_iteration" in row.get("cpu", {}):
        row["speedup"] = row["cpu"]["seconds_per_iteration"] / row["gpu"]["seconds_per_iteration"]
    if run_to_target:
        if remaining() > CHECK_RESERVE:
            row["target_run"] = run_gpu_to_target(gpu, model, args, remaining() - CHECK_RESERVE)
        else:
            row["target_run"] = {"skipped": "budget spent"}
    return row


def time_cpu(model, iterations: int, warmup: int, budget: float) -> dict:
    """Seconds per iteration of the CPU engine on numba's threads (all cores by default)."""
    import numba

    from efce.solvers.methods.efce import saddle_point_play
    from efce.solvers.regret.engine import minimizer_factory
    from efce.solvers.regret.local import PredictiveRMPlus

    t = time.perf_counter()
    play = saddle_point_play(model, minimizer_factory(None, None, PredictiveRMPlus()), alternating=True)
    setup = time.perf_counter() - t
    step = 1
    for _ in range(warmup):
        play.step(step)
        step += 1
    t0 = time.perf_counter()
    done = 0
    while done < iterations and (done == 0 or time.perf_counter() - t0 < budget):
        play.step(step)
        step += 1
        done += 1
    seconds = time.perf_counter() - t0
    return {
        "threads": numba.get_num_threads(),
        "setup_seconds": setup,
        "iterations": done,
        "seconds_per_iteration": seconds / done,
    }


def time_gpu(gpu, iterations: int, warmup: int, budget: float) -> dict:
    """Seconds per iteration of the GPU loop (synchronized before and after the timed
    iterations: launches return before their kernels end), the first iterations (JIT
    compilation, or loading the cached kernels) timed apart, and one checkpoint."""
    t = time.perf_counter()
    step = 1
    for _ in range(max(warmup, 1)):
        gpu.step(step)
        step += 1
    gpu.synchronize()
    first = time.perf_counter() - t
    t0 = time.perf_counter()
    done = 0
    while done < iterations and (done == 0 or time.perf_counter() - t0 < budget):
        gpu.step(step)
        step += 1
        done += 1
    gpu.synchronize()
    seconds = time.perf_counter() - t0
    t = time.perf_counter()
    gpu.checkpoint()
    checkpoint = time.perf_counter() - t
    return {
        "warmup_seconds": first,
        "iterations": done,
        "seconds_per_iteration": seconds / done,
        "checkpoint_seconds": checkpoint,
    }


def run_gpu_to_target(gpu, model, args, time_limit: float) -> dict:
    """From iteration 1 (the run's arrays reset) to ``--target-gap`` under the solver's driver
    (geometric checkpoints aimed at the target), then the plan checked on the CPU."""
    import numpy as np

    from efce.polytopes.feasibility import FeasibilityCheck
    from efce.solvers.driver import IterationDriver
    from efce.solvers.evaluation.gaps import EFCEGapEvaluator
    from efce.solvers.result import TraceRow

    gpu.reset()
    gpu.synchronize()
    driver = IterationDriver(iterations=args.max_iterations, time_limit=time_limit)
    check = None
    for t in driver:
        gpu.step(t)
        if not driver.checkpoint_due():
            continue
        gpu.synchronize()  # the iterations' kernels end inside the iteration time
        with driver.paused():
            check = gpu.checkpoint()
        row = TraceRow(t, driver.elapsed(), check.gap, max(check.violation_iterate, check.violation_average))
        if driver.record(row, converged=check.gap <= args.target_gap, aim=(check.gap, args.target_gap)):
            break
    out = {
        "status": driver.status,
        "iterations": driver.iteration,
        "seconds": driver.elapsed(),  # iterations and checkpoints
        "iteration_seconds": driver.iteration_seconds,
        "checkpoints": len(driver.trace),
        "max_deviation": check.gap,
        "violation_iterate": check.violation_iterate,
        "violation_average": check.violation_average,
    }
    t = time.perf_counter()
    plan = gpu.average()  # entry order, copied back once
    out["plan_copy_seconds"] = time.perf_counter() - t
    report = EFCEGapEvaluator(model.game, tables=model.tables).evaluate(plan)
    out["cpu_evaluator_max_deviation"] = report.gap
    out["max_deviation_agrees"] = bool(abs(report.gap - check.gap) <= 1e-6 * max(1.0, report.gap))
    pairs_plan = np.take(plan, model.entry_of_pair)
    del plan
    out["plan_violation"] = FeasibilityCheck(model.game, model.pairs)(pairs_plan)
    out["check_seconds"] = time.perf_counter() - t
    return out


def _fmt(value, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def print_row(row: dict, flush: bool = False) -> None:
    cpu, gpu = row.get("cpu", {}), row.get("gpu", {})
    print(
        f"{row['game']}: build {_fmt(row.get('build_seconds'), '.1f')} s, "
        f"CPU {_fmt(cpu.get('seconds_per_iteration'), '.4g')} s/it, "
        f"GPU {_fmt(gpu.get('seconds_per_iteration'), '.4g')} s/it",
        file=sys.stderr,
        flush=flush,
    )


def print_table(results: dict) -> None:
    print(f"\ndevice: {results['device']}  (CPU threads: {results['host']['cpu_threads']})")
    head = (
        "game",
        "pairs",
        "build s",
        "CPU s/it",
        "GPU s/it",
        "speedup",
        "GPU setup s",
        "GPU MiB",
        "checkpoint s",
    )
    print(" | ".join(head))
    print(" | ".join("---" for _ in head))
    for row in results["games"]:
        if "skipped" in row:
            print(f"{row['game']} | skipped: {row['skipped']}")
            continue
        cpu, gpu = row.get("cpu", {}), row.get("gpu", {})
        print(
            " | ".join(
                [
                    row["game"],
                    f"{row['relevant_pairs']:,}",
                    _fmt(row.get("build_seconds"), ".1f"),
                    _fmt(cpu.get("seconds_per_iteration"), ".4g"),
                    _fmt(gpu.get("seconds_per_iteration"), ".4g"),
                    _fmt(row.get("speedup"), ".3g"),
                    _fmt(gpu.get("setup_seconds"), ".1f"),
                    _fmt(gpu.get("device_bytes", 0) / 2**20 if "device_bytes" in gpu else None, ",.0f"),
                    _fmt(gpu.get("checkpoint_seconds"), ".4g"),
                ]
            )
        )
    for row in results["games"]:
        run = row.get("target_run")
        if run and "skipped" not in run:
            print(
                f"\n{row['game']} to max deviation {results['configuration']['target_gap']:g} on the GPU: "
                f"{run['status']} after {run['iterations']} iterations, {run['seconds']:.2f} s "
                f"({run['iteration_seconds']:.2f} s iterating, {run['checkpoints']} checkpoints); "
                f"max deviation {run['max_deviation']:.3e} "
                f"(CPU evaluator {run['cpu_evaluator_max_deviation']:.3e}), "
                f"plan violation {run['plan_violation']:.1e} (Definition 3)"
            )
        elif run:
            print(f"\n{row['game']}: run to the target skipped ({run['skipped']})")
    print(
        f"heavy modules loaded: {results['heavy_modules_loaded'] or 'none'}; "
        f"{results['seconds']:.0f} s in all"
    )


if __name__ == "__main__":
    main()
