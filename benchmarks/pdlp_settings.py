"""OR-Tools PDLP's settings on the toolkit's LPs: how many iterations, and how much memory, each
needs to PDLP's own optimality (relative and absolute KKT tolerance 1e-6, 2 threads, the toolkit's
model of :func:`efce.baselines.build_efce_lp` with the welfare objective).  One PDLP call in this
process, no stages and no project checks, so the settings compare alone:

* ``default``: PDLP's defaults (what ``lp-pdlp`` ran before Glop's presolve);
* ``glop``: Glop's presolve first (``presolve_options.use_glop``; ``lp-pdlp``'s cold stage on LPs
  of up to ``PRESOLVE_MAX_NONZEROS`` nonzeros);
* ``polish``: feasibility polishing (``use_feasibility_polishing``; it cannot be combined with
  Glop's presolve).

Prints one JSON line: termination, iterations, seconds, welfare and Definition-3 violation of the
returned ξ, and the process's peak resident memory.

    python benchmarks/pdlp_settings.py GAME --concept efcce --setting glop --time-limit 150
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("game", help="a game spec, e.g. sheriff:max_bribe=3,max_items=3,rounds=4")
    parser.add_argument("--concept", default="efce", choices=("efce", "efcce", "nfcce"))
    parser.add_argument("--setting", default="default", choices=("default", "glop", "polish"))
    parser.add_argument("--time-limit", type=float, default=150.0)
    parser.add_argument("--verbose", action="store_true", help="PDLP's own log on stdout")
    args = parser.parse_args()

    from ortools.pdlp import solve_log_pb2, solvers_pb2
    from ortools.pdlp.python import pdlp

    from efce.baselines import build_efce_lp
    from efce.games.spec import make_game

    model = build_efce_lp(make_game(args.game), objective="welfare", concept=args.concept)
    qp = pdlp.QuadraticProgram()
    qp.objective_vector = -np.asarray(model.c, dtype=np.float64)
    qp.constraint_matrix = model.A
    qp.constraint_lower_bounds = model.row_lower
    qp.constraint_upper_bounds = model.row_upper
    qp.variable_lower_bounds = model.col_lower
    qp.variable_upper_bounds = model.col_upper
    params = solvers_pb2.PrimalDualHybridGradientParams()
    params.num_threads = 2
    params.verbosity_level = 2 if args.verbose else 0
    criteria = params.termination_criteria
    criteria.simple_optimality_criteria.eps_optimal_relative = 1e-6
    criteria.simple_optimality_criteria.eps_optimal_absolute = 1e-6
    criteria.time_sec_limit = args.time_limit
    if args.setting == "glop":
        params.presolve_options.use_glop = True
    elif args.setting == "polish":
        params.use_feasibility_polishing = True
        # PDLP refuses polishing otherwise.
        params.handle_some_primal_gradients_on_finite_bounds_as_residuals = False
    started = time.perf_counter()
    result = pdlp.primal_dual_hybrid_gradient(qp, params)
    seconds = time.perf_counter() - started
    log = result.solve_log
    xi = np.asarray(result.primal_solution)[: model.num_xi]
    solved = xi.size == model.num_xi  # empty when PDLP refused the parameters
    print(
        json.dumps(
            {
                "game": args.game,
                "concept": args.concept,
                "setting": args.setting,
                "time_limit": args.time_limit,
                "termination": solve_log_pb2.TerminationReason.Name(log.termination_reason),
                "iterations": int(log.iteration_count),
                "seconds": round(seconds, 1),
                "welfare": float(model.c[: model.num_xi] @ xi) if solved else None,
                "violation": float(model.vsf.max_violation(xi)) if solved else None,
                "nonzeros": int(model.nonzeros),
                "peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
