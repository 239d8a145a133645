"""The subgradient baseline of Farina, Ling, Fang, Sandholm (2019c), section 5 of the
scaled-extension paper: minimize the max deviation

    f(ξ) = max_{i, σ̂ = (Î, â)}  D_σ̂(ξ) − F_σ̂(ξ)

(``D`` the trigger agent's best deviation value, ``F`` the following value; see
:mod:`baselines.efce_lp`) over the correlation-plan polytope Ξ of Definition 3 by subgradient
steps combined with the *incremental constraint projection* of Wang and Bertsekas (2013): after
each step ``ξ ← ξ − α g`` (``g`` from the maximizing trigger and its best-response ``y``), ξ is
projected onto a few randomly sampled equality constraints of Definition 3 (hyperplane
projections) and onto ``ξ ≥ 0``.  The iterates are therefore infeasible; every trace row records
the max deviation of the current iterate (evaluated directly) and its infeasibility (largest
violation of ``Cξ = b`` and ``ξ ≥ 0``).

Everything is vectorized: one evaluation of ``f`` is a few sparse products plus one backward
induction over the value variables, level by level (tree depth), and a batch of sampled rows
with disjoint supports is projected at once (exactly the sequential projections).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from efce.games.game import Game
from efce.games.payoffs import terminal_map
from efce.games.relevant import relevant_pairs
from efce.games.resources.memory import peak_rss_bytes
from efce.polytopes.decompose import check_decomposable
from efce.polytopes.vsf import vsf_constraints
from efce.solvers.driver import IterationDriver
from efce.solvers.options import (
    EQUILIBRIUM_REPORT,
    ITERATIONS,
    SEED,
    TIME_LIMIT,
    Method,
    Option,
    defaults,
    positive,
)
from efce.solvers.result import SolveResult, TraceRow
from efce.solvers.warm_up import warm_up_run

from .efce_lp import check_memory, estimate_efce_lp, incentive_block


class _PlayerDeviation:
    """Vectorized trigger-agent best responses of one player over all triggers at once."""

    def __init__(self, game: Game, pairs, i: int, tm, weights):
        blk = incentive_block(game, pairs, i, tm.sequences, weights[:, i])
        space = game.sequences(i)
        n_xi = len(pairs)
        n_dev = blk.num_dev_rows
        dev = blk.rows < n_dev
        # T ξ: per deviation row (σ̂, I, a), Σ_{z: σ_i(z)=(I,a)} p_c u_i ξ[σ̂, σ_{-i}(z)].
        self.T = sp.csr_matrix((-blk.vals_xi[dev], (blk.rows[dev], blk.cols_xi[dev])), shape=(n_dev, n_xi))
        # F ξ: per trigger sequence σ̂ (row σ̂; row 0 unused).
        fr = ~dev
        self.F = sp.csr_matrix(
            (blk.vals_xi[fr], (blk.rows[fr] - n_dev + 1, blk.cols_xi[fr])), shape=(space.num_sequences, n_xi)
        )
        self.TT = self.T.T.tocsr()
        self.FT = self.F.T.tocsr()
        k = space.infoset_num_actions.astype(np.int64)
        self.num_actions_var = k[blk.var_inf]
        self.row_start = blk.row_start
        self.parent_row = blk.parent_row
        self.parent_var = blk.parent_var
        self.root_var = blk.root_var
        self.var_seq = blk.var_seq
        self.n_dev = n_dev
        depth = space.infoset_depth.astype(np.int64)[blk.var_inf]
        self.var_depth = depth
        # Levels, deepest first: the variables and their (contiguous) rows.
        self.levels = []
        for d in range(int(depth.max(initial=-1)), -1, -1):
            vars_d = np.flatnonzero(depth == d)
            cnt = self.num_actions_var[vars_d]
            owner = np.repeat(np.arange(len(vars_d)), cnt)
            off = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            rows_d = self.row_start[vars_d][owner] + off
            starts = np.cumsum(cnt) - cnt
            child = vars_d[self.parent_row[vars_d] >= 0]
            self.levels.append((vars_d, rows_d, starts, child))
        order = np.argsort(self.var_seq, kind="stable")
        self.vars_by_seq = order
        self.seq_ptr = np.zeros(space.num_sequences + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.var_seq, minlength=space.num_sequences), out=self.seq_ptr[1:])

    def gains(self, xi: np.ndarray):
        """``(gains per trigger sequence (index σ̂ − 1), row values, value per variable)``."""
        rowval = self.T @ xi
        value = np.empty(len(self.var_seq))
        for vars_d, rows_d, starts, child in self.levels:
            if len(vars_d):
                value[vars_d] = np.maximum.reduceat(rowval[rows_d], starts)
            if len(child):
                np.add.at(rowval, self.parent_row[child], value[child])
        follow = self.F @ xi
        return value[self.root_var[1:]] - follow[1:], rowval

    def subgradient(self, trigger: int, rowval: np.ndarray) -> np.ndarray:
        """∇ of ``D_σ̂ − F_σ̂`` at the best response ``y`` for σ̂ = ``trigger``."""
        vars_s = self.vars_by_seq[self.seq_ptr[trigger] : self.seq_ptr[trigger + 1]]
        vars_s = vars_s[np.argsort(self.var_depth[vars_s], kind="stable")]
        # Chosen action (row) of every variable, then activity top-down.
        cnt = self.num_actions_var[vars_s]
        starts = np.cumsum(cnt) - cnt
        owner = np.repeat(np.arange(len(vars_s)), cnt)
        rows = self.row_start[vars_s][owner] + (np.arange(int(cnt.sum())) - starts[owner])
        vals = rowval[rows]
        best = np.maximum.reduceat(vals, starts)
        idx = np.flatnonzero(vals >= best[owner])
        _, first = np.unique(owner[idx], return_index=True)  # first argmax of every variable
        first_best = rows[idx[first]]
        chosen_row = np.full(len(self.var_seq), -1, dtype=np.int64)
        active = np.zeros(len(self.var_seq), dtype=bool)
        depth_s = self.var_depth[vars_s]
        for d in np.unique(depth_s):
            at = np.flatnonzero(depth_s == d)
            v = vars_s[at]
            pv = self.parent_var[v]
            act = (pv < 0) | (
                np.where(pv >= 0, active[np.maximum(pv, 0)], False)
                & (chosen_row[np.maximum(pv, 0)] == self.parent_row[v])
            )
            active[v] = act
            chosen_row[v] = first_best[at]
        rows_y = chosen_row[vars_s[active[vars_s]]]
        y = np.zeros(self.n_dev)
        y[rows_y] = 1.0
        e = np.zeros(self.F.shape[0])
        e[trigger] = 1.0
        return self.TT @ y - self.FT @ e


def _uniform_plan(game: Game, pairs, rng: np.random.Generator | None = None) -> np.ndarray:
    """ξ = x1 ⊗ x2 (restricted to relevant pairs) for uniform sequence-form strategies — or,
    with ``rng``, random behavioral strategies: a point of Ξ either way."""
    xs = []
    for p in (0, 1):
        space = game.sequences(p)
        x = np.ones(space.num_sequences)
        depth = space.infoset_depth
        k = space.infoset_num_actions
        for d in range(int(depth.max(initial=-1)) + 1):
            at = np.flatnonzero(depth == d)
            cnt = k[at].astype(np.int64)
            owner = np.repeat(at, cnt)
            off = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            if rng is None:
                share = 1.0 / k[owner]
            else:
                share = rng.random(len(owner)) + 1e-3
                share /= np.bincount(owner, weights=share, minlength=len(k))[owner]
            x[space.infoset_first_seq[owner] + off] = x[space.infoset_parent_seq[owner]] * share
        xs.append(x)
    return xs[0][pairs.sigma1] * xs[1][pairs.sigma2]


class MaxDeviation:
    """``f(ξ)`` and a subgradient, for every trigger of both players (vectorized)."""

    def __init__(self, game: Game, pairs=None):
        check_decomposable(game)
        self.pairs = relevant_pairs(game) if pairs is None else pairs
        tm = terminal_map(game)
        w = tm.weighted_payoffs()
        self.players = [_PlayerDeviation(game, self.pairs, i, tm, w) for i in (0, 1)]

    def __call__(self, xi: np.ndarray):
        """``(f, player, trigger, rowval)`` with ``f = max gain`` (not clipped)."""
        best = (-np.inf, -1, -1, None)
        for i, pl in enumerate(self.players):
            g, rowval = pl.gains(xi)
            if len(g):
                j = int(np.argmax(g))
                if g[j] > best[0]:
                    best = (float(g[j]), i, j + 1, rowval)
        return best

    def subgradient(self, player: int, trigger: int, rowval: np.ndarray) -> np.ndarray:
        return self.players[player].subgradient(trigger, rowval)


#: The subgradient method keeps the Definition-3 matrix and the trigger operators but no LP
#: factorization: measured peak 7.1 GB on the medium Battleship instance, whose LP model estimate
#: is 20.3 GiB, hence this fraction of the LP's byte estimate (with some headroom).
SUBGRADIENT_MEMORY_FACTOR = 0.4


#: Largest entry an iterate may reach before the run counts as diverged: a correlation plan's
#: entries are probabilities, at most 1, and the projections keep a converging run's iterates
#: near Ξ; an entry a thousand times larger means the steps overshoot (a step size too large for
#: the payoffs' magnitude), and the iterate's gap means nothing.
DIVERGED_ENTRY = 1e3

#: Step rules of :func:`solve_subgradient`.
STEP_RULES = ("constant", "sqrt", "polyak")

#: The options of ``subgradient`` (:data:`SOLVE_METHODS`): type, range and default of each.
OPTIONS = (
    TIME_LIMIT,
    ITERATIONS.with_default(10_000),
    Option("step_size", float, "subgradient step size", positive, default=1e-3, unit="per payoff"),
    Option(
        "step_rule",
        str,
        "subgradient step rule: constant α, α/√t, or Polyak's f/‖g‖² capped at α",
        choices=STEP_RULES,
        default="constant",
    ),
    Option(
        "start",
        str,
        "subgradient initial plan (the uniform plan is an exact EFCE in some games)",
        choices=("uniform", "random"),
        default="uniform",
    ),
    SEED,
)
#: Option name → ``subgradient``'s default (:data:`OPTIONS`), :func:`solve_subgradient`'s own.
DEFAULTS = defaults(OPTIONS)


def _step(rule: str, alpha: float, t: int, f: float, g: np.ndarray) -> float:
    if rule == "constant":
        return alpha
    if rule == "sqrt":
        return alpha / np.sqrt(t + 1)
    norm2 = float(g @ g)
    return min(f / norm2, alpha) if norm2 > 0 else 0.0


def check_subgradient_model(game: Game, memory_budget: int | None = None) -> None:
    """Refuse, before anything is built, a game :func:`solve_subgradient` cannot model: not
    two players without chance moves, or operators (sized from the EFCE LP) over
    ``memory_budget`` bytes.

    Raises
    ------
    GameError
        Naming the reason.
    """
    check_decomposable(game)
    check_memory(
        estimate_efce_lp(game),
        game,
        memory_budget,
        factor=SUBGRADIENT_MEMORY_FACTOR,
        what="the subgradient method's operators (sized from the EFCE LP)",
    )


def _warm_up(game: Game, o: dict, device: bool = False) -> None:
    """Refuse what the run refuses, then load the model builders' kernels (its only numba code:
    the relevant pairs) on a tiny game (:func:`efce.solvers.warm_up.warm_up_run`)."""
    check_subgradient_model(game)
    warm_up_run(_run, game, o)


def solve_subgradient(
    game: Game,
    *,
    step_size: float = DEFAULTS["step_size"],
    step_rule: str = DEFAULTS["step_rule"],
    iterations: int = DEFAULTS["iterations"],
    time_limit: float | None = DEFAULTS["time_limit"],
    projections: int | None = None,
    trace_every: int = 10,
    tolerance: float = 1e-6,
    seed: int = DEFAULTS["seed"],
    memory_budget: int | None = None,
    start: str = DEFAULTS["start"],
    xi0: np.ndarray | None = None,
    progress: Callable[[TraceRow], None] | None = None,
) -> SolveResult:
    """Subgradient descent on the max deviation with incremental constraint projection
    (Farina et al. 2019c; Wang and Bertsekas 2013).

    Parameters
    ----------
    step_size : α (the paper used 1e-3 on the small Battleship instance, 1e-6 on the medium).
    step_rule : :data:`STEP_RULES`: ``"constant"`` (α), ``"sqrt"`` (α / √(t+1)), or ``"polyak"``
        (``f(ξ_t) / ‖g_t‖²``, capped at α: Polyak's step with the known optimal value f* = 0 of
        the max deviation — an EFCE exists — so it needs no tuning beyond the cap).
    iterations, time_limit : stopping rules (whichever comes first; default 10,000 iterations, as
        ``efce solve --method subgradient`` and every other iterative EFCE method).
    projections : equality rows of Definition 3 sampled per iteration (default: 1% of the rows,
        at least 10); the sample is thinned to rows with disjoint supports and projected onto
        at once, then ξ is clipped to ``ξ ≥ 0``.
    trace_every : iterations between trace rows (the first and last iterates are always
        recorded).  Each row holds the iterate's max deviation (clipped at 0, raw payoff units)
        and its infeasibility ``max(|Cξ − b|_∞, max(−ξ))``.
    tolerance : stop (``converged``) when both the max deviation and the infeasibility are
        at most this.
    start : ``"uniform"`` (product of uniform strategies) or ``"random"`` (product of random
        behavioral strategies drawn with ``seed``); both lie in Ξ.
    xi0 : explicit start point (overrides ``start``).

    Returns
    -------
    SolveResult
        The last iterate and its trace; status ``error`` with ``info["diverged"]`` and a
        ``message`` when an entry of an iterate passes :data:`DIVERGED_ENTRY` (the steps
        overshoot: the gap of such an iterate is no result).
    """
    if step_rule not in STEP_RULES:
        raise ValueError(f"step_rule must be one of {', '.join(STEP_RULES)}, not {step_rule!r}")
    if not (step_size > 0 and np.isfinite(step_size)):
        raise ValueError(f"step_size must be a positive number, not {step_size}")
    t_setup = time.perf_counter()
    check_subgradient_model(game, memory_budget)
    pairs = relevant_pairs(game)
    vsf = vsf_constraints(game, pairs)
    C = vsf.matrix.tocsr()
    b = vsf.rhs
    row_norm2 = np.asarray(C.multiply(C).sum(axis=1)).ravel()
    f_eval = MaxDeviation(game, pairs)
    rng = np.random.default_rng(seed)
    n_rows = C.shape[0]
    if projections is None:
        projections = max(10, n_rows // 100)
    projections = min(int(projections), n_rows)
    if start not in ("uniform", "random"):
        raise ValueError(f"start must be 'uniform' or 'random', not {start!r}")
    if xi0 is not None:
        xi = np.array(xi0, dtype=np.float64)
        if xi.shape != (len(pairs),):
            raise ValueError(f"xi0 has shape {xi.shape}, expected ({len(pairs)},)")
    else:
        xi = _uniform_plan(game, pairs, rng if start == "random" else None)
    setup_seconds = time.perf_counter() - t_setup

    driver = IterationDriver(
        iterations=iterations, time_limit=time_limit, check_every=trace_every, progress=progress
    )
    f, player, trig, rowval = f_eval(xi)
    diverged: float | None = None  # the largest entry of the iterate that ended the run
    gap, infeasibility = max(0.0, f), vsf.max_violation(xi)
    best_gap = gap
    start_row = TraceRow(0, 0.0, gap, infeasibility)
    # A step size too large overflows the iterates: the loop stops at the first non-finite max
    # deviation and the run is reported as an error (experiments.solve.finite_or_error) — not
    # as numpy warnings followed by the rest of the budget spent on NaN.
    with np.errstate(over="ignore", invalid="ignore"):
        if not driver.record(start_row, converged=gap <= tolerance and infeasibility <= tolerance):
            for t in driver:
                # Subgradient step (f ≤ 0 means no trigger gains: only the projections move ξ).
                if f > 0:
                    g = f_eval.subgradient(player, trig, rowval)
                    xi -= _step(step_rule, step_size, t - 1, f, g) * g
                # Incremental projection onto sampled hyperplanes (disjoint supports), then ξ ≥ 0.
                sample = rng.choice(n_rows, size=projections, replace=False)
                _project_rows(xi, C, b, row_norm2, sample)
                np.maximum(xi, 0.0, out=xi)
                f, player, trig, rowval = f_eval(xi)
                if not np.isfinite(f):
                    break  # diverged: reported as an error with the non-finite point
                largest = float(xi.max(initial=0.0))
                if largest > DIVERGED_ENTRY:
                    diverged = largest  # diverged, still finite: reported below as an error
                    break
                if driver.checkpoint_due():
                    gap = max(0.0, f)
                    with driver.paused():
                        infeasibility = vsf.max_violation(xi)
                    best_gap = min(best_gap, gap)
                    if driver.record(
                        TraceRow(t, driver.elapsed(), gap, infeasibility),
                        converged=gap <= tolerance and infeasibility <= tolerance,
                    ):
                        break
        trace = driver.trace
        info = dict(
            step_size=step_size,
            step_rule=step_rule,
            projections=projections,
            efce_gap=trace[-1].gap if np.isfinite(f) else float(f),
            max_violation=vsf.max_violation(xi),
            best_traced_gap=float(best_gap),
            peak_memory_bytes=peak_rss_bytes(),
            iteration_seconds=driver.iteration_seconds,
        )
        tm = terminal_map(game)
        pz = pairs.index(tm.sequences[:, 0], tm.sequences[:, 1])
        utilities = tm.weighted_payoffs().T @ xi[pz]
        info.update(utilities=[float(x) for x in utilities], welfare=float(utilities.sum()))
    status = driver.status
    if diverged is not None:
        # Finite but far outside Ξ (a non-finite iterate is reported by efce.solve's own check).
        status = "error"
        info["diverged"] = True
        info["message"] = (
            f"subgradient diverged at iteration {driver.iteration:,}: an entry of its iterate reached "
            f"{diverged:.3g}, where a correlation plan's entries are probabilities (at most 1): the "
            "step size is too large for these payoffs (try a smaller --step-size, or --step-rule "
            "polyak); the run has no valid result"
        )
    return SolveResult(
        "subgradient", xi, status, driver.iteration, setup_seconds, driver.elapsed(), trace, info
    )


def _project_rows(
    xi: np.ndarray, C: sp.csr_matrix, b: np.ndarray, norm2: np.ndarray, rows: np.ndarray
) -> None:
    """Project ξ onto each hyperplane ``C[r] ξ = b[r]``, r in ``rows`` (in order); rows sharing a
    column with an earlier row of the batch are skipped, so the rest are projected at once."""
    cnt = C.indptr[rows + 1] - C.indptr[rows]
    owner = np.repeat(np.arange(len(rows)), cnt)
    pos = C.indptr[rows][owner] + (np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt))
    cols = C.indices[pos]
    _, first = np.unique(cols, return_index=True)
    clash = np.ones(len(cols), dtype=bool)
    clash[first] = False
    bad = np.zeros(len(rows), dtype=bool)
    bad[owner[clash]] = True
    keep_entry = ~bad[owner]
    owner, pos, cols = owner[keep_entry], pos[keep_entry], cols[keep_entry]
    vals = C.data[pos]
    resid = np.bincount(owner, weights=vals * xi[cols], minlength=len(rows)) - b[rows]
    scale = np.where(norm2[rows] > 0, resid / np.where(norm2[rows] > 0, norm2[rows], 1.0), 0.0)
    xi[cols] -= scale[owner] * vals


# ----------------------------------------------------------------------------- declaration
def _run(game: Game, *, progress: Callable[[TraceRow], None] | None, **o) -> SolveResult:
    return solve_subgradient(
        game,
        iterations=o["iterations"],
        time_limit=o["time_limit"],
        step_size=o["step_size"],
        step_rule=o["step_rule"],
        seed=o["seed"],
        start=o["start"],
        progress=progress,
    )


#: ``subgradient`` for :func:`efce.solve` (collected by :data:`efce.experiments.solve.METHODS`).
SOLVE_METHODS = (
    Method(
        "subgradient",
        "subgradient descent on the max deviation with incremental projection",
        OPTIONS,
        _run,
        chance="none",
        warm_up=_warm_up,
        payoff_info=EQUILIBRIUM_REPORT | {"best_traced_gap"},
    ),
)
