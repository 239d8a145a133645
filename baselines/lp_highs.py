"""Solve the EFCE LP (von Stengel and Forges 2008) — or the EFCCE or NFCCE LP, which differ in
their incentive rows only — with HiGHS through highspy directly.

The CSC matrix of :func:`baselines.efce_lp.build_efce_lp` is handed to ``Highs.passModel`` as a
``HighsLp`` (:func:`baselines.backends.highs_model`: no per-row Python calls).  This is the LP
baseline of section 5 of Farina, Ling, Fang, Sandholm 2019 (there with Gurobi's barrier method).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from efce.concepts import gap_key
from efce.errors import BackendError, Interrupted
from efce.games.game import Game
from efce.games.resources.memory import peak_rss_bytes
from efce.solvers.options import Method, defaults
from efce.solvers.result import SolveResult, TraceRow
from efce.streams import quiet_c_output

from .backends import call_solver, check_lp_inputs, highs_model, must_isolate
from .efce_lp import EFCELP, LP_OPTIONS, LP_REPORT, build_efce_lp, evaluate_plan, lp_arguments

#: The HiGHS solvers ``solver=`` may name (``"choose"``: HiGHS picks).
SOLVERS = ("choose", "simplex", "ipm", "ipx", "pdlp", "hipdlp")

#: The options of ``lp-highs`` (:data:`SOLVE_METHODS`): type, range and default of each.
OPTIONS = LP_OPTIONS
#: Option name → ``lp-highs``'s default (:data:`OPTIONS`), :func:`solve_lp_highs`'s own.
DEFAULTS = defaults(OPTIONS)

#: ``lp-highs`` picks HiGHS's solver by model size (every setting tried and what it did:
#: docs/results/lp_highs_settings.md).  Below :data:`FIRST_ORDER_NONZEROS`, IPX with crossover:
#: exact vertices and certified infeasibility (Sheriff 3/3/3, 181k nonzeros: 16.5 s; Battleship
#: 2×2 with 3 shots, 193k: 20.9 s, where HiPDLP did not finish in 90 s).  From there on, HiGHS's
#: own PDLP: on the full Sheriff LP (1.8M nonzeros) IPX did not finish building its starting basis
#: in 600 s and no simplex variant nor cuPDLP-C solved it in 180 s, while HiPDLP reached the
#: optimum in 179 s; on small Battleship (14M) IPX made 3 steps in 300 s.  HiPDLP cannot prove an
#: LP infeasible: a large infeasible model runs to its time limit.
EXACT_OPTIONS: dict = {"solver": "ipm"}
FIRST_ORDER_OPTIONS: dict = {"solver": "hipdlp", "pdlp_optimality_tolerance": 1e-7}
#: Nonzeros of the model from which :func:`default_options` picks the first-order solver.
FIRST_ORDER_NONZEROS = 1_000_000


def default_options(nonzeros: int) -> dict:
    """The HiGHS options ``lp-highs`` uses on a model with this many nonzeros (see above)."""
    return dict(FIRST_ORDER_OPTIONS if nonzeros >= FIRST_ORDER_NONZEROS else EXACT_OPTIONS)


#: A point HiGHS returns with model status "Unknown" is accepted when its max deviation and
#: Definition-3 violation are at most this.
UNVERIFIED_TOLERANCE = 1e-6


def verified(xi: np.ndarray | None, info: dict, concept: str) -> bool:
    """Whether a point its solver does not vouch for (HiGHS's "Unknown", cvxpy's "optimal,
    inaccurate") counts as converged: the project's own gap of ``concept`` and Definition-3
    violation (``info``, from :func:`~baselines.efce_lp.evaluate_plan`) are at most
    :data:`UNVERIFIED_TOLERANCE`.

    Returns
    -------
    bool
        False also when there is no point.
    """
    return xi is not None and max(info[gap_key(concept)], info["max_violation"]) <= UNVERIFIED_TOLERANCE


#: HiGHS settings (solver options and thread count) already warmed up in this process.
_WARMED: set[tuple] = set()
#: Whether this process has made its first HiGHS object (which prints HiGHS's banner).
_BANNER_PRINTED = False


def new_highs(verbose: bool = False) -> Any:
    """A ``highspy.Highs()`` solver object.  HiGHS prints its banner ("Running HiGHS ...
    Copyright ...") on stdout when a process makes its first one, before any option can silence
    it: unless ``verbose``, that first object is made with stdout silenced
    (:func:`efce.streams.quiet_c_output`), so a library caller's stdout gets nothing of it."""
    global _BANNER_PRINTED
    import highspy

    if _BANNER_PRINTED:
        return highspy.Highs()
    with quiet_c_output(not verbose):
        h = highspy.Highs()
    _BANNER_PRINTED = True
    return h


def warm_up_highs(settings: dict, threads: int, verbose: bool = False) -> float:
    """Pay HiGHS's first-call costs before a timed run: load highspy and solve a two-variable
    LP with the run's solver settings (presolve off, so that the chosen solver itself runs and
    HiGHS starts its thread pool), once per process and settings.

    Returns
    -------
    float
        Seconds spent (0.0 when these settings were warmed up already in this process).
    """
    key = (tuple(sorted((k, repr(v)) for k, v in settings.items())), int(threads or 0))
    if key in _WARMED:
        return 0.0
    started = time.perf_counter()
    import scipy.sparse as sp

    h = new_highs(verbose)
    h.setOptionValue("output_flag", False)
    for name, value in settings.items():
        h.setOptionValue(name, value)
    h.setOptionValue("presolve", "off")
    if threads:
        h.setOptionValue("threads", int(threads))
    # max x + y  s.t.  x + 2y ≤ 4,  3x + y ≤ 6,  x, y ≥ 0
    A = sp.csc_matrix(np.array([[1.0, 2.0], [3.0, 1.0]]))
    h.passModel(
        highs_model(A, np.ones(2), np.zeros(2), np.full(2, np.inf), np.full(2, -np.inf), np.array([4.0, 6.0]))
    )
    h.run()
    _WARMED.add(key)
    return time.perf_counter() - started


_MODEL_STATUS = {
    "kOptimal": "converged",
    "kTimeLimit": "time_limit",
    "kInfeasible": "infeasible",
    "kIterationLimit": "iteration_limit",
    "kMemoryLimit": "out_of_memory",
    "kUnknown": "unknown",
}


def _run_highs(
    lp_arrays: tuple, settings: dict, threads: int, time_limit: float | None, verbose: bool, num_xi: int
) -> dict:
    """Pass the LP to HiGHS and run it (module level and plain data in and out, so that it can
    run in an :class:`IsolatedWorker`).  Returns the status, HiGHS's counters, ξ (or None) and
    ``compile_seconds``: HiGHS's first-call costs, paid here (in the process that runs the
    solve: a fresh worker has them all again) before the clock starts (:func:`warm_up_highs`)."""
    compile_seconds = warm_up_highs(settings, threads, verbose)
    import highspy

    h = new_highs(verbose)
    h.setOptionValue("output_flag", bool(verbose))
    for key, value in settings.items():
        if h.setOptionValue(key, value) != highspy.HighsStatus.kOk:
            raise BackendError("HiGHS", f"option {key}={value!r} rejected")
    if threads:
        h.setOptionValue("threads", int(threads))
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    t0 = time.perf_counter()
    status_pass = h.passModel(highs_model(*lp_arrays))
    pass_seconds = time.perf_counter() - t0
    if status_pass == highspy.HighsStatus.kError:
        return dict(pass_error=status_pass.name, compile_seconds=compile_seconds)
    t1 = time.perf_counter()
    run_status = h.run()
    seconds = time.perf_counter() - t1
    ms = h.getModelStatus()
    status = _MODEL_STATUS.get(ms.name, "error")
    if run_status == highspy.HighsStatus.kError and status in ("error", "unknown"):
        raise BackendError(
            "HiGHS", f"run returned {run_status.name}, model status {h.modelStatusToString(ms)!r}"
        )
    info = h.getInfo()
    sol = h.getSolution()
    xi = None
    if status in ("converged", "time_limit", "iteration_limit", "unknown") and sol.value_valid:
        xi = np.asarray(sol.col_value)[:num_xi].copy()
    return dict(
        status=status,
        highs_status=h.modelStatusToString(ms),
        pass_seconds=pass_seconds,
        seconds=seconds,
        compile_seconds=compile_seconds,
        xi=xi,
        objective_value=float(info.objective_function_value),
        simplex_iterations=int(info.simplex_iteration_count),
        ipm_iterations=int(info.ipm_iteration_count),
        pdlp_iterations=int(info.pdlp_iteration_count),
        crossover_iterations=int(info.crossover_iteration_count),
    )


def interrupted_result(method: str, model: EFCELP, backend: str, info: dict | None = None) -> SolveResult:
    """The result of an LP run that a stop request ended before its solver returned: status
    ``interrupted``, no point (the solver's iterate died with its worker)."""
    info = dict(
        model.stats(),
        objective=model.objective,
        **(info or {}),
        message=f"interrupted by a stop request before {backend} returned a point",
        peak_memory_bytes=peak_rss_bytes(),
    )
    return SolveResult(
        method,
        None,
        "interrupted",
        0,
        model.build_seconds,
        0.0,
        [],
        info,
        compile_seconds=model.compile_seconds,
    )


def solve_lp_highs(
    game: Game,
    *,
    objective: str | int = DEFAULTS["objective"],
    welfare_threshold: float | None = DEFAULTS["welfare_threshold"],
    solver: str | None = None,
    threads: int = 0,
    time_limit: float | None = DEFAULTS["time_limit"],
    memory_budget: int | None = None,
    verbose: bool = False,
    model: EFCELP | None = None,
    options: dict | None = None,
    concept: str = DEFAULTS["concept"],
) -> SolveResult:
    """An optimal ``concept`` equilibrium (EFCE by default) by the von Stengel–Forges LP, solved
    by HiGHS.  The defaults of ``objective``, ``welfare_threshold``, ``time_limit`` and
    ``concept`` are ``lp-highs``'s (:data:`OPTIONS`).

    Parameters
    ----------
    objective : ``"welfare"``, ``"feasibility"``, or a player (0/1) — see :func:`build_efce_lp`.
    welfare_threshold : optional lower bound τ on social welfare.
    solver : one of :data:`SOLVERS` (``"ipm"``/``"ipx"``: interior point, ``"pdlp"``: cuPDLP-C,
        ``"hipdlp"``: HiGHS's own PDLP); None = :func:`default_options` of the model's size.
    options : dict, optional
        Further HiGHS options by name, applied over the solver's defaults (e.g.
        ``{"run_crossover": "off", "presolve": "off", "simplex_strategy": 4}``).
    threads : HiGHS threads (0 = HiGHS default).
    time_limit : seconds for the solver call (None = no limit).
    memory_budget : bytes; the model is refused up front (:class:`~efce.errors.ModelTooLarge`)
        when its estimate exceeds it (None = 60% of available RAM).
    model : a prebuilt model (then objective/welfare_threshold/memory_budget/concept are ignored).
    concept : ``"efce"``, ``"efcce"`` or ``"nfcce"`` (:func:`~baselines.efce_lp.incentive_block`).

    Returns
    -------
    SolveResult
        ``point`` = ξ (relevant-pair order), status ``converged`` / ``time_limit`` /
        ``infeasible`` / ``error``; ``setup_seconds`` is the model build, ``seconds`` the HiGHS
        call, ``compile_seconds`` HiGHS's first-call costs paid before it
        and the builders' compiling (:attr:`~baselines.efce_lp.EFCELP.compile_seconds`)
        (:func:`warm_up_highs`); ``info`` holds welfare, utilities, efce_gap, max_violation,
        model statistics and peak memory.

    Raises
    ------
    games.GameError
        Out-of-scope game, unusable payoffs or threshold, model over budget (before building).
    baselines.backends.BackendError
        HiGHS rejected the model or an option (one line with its status).
    """
    if solver is not None and solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, not {solver!r}")
    check_lp_inputs(game, welfare_threshold)
    if model is None:
        model = build_efce_lp(
            game,
            objective=objective,
            welfare_threshold=welfare_threshold,
            memory_budget=memory_budget,
            concept=concept,
        )
    gap = gap_key(model.concept)
    settings = default_options(model.nonzeros) if solver is None else {"solver": solver}
    settings.update(options or {})
    lp_arrays = (model.A, model.c, model.col_lower, model.col_upper, model.row_lower, model.row_upper)
    args = (lp_arrays, settings, threads, time_limit, verbose, model.num_xi)
    isolated = must_isolate("highspy")
    # HiGHS checks its interrupt callbacks only inside simplex and IPM iterations (not in
    # presolve, crossover or its PDLP): a stop request needs the worker (call_solver).
    try:
        run = call_solver(_run_highs, *args, isolate=isolated, what="HiGHS")
    except Interrupted:
        return interrupted_result("lp-highs", model, "HiGHS", info=dict(solver=settings["solver"]))
    if "pass_error" in run:
        raise BackendError("HiGHS", f"passModel returned {run['pass_error']} for the EFCE LP of {game.name}")
    status, xi, seconds, pass_seconds = run["status"], run["xi"], run["seconds"], run["pass_seconds"]
    counters = ("simplex_iterations", "ipm_iterations", "pdlp_iterations", "crossover_iterations")
    info = dict(
        model.stats(),
        solver=settings["solver"],
        highs_options=settings,
        highs_status=run["highs_status"],
        pass_seconds=pass_seconds,
        objective=model.objective,
        isolated=isolated,
        **{key: run[key] for key in counters},
    )
    if xi is not None:
        info.update(evaluate_plan(game, model, xi))
        info["objective_value"] = run["objective_value"]
    if status == "unknown":
        # IPM without crossover and the PDLP solvers end "Unknown" after presolve (no basis to
        # postsolve with): the point counts when the project's own checks accept it.
        status = "converged" if verified(xi, info, model.concept) else "error"
    info["peak_memory_bytes"] = peak_rss_bytes()
    iterations = info["simplex_iterations"] + info["ipm_iterations"] + info["pdlp_iterations"]
    trace = []
    if xi is not None:
        trace.append(TraceRow(iterations, seconds, info[gap], info["max_violation"]))
    return SolveResult(
        "lp-highs",
        xi,
        status,
        iterations,
        model.build_seconds + pass_seconds,
        seconds,
        trace,
        info,
        compile_seconds=model.compile_seconds + run["compile_seconds"],
    )


# ----------------------------------------------------------------------------- declaration


def _run(game: Game, *, progress, **o) -> SolveResult:
    return solve_lp_highs(game, **lp_arguments(o))


#: ``lp-highs`` for :func:`efce.solve` (collected by :data:`efce.experiments.solve.METHODS`).
SOLVE_METHODS = (
    Method(
        "lp-highs",
        "the von Stengel–Forges LP of the concept's optimal equilibrium, solved by HiGHS",
        OPTIONS,
        _run,
        chance="public",
        warms_its_clock=True,
        payoff_info=LP_REPORT,
    ),
)
