"""``efce solve GAME --method M``: every solver and baseline behind one command."""

from __future__ import annotations

import resource
import time

from .cli import CommandError, command
from .progress import Progress

METHODS = ("rm", "cfr", "cfr+", "icfr", "cfr-s", "lp-highs", "lp-pdlp", "lp-cvxpy", "subgradient")


def _configure(p):
    p.add_argument("game", help="a .efg path or a spec such as sheriff:max_bribe=2,max_items=2,rounds=2")
    p.add_argument("--method", required=True, choices=METHODS)
    p.add_argument("--iterations", type=int, default=None,
                   help="iteration budget (default: 10000 for rm/icfr/cfr-s, 1000 for cfr/cfr+)")
    p.add_argument("--time-limit", type=float, default=None, help="seconds")
    p.add_argument("--target-gap", type=float, default=None,
                   help="stop once the max deviation (or exploitability) is at most this")
    p.add_argument("--welfare-threshold", type=float, default=None,
                   help="rm, lp-*: look for an EFCE with social welfare at least this")
    p.add_argument("--objective", default=None, choices=("welfare", "feasibility", "player1", "player2"),
                   help="lp-*: objective of the EFCE LP (default welfare); rm: 'welfare' bisects the "
                        "welfare threshold for an interval around the optimal EFCE welfare")
    p.add_argument("--lp-solver", default="HIGHS", help="lp-cvxpy: the cvxpy solver (CLARABEL, HIGHS, PDLP, SCS, ...)")
    p.add_argument("--step-rule", default="constant", choices=("constant", "sqrt", "polyak"),
                   help="subgradient: step rule (constant α, α/√t, or Polyak-type)")
    p.add_argument("--step-size", type=float, default=1e-3, help="subgradient: step size")
    p.add_argument("--start", default="uniform", choices=("uniform", "random"),
                   help="subgradient: initial plan (the uniform plan is an exact EFCE in some games)")
    p.add_argument("--local", default="rm+", help="rm/cfr: local regret minimizer (rm, rm+, hedge, prm+, dcfr)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--trace", default=None, help="write the trace as CSV to this file")


def solve(game, method: str, *, iterations=None, time_limit=None, target_gap=None,
          welfare_threshold=None, objective=None, step_size=1e-3, local="rm+", seed=0,
          start="uniform", progress=None, lp_solver="HIGHS", step_rule="constant"):
    """Dispatch to the method; returns a :class:`solvers.result.SolveResult`."""
    if method == "rm" and objective not in (None, "welfare"):
        raise CommandError(f"rm takes --objective welfare (the optimal-welfare interval) or none, not {objective}")
    if method == "rm" and objective == "welfare":
        from solvers.welfare import solve_optimal_welfare
        return solve_optimal_welfare(game, tolerance=1e-2 if target_gap is None else target_gap,
                                     time_limit=time_limit, iterations=iterations, rule=local)
    if method == "rm":
        from solvers.efce import solve_efce
        from solvers.local import make_rule
        return solve_efce(game, iterations=iterations or 10_000, time_limit=time_limit,
                          target_gap=1e-3 if target_gap is None else target_gap,
                          welfare_threshold=welfare_threshold, rule=make_rule(local), progress=progress)
    if method in ("cfr", "cfr+"):
        from solvers.cfr import solve_cfr
        return solve_cfr(game, iterations=iterations or 1000, variant=method, time_limit=time_limit,
                         target_gap=target_gap, progress=progress)
    if method in ("icfr", "cfr-s"):
        from solvers.icfr import solve_icfr
        report = (lambda row: progress(row.iteration, row.gap, row.seconds)) if progress else None
        return solve_icfr(game, iterations or 10_000, seed=seed, method=method, time_limit=time_limit,
                          progress=report)
    if method == "lp-highs":
        import baselines
        return baselines.solve_lp_highs(game, objective=objective or "welfare", time_limit=time_limit,
                                        welfare_threshold=welfare_threshold)
    if method == "lp-cvxpy":
        import baselines
        return baselines.solve_lp_cvxpy(game, objective=objective or "welfare", time_limit=time_limit,
                                        welfare_threshold=welfare_threshold, solver=lp_solver)
    if method == "lp-pdlp":
        import baselines
        return baselines.solve_lp_pdlp(game, objective=objective or "welfare", time_limit=time_limit,
                                       welfare_threshold=welfare_threshold,
                                       tolerance=1e-6 if target_gap is None else target_gap,
                                       progress=progress)
    if method == "subgradient":
        import baselines
        return baselines.solve_subgradient(game, iterations=iterations or 10_000, time_limit=time_limit,
                                           step_size=step_size, step_rule=step_rule, seed=seed, start=start,
                                           progress=progress)
    raise CommandError(f"unknown method '{method}'; valid: {', '.join(METHODS)}")


@command("solve", _configure)
def run_solve(args):
    """Solve a game with one method and report gaps, welfare and feasibility."""
    from games.spec import make_game
    started = time.perf_counter()
    game = make_game(args.game)
    build = time.perf_counter() - started
    bar = Progress(f"{args.method} on {game.name}", enabled=None if not args.json else False)
    try:
        result = solve(game, args.method, iterations=args.iterations, time_limit=args.time_limit,
                       target_gap=args.target_gap, welfare_threshold=args.welfare_threshold,
                       objective=args.objective, step_size=args.step_size, local=args.local,
                       seed=args.seed, start=args.start, progress=bar, lp_solver=args.lp_solver,
                       step_rule=args.step_rule)
    except MemoryError:
        raise CommandError(f"{args.method} ran out of memory on {game.name}") from None
    finally:
        bar.close()
    result.setup_seconds += build
    if args.trace:
        result.write_trace(args.trace)
    out = result.to_json()
    out["game"] = game.name
    out["peak_memory_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)
    out.setdefault("efce_gap", None)
    lines = [f"{args.method} on {game.name}: {result.status} after {result.iterations:,} iterations",
             f"  setup {result.setup_seconds:.2f} s, solve {result.seconds:.2f} s"]
    for key in ("efce_gap", "efcce_gap", "nfcce_gap", "exploitability", "value", "welfare",
                "max_violation"):
        value = result.info.get(key)
        if value is not None:
            lines.append(f"  {key:<15} {value:.6g}")
    if "utilities" in result.info:
        lines.append("  utilities       " + ", ".join(f"{u:.6g}" for u in result.info["utilities"]))
    if result.info.get("welfare_interval"):
        lines.append("  welfare_interval [{:.6g}, {:.6g}]".format(*result.info["welfare_interval"]))
    if result.info.get("message"):
        lines.append("  " + result.info["message"])
    return out, "\n".join(lines)
