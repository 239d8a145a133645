"""Optimal-welfare EFCE by regret minimization: bisection on the welfare threshold.

Section 2.1 of Farina, Ling, Fang, Sandholm 2019: an EFCE with social welfare at least τ exists
iff the saddle point ``min_{ξ ∈ Ξ} max_{y ∈ Y_τ} ξᵀ A_τ y`` has value 0, where ``Y_τ`` adds the
weight ``λ_τ`` that gains ``τ − welfare(ξ)``.  :func:`solvers.methods.efce.solve_efce` answers one τ:

* status ``"infeasible"``: the average deviator ȳ certifies ``min_ξ ξᵀ A_τ ȳ > 0`` exactly
  (a linear minimization over the chain), so *no* EFCE has welfare ≥ τ — τ is an upper bound;
* status ``"converged"``: the average plan ξ̄ has max deviation ≤ ε and welfare ≥ τ − ε — the
  welfare of ξ̄ is a lower end (of ε-EFCE; ε is reported with it).

Bisection on ``[min_z w(z), max_z w(z)]`` (the social welfare ``w = u_1 + u_2`` of the
terminals, which bounds every plan's welfare) halves the interval per step.  Near the optimum
neither answer may come within a step's budget (the saddle value is positive but tiny); such a
midpoint is then bracketed by probing halfway to either end, which stay decisive.  One saddle-point
model is built and its τ moved in place between steps (:func:`solvers.methods.efce.set_welfare_threshold`).

What the two ends mean: ``upper`` is certified — no exact EFCE has welfare above ``upper``.
``lower`` is the welfare of the returned plan, an ε-EFCE (max deviation ≤ ε).  Relaxing the
incentive constraints raises the optimal welfare, sometimes steeply: on
``battleship:rows=2,cols=2,ship_sizes=[1],shots=2`` the exact optimum is −0.525, while relaxing
every incentive row of the LP by 1e-4 (max deviation 6e-4) allows −0.4895.  So ``lower`` can
exceed the exact optimum by that sensitivity times ε (measured with ε = 1e-4: 4e-6 on the
Figure-1 game and 4.3e-3 on that Battleship with PRM+, the default; 2e-5 and 4e-4 with RM+),
never beyond the optimum of the LP with every incentive row relaxed by ε; only an exact EFCE
could certify a lower bound, and regret minimization produces ε-EFCE.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from efce.concepts import CONCEPTS, check_concept, gap_key
from efce.games.game import Game
from efce.interrupts import acknowledge_stop, stop_requested
from efce.solvers.backends import ComputeBackend, get_backend
from efce.solvers.methods.efce import DEFAULTS as RM_DEFAULTS
from efce.solvers.methods.efce import (
    build_efce_model,
    check_device_memory,
    device_rule,
    runs_on_device,
    set_welfare_threshold,
    solve_efce,
)
from efce.solvers.regret.local import LocalRule
from efce.solvers.regret.registry import make_rule
from efce.solvers.result import SolveResult, TraceRow

#: Width of the welfare interval ``rm --objective welfare`` stops at.
WELFARE_INTERVAL_WIDTH = 1e-2


def welfare_bounds(game: Game) -> tuple[float, float]:
    """``(min, max)`` over terminals of the social welfare ``u_1(z) + u_2(z)``: every correlation
    plan's welfare lies in between (it is a convex combination of terminal welfares, the terminal
    weights ``p_c(z) ξ[σ(z)]`` summing to one)."""
    w = np.asarray(game.payoffs, dtype=np.float64)[:, :2].sum(axis=1)
    return float(w.min()), float(w.max())


def solve_optimal_welfare(
    game: Game,
    *,
    tolerance: float = WELFARE_INTERVAL_WIDTH,
    gap_tolerance: float | None = None,
    time_limit: float | None = RM_DEFAULTS["time_limit"],
    iterations: int | None = None,
    step_iterations: int = RM_DEFAULTS["iterations"],
    rule: LocalRule | str | None = RM_DEFAULTS["local"],
    averaging: str = RM_DEFAULTS["averaging"],
    alternating: bool = RM_DEFAULTS["updates"] == "alternating",
    memory_budget: int | None = None,
    log: Callable[[str], object] | None = None,
    threads: int | None = None,
    backend: ComputeBackend | str | None = RM_DEFAULTS["backend"],
    concept: str = RM_DEFAULTS["concept"],
) -> SolveResult:
    """An interval ``[lower, upper]`` around the optimal social welfare of ``concept``'s
    equilibria (EFCE by default; :mod:`efce.concepts`), by bisection on τ.

    This is ``efce.solve(game, "rm", objective="welfare")``; the defaults are ``rm``'s
    (:data:`solvers.methods.efce.OPTIONS`: PRM+, linear averaging, alternating updates, its
    iteration budget capping each step) and the interval width :data:`WELFARE_INTERVAL_WIDTH`.

    Parameters
    ----------
    tolerance : stop when ``upper − lower ≤ tolerance``.
    gap_tolerance : max deviation ε a plan must reach to count as a lower end (default
        ``tolerance / 10``); the lower end is the welfare of an ε-EFCE.
    time_limit : seconds for the whole bisection (None = none).
    iterations : total regret-minimization iterations over all steps (None = none).
    step_iterations : iteration cap of one bisection step.
    rule : local regret minimizer (name or instance) for both players' chains.
    averaging, alternating : the dynamics of every step (:func:`~solvers.methods.efce.solve_efce`).
    threads : the CPU backend's thread count of every step (default: numba's setting).
    backend : where every step runs (:func:`~solvers.methods.efce.solve_efce`'s ``backend``); on
        ``cuda`` the model is copied to the GPU once and each step resets it and moves τ there.

    Returns
    -------
    SolveResult
        method ``"rm-welfare"``; ``point`` = the plan at the lower end; ``info`` has
        ``welfare_interval`` = [lower, upper], ``welfare`` / the concept's gap (``efce_gap``,
        ``efcce_gap`` or ``nfcce_gap``) / ``utilities`` of that plan, ``steps`` (τ, outcome,
        iterations, seconds per step) and ``bisection_steps``;
        status ``converged`` (width ≤ tolerance), ``time_limit``, ``iteration_limit``, or
        ``interrupted`` (a stop request, :func:`solvers.driver.request_stop`, ended it).
        ``trace`` has one row per step (gap = max deviation of that step's plan; extra:
        threshold, lower, upper).
    """
    check_concept(concept)
    gap = gap_key(concept)
    name = concept.upper()
    if not (tolerance > 0 and np.isfinite(tolerance)):
        raise ValueError(f"tolerance must be a positive number, not {tolerance}")
    eps = tolerance / 10 if gap_tolerance is None else float(gap_tolerance)
    if not (eps > 0 and np.isfinite(eps)):
        raise ValueError(f"gap_tolerance must be a positive number, not {gap_tolerance}")
    if isinstance(rule, str):
        make_rule(rule)  # validates the name up front
    backend = get_backend(backend, threads=threads)  # validates the backend and threads up front
    started = time.perf_counter()
    lower, upper = welfare_bounds(game)
    if runs_on_device(backend):  # refused before the model is built
        check_device_memory(game, backend, device_rule(rule, None), alternating, welfare=True)
    model = build_efce_model(game, welfare_threshold=lower, memory_budget=memory_budget, concept=concept)
    setup = time.perf_counter() - started

    def fresh_rule():
        return make_rule(rule) if isinstance(rule, str) else (rule or make_rule(RM_DEFAULTS["local"]))

    t0 = time.perf_counter()
    total_iterations = 0
    compiled = None  # the steps' own warm-ups (a device loop's first launches), off the clock
    steps, trace = [], []
    best = None  # the SolveResult of the plan at the lower end

    def clock() -> float:
        return time.perf_counter() - t0 - (compiled or 0.0)

    def probe(tau: float) -> str:
        """Run one step at τ; update the interval; return its outcome."""
        nonlocal lower, upper, best, total_iterations, compiled
        budget = step_iterations
        if iterations is not None:
            budget = min(budget, iterations - total_iterations)
        remaining = None if time_limit is None else time_limit - clock()
        set_welfare_threshold(model, tau)
        r = solve_efce(
            game,
            iterations=max(budget, 1),
            time_limit=remaining,
            target_gap=eps,
            welfare_threshold=tau,
            rule=fresh_rule(),
            model=model,
            averaging=averaging,
            alternating=alternating,
            backend=backend,
        )
        total_iterations += r.iterations
        if r.compile_seconds is not None:
            compiled = (compiled or 0.0) + r.compile_seconds
        if r.status == "infeasible":
            outcome = "infeasible"
            upper = min(upper, tau)
        else:
            outcome = "feasible" if r.status == "converged" else "undecided"
        # Any step's plan with max deviation ≤ ε is an ε-equilibrium: its welfare is a lower end.
        if r.info[gap] <= eps and (best is None or r.info["welfare"] > best.info["welfare"]):
            best = r
            lower = max(lower, min(r.info["welfare"], upper))
        steps.append(
            {
                "threshold": tau,
                "outcome": outcome,
                "iterations": r.iterations,
                "seconds": r.seconds,
                gap: r.info[gap],
                "welfare": r.info["welfare"],
            }
        )
        trace.append(
            TraceRow(
                total_iterations,
                clock(),
                float(r.info[gap]),
                0.0,
                {"threshold": tau, "lower": lower, "upper": upper},
            )
        )
        if log:
            log(
                f"τ = {tau:.6g}: {outcome} after {r.iterations} iterations; "
                f"interval [{lower:.6g}, {upper:.6g}]"
            )
        return outcome

    def out_of_budget() -> bool:
        return (time_limit is not None and clock() >= time_limit) or (
            iterations is not None and total_iterations >= iterations
        )

    # A plan at the lower end to begin with: any EFCE (τ = min welfare is no constraint).
    probe(lower)
    status = "converged"
    low_mark = high_mark = None  # the lowest / highest threshold in (lower, upper) left undecided
    while upper - lower > tolerance:
        if stop_requested():  # Ctrl-C / SIGTERM: the step it ended was not a decision
            acknowledge_stop()
            status = "interrupted"
            break
        if out_of_budget():
            status = "time_limit" if time_limit is not None and clock() >= time_limit else "iteration_limit"
            break
        if low_mark is not None and not lower < low_mark < upper:
            low_mark = None
        if high_mark is not None and not lower < high_mark < upper:
            high_mark = None
        if low_mark is None and high_mark is None:
            tau = 0.5 * (lower + upper)
            if probe(tau) == "undecided":
                low_mark = high_mark = tau
            continue
        # Near the optimum a step may not decide; probe halfway to either end instead (farther
        # from the optimum the certificate or the convergence comes sooner).
        progress_made = False
        if low_mark is not None:
            a = 0.5 * (lower + low_mark)
            outcome = probe(a)
            progress_made |= outcome != "undecided"
            if outcome == "undecided":
                low_mark = a
        if (
            high_mark is not None
            and upper - lower > tolerance
            and not out_of_budget()
            and not stop_requested()
        ):
            b = 0.5 * (high_mark + upper)
            outcome = probe(b)
            progress_made |= outcome != "undecided"
            if outcome == "undecided":
                high_mark = b
        if stop_requested():
            acknowledge_stop()
            status = "interrupted"
            break
        if (
            not progress_made
            and (low_mark is None or low_mark - lower <= tolerance / 4)
            and (high_mark is None or upper - high_mark <= tolerance / 4)
        ):
            status = "iteration_limit"
            break
    seconds = clock()
    info = {
        "welfare_interval": [float(lower), float(upper)],
        "interval_width": float(upper - lower),
        "concept": concept,
        "lower_end": f"welfare of an {name} up to max deviation {eps:g}",
        "upper_end": f"certified: no {name} has welfare above it",
        "bisection_steps": len(steps),
        "steps": steps,
        "gap_tolerance": eps,
        "tolerance": tolerance,
        "backend": backend.name,
    }
    if runs_on_device(backend):
        info["device"] = backend.device
    point = None
    if best is not None:
        point = best.point
        info.update(
            {c: best.info[c] for c in (gap_key(k) for k in CONCEPTS)},
            welfare=best.info["welfare"],
            utilities=best.info["utilities"],
            max_violation=best.info["max_violation"],
            feasible_iterates=best.info["feasible_iterates"],
        )
    return SolveResult(
        "rm-welfare", point, status, total_iterations, setup, seconds, trace, info, compile_seconds=compiled
    )
