import json
import sys
import time

from efce.games.spec import make_game
from efce.solvers.methods.efce import build_efce_model, solve_efce

spec, iters, limit, target = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
threads = int(sys.argv[5])
configs = [
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
if len(sys.argv) > 6:
    configs = [configs[int(i)] for i in sys.argv[6].split(",")]
g = make_game(spec)
m = build_efce_model(g)
for rule, alt, avg in configs:
    t0 = time.perf_counter()
    r = solve_efce(
        g,
        model=m,
        rule=rule,
        alternating=alt,
        averaging=avg,
        iterations=iters,
        time_limit=limit,
        target_gap=target,
        threads=threads,
    )
    wall = time.perf_counter() - t0 - r.setup_seconds
    first = {}
    for row in r.trace:
        for thr in (1e-3, 1e-4):
            if thr not in first and row.gap <= thr:
                first[thr] = (row.iteration, round(row.seconds, 2))
    print(
        json.dumps(
            {
                "game": spec,
                "rule": rule,
                "alternating": alt,
                "averaging": avg,
                "status": r.status,
                "iterations": r.iterations,
                "gap": r.info["efce_gap"],
                "to_1e-3": first.get(1e-3),
                "to_1e-4": first.get(1e-4),
                "wall": round(wall, 2),
                "feasible": r.info["feasible_iterates"],
                "max_violation": r.info["max_violation"],
            }
        ),
        flush=True,
    )
