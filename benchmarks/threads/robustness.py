import json
import sys

from efce.games.spec import make_game
from efce.solvers.methods.efce import build_efce_model, solve_efce

spec, rule, avg, iters = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
g = make_game(spec)
m = build_efce_model(g)
r = solve_efce(g, model=m, rule=rule, averaging=avg, iterations=iters, target_gap=1e-4, threads=1)
print(
    json.dumps(
        {
            "rule": rule,
            "avg": avg,
            "iterations": r.iterations,
            "gap": r.info["efce_gap"],
            "trace": [(row.iteration, float(f"{row.gap:.3g}")) for row in r.trace],
        }
    ),
    flush=True,
)
