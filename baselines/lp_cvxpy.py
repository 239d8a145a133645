"""The EFCE LP (von Stengel and Forges 2008) as a cvxpy problem.

Same sparse matrices as :mod:`baselines.lp_highs` (built once by
:func:`baselines.efce_lp.build_efce_lp`); the problem is stated with three matrix constraints
(``A_eq x = b_eq``, ``A_ge x ≥ b_ge``, ``ξ ≥ 0``), never one Python constraint per row, and handed
to any installed cvxpy LP solver (HIGHS by default; CLARABEL, SCIPY, SCS, ...).
"""

from __future__ import annotations

import time

import numpy as np

from games.game import Game
from solvers.result import SolveResult, TraceRow

from .efce_lp import CVXPY_FACTOR, EFCELP, build_efce_lp
from .lp_highs import evaluate_plan, peak_rss_bytes


def cvxpy_problem(model: EFCELP):
    """``(problem, x)`` for the model (maximize ``cᵀx``)."""
    import cvxpy as cp
    x = cp.Variable(model.num_variables, name="x")
    constraints = [model.A_eq @ x == model.b_eq, x[:model.num_xi] >= 0]
    if model.A.shape[0] > model.num_eq:
        constraints.append(model.A_ge @ x >= model.b_ge)
    objective = cp.Maximize(model.c @ x) if np.any(model.c) else cp.Minimize(0)
    return cp.Problem(objective, constraints), x


def solve_lp_cvxpy(game: Game, *, objective="welfare", welfare_threshold: float | None = None,
                   solver: str = "HIGHS", time_limit: float | None = None,
                   memory_budget: int | None = None, verbose: bool = False,
                   model: EFCELP | None = None, **solver_options) -> SolveResult:
    """EFCE by the von Stengel–Forges LP through cvxpy.

    ``solver`` is any installed cvxpy solver name (``cvxpy.installed_solvers()``); ``time_limit``
    is passed as the solver's own option where known (HIGHS ``time_limit``, CLARABEL
    ``time_limit``, SCIPY ``scipy_options={"time_limit": ...}``).  The memory budget check uses
    the model estimate times :data:`~baselines.efce_lp.CVXPY_FACTOR` (canonicalization copies).
    Result as :func:`baselines.solve_lp_highs`; ``setup_seconds`` covers model build and cvxpy
    canonicalization is inside ``seconds`` (reported separately in
    ``info["compile_seconds"]`` when the solver reports its own time).
    """
    import cvxpy as cp
    solver = solver.upper()
    if solver not in cp.installed_solvers():
        raise ValueError(f"cvxpy solver {solver!r} is not installed (installed: "
                         f"{', '.join(cp.installed_solvers())})")
    if model is None:
        model = build_efce_lp(game, objective=objective, welfare_threshold=welfare_threshold,
                              memory_budget=memory_budget, budget_factor=CVXPY_FACTOR)
    t0 = time.perf_counter()
    problem, x = cvxpy_problem(model)
    setup = model.build_seconds + time.perf_counter() - t0
    options = dict(solver_options)
    if time_limit is not None:
        if solver in ("HIGHS", "CLARABEL"):
            options.setdefault("time_limit", float(time_limit))
        elif solver == "SCIPY":
            options.setdefault("scipy_options", {}).setdefault("time_limit", float(time_limit))
    t1 = time.perf_counter()
    try:
        problem.solve(solver=solver, verbose=verbose, **options)
    except cp.error.SolverError as exc:
        info = dict(model.stats(), solver=solver, error=str(exc), peak_memory_bytes=peak_rss_bytes())
        return SolveResult(f"lp-cvxpy-{solver.lower()}", None, "error", 0, setup,
                           time.perf_counter() - t1, [], info)
    seconds = time.perf_counter() - t1
    st = problem.status
    status = {cp.OPTIMAL: "converged", cp.OPTIMAL_INACCURATE: "converged",
              cp.INFEASIBLE: "infeasible", cp.INFEASIBLE_INACCURATE: "infeasible",
              cp.USER_LIMIT: "time_limit"}.get(st, "error")
    info = dict(model.stats(), solver=solver, cvxpy_status=st, objective=model.objective)
    stats = problem.solver_stats
    if stats is not None and stats.solve_time is not None:
        info["solver_seconds"] = float(stats.solve_time)
        info["compile_seconds"] = float(problem.compilation_time or 0.0)
    iterations = int(stats.num_iters) if stats is not None and stats.num_iters is not None else 0
    xi = None
    if x.value is not None:
        xi = np.asarray(x.value)[:model.num_xi].copy()
        info.update(evaluate_plan(game, model, xi))
        if problem.value is not None and np.isfinite(problem.value):
            info["objective_value"] = float(problem.value)
    info["peak_memory_bytes"] = peak_rss_bytes()
    trace = [TraceRow(iterations, seconds, info["efce_gap"], info["max_violation"])] if xi is not None else []
    return SolveResult(f"lp-cvxpy-{solver.lower()}", xi, status, iterations, setup, seconds, trace, info)
