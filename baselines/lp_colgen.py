"""``lp-colgen``: optimal EFCE, EFCCE and NFCCE of any game by column generation.

Optimizing over the correlated equilibria of a game with more than two players, or with chance
moves a player does not observe, is NP-hard (von Stengel & Forges 2008): there the polytope of
the two-player LPs is only a relaxation.  The exact LP is over distributions ``μ`` of joint
reduced pure plans — exponentially many — and column generation (Celli et al. 2019; Farina,
Celli, Gatti, Sandholm 2021; Zhang, Farina, Celli, Sandholm 2022) solves it holding only some:

* **Master LP** (:mod:`baselines.colgen_master`, HiGHS's simplex warm-started from its last
  basis): ``max Σ_π μ(π) c(π)`` over the joint plans added so far, subject to ``Σ μ = 1`` and
  every trigger agent's incentive constraint written through the dual of its best-deviation LP
  (rows polynomial in the tree, :mod:`baselines.colgen_incentives`); ``c`` is the social welfare
  or one player's expected utility.  A phase 1 first minimizes the largest gain of any trigger
  agent, until the columns hold an equilibrium.
* **Pricing** (:mod:`baselines.colgen_pricing`): the joint plan of largest reduced cost, a
  multilinear polynomial in the players' binary sequence-form vectors.  Each round first tries
  best-response ascent from the master's support, the last columns and random joint plans (cheap,
  no bound); when that finds no improving column, an *exact* step: a MILP on HiGHS
  (:mod:`baselines.colgen_milp`, the default) or the enumeration of every joint plan (tiny games).
* **Certificate, anytime.**  The master's value is a *lower bound*: its ``μ`` is a feasible
  equilibrium.  For duals ``y`` feasible for the master's value variables and a bound ``ρ`` on
  the largest reduced cost under ``y`` (the MILP's dual bound: valid even when the MILP stopped
  early), ``y`` with ``ρ`` added to the convexity row's dual is feasible for the dual of the LP
  over *all* joint plans, so ``y_0 + max(ρ, 0)`` is an *upper bound* on the optimum.  The run is
  ``converged`` (certified optimal) once ``[lower, upper]`` is at most ``--tolerance`` wide;
  ``--time-limit`` and Ctrl-C return the interval so far.
* **Stabilization.**  The master is degenerate: its value often stays put while its duals jump
  between faces whose bounds are poor.  In phase 2 an exact step prices at the duals smoothed
  toward those of the best bound so far (Wentges 1997: ``α y_best + (1 − α) y``); when that finds
  no column improving the master (a mispricing), the next exact step prices at the master's own
  duals, which either give columns or certify.

The trace has one row per round: as ``gap``, phase 1's largest gain (0 once the master holds an
equilibrium); as extra columns ``lower``, ``upper``, ``columns`` and ``pricing_seconds``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from efce.concepts import DEFAULT_CONCEPT
from efce.errors import BackendError, GameError, MemoryBudgetExceeded, OptionError
from efce.games.game import Game
from efce.games.resources.memory import check_budget, peak_rss_bytes
from efce.solvers.driver import IterationDriver
from efce.solvers.options import (
    CONCEPT,
    EQUILIBRIUM_REPORT,
    ITERATIONS,
    TIME_LIMIT,
    Method,
    Option,
    defaults,
    nonnegative,
)
from efce.solvers.result import SolveResult, TraceRow

from .colgen_incentives import Incentives, count_incentive_rows
from .colgen_master import BYTES_PER_NONZERO, BYTES_PER_ROW_OR_COLUMN, ColumnPool, Master
from .colgen_milp import MILP_COPIES, PricingMILP, milp_bytes, milp_size_bounds
from .colgen_pricing import (
    PolynomialBuilder,
    PricingPolynomial,
    PricingResult,
    Treeplex,
    improve_by_best_responses,
    price_by_enumeration,
    reduced_plans,
)

_PLAYER = re.compile(r"player([1-9][0-9]*)")


def _objective_check(value: str) -> str | None:
    return None if value == "welfare" or _PLAYER.fullmatch(value) else "welfare or playerK (K = 1, 2, ...)"


#: What the equilibrium maximizes: the social welfare or one player's expected utility.
OBJECTIVE = Option(
    "objective",
    str,
    "maximize the social welfare or one player's expected utility (player1, player2, ...)",
    _objective_check,
    default="welfare",
)
#: Width of the certified interval around the optimum at which a run stops.
TOLERANCE = Option(
    "tolerance",
    float,
    "stop once the certified interval [lower, upper] around the optimal objective is at most "
    "this wide (payoff units)",
    nonnegative,
    default=1e-6,
    unit="payoff",
)
#: How the exact pricing steps find the column of largest reduced cost.
PRICING = Option(
    "pricing",
    str,
    "exact pricing: a MILP on HiGHS, or every joint plan (tiny games)",
    choices=("milp", "enumeration"),
    default="milp",
)

#: The options of ``lp-colgen`` (:data:`SOLVE_METHODS`).
OPTIONS = (
    CONCEPT.with_default(DEFAULT_CONCEPT),
    OBJECTIVE,
    TOLERANCE,
    TIME_LIMIT,
    ITERATIONS.with_default(100_000),
    PRICING,
)
#: Option name → ``lp-colgen``'s default (:data:`OPTIONS`), :func:`solve_lp_colgen`'s own.
DEFAULTS = defaults(OPTIONS)

#: Joint plans ``--pricing enumeration`` may list.
MAX_ENUMERATED_PLANS = 200_000
#: Columns added per round at most (the best the heuristic or the exact step found).
COLUMNS_PER_ROUND = 10
#: The heuristic's starts each round: the master's most probable columns, the columns added
#: last, and random joint plans.
SUPPORT_STARTS = 16
RANDOM_STARTS = 48
#: Wentges's ``α``: the weight of the best bound's duals in an exact step's duals (phase 2).
STABILIZATION = 0.5
#: An exact MILP step stops once its incumbent is within this relative gap of its bound: a good
#: column at once, and a bound all the same (its absolute gap is half the tolerance, so a step
#: whose optimum is within the tolerance certifies).
MILP_RELATIVE_GAP = 0.2
#: A joint plan improves the master when its reduced cost exceeds this (times the largest
#: ``|p_c(z) u_i(z)|``): above the master's feasibility tolerance.
IMPROVEMENT = 1e-9


# ----------------------------------------------------------------------------- checks
def objective_weights(game: Game, objective: str) -> np.ndarray:
    """The weight of each player's utility in the objective: all ones for ``"welfare"``, the
    unit vector of player ``k`` for ``"playerk"``.

    Returns
    -------
    ndarray

    Raises
    ------
    OptionError
        A player the game does not have.
    """
    weights = np.zeros(game.num_players)
    if objective == "welfare":
        weights[:] = 1.0
        return weights
    match = _PLAYER.fullmatch(objective)
    k = int(match.group(1)) if match else 0
    if not 1 <= k <= game.num_players:
        raise OptionError(
            f"--objective {objective}: {game.name} has {game.num_players} players (player1 to "
            f"player{game.num_players})"
        )
    weights[k - 1] = 1.0
    return weights


def estimate_colgen_bytes(game: Game, concept: str) -> tuple[int, int]:
    """Bytes of the pricing MILP and the master's fixed part, counted from the tree before
    anything is built: the least (the MILP of the reach keys alone, every exact step has
    them) and the most (every trigger agent active; :func:`baselines.colgen_milp.milp_size_bounds`).

    Returns
    -------
    tuple of int
        ``(least, most)``.
    """
    triggers, values, rows = count_incentive_rows(game, concept)
    master = (2 * rows + values) * BYTES_PER_NONZERO + (triggers + rows + values) * BYTES_PER_ROW_OR_COLUMN
    least, most = milp_size_bounds(game, concept)
    return master + milp_bytes(*least), master + milp_bytes(*most)


def check_game(game: Game, options: Mapping[str, Any], budget: int | None = None) -> int:
    """Every refusal of ``lp-colgen`` before anything is built: a game of one player or without
    decisions, an objective of a player the game lacks, ``--pricing enumeration`` on a game
    too large for it, and a game whose smallest pricing MILP and master exceed the memory
    budget (:func:`estimate_colgen_bytes`, :func:`games.resources.memory.check_budget`).

    Returns
    -------
    int
        The memory budget applied (bytes).

    Raises
    ------
    GameError
        One line naming the problem (:class:`~efce.errors.MemoryBudgetExceeded` for memory).
    OptionError
        An objective of a player the game does not have.
    """
    from efce.solvers.methods.trigger import joint_plan_count

    if game.num_players < 2:
        raise GameError(
            f"lp-colgen computes correlated equilibria of two or more players; {game.name} has one "
            f"player, whose optimum is a best response (cfr finds it)"
        )
    game.require_decisions("lp-colgen")
    objective_weights(game, options["objective"])
    if options["pricing"] == "enumeration" and (count := joint_plan_count(game)) > MAX_ENUMERATED_PLANS:
        raise GameError(
            f"--pricing enumeration lists every joint reduced plan: {game.name} has {count:,}, more "
            f"than {MAX_ENUMERATED_PLANS:,}; use --pricing milp"
        )
    least, _ = estimate_colgen_bytes(game, options["concept"])
    return check_budget(least, f"the column-generation master and pricing MILP of {game.name}", budget)


# ----------------------------------------------------------------------------- the rounds
class ColumnGeneration:
    """The state of a column-generation run between its rounds (module docstring): the master,
    the columns, the pricing steps, the bounds.

    Parameters
    ----------
    game : Game
    concept, objective, pricing, tolerance, seed
        As :func:`solve_lp_colgen`.
    """

    def __init__(
        self, game: Game, *, concept: str, objective: str, pricing: str, tolerance: float, seed: int
    ):
        self.game = game
        self.tolerance = tolerance
        self.weights = objective_weights(game, objective)
        self.incentives = Incentives(game, concept)
        self.builder = PolynomialBuilder(self.incentives)
        self.treeplexes = [Treeplex(game.sequences(p)) for p in range(game.num_players)]
        spaces = [game.sequences(p) for p in range(game.num_players)]
        self.enumerated = [reduced_plans(s) for s in spaces] if pricing == "enumeration" else None
        self.milp = PricingMILP(game) if pricing == "milp" else None
        self.master = Master(self.incentives, self.weights)
        self.pool = ColumnPool(game)
        self.rng = np.random.default_rng(seed)
        scale = max(1.0, float(np.abs(self.incentives.terminals.weights).max(initial=0.0)))
        self.threshold = IMPROVEMENT * scale
        self.recent = [np.zeros((0, s.num_sequences), dtype=bool) for s in spaces]
        self.value = -np.inf  # the master's last optimum
        self.mu = np.zeros(0)
        self.duals = np.zeros(0)
        self.gap = np.inf  # phase 1's largest gain; 0 in phase 2
        self.upper = np.inf
        self.center: np.ndarray | None = None  # phase 2: the duals of the best upper bound
        self.center_bound = np.inf
        self.smoothing = STABILIZATION
        self.exact_steps = 0
        self.pricing_seconds = self.master_seconds = 0.0
        self.last_exact: PricingResult | None = None
        self.last_exact_at_master = False
        # A first column: best-response ascent on the objective from two random joint plans.
        objective_poly = self.builder(np.zeros(self.incentives.num_rows), self.weights)
        first, values = improve_by_best_responses(objective_poly, self.treeplexes, self._random(2))
        self.add(first, values + np.inf, 1)

    @property
    def phase(self) -> int:
        return self.master.phase

    @property
    def lower(self) -> float | None:
        """The master's value in phase 2 (a feasible equilibrium's), else None."""
        return self.value if self.phase == 2 and np.isfinite(self.value) else None

    @property
    def converged(self) -> bool:
        """The certified interval is at most the tolerance wide."""
        return self.phase == 2 and self.upper - self.value <= self.tolerance

    def _random(self, count: int) -> list[np.ndarray]:
        """``count`` random joint pure plans (best responses to uniform random values)."""
        return [tp.best_responses(self.rng.random((count, tp.num_sequences))) for tp in self.treeplexes]

    def add(self, plans: list[np.ndarray], values: np.ndarray, limit: int = COLUMNS_PER_ROUND) -> int:
        """Add the best ``limit`` new joint plans of reduced cost above the threshold; returns how
        many."""
        chosen = self.pool.fresh(plans, values, self.threshold, limit)
        if len(chosen[0]):
            self.master.add(*self.incentives.columns(chosen))
            self.recent = chosen
        return len(chosen[0])

    def solve_master(self, time_limit: float | None) -> str:
        """Solve the master (moving to phase 2 once it holds an equilibrium); returns HiGHS's
        outcome (:meth:`~baselines.colgen_master.Master.solve`)."""
        started = time.perf_counter()
        outcome, value, mu, duals, slack = self.master.solve(time_limit)
        if outcome == "optimal" and self.phase == 1 and slack <= self.threshold:
            self.master.start_phase_two()
            outcome, value, mu, duals, slack = self.master.solve(time_limit)
        self.master_seconds += time.perf_counter() - started
        if outcome == "optimal":
            self.value, self.mu, self.duals = value, mu, duals
            self.gap = max(slack, 0.0) if self.phase == 1 else 0.0
        return outcome

    def _polynomial(self, duals: np.ndarray) -> PricingPolynomial:
        return self.builder(duals, self.weights if self.phase == 2 else np.zeros_like(self.weights))

    def _ascend(self, poly: PricingPolynomial) -> tuple[list[np.ndarray], np.ndarray]:
        """Best-response ascent from the master's most probable columns, the last ones added
        and random joint plans."""
        support = np.flatnonzero(self.mu > 0)
        top = support[np.argsort(-self.mu[support], kind="stable")][:SUPPORT_STARTS]
        parts = [self.pool.plans(top), self.recent, self._random(RANDOM_STARTS)]
        starts = [np.vstack(group) for group in zip(*parts, strict=True)]
        return improve_by_best_responses(poly, self.treeplexes, starts)

    def price(self, time_limit: float | None, budget: int) -> int:
        """One pricing round at the master's last duals: the heuristic, and when it finds no
        improving column an exact step (stabilized in phase 2), which may lower the upper bound.

        Returns
        -------
        int
            The columns added.

        Raises
        ------
        MemoryBudgetExceeded
            The exact step's MILP would exceed ``budget`` bytes (before it is built).
        """
        started = time.perf_counter()
        try:
            poly = self._polynomial(self.duals)
            found, values = self._ascend(poly)
            added = self.add(found, values)
            self.last_exact = None
            if added:
                return added
            smoothed = self.phase == 2 and self.center is not None and self.smoothing > 0
            duals = self.duals
            if smoothed:
                assert self.center is not None
                duals = self.smoothing * self.center + (1 - self.smoothing) * self.duals
                sep = self._polynomial(duals)
                found, values = self._ascend(sep)
            else:
                sep = poly
            exact = self._exact(sep, found, values, time_limit, budget)
            self.exact_steps += 1
            self.last_exact, self.last_exact_at_master = exact, not smoothed
            if self.phase == 2 and exact.bound is not None and np.isfinite(exact.bound):
                bound = float(duals[0]) + max(float(exact.bound), 0.0)
                self.upper = min(self.upper, bound)
                if bound < self.center_bound:
                    self.center, self.center_bound = duals, bound
            if len(exact.values):
                added = self.add(exact.plans, poly(exact.plans))
            # A mispricing (nothing improves the master): the next exact step prices at the
            # master's own duals, which give columns or certify.
            self.smoothing = STABILIZATION if added else 0.0
            return added
        finally:
            self.pricing_seconds += time.perf_counter() - started

    def _exact(
        self,
        poly: PricingPolynomial,
        found: list[np.ndarray],
        values: np.ndarray,
        time_limit: float | None,
        budget: int,
    ) -> PricingResult:
        """An exact pricing step: the enumeration, or the MILP started from the heuristic's best."""
        if self.enumerated is not None:
            return price_by_enumeration(poly, self.enumerated, keep=COLUMNS_PER_ROUND)
        assert self.milp is not None
        best = int(np.argmax(values))
        return self.milp.solve(
            poly,
            start=[x[best : best + 1] for x in found],
            time_limit=time_limit,
            abs_gap=self.tolerance / 2,
            rel_gap=MILP_RELATIVE_GAP,
            memory_budget=budget,
        )

    def trace_row(self, round_: int, seconds: float) -> TraceRow:
        """This round's row of the trace."""
        extra = {"columns": float(len(self.pool)), "pricing_seconds": self.pricing_seconds}
        if self.lower is not None:
            extra["lower"] = float(self.lower)
        if np.isfinite(self.upper):
            extra["upper"] = float(self.upper)
        return TraceRow(round_, seconds, float(self.gap) if np.isfinite(self.gap) else np.inf, extra=extra)

    @property
    def stalled(self) -> bool:
        """The last exact step, at the master's own duals and to optimality, found no improving
        column while the interval stays wider than the tolerance: nothing more can be found
        within HiGHS's tolerances."""
        exact = self.last_exact
        return (
            exact is not None
            and self.last_exact_at_master
            and exact.status == "optimal"
            and not self.converged
            and (len(exact.values) == 0 or float(exact.values.max()) <= self.threshold)
        )


def solve_lp_colgen(
    game: Game,
    *,
    concept: str = DEFAULTS["concept"],
    objective: str = DEFAULTS["objective"],
    tolerance: float = DEFAULTS["tolerance"],
    time_limit: float | None = DEFAULTS["time_limit"],
    iterations: int = DEFAULTS["iterations"],
    pricing: str = DEFAULTS["pricing"],
    seed: int = 0,
    memory_budget: int | None = None,
    progress: Callable[[TraceRow], None] | None = None,
) -> SolveResult:
    """The optimal correlated equilibrium of ``concept`` by column generation (module docstring).

    Parameters
    ----------
    game : Game
        Any game of two or more players, chance moves allowed.
    concept : str
        ``"efce"``, ``"efcce"`` or ``"nfcce"`` (:mod:`efce.concepts`).
    objective : str
        ``"welfare"`` or ``"playerK"``: what the equilibrium maximizes.
    tolerance : float
        Stop once the certified interval ``[lower, upper]`` is at most this wide.
    time_limit : float, optional
        Seconds for the rounds; the run then returns the interval so far (status ``time_limit``).
    iterations : int
        Rounds at most (status ``iteration_limit``).
    pricing : str
        ``"milp"`` or ``"enumeration"`` (every joint plan; tiny games).
    seed : int
        Of the random joint plans among the heuristic's starts.
    memory_budget : int, optional
        Bytes (default: 60 % of the available memory): the game is refused up front when its
        smallest model exceeds it, and a run stops (``out_of_memory``) before a master or MILP
        would.
    progress : callable, optional
        Called with each round's trace row.

    Returns
    -------
    SolveResult
        ``point``: the master's distribution as a
        :class:`~solvers.evaluation.device_gaps.FactoredDevice` (None before phase 2);
        ``status``: ``converged`` (certified optimal within ``tolerance``), ``time_limit``,
        ``iteration_limit``, ``interrupted``, ``out_of_memory`` or ``error`` (stalled at HiGHS's
        tolerances); ``info``: ``concept``, ``objective``, ``objective_value`` (the returned
        distribution's), ``objective_interval`` ``[lower, upper]`` (``upper`` None before the
        first exact step of phase 2; both None before phase 2), its three gaps
        (:mod:`solvers.evaluation.device_gaps`), ``welfare``, ``utilities``, ``support``,
        ``rounds``, ``columns``, ``exact_pricings``, ``pricing_seconds``, ``master_seconds``,
        ``triggers``, ``master_rows``.  One trace row per round (:class:`ColumnGeneration`).

    Raises
    ------
    GameError
        Before anything is built (:func:`check_game`).
    OptionError
        An objective of a player the game does not have.
    BackendError
        HiGHS failed, or highspy cannot be loaded beside OR-Tools' HiGHS in this process.
    """
    from .backends import must_isolate

    budget = check_game(game, dict(concept=concept, objective=objective, pricing=pricing), memory_budget)
    if must_isolate("highspy"):
        raise BackendError(
            "HiGHS",
            "highspy cannot load beside the OR-Tools library already loaded in this process "
            "(their HiGHS copies clash); run lp-colgen in a process of its own (efce solve)",
        )
    started = time.perf_counter()
    run = ColumnGeneration(
        game, concept=concept, objective=objective, pricing=pricing, tolerance=tolerance, seed=seed
    )
    setup = time.perf_counter() - started
    driver = IterationDriver(iterations=iterations, time_limit=time_limit, check_every=1, progress=progress)
    message = None

    def remaining() -> float | None:
        return None if time_limit is None else max(time_limit - driver.elapsed(), 1e-3)

    for round_ in driver:
        outcome = run.solve_master(remaining())
        if outcome == "optimal":
            try:
                run.price(remaining(), budget)
            except MemoryBudgetExceeded as exc:
                message = str(exc)
        if message is None and run.master.bytes() * (1 + MILP_COPIES) > budget:
            message = (
                f"the master LP outgrew the memory budget ({len(run.pool):,} columns, "
                f"{run.master.nonzeros:,} nonzeros)"
            )
        driver.checkpoint_due()  # a stop request or the clock: the driver's status says which
        if outcome != "optimal":  # HiGHS stopped on the clock or on a stop request
            driver.status = "interrupted" if outcome == "interrupted" else "time_limit"
        stop = driver.record(run.trace_row(round_, driver.elapsed()), converged=run.converged)
        if message is not None and not run.converged:
            driver.status = "out_of_memory"
        if stop or outcome != "optimal" or message is not None or run.stalled:
            break
    status = driver.status
    if run.stalled and status not in ("converged", "out_of_memory"):
        status = "error"
        message = (
            f"no joint plan improves the master by more than {run.threshold:.1e}, yet the "
            f"certified interval is {run.upper - run.value:.3g} wide: HiGHS's tolerances"
        )
    info = _report(game, run, concept, objective, pricing, driver.iteration)
    if message or info.get("message"):
        info["message"] = message or info["message"]
    return SolveResult(
        "lp-colgen", info.pop("point"), status, driver.iteration, setup, driver.elapsed(), driver.trace, info
    )


def _report(
    game: Game, run: ColumnGeneration, concept: str, objective: str, pricing: str, rounds: int
) -> dict:
    """The result's ``info`` (and its ``point``): the facts of the run, and the returned
    distribution's gaps and utilities by the project's device evaluator."""
    info: dict[str, Any] = {
        "concept": concept,
        "objective": objective,
        "tolerance": run.tolerance,
        "pricing": pricing,
        "rounds": rounds,
        "columns": len(run.pool),
        "exact_pricings": run.exact_steps,
        "pricing_seconds": run.pricing_seconds,
        "master_seconds": run.master_seconds,
        "triggers": run.incentives.num_triggers,
        "master_rows": run.incentives.num_rows,
    }
    if run.lower is None:
        info.update(
            point=None,
            objective_interval=[None, None],
            phase_one_gap=float(run.gap) if np.isfinite(run.gap) else None,
            message="no equilibrium among the columns yet (phase 1 did not end)",
        )
    else:
        from efce.solvers.evaluation.device_gaps import evaluator

        support = np.flatnonzero(run.mu > 0)
        point = run.pool.device(support, run.mu[support] / run.mu[support].sum())
        gaps = evaluator(game)(point)
        achieved = float(gaps.utilities @ run.weights)
        info.update(
            point=point,
            efce_gap=gaps.efce,
            efcce_gap=gaps.efcce,
            nfcce_gap=gaps.nfcce,
            welfare=gaps.welfare,
            utilities=gaps.utilities.tolist(),
            objective_value=achieved,
            objective_interval=[achieved, float(run.upper) if np.isfinite(run.upper) else None],
            support=len(support),
        )
    info["peak_memory_bytes"] = peak_rss_bytes()
    return info


# ----------------------------------------------------------------------------- declaration
def _check_before_warm_up(game: Game, options: Mapping[str, Any], device: bool = False) -> None:
    check_game(game, options)
    if device:
        from efce.solvers.evaluation.device import check_device_names

        check_device_names(game)


def _run(game: Game, *, progress, device: bool = False, **o) -> SolveResult:
    _check_before_warm_up(game, o, device)
    return solve_lp_colgen(game, progress=progress, **o)


def _warm_up(game: Game, options: Mapping[str, Any], device: bool = False) -> None:
    """Run two rounds on a tiny game of the same kind (:func:`solvers.warm_up.warm_up_run`): HiGHS's
    first calls and the device evaluator's numba kernels, before the clock."""
    from efce.solvers.warm_up import warm_up_run

    _check_before_warm_up(game, options, device)
    warm_up_run(_run, game, options, device=device)


#: ``lp-colgen`` for :func:`efce.solve` (collected by :data:`efce.experiments.solve.METHODS`).
SOLVE_METHODS = (
    Method(
        "lp-colgen",
        "optimal correlated equilibrium (EFCE, EFCCE, NFCCE) by column generation, any game",
        OPTIONS,
        _run,
        players=None,
        chance="any",
        writes_device=True,
        warm_up=_warm_up,
        compiles_kernels=True,
        # The certified interval and its bounds in the trace are payoffs too (a tolerance left at its
        # default is relative, reported as is; a given one is reported as given).
        payoff_info=EQUILIBRIUM_REPORT
        | {"objective_value", "objective_interval", "phase_one_gap", "lower", "upper"},
    ),
)
