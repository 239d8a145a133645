"""Regret minimization on the large Battleship instance of Table 1 (3×2 board, one ship of length 2,
4 shots each: 111,187,224 relevant pairs) for a fixed wall-clock budget — the run behind Figure 3
(right) of Farina, Ling, Fang, Sandholm 2019, whose authors report it under 2 GB with their C++.

The loop is the one of :func:`solvers.efce.solve_efce` (RM+ at every simplex, alternating
updates, linear averaging) on the same model, operator, evaluator and feasibility check; it is
spelled out here only so that every checkpoint is written the moment it is computed: a run of an
hour must leave its curve behind even if it is stopped.  Each checkpoint row holds the max
deviation of the average plan, the max violation of Definition 3 by the current iterate and by
the average (matrix-free check, independent of the chain), the time spent in iterations alone,
and the process's resident and peak memory.

    python benchmarks/run_large_battleship.py [--seconds 3600] [--out docs/results/large_battleship]
        [--game SPEC]
    python benchmarks/run_large_battleship.py --plot [--out DIR]   # convergence.png from trace.csv

Run it under ``flock /tmp/efce-bench.lock`` on a shared machine.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

LARGE = "battleship:rows=3,cols=2,ship_sizes=[2],shots=4"
FIELDS = ["iteration", "seconds", "iteration_seconds", "max_deviation", "max_violation_iterate",
          "max_violation_average", "welfare", "rss_mib", "peak_mib"]


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _rss_mib() -> float:
    import psutil
    return psutil.Process().memory_info().rss / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default=LARGE)
    parser.add_argument("--seconds", type=float, default=3600.0, help="wall-clock budget of the iterations")
    parser.add_argument("--out", default="docs/results/large_battleship")
    parser.add_argument("--plot", action="store_true", help="only draw convergence.png from the trace")
    args = parser.parse_args()
    if args.plot:
        plot(args.out)
        return
    os.makedirs(args.out, exist_ok=True)
    summary_path = os.path.join(args.out, "summary.json")
    summary = {"game": args.game, "budget_seconds": args.seconds, "command":
               f"python benchmarks/run_large_battleship.py --seconds {args.seconds:g} --out {args.out}"
               + (f" --game '{args.game}'" if args.game != LARGE else ""),
               "setup": {}, "status": "building"}

    def save_summary():
        summary["peak_memory_mib"] = round(_peak_mib(), 1)
        with open(summary_path + ".tmp", "w") as fh:
            json.dump(summary, fh, indent=2)
        os.replace(summary_path + ".tmp", summary_path)

    def stage(name, started):
        summary["setup"][name] = {"seconds": round(time.perf_counter() - started, 2),
                                  "rss_mib": round(_rss_mib(), 1), "peak_mib": round(_peak_mib(), 1)}
        print(f"{name}: {summary['setup'][name]}", file=sys.stderr, flush=True)
        save_summary()

    import numpy as np

    from games.relevant import relevant_pairs
    from games.spec import make_game
    from polytopes.decompose import correlation_plan
    from polytopes.feasibility import FeasibilityCheck
    from solvers.efce import _accumulate, build_efce_model
    from solvers.engine import ChainEngine
    from solvers.gaps import EFCEGapEvaluator
    from solvers.local import RegretMatching

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
    from games.memory import available_memory_bytes
    from solvers.efce import estimate_efce_bytes
    summary["estimated_bytes"] = estimate_efce_bytes(game)
    # A dedicated run may use most of what is free (the default budget keeps 40% for others).
    model = build_efce_model(game, pairs=pairs, xi_chain=chain,
                             memory_budget=int(0.85 * available_memory_bytes()))
    stage("trigger chain + payoff operator", t)
    t = time.perf_counter()
    rule = RegretMatching(plus=True)
    xi_engine, y_engine = ChainEngine(chain, rule), ChainEngine(model.triggers.chain, rule)
    evaluator = EFCEGapEvaluator(game, pairs, tables=model.tables, entry_index=chain.entry_index)
    feasibility = FeasibilityCheck(game, pairs)
    x = np.empty(chain.num_entries)
    y = np.empty(model.triggers.chain.num_entries)
    sum_x = np.zeros(chain.num_entries)
    stage("engines, evaluator, buffers", t)

    trace_path = os.path.join(args.out, "trace.csv")
    with open(trace_path, "w", newline="") as fh:
        csv.writer(fh).writerow(FIELDS)
    summary["status"] = "running"
    summary["trace"] = trace_path
    weight = 0.0
    iteration_seconds = 0.0
    worst_violation = 0.0
    t0 = time.perf_counter()
    y_engine.recommend(out=y)
    next_check = 1
    it = 0
    while True:
        it += 1
        started = time.perf_counter()
        model.operator.matvec(y, out=x)
        xi_engine.observe(x, overwrite=True)
        xi_engine.recommend(out=x)
        model.operator.rmatvec(x, out=y, sign=-1.0)
        y_engine.observe(y, overwrite=True)
        y_engine.recommend(out=y)
        _accumulate(sum_x, x, float(it))
        weight += it
        iteration_seconds += time.perf_counter() - started
        last = time.perf_counter() - t0 > args.seconds
        if it >= next_check or last:
            next_check = max(it + 1, int(it * 1.15))
            report = evaluator.evaluate(sum_x, 1.0 / weight)
            v_iterate = feasibility(x, model.entry_of_pair)
            v_average = feasibility(sum_x, model.entry_of_pair, 1.0 / weight)
            worst_violation = max(worst_violation, v_iterate, v_average)
            row = [it, round(time.perf_counter() - t0, 2), round(iteration_seconds, 2), report.gap,
                   v_iterate, v_average, report.welfare, round(_rss_mib(), 1), round(_peak_mib(), 1)]
            with open(trace_path, "a", newline="") as fh:
                csv.writer(fh).writerow(row)
            summary.update({"iterations": it, "seconds": row[1], "iteration_seconds": row[2],
                            "seconds_per_iteration": round(iteration_seconds / it, 3),
                            "max_deviation": report.gap, "max_violation": worst_violation,
                            "feasible_iterates": worst_violation <= 1e-9})
            save_summary()
            print(f"iteration {it}: max deviation {report.gap:.6g}, violation {max(v_iterate, v_average):.3g}, "
                  f"{row[1]:.0f} s, peak {row[-1]:.0f} MiB", file=sys.stderr, flush=True)
        if last:
            break
    summary["status"] = "time_limit"
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
    ax.loglog(seconds, gaps, marker=".", label="regret minimization (RM+ on the DECOMPOSE chain)")
    ax.set_xlabel("seconds (iterations and checkpoints)")
    ax.set_ylabel("max deviation")
    ax.set_title("Battleship 3×2, ship of length 2, 4 shots (111M pairs)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "convergence.png"), dpi=120)


if __name__ == "__main__":
    main()
