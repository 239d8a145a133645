"""LP baseline benchmark (Farina, Ling, Fang, Sandholm 2019, section 5 / Table 1).

For each instance: the EFCE LP's size (variables, rows, nonzeros, estimated bytes), build
seconds, HiGHS solve seconds (interior point by default, as Gurobi's barrier was fastest in the
paper), peak memory, max deviation of the returned ξ, and the same for cvxpy where it fits — or
why a run could not happen (refused up front with its estimated size, time limit, killed).

Every (instance, front end) runs in its own subprocess so peak memory (its high-water mark) is per run
and an out-of-memory kill cannot take the benchmark down.

    python benchmarks/bench_lp.py                       # all instances, 600 s limit
    python benchmarks/bench_lp.py --instances sheriff small --time-limit 600 \
        --output docs/results/lp_baseline.md
    python benchmarks/bench_lp.py --instances sheriff --front-ends pdlp --time-limit 600
    python benchmarks/bench_lp.py --highs-settings --instances sheriff --time-limit 300 \
        --lock /tmp/efce-bench.lock --jsonl runs.jsonl --output docs/results/lp_highs_settings.md

``--highs-settings`` runs every entry of :data:`HIGHS_SETTINGS` (one subprocess each, optionally
under ``flock LOCK`` so that heavy runs on a shared machine do not overlap).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from efce.experiments.harness import run_child

INSTANCES = {
    "sheriff": ("sheriff", dict(max_bribe=3, max_items=3, rounds=4)),
    "sheriff222": ("sheriff", dict(max_bribe=2, max_items=2, rounds=2)),
    "small": ("battleship", dict(rows=3, cols=2, ship_sizes=[1], shots=3)),
    "medium": ("battleship", dict(rows=3, cols=2, ship_sizes=[1], shots=4)),
    "large": ("battleship", dict(rows=3, cols=2, ship_sizes=[2], shots=4)),
}

#: Paper, Table 1 and Figure 3 (Gurobi barrier, 16 GB machine).
PAPER = {
    "small": "3.89M pairs; Gurobi solved it (barrier; ~10^2 s to low max deviation in Fig. 3)",
    "medium": "26.4M pairs; Gurobi killed (out of memory, 16 GB)",
    "large": "111M pairs; Gurobi killed (out of memory; >500 GB per Farina et al. 2019c)",
    "sheriff": "not in the paper",
    "sheriff222": "not in the paper",
}


#: HiGHS settings tried on these LPs (name → options over the defaults); see --highs-settings.
HIGHS_SETTINGS = {
    "ipx (crossover on)": {"solver": "ipx", "run_crossover": "on"},
    "ipx, no crossover": {"solver": "ipx", "run_crossover": "off"},
    "ipx, no crossover, no presolve": {"solver": "ipx", "run_crossover": "off", "presolve": "off"},
    "ipx, no crossover, not dualized": {"solver": "ipx", "run_crossover": "off", "ipx_dualize_strategy": 0},
    "dual simplex (serial)": {"solver": "simplex", "simplex_strategy": 1},
    "dual simplex (PAMI)": {"solver": "simplex", "simplex_strategy": 3},
    "primal simplex": {"solver": "simplex", "simplex_strategy": 4},
    "simplex on the dual LP": {"solver": "simplex", "simplex_dualize_strategy": 1},
    "cuPDLP-C (pdlp), tol 1e-6": {"solver": "pdlp", "pdlp_optimality_tolerance": 1e-6},
    "HiPDLP (hipdlp), tol 1e-6": {"solver": "hipdlp", "pdlp_optimality_tolerance": 1e-6},
}


def run_one(
    instance: str,
    front_end: str,
    time_limit: float,
    solver: str,
    threads: int,
    cvxpy_solver: str,
    highs_options: dict | None = None,
) -> dict:
    from efce import games
    from efce.baselines import (
        ModelTooLarge,
        build_efce_lp,
        estimate_efce_lp,
        estimate_pdlp_bytes,
        solve_lp_cvxpy,
        solve_lp_highs,
        solve_lp_pdlp,
    )
    from efce.baselines.efce_lp import CVXPY_FACTOR, default_memory_budget
    from efce.games.resources.memory import MemoryBudgetExceeded, peak_rss_bytes

    kind, kw = INSTANCES[instance]
    t0 = time.perf_counter()
    game = getattr(games, kind)(**kw)
    out = dict(instance=instance, front_end=front_end, game=game.name, game_seconds=time.perf_counter() - t0)
    size = estimate_efce_lp(game)
    out.update(size.as_dict())
    factor = CVXPY_FACTOR if front_end == "cvxpy" else 1.0
    out["budget_bytes"] = default_memory_budget()
    if front_end == "pdlp":
        out["estimated_bytes"] = estimate_pdlp_bytes(game)
        try:
            r = solve_lp_pdlp(game, time_limit=time_limit, threads=threads or 2)
        except MemoryBudgetExceeded as exc:
            out.update(status="refused", reason=str(exc), peak_memory_bytes=peak_rss_bytes())
            return out
        out.update({k: v for k, v in r.info.items() if k not in ("utilities",)})
        out.update(
            status=r.status,
            solve_seconds=r.seconds,
            setup_seconds=r.setup_seconds,
            iterations=r.iterations,
            utilities=r.info.get("utilities"),
            trace=[[t.iteration, t.seconds, t.gap, t.infeasibility, t.extra.get("welfare")] for t in r.trace],
        )
        return out
    try:
        model = build_efce_lp(game, budget_factor=factor)
    except ModelTooLarge as exc:
        out.update(status="refused", reason=str(exc), peak_memory_bytes=peak_rss_bytes())
        return out
    out.update(model.stats())
    out["peak_after_build_bytes"] = peak_rss_bytes()
    if front_end == "highs":
        r = solve_lp_highs(
            game,
            model=model,
            solver=None if highs_options else solver,
            threads=threads,
            time_limit=time_limit,
            options=highs_options,
        )
    else:
        opts = {"highs_options": {"solver": solver}} if cvxpy_solver == "HIGHS" and solver != "choose" else {}
        r = solve_lp_cvxpy(game, model=model, solver=cvxpy_solver, time_limit=time_limit, **opts)
    out.update({k: v for k, v in r.info.items() if k not in ("utilities",)})
    out.update(
        status=r.status,
        solve_seconds=r.seconds,
        setup_seconds=r.setup_seconds,
        iterations=r.iterations,
        utilities=r.info.get("utilities"),
    )
    return out


def run_subprocess(instance, front_end, args, highs_options: dict | None = None) -> dict:
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--one",
        instance,
        front_end,
        "--time-limit",
        str(args.time_limit),
        "--solver",
        args.solver,
        "--threads",
        str(args.threads),
        "--cvxpy-solver",
        args.cvxpy_solver,
    ]
    if highs_options:
        cmd += ["--highs-options", json.dumps(highs_options)]
    if args.lock:
        cmd = ["flock", args.lock] + cmd
    # Wall-clock guard: solver limit + generous build/evaluation allowance.
    child = run_child(cmd, timeout=args.time_limit * 3 + 1200)
    if child.timed_out:
        return dict(
            instance=instance,
            front_end=front_end,
            status="wall_clock_timeout",
            reason=f"no answer after {child.wall_seconds:.0f} s",
        )
    if child.payload is not None:
        return child.payload
    return dict(
        instance=instance,
        front_end=front_end,
        status="error",
        reason=f"exit code {child.returncode} (negative = killed by signal, e.g. OOM): {child.error}",
    )


def _fmt_bytes(b):
    return "" if b is None else f"{b / 2**30:.2f} GiB"


def _fmt(x, spec):
    return "" if x is None else format(x, spec)


def markdown(rows: list[dict], args) -> str:
    lines = [
        "# LP baseline (von Stengel–Forges EFCE LP)",
        "",
        "Generated by `benchmarks/bench_lp.py` "
        f"(HiGHS solver `{args.solver}`, threads {args.threads or 'default'}, time limit "
        f"{args.time_limit:g} s; cvxpy solver {args.cvxpy_solver}).  Objective: maximum social "
        "welfare.  Model: ξ over relevant pairs + one value variable per (trigger, infoset in "
        "its subtree); the estimate counts variables/rows exactly and nonzeros before merging "
        "duplicates; estimated bytes exclude factorization fill-in.  Peak memory is the run's "
        "`ru_maxrss` (game + model + solver).  Max deviation is the project's evaluator "
        "(`solvers.evaluation.gaps`) on the returned ξ.",
        "",
        "| instance | front end | status | variables | rows | nonzeros | est. memory | "
        "build s | solve s | peak memory | welfare | max deviation | max violation | paper |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            "| "
            + " | ".join(
                [
                    r["instance"],
                    r["front_end"],
                    r.get("status", ""),
                    _fmt(r.get("variables"), ","),
                    _fmt(r.get("rows"), ","),
                    _fmt(r.get("nonzeros"), ","),
                    _fmt_bytes(r.get("estimated_bytes")),
                    _fmt(r.get("build_seconds"), ".2f"),
                    _fmt(r.get("solve_seconds"), ".1f"),
                    _fmt_bytes(r.get("peak_memory_bytes")),
                    _fmt(r.get("welfare"), ".6g"),
                    _fmt(r.get("efce_gap"), ".2e"),
                    _fmt(r.get("max_violation"), ".2e"),
                    PAPER.get(r["instance"], ""),
                ]
            )
            + " |"
        )
    notes = [r for r in rows if r.get("reason")]
    if notes:
        lines += ["", "Runs that could not happen:", ""]
        lines += [f"* {r['instance']} / {r['front_end']}: {r['reason']}" for r in notes]
    lines += [
        "",
        "Paper (Farina, Ling, Fang, Sandholm 2019, section 5): Gurobi (barrier) solved "
        "only the small Battleship instance; on the medium and large instances it was "
        "killed for allocating too much memory (16 GB machine; the large one needs "
        ">500 GB per Farina et al. 2019c).",
        "",
    ]
    return "\n".join(lines)


def settings_markdown(rows: list[dict]) -> str:
    """The table of docs/results/lp_highs_settings.md from ``--highs-settings`` rows."""
    lines = [
        "| instance | setting | options | time limit s | status | HiGHS status | solve s | "
        "IPM / simplex / PDLP iterations | welfare | max deviation | max violation |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        opts = ", ".join(
            f"{k}={v}"
            for k, v in r.get("options", {}).items()
            if k not in ("output_flag", "log_to_console", "log_file")
        )
        its = "/".join(str(r.get(k, "")) for k in ("ipm_iterations", "simplex_iterations", "pdlp_iterations"))
        lines.append(
            "| "
            + " | ".join(
                [
                    r["instance"],
                    r.get("setting", ""),
                    f"`{opts}`",
                    _fmt(r.get("time_limit"), "g"),
                    r.get("status", ""),
                    r.get("highs_status", ""),
                    _fmt(r.get("solve_seconds"), ".1f"),
                    its,
                    _fmt(r.get("welfare"), ".6g"),
                    _fmt(r.get("efce_gap"), ".2e"),
                    _fmt(r.get("max_violation"), ".2e"),
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--instances", nargs="+", default=list(INSTANCES), choices=list(INSTANCES))
    p.add_argument(
        "--front-ends", nargs="+", default=["highs", "pdlp", "cvxpy"], choices=["highs", "pdlp", "cvxpy"]
    )
    p.add_argument("--time-limit", type=float, default=600.0, help="seconds per solver call")
    p.add_argument("--solver", default="ipm", choices=["choose", "simplex", "ipm", "ipx", "pdlp", "hipdlp"])
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--cvxpy-solver", default="HIGHS")
    p.add_argument("--output", help="write the markdown table here")
    p.add_argument("--json", help="write the raw rows here")
    p.add_argument("--highs-options", default=None, help="JSON object of HiGHS options")
    p.add_argument(
        "--highs-settings",
        action="store_true",
        help="try every HiGHS setting of HIGHS_SETTINGS on --instances",
    )
    p.add_argument("--settings", nargs="+", default=None, help="with --highs-settings: only these names")
    p.add_argument("--lock", default=None, help="run each subprocess under `flock LOCK`")
    p.add_argument("--jsonl", default=None, help="append each run's JSON row to this file")
    p.add_argument("--highs-log-dir", default=None, help="with --highs-settings: HiGHS's log per run here")
    p.add_argument(
        "--settings-table",
        default=None,
        metavar="JSONL",
        help="print the markdown table of a --highs-settings JSONL file and exit",
    )
    p.add_argument("--one", nargs=2, metavar=("INSTANCE", "FRONT_END"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.settings_table:
        with open(args.settings_table) as fh:
            print(settings_markdown([json.loads(line) for line in fh if line.strip()]))
        return
    if args.one:
        options = json.loads(args.highs_options) if args.highs_options else None
        print(
            json.dumps(
                run_one(
                    args.one[0],
                    args.one[1],
                    args.time_limit,
                    args.solver,
                    args.threads,
                    args.cvxpy_solver,
                    options,
                )
            ),
            flush=True,
        )
        return
    if args.highs_settings:
        names = args.settings or list(HIGHS_SETTINGS)
        for inst in args.instances:
            for name in names:
                options = dict(HIGHS_SETTINGS[name])
                if args.highs_log_dir:
                    os.makedirs(args.highs_log_dir, exist_ok=True)
                    slug = "".join(c if c.isalnum() else "_" for c in f"{inst}_{name}")
                    options.update(
                        output_flag=True,
                        log_to_console=False,
                        log_file=os.path.join(args.highs_log_dir, slug + ".log"),
                    )
                row = run_subprocess(inst, "highs", args, options)
                row.update(setting=name, options=HIGHS_SETTINGS[name], time_limit=args.time_limit)
                print(json.dumps({k: v for k, v in row.items() if k != "reason"}), flush=True)
                if args.jsonl:
                    with open(args.jsonl, "a") as fh:
                        fh.write(json.dumps(row) + "\n")
        return
    rows = []
    for inst in args.instances:
        for fe in args.front_ends:
            row = run_subprocess(inst, fe, args)
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "reason"}), flush=True)
            if args.jsonl:
                with open(args.jsonl, "a") as fh:
                    fh.write(json.dumps(row) + "\n")
            if row.get("reason"):
                print("   ", row["reason"], flush=True)
            if args.json:
                with open(args.json, "w") as fh:
                    json.dump(rows, fh, indent=1)
            if args.output:
                os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
                with open(args.output, "w") as fh:
                    fh.write(markdown(rows, args))
    print(markdown(rows, args))


if __name__ == "__main__":
    main()
