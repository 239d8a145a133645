import json
import sys

import numpy as np

from efce.games.spec import make_game
from efce.solvers.methods.efce import build_efce_model, solve_efce

spec, n, reps, rule = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
g = make_game(spec)
m = build_efce_model(g)
solve_efce(g, model=m, iterations=2, target_gap=None, threads=2, rule=rule)
solve_efce(g, model=m, iterations=2, target_gap=None, threads=1, rule=rule)
res = {1: [], 2: []}
for _ in range(reps):
    for T in (1, 2):
        r = solve_efce(g, model=m, iterations=n, target_gap=None, threads=T, rule=rule, check_every=10**6)
        res[T].append(r.info["iteration_seconds"] / n)
        print(T, round(res[T][-1], 4), flush=True)
med = {T: float(np.median(v)) for T, v in res.items()}
print(
    json.dumps(
        {
            "spec": spec,
            "iters_per_run": n,
            "runs": reps,
            "median_1": med[1],
            "median_2": med[2],
            "ratio": med[2] / med[1],
            "all": res,
        }
    )
)
