"""Solve the EFCE LP (von Stengel and Forges 2008) with OR-Tools PDLP, a first-order method.

PDLP (Applegate et al. 2021, "Practical large-scale linear programming using primal-dual hybrid
gradient") runs restarted primal-dual hybrid gradient on ``min cᵀx s.t. l ≤ Ax ≤ u, x ∈ [lb, ub]``
with diagonal preconditioning; an iteration is two sparse products with ``A``, so its memory is
the matrix (a few copies) plus a dozen vectors — no factorization, which is where HiGHS's IPX
and simplex stall on these LPs (see ``docs/results/lp_highs_settings.md``).

The model is the one of :func:`baselines.efce_lp.build_efce_lp`.  The solve runs in *stages of
tightening tolerance* (relative KKT tolerance 1e-2, 1e-3, …), each stage warm-started from the
previous primal-dual pair with its primal weight; after each stage the iterate ξ is evaluated by
the project's own code (max deviation by :mod:`solvers.evaluation.gaps`, Definition-3 violation, welfare),
which gives the anytime trace plotted beside the regret minimizer's.  The run ends when both the
max deviation and the violation are at most ``tolerance`` at a stage PDLP calls optimal.  The
first stage, which starts cold, runs after Glop's presolve on LPs of up to
:data:`PRESOLVE_MAX_NONZEROS` nonzeros (PDLP ignores a warm start under it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from efce.concepts import DEFAULT_CONCEPT, check_concept
from efce.errors import BackendError, Interrupted
from efce.games.game import Game
from efce.games.resources.compiled import current_mode, kernel_mode
from efce.games.resources.memory import check_budget, peak_rss_bytes
from efce.interrupts import acknowledge_stop, stop_requested
from efce.solvers.options import Method, Option, defaults
from efce.solvers.result import SolveResult, TraceRow
from efce.solvers.scaling import caller_payoff
from efce.solvers.warm_up import compiling_time

from .backends import IsolatedWorker, check_lp_inputs, must_isolate, stoppable
from .efce_lp import (
    EFCELP,
    LP_OPTIONS,
    LP_REPORT,
    ModelSize,
    build_efce_lp,
    estimate_efce_lp,
    evaluate_plan,
    lp_arguments,
    warm_up_lp,
)


def _positive_tolerance(value: float) -> str | None:
    # 0 means "run the whole budget" for the iterative methods; PDLP's --target-gap is instead
    # its relative tolerance, where 0 is no stopping rule at all.
    return None if value > 0 else "a positive number: lp-pdlp reads --target-gap as its relative tolerance"


#: The options of ``lp-pdlp`` (:data:`SOLVE_METHODS`): type, range and default of each.
OPTIONS = (
    *LP_OPTIONS,
    Option("target_gap", float, "its relative tolerance (> 0)", _positive_tolerance, default=1e-6),
)


#: Option name → ``lp-pdlp``'s default (:data:`OPTIONS`), :func:`solve_lp_pdlp`'s own (its
#: ``tolerance`` is ``target_gap``).
DEFAULTS = defaults(OPTIONS)

#: Peak memory model of a PDLP run (model build + OR-Tools' copies + evaluation), calibrated on
#: the full Sheriff and the small Battleship LP (see docs/results/lp_baseline.md): the COO
#: triplets of the build and the CSC we hand over (~36 B per nonzero), OR-Tools' own CSC, its
#: rescaled copy and its transpose (~16 B each), and per row or column about twenty float64
#: vectors (iterates, averages, deltas, scaling, bounds).
PDLP_BYTES_PER_NONZERO = 100
PDLP_BYTES_PER_ROW_OR_COLUMN = 200
PDLP_FIXED_BYTES = 400 * 2**20

#: The first stage starts cold and runs after Glop's presolve on LPs of at most this many
#: nonzeros: on full Sheriff's EFCE LP (1.8M) PDLP then needs a fifth fewer iterations, on
#: ``goofspiel:players=2,ranks=4,prizes=random``'s (1.6M) a tenth of them.  The presolve holds
#: about 300 more bytes per nonzero (Goofspiel's peak 469 → 926 MiB; small Battleship's LP, 14M
#: nonzeros: 2.7 → 6.5 GiB, and most of a minute before PDLP's first iteration), so larger LPs
#: start without it.  docs/results/lp_baseline.md.
PRESOLVE_MAX_NONZEROS = 4_000_000
PRESOLVE_BYTES_PER_NONZERO = 300


def presolves(nonzeros: int) -> bool:
    """Whether :func:`solve_lp_pdlp`'s first stage runs Glop's presolve on an LP of
    ``nonzeros`` nonzeros (:data:`PRESOLVE_MAX_NONZEROS`)."""
    return nonzeros <= PRESOLVE_MAX_NONZEROS


#: First stage's relative tolerance; each later stage divides it by ``STAGE_FACTOR``.
FIRST_STAGE_TOLERANCE = 1e-2
STAGE_FACTOR = 10.0
#: PDLP's tolerance is never tightened below this (double precision on these LPs).
SMALLEST_STAGE_TOLERANCE = 1e-12


def estimate_pdlp_bytes(
    game: Game, *, welfare_threshold: float | None = None, concept: str = DEFAULT_CONCEPT
) -> int:
    """Estimated peak memory (bytes) of :func:`solve_lp_pdlp` on ``game``, from the exact model
    counts of :func:`baselines.efce_lp.estimate_efce_lp` (nothing large is allocated)."""
    return _pdlp_bytes(estimate_efce_lp(game, extra_rows=int(welfare_threshold is not None), concept=concept))


def _pdlp_bytes(size: ModelSize) -> int:
    """:func:`estimate_pdlp_bytes` of a model of ``size`` (a built model's ``size`` holds the
    counts the estimate reads: after the build, a run reads them there)."""
    per_nonzero = PDLP_BYTES_PER_NONZERO + (PRESOLVE_BYTES_PER_NONZERO if presolves(size.nonzeros) else 0)
    return (
        PDLP_FIXED_BYTES
        + size.nonzeros * per_nonzero
        + (size.variables + size.rows) * PDLP_BYTES_PER_ROW_OR_COLUMN
    )


# --------------------------------------------------------------------------- the backend session
_SESSION = None  # the QuadraticProgram of this (worker) process


def _load_program(A, c, row_lower, row_upper, col_lower, col_upper) -> None:
    """Build PDLP's QuadraticProgram (minimize −cᵀx) and keep it for the stages."""
    global _SESSION
    from ortools.pdlp.python import pdlp

    qp = pdlp.QuadraticProgram()
    qp.objective_vector = -np.asarray(c, dtype=np.float64)
    qp.constraint_matrix = A
    qp.constraint_lower_bounds = row_lower
    qp.constraint_upper_bounds = row_upper
    qp.variable_lower_bounds = col_lower
    qp.variable_upper_bounds = col_upper
    _SESSION = qp


#: PDLP thread counts already warmed up in this process.
_WARMED: set[int] = set()


def warm_up_pdlp(threads: int) -> float:
    """Pay OR-Tools PDLP's first-call costs before a timed run: load its library and solve a
    two-variable LP with the run's thread count, once per process (run it in the process that
    will run the stages: a fresh worker has them all again).

    Returns
    -------
    float
        Seconds spent (0.0 when this process warmed up already).
    """
    if int(threads) in _WARMED:
        return 0.0
    started = time.perf_counter()
    import scipy.sparse as sp
    from ortools.pdlp import solvers_pb2
    from ortools.pdlp.python import pdlp

    qp = pdlp.QuadraticProgram()  # min −x − y  s.t.  x + 2y ≤ 4,  3x + y ≤ 6,  x, y ≥ 0
    qp.objective_vector = np.array([-1.0, -1.0])
    qp.constraint_matrix = sp.csc_matrix(np.array([[1.0, 2.0], [3.0, 1.0]]))
    qp.constraint_lower_bounds = np.full(2, -np.inf)
    qp.constraint_upper_bounds = np.array([4.0, 6.0])
    qp.variable_lower_bounds = np.zeros(2)
    qp.variable_upper_bounds = np.full(2, np.inf)
    params = solvers_pb2.PrimalDualHybridGradientParams()
    params.num_threads = int(threads)
    params.termination_criteria.simple_optimality_criteria.eps_optimal_relative = 1e-6
    pdlp.primal_dual_hybrid_gradient(qp, params)
    _WARMED.add(int(threads))
    return time.perf_counter() - started


def _unload_program() -> None:
    global _SESSION
    _SESSION = None


def _run_stage(params_bytes: bytes, primal, dual):
    """One PDLP call on the loaded program: ``(primal, dual, solve_log bytes)``."""
    from ortools.pdlp import solvers_pb2
    from ortools.pdlp.python import pdlp

    params = solvers_pb2.PrimalDualHybridGradientParams()
    params.ParseFromString(params_bytes)
    start = None
    if primal is not None:
        start = pdlp.PrimalAndDualSolution()
        start.primal_solution = primal
        start.dual_solution = dual
    result = pdlp.primal_dual_hybrid_gradient(_SESSION, params, initial_solution=start)
    return (
        np.asarray(result.primal_solution),
        np.asarray(result.dual_solution),
        result.solve_log.SerializeToString(),
    )


class _Backend:
    """PDLP in this process, or in a fresh worker when highspy's libhighs is loaded here or a
    stop request must be able to end a stage (:func:`baselines.backends.stoppable`: a stage runs
    in C++ and returns only at its own limits)."""

    def __init__(self, model: EFCELP, isolate: bool | None, threads: int):
        self.isolate = (must_isolate("ortools") or stoppable()) if isolate is None else bool(isolate)
        args = (model.A, model.c, model.row_lower, model.row_upper, model.col_lower, model.col_upper)
        self.worker = None
        #: Seconds of :func:`warm_up_pdlp` in the process that runs the stages.
        self.compile_seconds = 0.0
        if self.isolate:
            self.worker = IsolatedWorker()
            self.compile_seconds = self.worker.call(warm_up_pdlp, threads)
            self.worker.call(_load_program, *args)
        else:
            try:
                self.compile_seconds = warm_up_pdlp(threads)
                _load_program(*args)
            except ImportError as exc:
                raise BackendError(
                    "OR-Tools PDLP", f"cannot load ({str(exc).splitlines()[0][:120]}); pass isolate=True"
                ) from None

    def run(self, params_bytes, primal, dual):
        if self.worker is None:
            primal, dual, log = _run_stage(params_bytes, primal, dual)
        else:
            primal, dual, log = self.worker.call(_run_stage, params_bytes, primal, dual)
        # Arrays unpickled from the worker's pipe are read-only, and so are OR-Tools' own in
        # this process; numba compiles a separate specialization of the gap evaluator's kernels
        # for read-only arrays: inside the clock, on a first run, after the warm-up compiled the
        # writable one.  One copy per stage where needed.
        return np.require(primal, requirements="W"), np.require(dual, requirements="W"), log

    def close(self):
        if self.worker is not None:
            self.worker.close()
        else:
            _unload_program()


def _stage_params(
    tolerance: float,
    seconds: float,
    threads: int,
    primal_weight: float | None,
    verbose: bool,
    options: dict,
    presolve: bool = False,
) -> bytes:
    from ortools.pdlp import solvers_pb2

    params = solvers_pb2.PrimalDualHybridGradientParams()
    params.num_threads = int(threads)
    params.verbosity_level = 2 if verbose else 0
    params.presolve_options.use_glop = bool(presolve)
    crit = params.termination_criteria
    crit.simple_optimality_criteria.eps_optimal_relative = tolerance
    crit.simple_optimality_criteria.eps_optimal_absolute = tolerance
    crit.time_sec_limit = max(float(seconds), 1e-3)
    if primal_weight is not None and np.isfinite(primal_weight) and primal_weight > 0:
        params.initial_primal_weight = float(primal_weight)
    for key, value in options.items():
        if not hasattr(params, key):
            raise ValueError(f"unknown PDLP parameter {key!r}")
        setattr(params, key, value)
    return params.SerializeToString()


_REASONS = {
    "TERMINATION_REASON_OPTIMAL": "converged",
    "TERMINATION_REASON_TIME_LIMIT": "time_limit",
    "TERMINATION_REASON_ITERATION_LIMIT": "iteration_limit",
    "TERMINATION_REASON_KKT_MATRIX_PASS_LIMIT": "iteration_limit",
    "TERMINATION_REASON_PRIMAL_INFEASIBLE": "infeasible",
    "TERMINATION_REASON_PRIMAL_OR_DUAL_INFEASIBLE": "infeasible",
}


def solve_lp_pdlp(
    game: Game,
    *,
    objective: str | int = DEFAULTS["objective"],
    welfare_threshold: float | None = DEFAULTS["welfare_threshold"],
    tolerance: float = DEFAULTS["target_gap"],
    time_limit: float | None = DEFAULTS["time_limit"],
    threads: int = 2,
    first_stage_tolerance: float | None = None,
    memory_budget: int | None = None,
    isolate: bool | None = None,
    verbose: bool = False,
    model: EFCELP | None = None,
    progress: Callable[[TraceRow], None] | None = None,
    concept: str = DEFAULTS["concept"],
    **pdlp_options: Any,
) -> SolveResult:
    """EFCE by the von Stengel–Forges LP, solved by OR-Tools PDLP in stages of tightening
    tolerance.  The defaults of ``objective``, ``welfare_threshold``, ``tolerance`` (1e-6, the
    ``target_gap`` of ``lp-pdlp``) and ``time_limit`` are ``lp-pdlp``'s (:data:`OPTIONS`).

    Parameters
    ----------
    objective : ``"welfare"``, ``"feasibility"``, or a player (0/1) — see
        :func:`baselines.build_efce_lp`.
    welfare_threshold : optional lower bound τ on social welfare (one more row).
    tolerance : the run is ``converged`` when the iterate's max deviation (raw payoff units,
        :mod:`solvers.evaluation.gaps`) and its Definition-3 violation ``max(|Cξ − b|_∞, max(−ξ))`` are both
        at most this, at a stage PDLP reports optimal for its own relative KKT tolerance.
    time_limit : seconds for all stages together (None = none).
    threads : PDLP threads (default 2).
    first_stage_tolerance : PDLP's relative tolerance in the first stage; each next stage is
        10× tighter, warm-started from the last primal-dual pair and primal weight.  None = one
        stage at ``tolerance`` (further stages only if the project's checks still fail): a warm
        start resets PDLP's restart averages, so on the full Sheriff LP stages from 1e-2 took
        19.7k iterations against 13.8k for one stage (docs/results/lp_baseline.md).  Pass e.g.
        :data:`FIRST_STAGE_TOLERANCE` (1e-2) for a denser anytime trace.
    memory_budget : bytes; the run is refused up front (:class:`games.resources.memory.MemoryBudgetExceeded`)
        when :func:`estimate_pdlp_bytes` exceeds it (None = 60% of the available RAM).
    isolate : run PDLP in a fresh worker process (None = only when highspy's HiGHS library is
        already loaded here, which OR-Tools cannot coexist with).
    concept : the equilibrium the LP's incentive rows enforce (``"efce"``, ``"efcce"``,
        ``"nfcce"``); its gap is the stopping criterion and the trace's gap.
    pdlp_options : further fields of ``PrimalDualHybridGradientParams`` (e.g.
        ``use_feasibility_polishing=True``).

    Returns
    -------
    SolveResult
        ``point`` = ξ of the last stage; ``compile_seconds`` = OR-Tools' first call
        (:func:`warm_up_pdlp`, in the process that runs the stages), the gap evaluator's
        kernels loaded on the model and the builders' compiling
        (:attr:`~baselines.efce_lp.EFCELP.compile_seconds`), all before the clock;
        ``trace`` = one row per stage (iteration = PDLP's cumulative iterations, seconds =
        wall clock since the solver started, gap = max deviation, infeasibility = Definition-3
        violation, extra: welfare, stage tolerance);
        status ``converged`` / ``time_limit`` / ``infeasible`` / ``iteration_limit``.

    Raises
    ------
    games.GameError
        Out-of-scope game, payoffs beyond :data:`baselines.backends.MAX_ABS_PAYOFF`, a
        non-finite threshold, or a model over the memory budget — all before building.
    """
    if not (tolerance > 0 and np.isfinite(tolerance)):
        raise ValueError(f"tolerance must be a positive number, not {tolerance}")
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"time_limit must be positive, not {time_limit}")
    check_lp_inputs(game, welfare_threshold)
    concept = check_concept(model.concept if model is not None else concept)
    best_terminal = float(np.asarray(game.payoffs)[:, :2].sum(axis=1).max(initial=-np.inf))
    if welfare_threshold is not None and welfare_threshold > best_terminal:
        # PDLP's infeasibility detection is slow (no certificate in 30 s on small Sheriff even
        # for this case); every plan's welfare is at most the best terminal's.
        return SolveResult(
            "lp-pdlp",
            None,
            "infeasible",
            0,
            0.0,
            0.0,
            [],
            {
                "message": f"no {concept.upper()} has welfare ≥ {caller_payoff(welfare_threshold):g}: no "
                f"terminal has welfare above {caller_payoff(best_terminal):g}",
                "peak_memory_bytes": peak_rss_bytes(),
            },
        )
    if model is None:
        need = estimate_pdlp_bytes(game, welfare_threshold=welfare_threshold, concept=concept)
        check_budget(need, f"the {concept.upper()} LP of {game.name} for PDLP", memory_budget)
        # The PDLP estimate above replaces the generic (factorizing-solver) one of the builder.
        model = build_efce_lp(
            game,
            objective=objective,
            welfare_threshold=welfare_threshold,
            memory_budget=2**62,
            concept=concept,
        )
    from efce.solvers.evaluation.gaps import EFCEGapEvaluator

    t_setup = time.perf_counter()
    with compiling_time() as compiled:
        evaluator = EFCEGapEvaluator(game, model.pairs, concept=concept)
    try:
        if stop_requested():
            acknowledge_stop()
            raise Interrupted("stop requested before PDLP started")
        backend = _Backend(model, isolate, threads)
        # The stages' clock includes the project's evaluation of each stage's ξ: its compiled
        # kernels are loaded (compiled on first use) here, on this model, so that the clock
        # sees the kernel signatures warm.  One evaluation of the zero plan, compiled even where
        # the setup runs in ``auto`` mode (small calls as Python): a variant compiled once always
        # runs compiled, so no stage's evaluation runs as Python (Method.warms_its_clock).
        t_evaluator = time.perf_counter()
        with kernel_mode("compiled" if current_mode() == "auto" else current_mode()):
            evaluator(np.zeros(model.num_xi))
        evaluator_seconds = time.perf_counter() - t_evaluator
    except Interrupted:
        from .lp_highs import interrupted_result

        return interrupted_result("lp-pdlp", model, "OR-Tools PDLP")
    first_calls = backend.compile_seconds + evaluator_seconds + compiled()
    setup_seconds = model.build_seconds + time.perf_counter() - t_setup - first_calls
    compile_seconds = first_calls + model.compile_seconds

    from ortools.pdlp import solve_log_pb2  # protobuf only: no HiGHS library involved

    # Decided on the count the memory estimate uses, so that the estimate covers the presolve.
    presolve = presolves(model.size.nonzeros)
    trace: list[TraceRow] = []
    primal = dual = None
    primal_weight = None
    stage_tol = float(tolerance if first_stage_tolerance is None else first_stage_tolerance)
    iterations = 0
    solver_seconds = 0.0
    status = "time_limit"
    reason_text = ""
    report = None
    xi = None
    t0 = time.perf_counter()
    try:
        while True:
            remaining = np.inf if time_limit is None else time_limit - (time.perf_counter() - t0)
            if remaining <= 0:
                status = "time_limit"
                break
            if stop_requested():
                acknowledge_stop()  # the stages so far are kept
                status = "interrupted"
                break
            params = _stage_params(
                stage_tol,
                min(remaining, 1e9),
                threads,
                primal_weight,
                verbose,
                pdlp_options,
                # PDLP ignores a warm start under presolve: only the cold stage may use it.
                presolve=primal is None and presolve,
            )
            try:
                stage = backend.run(params, primal, dual)
            except Interrupted:  # the stage in progress is lost; the previous ones are kept
                status = "interrupted"
                break
            primal, dual, log_bytes = stage
            log = solve_log_pb2.SolveLog()
            log.ParseFromString(log_bytes)
            iterations += int(log.iteration_count)
            solver_seconds += float(log.solve_time_sec)
            reason = solve_log_pb2.TerminationReason.Name(log.termination_reason)
            reason_text = reason.replace("TERMINATION_REASON_", "").lower()
            if log.solution_stats.primal_weight > 0:
                primal_weight = float(log.solution_stats.primal_weight)
            stage_status = _REASONS.get(reason)
            if stage_status is None:
                raise BackendError("OR-Tools PDLP", f"{reason_text} ({log.termination_string[:120]})")
            if stage_status == "infeasible":
                status = "infeasible"
                break
            xi = primal[: model.num_xi]
            report = evaluator(xi)
            violation = model.vsf.max_violation(xi)
            elapsed = time.perf_counter() - t0
            trace.append(
                TraceRow(
                    iterations,
                    elapsed,
                    float(report.gap),
                    float(violation),
                    {"welfare": float(report.welfare), "stage_tolerance": stage_tol},
                )
            )
            if progress is not None:
                progress(trace[-1])
            if stage_status == "converged" and report.gap <= tolerance and violation <= tolerance:
                status = "converged"
                break
            if stage_status != "converged":
                status = stage_status
                break
            if stage_tol <= SMALLEST_STAGE_TOLERANCE:
                status = "iteration_limit"
                break
            stage_tol = max(stage_tol / STAGE_FACTOR, SMALLEST_STAGE_TOLERANCE)
    finally:
        backend.close()
    seconds = time.perf_counter() - t0
    info = dict(
        model.stats(),
        objective=model.objective,
        pdlp_termination=reason_text,
        stages=len(trace),
        iteration_seconds=solver_seconds,
        threads=threads,
        tolerance=tolerance,
        isolated=backend.isolate,
        estimated_bytes=_pdlp_bytes(model.size),
    )
    if xi is not None:
        assert report is not None  # evaluated with every iterate
        xi = np.array(xi, dtype=np.float64)
        info.update(evaluate_plan(game, model, xi), objective_value=float(model.c @ primal))
    info["peak_memory_bytes"] = peak_rss_bytes()
    if status == "infeasible":
        info["message"] = f"PDLP certifies that the {concept.upper()} LP is infeasible" + (
            f" (no {concept.upper()} has welfare ≥ {caller_payoff(welfare_threshold):g})"
            if welfare_threshold is not None
            else ""
        )
    return SolveResult(
        "lp-pdlp",
        xi,
        status,
        iterations,
        setup_seconds,
        seconds,
        trace,
        info,
        compile_seconds=compile_seconds,
    )


# ----------------------------------------------------------------------------- declaration
def _run(game: Game, *, progress: Callable[[TraceRow], None] | None, **o) -> SolveResult:
    return solve_lp_pdlp(game, tolerance=o["target_gap"], progress=progress, **lp_arguments(o))


#: ``lp-pdlp`` for :func:`efce.solve` (collected by :data:`efce.experiments.solve.METHODS`).
SOLVE_METHODS = (
    Method(
        "lp-pdlp",
        "the von Stengel–Forges LP of the concept's optimal equilibrium, solved by OR-Tools PDLP "
        "(first-order); --target-gap is its relative tolerance",
        OPTIONS,
        _run,
        chance="public",
        warm_up=warm_up_lp,
        warms_its_clock=True,
        payoff_info=LP_REPORT,
    ),
)
