"""Seconds per iteration over whole runs to max deviation 1e-3, 1 and 2 threads alternating.

    python whole_run_threads.py GAME [ORDER]     (ORDER default "1 2 1 2")

One process builds the model once; each run is ``solve_efce`` from scratch with PRM+ (the
default of ``efce solve --method rm``; ``solve_efce``'s own default is RM+) to 1e-3 on the
given thread count.  Prints one JSON line per run (iterations,
``iteration_seconds`` — the iterations alone, gap checks excluded — and their ratio) and a last
line with the medians and the 2 / 1 ratio: the per-iteration cost averaged over the iterates a
real run visits (``per_iteration.py`` times the first few iterations only, whose uniform points
make ``A y`` touch every nonzero)."""

import json
import sys

import numpy as np

from efce.games.spec import make_game
from efce.solvers.methods.efce import build_efce_model, solve_efce

spec = sys.argv[1]
order = [int(t) for t in (sys.argv[2] if len(sys.argv) > 2 else "1 2 1 2").split()]
game = make_game(spec)
model = build_efce_model(game)
solve_efce(game, model=model, iterations=2, target_gap=None, threads=1)  # load the kernels
solve_efce(game, model=model, iterations=2, target_gap=None, threads=2)
per_iteration = {}
for threads in order:
    r = solve_efce(game, model=model, target_gap=1e-3, threads=threads, rule="prm+")
    s = r.info["iteration_seconds"] / r.iterations
    per_iteration.setdefault(threads, []).append(s)
    print(
        json.dumps(
            {
                "spec": spec,
                "rule": "prm+",
                "threads": threads,
                "iterations": r.iterations,
                "status": r.status,
                "iteration_seconds": round(r.info["iteration_seconds"], 2),
                "seconds": round(r.seconds, 2),
                "seconds_per_iteration": round(s, 4),
            }
        ),
        flush=True,
    )
medians = {t: float(np.median(v)) for t, v in per_iteration.items()}
print(
    json.dumps(
        {
            "spec": spec,
            "median_1": medians.get(1),
            "median_2": medians.get(2),
            "ratio": medians[2] / medians[1] if 1 in medians and 2 in medians else None,
        }
    )
)
