"""The EFCE LP (von Stengel and Forges 2008) as a cvxpy problem.

Same sparse matrices as :mod:`baselines.lp_highs` (built once by
:func:`baselines.efce_lp.build_efce_lp`); the problem is stated with three matrix constraints
(``A_eq x = b_eq``, ``A_ge x ≥ b_ge``, ``ξ ≥ 0``), never one Python constraint per row, and handed
to any installed cvxpy LP solver (HIGHS by default; CLARABEL, PDLP, SCS, SCIPY, ...).
"""

from __future__ import annotations

import contextlib
import time
import warnings
from typing import Any

import numpy as np

from efce.concepts import gap_key
from efce.errors import BackendError, Interrupted, OptionError
from efce.games.game import Game
from efce.games.resources.memory import peak_rss_bytes
from efce.solvers.options import Method, Option, defaults
from efce.solvers.result import SolveResult, TraceRow

from .backends import call_solver, check_lp_inputs, must_isolate
from .efce_lp import CVXPY_FACTOR, EFCELP, LP_OPTIONS, LP_REPORT, build_efce_lp, evaluate_plan, lp_arguments
from .lp_highs import interrupted_result, verified

#: The options of ``lp-cvxpy`` (:data:`SOLVE_METHODS`): type, range and default of each.
OPTIONS = (
    *LP_OPTIONS,
    Option(
        "lp_solver",
        str,
        "the cvxpy solver (CLARABEL, HIGHS, PDLP, SCS, ...; installed ones)",
        default="HIGHS",
    ),
)
#: Option name → ``lp-cvxpy``'s default (:data:`OPTIONS`), :func:`solve_lp_cvxpy`'s own (its
#: ``solver`` is ``lp_solver``).
DEFAULTS = defaults(OPTIONS)

#: Accuracy settings for the first-order and splitting solvers, whose defaults (1e-4 .. 1e-3)
#: are too loose for the 1e-6 max deviation the project asks of an LP solution; the user's own
#: solver options take precedence.
ACCURATE_OPTIONS = {
    "SCS": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 10**6},
    "OSQP": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iter": 10**6, "polishing": True},
}
#: The peak of a solve over the model's estimate (the bytes of
#: :func:`~baselines.efce_lp.estimate_efce_lp`) for the solvers whose own work outweighs cvxpy's
#: copies (:data:`~baselines.efce_lp.CVXPY_FACTOR` for the others): Clarabel factors its KKT
#: system, whose fill-in the estimate leaves out.  Its whole solve peaked at 5.7–6.4 times the
#: estimate on the EFCE, EFCCE and NFCCE LPs of full Sheriff and of Goofspiel 4 with random
#: prizes, and at 7.6 on Battleship's EFCE LP (``battleship:rows=3,cols=2,ship_sizes=[1],shots=2``;
#: docs/results/lp_baseline.md).
BUDGET_FACTORS = {"CLARABEL": 8.0}
#: The library each solver loads HiGHS from (highspy and OR-Tools ship clashing copies, see
#: :mod:`baselines.backends`).
_HIGHS_COPY = {"HIGHS": "highspy", "PDLP": "ortools", "GLOP": "ortools"}


def installed_lp_solvers() -> list[str]:
    """cvxpy solvers installed here that take linear programs."""
    import cvxpy as cp

    return [name for name in cp.installed_solvers() if name not in ("ECOS_BB",)]


def _pdlp_accuracy():
    from ortools.pdlp import solvers_pb2

    proto = solvers_pb2.PrimalDualHybridGradientParams()
    proto.termination_criteria.simple_optimality_criteria.eps_optimal_relative = 1e-9
    proto.termination_criteria.simple_optimality_criteria.eps_optimal_absolute = 1e-9
    return proto


#: cvxpy solvers (with their options) already warmed up in this process.
_WARMED: set[tuple] = set()


def warm_up_cvxpy(solver: str, options: dict) -> float:
    """Pay cvxpy's and the solver's first-call costs before a timed run: import cvxpy and take a
    two-variable LP through the path the run takes — canonicalization for ``solver``
    (``Problem.get_problem_data``, whose first call loads cvxpy's reductions), the solver call
    with the run's options and the unpacking — once per process, solver and options (run it in
    the process that solves: a fresh worker has them all again).

    Returns
    -------
    float
        Seconds spent (0.0 when this process warmed up already).
    """
    key = (solver, tuple(sorted((k, repr(v)) for k, v in options.items())))
    if key in _WARMED:
        return 0.0
    started = time.perf_counter()
    _load_solver_library(solver)
    import cvxpy as cp
    import scipy.sparse as sp

    x = cp.Variable(2)  # max x + y  s.t.  x + 2y ≤ 4,  3x + y ≤ 6,  x, y ≥ 0
    problem = cp.Problem(
        cp.Maximize(cp.sum(x)), [sp.csc_matrix([[1.0, 2.0], [3.0, 1.0]]) @ x <= [4, 6], x >= 0]
    )
    with contextlib.suppress(cp.error.SolverError):  # the run itself reports the solver's failure
        _canonical_solve(problem, solver, False, dict(options))
    _WARMED.add(key)
    return time.perf_counter() - started


def _load_solver_library(solver: str) -> None:
    if _HIGHS_COPY.get(solver) == "ortools" and not must_isolate("ortools"):
        # Load OR-Tools' HiGHS before cvxpy's solver discovery tries highspy's (which then fails
        # to import here, expectedly: silence cvxpy's report of it).
        import logging

        import ortools.linear_solver.pywraplp  # noqa: F401
        import ortools.pdlp.python.pdlp  # noqa: F401

        logging.getLogger("__cvxpy__").setLevel(logging.CRITICAL)


def _canonical_solve(problem, solver: str, verbose: bool, options: dict) -> tuple[float, float]:
    """``problem.solve(solver=solver, **options)`` in its three steps (as cvxpy's own
    ``Problem.solve`` takes them): canonicalization, the solver call, unpacking the solution
    into the problem.  Returns the seconds of the first two.

    Raises
    ------
    cvxpy.error.SolverError
        The solver failed.
    """
    started = time.perf_counter()
    data, chain, inverse_data = problem.get_problem_data(solver, verbose=verbose, solver_opts=options)
    canonicalized = time.perf_counter()
    solution = chain.solve_via_data(problem, data, verbose=verbose, solver_opts=options)
    solved = time.perf_counter()
    with warnings.catch_warnings():
        # cvxpy warns "Solution may be inaccurate" on the statuses it calls inaccurate (a time
        # limit among them): the status says so, and solve_lp_cvxpy checks such a point itself.
        warnings.filterwarnings("ignore", message="Solution may be inaccurate", category=UserWarning)
        problem.unpack_results(solution, chain, inverse_data)
    return canonicalized - started, solved - canonicalized


def _solve_arrays(A_eq, b_eq, A_ge, b_ge, c, num_xi, solver, verbose, options):
    """Build and solve the cvxpy problem from the model's arrays (picklable: runs in a worker
    when the solver's HiGHS copy clashes with the one loaded here).  First the warm-up
    (:func:`warm_up_cvxpy`), then the problem's canonicalization, then the solver call, each
    timed.  Returns a plain dict."""
    options = dict(options)
    if solver == "PDLP" and "parameters_proto" not in options:
        options["parameters_proto"] = _pdlp_accuracy()
    if solver == "HIGHS":  # cvxpy makes a HiGHS object: its banner is printed only if verbose
        from .lp_highs import new_highs

        new_highs(verbose)
    compile_seconds = warm_up_cvxpy(solver, options)
    import cvxpy as cp

    x = cp.Variable(A_eq.shape[1], name="x")
    constraints = [A_eq @ x == b_eq, x[:num_xi] >= 0]
    if A_ge.shape[0]:
        constraints.append(A_ge @ x >= b_ge)
    problem = cp.Problem(cp.Maximize(c @ x) if np.any(c) else cp.Minimize(0), constraints)
    try:
        canonicalization_seconds, seconds = _canonical_solve(problem, solver, verbose, options)
    except cp.error.SolverError as exc:
        return {"error": str(exc).strip().splitlines()[0][:200] if str(exc).strip() else "solver error"}
    stats = problem.solver_stats
    return {
        "status": problem.status,
        "x": None if x.value is None else np.asarray(x.value),
        "value": problem.value,
        "compile_seconds": compile_seconds,
        "canonicalization_seconds": canonicalization_seconds,
        "seconds": seconds,
        "solver_seconds": None if stats is None or stats.solve_time is None else float(stats.solve_time),
        "iterations": int(stats.num_iters) if stats is not None and stats.num_iters is not None else 0,
    }


def solve_lp_cvxpy(
    game: Game,
    *,
    objective: str | int = DEFAULTS["objective"],
    welfare_threshold: float | None = DEFAULTS["welfare_threshold"],
    solver: str = DEFAULTS["lp_solver"],
    time_limit: float | None = DEFAULTS["time_limit"],
    memory_budget: int | None = None,
    verbose: bool = False,
    model: EFCELP | None = None,
    isolate: bool | None = None,
    concept: str = DEFAULTS["concept"],
    **solver_options: Any,
) -> SolveResult:
    """An optimal ``concept`` equilibrium (EFCE by default) by the von Stengel–Forges LP through
    cvxpy.  The defaults of ``objective``, ``welfare_threshold``, ``solver`` (HIGHS),
    ``time_limit`` and ``concept`` are ``lp-cvxpy``'s (:data:`OPTIONS`).

    Parameters
    ----------
    solver : any installed cvxpy solver taking LPs (:func:`installed_lp_solvers`: CLARABEL,
        HIGHS, PDLP, SCS, GLOP, SCIPY, OSQP, ... — whichever are installed); the first-order ones
        get tight tolerances (:data:`ACCURATE_OPTIONS`, PDLP 1e-9) unless ``solver_options`` say
        otherwise.
    time_limit : passed as the solver's own option where it has one (HIGHS/CLARABEL
        ``time_limit``, SCS ``time_limit_secs``, PDLP ``time_limit_sec``, SCIPY
        ``scipy_options.time_limit``).
    isolate : solve in a fresh worker process (None = when the solver's HiGHS library clashes
        with the one already loaded here, see :mod:`baselines.backends`).

    The memory budget check uses the model estimate times the solver's
    :data:`BUDGET_FACTORS` (Clarabel's factorization) or :data:`~baselines.efce_lp.CVXPY_FACTOR`
    (canonicalization copies).  Result as :func:`baselines.solve_lp_highs`: ``seconds`` is the
    solver call alone (``info["solver_seconds"]``: the solver's own report of it, where it has
    one); ``setup_seconds`` the model build and cvxpy's canonicalization of this problem
    (``info["canonicalization_seconds"]``); ``compile_seconds`` cvxpy's and the solver's
    first-call costs, paid before on a tiny LP (:func:`warm_up_cvxpy`), and the builders'
    compiling (:attr:`~baselines.efce_lp.EFCELP.compile_seconds`).

    Raises
    ------
    ValueError
        Unknown or uninstalled solver (the message lists the installed ones).
    games.GameError
        Out-of-scope game, unusable payoffs/threshold, model over budget (before building).
    baselines.backends.BackendError
        The cvxpy solver failed (one line: solver and its status).
    """
    name = str(solver).upper()
    installed = installed_lp_solvers()
    if name not in installed:
        raise ValueError(f"cvxpy solver {solver!r} is not installed; installed: {', '.join(installed)}")
    check_lp_inputs(game, welfare_threshold)
    if model is None:
        model = build_efce_lp(
            game,
            objective=objective,
            welfare_threshold=welfare_threshold,
            memory_budget=memory_budget,
            budget_factor=BUDGET_FACTORS.get(name, CVXPY_FACTOR),
            concept=concept,
        )
    options: dict[str, Any] = dict(ACCURATE_OPTIONS.get(name, {}))
    options.update(solver_options)
    if time_limit is not None:
        key = {
            "HIGHS": "time_limit",
            "CLARABEL": "time_limit",
            "SCS": "time_limit_secs",
            "PDLP": "time_limit_sec",
        }.get(name)
        if key:
            options.setdefault(key, float(time_limit))
        elif name == "SCIPY":
            options.setdefault("scipy_options", {}).setdefault("time_limit", float(time_limit))
    if isolate is None:
        isolate = name in _HIGHS_COPY and must_isolate(_HIGHS_COPY[name])
    args = (model.A_eq, model.b_eq, model.A_ge, model.b_ge, model.c, model.num_xi, name, verbose, options)
    method = f"lp-cvxpy-{name.lower()}"
    try:
        out = call_solver(_solve_arrays, *args, isolate=isolate, what=f"cvxpy's {name}")
    except Interrupted:
        return interrupted_result(method, model, f"cvxpy's {name}", info=dict(solver=name))
    if "error" in out:
        raise BackendError(f"cvxpy solver {name}", out["error"])
    import cvxpy as cp

    st = out["status"]
    status = {
        cp.OPTIMAL: "converged",
        cp.OPTIMAL_INACCURATE: "unverified",
        cp.INFEASIBLE: "infeasible",
        cp.INFEASIBLE_INACCURATE: "infeasible",
        cp.USER_LIMIT: "time_limit",
    }.get(st)
    if status is None:
        raise BackendError(f"cvxpy solver {name}", f"status {st}")
    info = dict(
        model.stats(),
        solver=name,
        cvxpy_status=st,
        objective=model.objective,
        canonicalization_seconds=out["canonicalization_seconds"],
        isolated=bool(isolate),
    )
    if out["solver_seconds"] is not None:
        info["solver_seconds"] = out["solver_seconds"]
    xi = None
    if out["x"] is not None and status != "infeasible":
        xi = out["x"][: model.num_xi].copy()
        info.update(evaluate_plan(game, model, xi))
        if out["value"] is not None and np.isfinite(out["value"]):
            info["objective_value"] = float(out["value"])
    if status == "unverified":
        # A solver's "optimal, inaccurate" point counts when the project's own checks accept
        # it, as lp-highs's "Unknown" (UNVERIFIED_TOLERANCE); else the run is an error.
        status = "converged" if verified(xi, info, model.concept) else "error"
    info["peak_memory_bytes"] = peak_rss_bytes()
    # The clock is the solver call alone, as lp-highs's: the canonicalization of this problem
    # is its model building (setup), cvxpy's and the solver's first-call costs are compile.
    seconds = out["seconds"]
    setup = model.build_seconds + out["canonicalization_seconds"]
    trace = (
        [TraceRow(out["iterations"], seconds, info[gap_key(model.concept)], info["max_violation"])]
        if xi is not None
        else []
    )
    return SolveResult(
        method,
        xi,
        status,
        out["iterations"],
        setup,
        seconds,
        trace,
        info,
        compile_seconds=model.compile_seconds + out["compile_seconds"],
    )


# ----------------------------------------------------------------------------- declaration
def _check(o: dict) -> None:
    installed = installed_lp_solvers()
    if o["lp_solver"].upper() not in installed:  # names are case-insensitive, as in the backend
        raise OptionError(
            f"--lp-solver: cvxpy solver '{o['lp_solver']}' is not installed; "
            f"installed: {', '.join(installed)}"
        )


def _run(game: Game, *, progress, **o) -> SolveResult:
    return solve_lp_cvxpy(game, solver=o["lp_solver"], **lp_arguments(o))


#: ``lp-cvxpy`` for :func:`efce.solve` (collected by :data:`efce.experiments.solve.METHODS`).
SOLVE_METHODS = (
    Method(
        "lp-cvxpy",
        "the von Stengel–Forges LP of the concept's optimal equilibrium through cvxpy",
        OPTIONS,
        _run,
        chance="public",
        warms_its_clock=True,
        check=_check,
        payoff_info=LP_REPORT,
    ),
)
