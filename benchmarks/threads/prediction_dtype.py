"""Iterations and time to a max deviation with PRM+'s prediction in bfloat16 (the code) or float32.

python benchmarks/threads/prediction_dtype.py bf16|f32 GAME TARGET [MAX_ITERATIONS]
"""

import json
import sys
import time

import numpy as np

from efce.solvers.regret import local

mode, spec, target = sys.argv[1], sys.argv[2], float(sys.argv[3])
if mode == "f32":
    local.prediction_dtype = lambda n: np.float32 if local.state_dtype(n) == np.float32 else np.float64
from efce.experiments.solve import solve  # noqa: E402
from efce.games.spec import make_game  # noqa: E402

game = make_game(spec)
solve(game, "rm", iterations=2)  # loads the cached kernels
started = time.perf_counter()
result = solve(game, "rm", target_gap=target, iterations=int(sys.argv[4]) if len(sys.argv) > 4 else 10_000)
total = time.perf_counter() - started
print(
    json.dumps(
        {
            "mode": mode,
            "spec": spec,
            "target": target,
            "iterations": result.iterations,
            "gap": result.info["efce_gap"],
            "to_target_wall": round(total - result.setup_seconds, 2),
            "plan_violation": result.info["plan_violation"],
        }
    ),
    flush=True,
)
