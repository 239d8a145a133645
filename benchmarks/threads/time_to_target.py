import json
import resource
import sys
import time

mode, spec = sys.argv[1], sys.argv[2]
opts = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
if mode == "base":
    sys.path.insert(0, "/tmp/base")
    from experiments.solve import solve
    from games.spec import make_game
else:
    from efce.experiments.solve import solve
    from efce.games.spec import make_game
g = make_game(spec)
solve(g, "rm", iterations=2, **opts)  # loads the cached kernels
t0 = time.perf_counter()
r = solve(g, "rm", **opts)
total = time.perf_counter() - t0
print(
    json.dumps(
        {
            "mode": mode,
            "spec": spec,
            "opts": opts,
            "iterations": r.iterations,
            "status": r.status,
            "gap": r.info["efce_gap"],
            "setup": round(r.setup_seconds, 2),
            "solver_seconds": round(r.seconds, 2),
            "to_target_wall": round(total - r.setup_seconds, 2),
            "feasible": r.info.get("feasible_iterates"),
            "max_violation": r.info.get("max_violation"),
            "maxrss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        }
    ),
    flush=True,
)
