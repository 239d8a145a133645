"""Timing of the iteration loops (``efce solve --method rm``, CFR/CFR+), one JSON line per run.

    python benchmarks/timing.py iterations GAME [--iterations N] [--repeats R] [--threads 1,2]
                                           [--rule prm+] [--whole-runs]
    python benchmarks/timing.py to-target GAME [--target 1e-3] [--options JSON]
                                          [--prediction-dtype bfloat16|float32]
    python benchmarks/timing.py configurations GAME [--configs 0,1,...] [--iterations N]
                                               [--time-limit S] [--target 1e-3] [--threads T]
                                               [--trace]
    python benchmarks/timing.py cfr-iterations [GAME] [--variant cfr+] [--iterations N] [--repeats R]

GAME is a spec string (``small``, ``medium`` and ``large`` name the paper's Battleship instances).

* ``iterations``: seconds per iteration on each thread count, the counts alternating run by run in
  one process with one model (so the order cannot favour one count); gap checks excluded
  (``iteration_seconds``).  By default each run is ``N`` iterations from the start (uniform points
  make ``A y`` touch every nonzero: the most expensive iterations); ``--whole-runs`` runs to max
  deviation 1e-3 instead, averaging over the iterates a real run visits.  The last line holds the
  median per thread count and their ratios to the first count.
* ``to-target``: one ``efce.solve(GAME, "rm", **options)`` to the target after a two-iteration
  warm-up run that loads the compiled kernels; prints the iterations, the time in the solver and
  the process's peak memory.  ``--prediction-dtype float32`` keeps PRM+'s predictions in float32
  on big chains (the bfloat16 experiment of ``docs/results/perf_threads.md``).
* ``configurations``: the dynamics table of ``docs/results/perf_threads.md`` (local rule ×
  update order × averaging), with the iteration and time at which each configuration first
  reaches 1e-3 and 1e-4; ``--trace`` adds the gap trace.
* ``cfr-iterations``: seconds per iteration of CFR+ (or CFR) on two-player Leduc by default, ``R``
  runs of ``N`` iterations with no checkpoint in between; the last line holds the median.

Run one process at a time on a quiet machine: a comparison is A B A B, two checkouts' venvs
alternating (``benchmarks/ab.sh``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import time

import numpy as np

#: The paper's Battleship instances (Farina, Ling, Fang, Sandholm 2019, Table 1).
INSTANCES = {
    "small": "battleship:rows=3,cols=2,ship_sizes=[1],shots=3",
    "medium": "battleship:rows=3,cols=2,ship_sizes=[1],shots=4",
    "large": "battleship:rows=3,cols=2,ship_sizes=[2],shots=4",
}

#: (local rule, alternating updates, averaging) of the dynamics table, by index.
CONFIGURATIONS = [
    ("rm+", True, "linear"),
    ("prm+", True, "linear"),
    ("prm+", True, "quadratic"),
    ("dcfr", True, "linear"),
    ("dcfr", True, "quadratic"),
    ("rm+", True, "quadratic"),
    ("prm+", False, "linear"),
    ("prm+", False, "quadratic"),
    ("rm+", False, "linear"),
]


def _module(name: str):
    """``efce.NAME``, or ``NAME`` in a checkout from before the one ``efce`` namespace (20f5a68,
    the base commit of the results pages' time ratios, imports its folders at the top level)."""
    try:
        return importlib.import_module(f"efce.{name}")
    except ModuleNotFoundError:
        return importlib.import_module(name)


def _game(spec: str):
    return _module("games.spec").make_game(INSTANCES.get(spec, spec))


def _print(record: dict) -> None:
    print(json.dumps(record), flush=True)


def iterations(args: argparse.Namespace) -> None:
    efce_method = _module("solvers.methods.efce")
    build_efce_model, solve_efce = efce_method.build_efce_model, efce_method.solve_efce
    game = _game(args.game)
    model = build_efce_model(game)
    counts = [int(t) for t in args.threads.split(",")]
    for threads in counts:  # load the compiled kernels of every count before timing
        solve_efce(game, model=model, iterations=2, target_gap=None, threads=threads, rule=args.rule)
    per_iteration: dict[int, list[float]] = {t: [] for t in counts}
    for _ in range(args.repeats):
        for threads in counts:
            if args.whole_runs:
                run = solve_efce(game, model=model, target_gap=1e-3, threads=threads, rule=args.rule)
            else:
                run = solve_efce(
                    game,
                    model=model,
                    iterations=args.iterations,
                    target_gap=None,
                    threads=threads,
                    rule=args.rule,
                    check_every=10**9,
                )
            seconds = run.info["iteration_seconds"] / run.iterations
            per_iteration[threads].append(seconds)
            _print(
                {
                    "game": args.game,
                    "rule": args.rule,
                    "threads": threads,
                    "iterations": run.iterations,
                    "status": run.status,
                    "seconds_per_iteration": round(seconds, 5),
                }
            )
    medians = {t: float(np.median(v)) for t, v in per_iteration.items()}
    _print(
        {
            "game": args.game,
            "rule": args.rule,
            "whole_runs": args.whole_runs,
            "median_seconds_per_iteration": {str(t): m for t, m in medians.items()},
            "ratio_to_first": {str(t): m / medians[counts[0]] for t, m in medians.items()},
        }
    )


def to_target(args: argparse.Namespace) -> None:
    if args.prediction_dtype == "float32":
        local = _module("solvers.regret.local")

        def float32_prediction(n: int) -> type:
            return np.float32 if local.state_dtype(n) == np.float32 else np.float64

        local.prediction_dtype = float32_prediction
    solve = _module("experiments.solve").solve
    options = json.loads(args.options)
    game = _game(args.game)
    solve(game, "rm", iterations=2, **options)  # loads the compiled kernels
    started = time.perf_counter()
    run = solve(game, "rm", target_gap=args.target, **options)
    total = time.perf_counter() - started
    _print(
        {
            "game": args.game,
            "options": options,
            "prediction_dtype": args.prediction_dtype,
            "target": args.target,
            "iterations": run.iterations,
            "status": run.status,
            "gap": run.info["efce_gap"],
            "setup": round(run.setup_seconds, 2),
            "solver_seconds": round(run.seconds, 2),
            "to_target_wall": round(total - run.setup_seconds, 2),
            "plan_violation": run.info.get("plan_violation"),
            "max_violation": run.info.get("max_violation"),
            "maxrss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        }
    )


def configurations(args: argparse.Namespace) -> None:
    efce_method = _module("solvers.methods.efce")
    build_efce_model, solve_efce = efce_method.build_efce_model, efce_method.solve_efce
    chosen = [CONFIGURATIONS[int(i)] for i in args.configs.split(",")] if args.configs else CONFIGURATIONS
    game = _game(args.game)
    model = build_efce_model(game)
    for rule, alternating, averaging in chosen:
        started = time.perf_counter()
        run = solve_efce(
            game,
            model=model,
            rule=rule,
            alternating=alternating,
            averaging=averaging,
            iterations=args.iterations,
            time_limit=args.time_limit,
            target_gap=args.target,
            threads=args.threads,
        )
        wall = time.perf_counter() - started - run.setup_seconds
        first: dict[float, tuple[int, float]] = {}
        for row in run.trace:
            for threshold in (1e-3, 1e-4):
                if threshold not in first and row.gap <= threshold:
                    first[threshold] = (row.iteration, round(row.seconds, 2))
        record = {
            "game": args.game,
            "rule": rule,
            "alternating": alternating,
            "averaging": averaging,
            "status": run.status,
            "iterations": run.iterations,
            "gap": run.info["efce_gap"],
            "to_1e-3": first.get(1e-3),
            "to_1e-4": first.get(1e-4),
            "wall": round(wall, 2),
            "max_violation": run.info["max_violation"],
        }
        if args.trace:
            record["trace"] = [(row.iteration, float(f"{row.gap:.3g}")) for row in run.trace]
        _print(record)


def cfr_iterations(args: argparse.Namespace) -> None:
    solve_cfr = _module("solvers.methods.cfr").solve_cfr

    game = _game(args.game)
    solve_cfr(game, iterations=5, variant=args.variant)  # loads the compiled kernels
    seconds = []
    for _ in range(args.repeats):
        run = solve_cfr(game, iterations=args.iterations, variant=args.variant, check_every=args.iterations)
        seconds.append(run.info["iteration_seconds"] / run.iterations)
        _print({"game": args.game, "variant": args.variant, "seconds_per_iteration": round(seconds[-1], 7)})
    _print(
        {
            "game": args.game,
            "variant": args.variant,
            "median_seconds_per_iteration": float(np.median(seconds)),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("iterations", help="seconds per iteration on each thread count")
    p.add_argument("game")
    p.add_argument("--iterations", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", default="1,2", help="thread counts, alternating run by run")
    p.add_argument("--rule", default="prm+")
    p.add_argument("--whole-runs", action="store_true", help="runs to max deviation 1e-3")
    p.set_defaults(run=iterations)
    p = sub.add_parser("to-target", help="one run to the target after a warm-up")
    p.add_argument("game")
    p.add_argument("--target", type=float, default=1e-3)
    p.add_argument("--options", default="{}", help="options of efce.solve as JSON, e.g. '{\"threads\": 1}'")
    p.add_argument("--prediction-dtype", choices=("bfloat16", "float32"), default="bfloat16")
    p.set_defaults(run=to_target)
    p = sub.add_parser("configurations", help="the dynamics table: rule x updates x averaging")
    p.add_argument("game")
    p.add_argument("--configs", default=None, help="indices into CONFIGURATIONS, e.g. 1,2,4")
    p.add_argument("--iterations", type=int, default=10_000)
    p.add_argument("--time-limit", type=float, default=None)
    p.add_argument("--target", type=float, default=1e-3)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--trace", action="store_true")
    p.set_defaults(run=configurations)
    p = sub.add_parser("cfr-iterations", help="seconds per iteration of CFR+ (two-player Leduc by default)")
    p.add_argument("game", nargs="?", default="leduc:players=2")
    p.add_argument("--variant", choices=("cfr", "cfr+"), default="cfr+")
    p.add_argument("--iterations", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=5)
    p.set_defaults(run=cfr_iterations)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
