"""Seconds per ICFR (and CFR-S) iteration, including gap bookkeeping (EFCE/EFCCE/NFCCE of the
empirical frequency on a log-spaced schedule of ~20 points), on Kuhn 3p, Goofspiel 3p, Leduc 3p.

    python benchmarks/bench_icfr.py [--iterations 1000] [--games kuhn3,goofspiel3,leduc3]
                                    [--methods icfr,cfr-s] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

GAMES = {
    "kuhn3": "kuhn:players=3,ranks=3",
    "goofspiel3": "goofspiel:players=3,ranks=3",
    "leduc3": "leduc:players=3,ranks=3",
}


def bench(spec: str, method: str, iterations: int) -> dict:
    from efce.games.spec import make_game
    from efce.solvers.methods.icfr import solve_icfr

    game = make_game(spec)
    solve_icfr(game, 5, method=method)  # warm-up: numba compilation / caches
    started = time.perf_counter()
    res = solve_icfr(game, iterations, seed=0, method=method)
    total = time.perf_counter() - started
    return {
        "game": spec,
        "method": method,
        "iterations": iterations,
        "seconds_per_iteration": total / iterations,
        "solver_seconds_per_iteration": res.info["iteration_seconds"] / iterations,
        "gap_evaluations": len(res.trace),
        "efce_gap": res.info["efce_gap"],
        "support": res.info["support"],
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--games", default=",".join(GAMES))
    ap.add_argument("--methods", default="icfr,cfr-s")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rows = [
        bench(GAMES[g], m, args.iterations) for g in args.games.split(",") for m in args.methods.split(",")
    ]
    if args.json:
        print(json.dumps(rows))
    else:
        for r in rows:
            print(
                f"{r['game']:<32} {r['method']:<6} {r['iterations']:>6} it  "
                f"{1e3 * r['seconds_per_iteration']:8.3f} ms/it (solver only "
                f"{1e3 * r['solver_seconds_per_iteration']:.3f})  EFCE gap {r['efce_gap']:.3g}"
            )


if __name__ == "__main__":
    main()
