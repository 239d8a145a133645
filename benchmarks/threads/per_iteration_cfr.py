"""Seconds per iteration of CFR / CFR+ (its iterations alone, no exploitability checks), the
median of R runs of N iterations each, for an A B A B comparison of two commits.

    python benchmarks/threads/per_iteration_cfr.py GAME N R [VARIANT]   (VARIANT default cfr+)

Runs on any commit with ``solve_cfr`` (the chains of small games run the serial passes, so the
thread count does not enter).  Prints one line per run and a JSON line with the median.
"""

import json
import sys

import numpy as np

from efce.games.spec import make_game
from efce.solvers.methods.cfr import solve_cfr

spec, n, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
variant = sys.argv[4] if len(sys.argv) > 4 else "cfr+"
game = make_game(spec)
solve_cfr(game, iterations=2, variant=variant)  # loads the cached kernels
seconds = []
for _ in range(reps):
    r = solve_cfr(game, iterations=n, variant=variant, check_every=10**9)
    seconds.append(r.info["iteration_seconds"] / n)
    print(round(seconds[-1] * 1e6, 2), "µs", flush=True)
print(
    json.dumps(
        {
            "spec": spec,
            "variant": variant,
            "iters_per_run": n,
            "runs": reps,
            "median": float(np.median(seconds)),
            "all": seconds,
        }
    )
)
