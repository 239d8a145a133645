"""The CUDA backend of ``efce solve --method rm`` against the CPU engine, on the paper's three
Battleship instances (issue 32): one command for a machine with an NVIDIA GPU, under 8 minutes on
an H100/H200 host with 16 cores.

For each game: build the model (timed), time iterations of the CPU engine on all cores and of the
GPU loop (the run :meth:`efce.solvers.backends.cuda.CUDABackend.saddle_point` makes for
``solve_efce``), checkpoints excluded, both in ``efce solve --method rm``'s default configuration
(PRM+, alternating updates, linear averaging); then run one game (large by default) to max
deviation ``--target-gap`` (1e-3) through ``solve_efce(game, model=..., backend=...)`` on the same
GPU run (its driver, checkpoint schedule and final report: the plan's Definition-3 violation and
its max deviation by the CPU evaluator); then, unless ``--no-cli``, the whole command
``efce solve TARGET --method rm --backend cuda --json`` from the spec string to the JSON, timed
in a child process.  Prints a table and writes the numbers as JSON (``--out``).

    python benchmarks/gpu_rm.py [--games small medium large] [--out gpu_rm.json] [--budget 450]
    python benchmarks/gpu_rm.py --quick      # small and medium, medium to the target: ~2-3 min
    NUMBA_ENABLE_CUDASIM=1 python benchmarks/gpu_rm.py --games farina-fig1 \\
        --gpu-iterations 3 --target-gap 0.05   # end to end without a GPU, under the simulator

``--budget`` (seconds, whole script) is a guard: a stage that would start past it is skipped and
reported as such, and the run to the target stops at the budget with status ``time_limit``.
The rm path imports none of cvxpy, highspy, ortools or dask (the device machine has none of
them); the JSON's ``heavy_modules_loaded`` says which were loaded, and the script fails if any was.
"""

from __future__ import annotations

import argparse
import json
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


#: ``--quick``: what a short device session (15 minutes in all, start-up included) has room for.
QUICK = {
    "games": ["small", "medium"],
    "budget": 240.0,
    "cpu_iterations": 3,
    "gpu_iterations": 10,
    "cli": False,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", default=None, help="small, medium, large or game specs")
    parser.add_argument("--out", default="gpu_rm.json")
    parser.add_argument("--budget", type=float, default=None, help="seconds for the whole script (450)")
    parser.add_argument("--cpu-iterations", type=int, default=None, help="timed CPU iterations per game (5)")
    parser.add_argument("--gpu-iterations", type=int, default=None, help="timed GPU iterations per game (30)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed iterations first")
    parser.add_argument("--target-gap", type=float, default=1e-3)
    parser.add_argument("--target-game", default=None, help="the game run to the target (default: the last)")
    parser.add_argument("--max-iterations", type=int, default=5000, help="of the run to the target")
    parser.add_argument(
        "--block-size", type=int, default=None, help="GPU threads per block (backend's default)"
    )
    parser.add_argument(
        "--no-cli", dest="cli", action="store_false", default=None, help="skip the command's run"
    )
    parser.add_argument(
        "--quick", action="store_true", help="small and medium only, fewer iterations, no command"
    )
    args = parser.parse_args()
    full = {"games": list(GAMES), "budget": 450.0, "cpu_iterations": 5, "gpu_iterations": 30, "cli": True}
    for name, value in (QUICK if args.quick else full).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    started = time.perf_counter()

    def remaining() -> float:
        return args.budget - (time.perf_counter() - started)

    import numba

    from efce.solvers.backends.cuda import CUDABackend

    # Refuses in one line where it cannot run (no numba-cuda, no GPU, NUMBA_ENABLE_CUDASIM unset).
    backend = CUDABackend(**({} if args.block_size is None else {"block_size": args.block_size}))
    specs = [GAMES.get(g, g) for g in args.games]
    target = GAMES.get(args.target_game, args.target_game) if args.target_game else specs[-1]
    results = {
        "device": backend.device,
        "simulator": backend.simulator,
        "host": {"cpu_threads": numba.get_num_threads(), "python": platform.python_version()},
        "versions": _versions(),
        "configuration": {"local": "prm+", "updates": "alternating", "averaging": "linear",
                          "block_size": backend.sizes["block_size"], "target_gap": args.target_gap,
                          "quick": args.quick},
        "games": [],
    }  # fmt: skip
    for spec in specs:
        if remaining() <= 0:
            results["games"].append({"game": spec, "skipped": "budget spent"})
            continue
        row = bench_game(spec, args, backend, remaining, run_to_target=spec == target)
        backend.release()  # this game's device arrays go before the next game's
        results["games"].append(row)
        print_row(row, flush=True)
    if args.cli:
        results["command"] = run_command(target, args, remaining)
    results["heavy_modules_loaded"] = sorted(m for m in HEAVY if m in sys.modules)
    results["seconds"] = time.perf_counter() - started
    with open(args.out, "w") as fh:
        json.dump(results, fh, indent=1)
    print_table(results)
    print(f"wrote {args.out}")
    if results["heavy_modules_loaded"]:
        sys.exit(f"the rm path imported {', '.join(results['heavy_modules_loaded'])}")


def run_command(spec: str, args, remaining) -> dict:
    """``efce solve SPEC --method rm --backend cuda --json`` in a child process, from the spec
    string to the JSON (its build on the host's cores, the kernels loaded from numba-cuda's
    cache), wall-clock timed."""
    import subprocess

    if remaining() <= 30:
        return {"game": spec, "skipped": "budget spent"}
    command = [sys.executable, "-m", "efce", "solve", spec, "--method", "rm", "--backend", "cuda"]
    command += [
        "--target-gap",
        str(args.target_gap),
        "--time-limit",
        str(max(remaining() - 20, 10)),
        "--json",
    ]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=max(remaining(), 30))
    except subprocess.TimeoutExpired:
        return {"game": spec, "skipped": "budget spent while it ran"}
    out = {"game": spec, "wall_seconds": time.perf_counter() - started, "returncode": done.returncode}
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        out["stderr"] = done.stderr[-2000:]
        return out
    keys = (
        "status",
        "iterations",
        "setup_seconds",
        "seconds",
        "compile_seconds",
        "efce_gap",
        "plan_violation",
    )
    out.update({k: result.get(k) for k in keys})
    return out


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("numpy", "numba", "numba-cuda", "efce-toolkit"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def bench_game(spec: str, args, backend, remaining, *, run_to_target: bool) -> dict:
    """One game: build, CPU iterations, GPU iterations, and (``run_to_target``) the run to the
    target through ``solve_efce`` on the same GPU run, its plan checked on the CPU."""
    from efce.games.spec import make_game
    from efce.solvers.methods.efce import DEFAULTS, build_efce_model, device_rule

    row: dict = {"game": spec}
    t = time.perf_counter()
    game = make_game(spec)
    row["estimated_gpu_bytes"] = backend.check_memory(game)  # refused here if it does not fit
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
    # rm's default dynamics, as solve_efce asks for them: the target run below reuses this run.
    gpu = backend.saddle_point(model, device_rule(DEFAULTS["local"], None), alternating=True, power=1.0)
    gpu.synchronize()
    row["gpu"] = {"setup_seconds": time.perf_counter() - t, "device_bytes": gpu.device_bytes}
    row["gpu"]["compile_seconds"] = gpu.warm_up()
    row["gpu"].update(time_gpu(gpu, args.gpu_iterations, args.warmup, budget=max(remaining() / 4, 1.0)))
    if "seconds_per_iteration" in row["gpu"] and "seconds_per_iteration" in row.get("cpu", {}):
        row["speedup"] = row["cpu"]["seconds_per_iteration"] / row["gpu"]["seconds_per_iteration"]
    if run_to_target:
        if remaining() > CHECK_RESERVE:
            row["target_run"] = run_gpu_to_target(model, backend, args, remaining() - CHECK_RESERVE)
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


def run_gpu_to_target(model, backend, args, time_limit: float) -> dict:
    """From iteration 1 to ``--target-gap`` through ``solve_efce`` on ``backend`` (the run kept
    from the timing, reset; geometric checkpoints aimed at the target), then its final report:
    the plan's Definition-3 violation and its max deviation by the CPU evaluator."""
    from efce.solvers.methods.efce import solve_efce

    t = time.perf_counter()
    result = solve_efce(
        model.game,
        model=model,
        backend=backend,
        target_gap=args.target_gap,
        iterations=args.max_iterations,
        time_limit=time_limit,
    )
    wall = time.perf_counter() - t
    last = result.trace[-1] if result.trace else None
    return {
        "status": result.status,
        "iterations": result.iterations,
        "seconds": result.seconds,  # iterations and checkpoints
        "iteration_seconds": result.info["iteration_seconds"],
        "checkpoints": len(result.trace),
        "max_deviation": None if last is None else last.gap,  # the GPU's last checkpoint
        "violation_iterate": None if last is None else last.extra["violation_iterate"],
        "violation_average": None if last is None else last.extra["violation_average"],
        "cpu_evaluator_max_deviation": result.info["efce_gap"],
        "max_deviation_agrees": last is not None
        and abs(result.info["efce_gap"] - last.gap) <= 1e-6 * max(1.0, result.info["efce_gap"]),
        "plan_violation": result.info["plan_violation"],
        "report_seconds": wall - result.seconds - (result.compile_seconds or 0.0),  # copy back, CPU checks
    }


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
                f"max deviation {_fmt(run['max_deviation'], '.3e')} "
                f"(CPU evaluator {run['cpu_evaluator_max_deviation']:.3e}), "
                f"plan violation {run['plan_violation']:.1e} (Definition 3)"
            )
        elif run:
            print(f"\n{row['game']}: run to the target skipped ({run['skipped']})")
    command = results.get("command")
    if command and "skipped" not in command:
        print(
            f"\nefce solve {command['game']} --method rm --backend cuda --json: "
            f"{command['wall_seconds']:.1f} s from the spec to the JSON (exit {command['returncode']}, "
            f"status {command.get('status')}, setup {_fmt(command.get('setup_seconds'), '.1f')} s, "
            f"compile {_fmt(command.get('compile_seconds'), '.1f')} s, "
            f"solve {_fmt(command.get('seconds'), '.2f')} s)"
        )
    elif command:
        print(f"\nthe command's run skipped ({command['skipped']})")
    print(
        f"heavy modules loaded: {results['heavy_modules_loaded'] or 'none'}; "
        f"{results['seconds']:.0f} s in all"
    )


if __name__ == "__main__":
    main()
