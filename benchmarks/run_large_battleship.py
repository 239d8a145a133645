"""Regret minimization on the large Battleship instance of Table 1 (3×2 board, one ship of length 2,
4 shots each: 111,187,224 relevant pairs) for a fixed wall-clock budget — the run behind Figure 3
(right) of Farina, Ling, Fang, Sandholm 2019, whose authors report it under 2 GB with their C++.

The run is :func:`solvers.methods.efce.solve_efce` with the configuration of ``efce solve --method
rm`` (its defaults, or ``--local``/``--averaging``/``--updates`` as there: the paper's own is
``--local rm+ --averaging linear --updates alternating``) on ``--threads`` threads (default: all
cores); this script only times the setup stages and writes every checkpoint the moment the
solver reports it, so a run of an hour leaves its curve behind even if it is stopped (SIGINT or
SIGTERM end it gracefully after a last checkpoint).  Each checkpoint row holds the max deviation
of the average plan, the max violation of Ξ's chain constraints (the polytope of Definition 3)
by the current iterate and by the average, the time spent in iterations alone, and the process's
resident and peak memory.  As in every solve, the relevant pairs are out of memory during the
iterations (:func:`solvers.methods.efce.pair_arrays_parked`) and the reported plan is finally
checked against Definition 3 itself (matrix-free, independent of the chain): the summary's
``plan_violation`` is that check, ``max_violation`` includes it (and the float32 running
average's violations, ~1e-7 on this instance).

    python benchmarks/run_large_battleship.py [--seconds 3600] [--out docs/results/large_battleship]
        [--game SPEC] [--target-gap G] [--local RULE] [--averaging A] [--updates U] [--threads T]
    python benchmarks/run_large_battleship.py --plot [--out DIR]   # convergence.png from trace.csv

Run it under ``flock /tmp/efce-bench.lock`` on a shared machine.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time

LARGE = "battleship:rows=3,cols=2,ship_sizes=[2],shots=4"
FIELDS = [
    "iteration",
    "seconds",
    "iteration_seconds",
    "max_deviation",
    "max_violation_iterate",
    "max_violation_average",
    "welfare",
    "rss_mib",
    "peak_mib",
]


def _rss_mib() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default=LARGE)
    parser.add_argument("--seconds", type=float, default=3600.0, help="wall-clock budget of the iterations")
    parser.add_argument("--out", default="docs/results/large_battleship")
    parser.add_argument("--plot", action="store_true", help="only draw convergence.png from the trace")
    parser.add_argument(
        "--target-gap",
        type=float,
        default=None,
        help="stop at this max deviation (default: run the whole budget)",
    )
    for name in ("local", "averaging", "updates", "threads"):
        parser.add_argument("--" + name, default=None, help="as in efce solve --method rm")
    args = parser.parse_args()
    if args.plot:
        plot(args.out)
        return

    from efce.experiments.solve import validate_options
    from efce.games.relevant import relevant_pairs
    from efce.games.resources.memory import available_memory_bytes, peak_memory_mib
    from efce.games.spec import make_game
    from efce.polytopes.decompose import correlation_plan
    from efce.solvers.driver import stop_on_signals
    from efce.solvers.methods.efce import build_efce_model, estimate_efce_bytes, solve_efce
    from efce.solvers.regret.registry import make_rule

    rm = validate_options(
        "rm",
        {
            "local": args.local,
            "averaging": args.averaging,
            "updates": args.updates,
            "threads": None if args.threads is None else int(args.threads),
        },
    )

    os.makedirs(args.out, exist_ok=True)
    summary_path = os.path.join(args.out, "summary.json")
    trace_path = os.path.join(args.out, "trace.csv")
    summary = {
        "game": args.game,
        "budget_seconds": args.seconds,
        "command": " ".join(sys.argv),
        "configuration": {k: rm[k] for k in ("local", "averaging", "updates", "threads")},
        "setup": {},
        "status": "building",
    }

    def save_summary():
        summary["peak_memory_mib"] = round(peak_memory_mib(), 1)
        with open(summary_path + ".tmp", "w") as fh:
            json.dump(summary, fh, indent=2)
        os.replace(summary_path + ".tmp", summary_path)

    def stage(name, started):
        summary["setup"][name] = {
            "seconds": round(time.perf_counter() - started, 2),
            "rss_mib": round(_rss_mib(), 1),
            "peak_mib": round(peak_memory_mib(), 1),
        }
        print(f"{name}: {summary['setup'][name]}", file=sys.stderr, flush=True)
        save_summary()

    def checkpoint(row):
        extra = row.extra
        line = [
            row.iteration,
            round(row.seconds, 2),
            round(extra["iteration_seconds"], 2),
            row.gap,
            extra["violation_iterate"],
            extra["violation_average"],
            extra["welfare"],
            round(_rss_mib(), 1),
            round(peak_memory_mib(), 1),
        ]
        with open(trace_path, "a", newline="") as fh:
            csv.writer(fh).writerow(line)
        summary["max_violation"] = max(summary.get("max_violation", 0.0), row.infeasibility)
        summary.update(
            {
                "iterations": row.iteration,
                "seconds": line[1],
                "iteration_seconds": line[2],
                "seconds_per_iteration": round(extra["iteration_seconds"] / row.iteration, 3),
                "max_deviation": row.gap,
                "feasible_iterates": summary["max_violation"] <= 1e-9,
            }
        )
        save_summary()
        print(
            f"iteration {row.iteration}: max deviation {row.gap:.6g}, violation {row.infeasibility:.3g}, "
            f"{line[1]:.0f} s, peak {line[-1]:.0f} MiB",
            file=sys.stderr,
            flush=True,
        )

    t = time.perf_counter()
    game = make_game(args.game)
    stage("game", t)
    t = time.perf_counter()
    pairs = relevant_pairs(game)
    summary["relevant_pairs"] = len(pairs)
    stage("relevant pairs", t)
    t = time.perf_counter()
    chain = correlation_plan(game, pairs)
    stage("DECOMPOSE", t)
    t = time.perf_counter()
    summary["estimated_bytes"] = estimate_efce_bytes(game)
    # A dedicated run may use most of what is free (the default budget keeps 40% for others).
    model = build_efce_model(
        game, pairs=pairs, xi_chain=chain, memory_budget=int(0.85 * available_memory_bytes())
    )
    # The model holds what the run needs; these would keep the pair arrays (and the chain's
    # entry_index) in memory while the solver parks them.
    del pairs, chain
    stage("trigger chain + payoff operator", t)

    with open(trace_path, "w", newline="") as fh:
        csv.writer(fh).writerow(FIELDS)
    summary.update({"status": "running", "trace": trace_path})
    with stop_on_signals():
        result = solve_efce(
            game,
            model=model,
            iterations=10**12,
            time_limit=args.seconds,
            target_gap=args.target_gap,
            progress=checkpoint,
            rule=make_rule(rm["local"]),
            averaging=rm["averaging"],
            alternating=rm["updates"] == "alternating",
            threads=rm["threads"],
        )
    summary["setup"]["engines, evaluator, feasibility check"] = {"seconds": round(result.setup_seconds, 2)}
    summary["status"] = result.status
    summary["max_violation"] = result.info["max_violation"]  # with Definition 3 on the final plan
    summary["feasible_iterates"] = result.info["feasible_iterates"]
    summary["plan_violation"] = result.info["plan_violation"]  # Definition 3, the reported plan
    save_summary()


def plot(out: str) -> None:
    """Max deviation of the average plan against wall-clock time (log-log), as in Figure 3."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(os.path.join(out, "trace.csv")) as fh:
        rows = list(csv.DictReader(fh))
    seconds = [float(r["seconds"]) for r in rows]
    gaps = [float(r["max_deviation"]) for r in rows]
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    with open(os.path.join(out, "summary.json")) as fh:
        config = json.load(fh).get("configuration", {"local": "rm+"})
    label = f"regret minimization ({config['local']} on the DECOMPOSE chain"
    if "averaging" in config:
        label += f", {config['averaging']} averaging, {config['updates']} updates"
    ax.loglog(seconds, gaps, marker=".", label=label + ")")
    ax.set_xlabel("seconds (iterations and checkpoints)")
    ax.set_ylabel("max deviation")
    ax.set_title("Battleship 3×2, ship of length 2, 4 shots (111M pairs)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "convergence.png"), dpi=120)


if __name__ == "__main__":
    main()
