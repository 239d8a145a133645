"""The EFCE bilinear saddle point solved by regret minimization (Farina, Ling, Fang, Sandholm
2019, sections 2.1, 2.3 and 5).

``min_{ξ ∈ Ξ} max_{y ∈ Y} ξᵀ A y``: ``Ξ`` is the correlation-plan polytope as the chain built by
``DECOMPOSE``; ``Y`` the convex hull of the trigger agents' deviation strategies, also a chain
(:mod:`polytopes.triggers`); ``ξᵀ A y`` is the expected gain of the deviation ``y`` against the
recommendations drawn from ``ξ``:

* for a trigger ``σ̂ = (Î, â)`` of player ``i`` and ``z ∈ Z(Î)``:
  ``A[(σ̂, σ_{-i}(z)), (σ̂, σ_i(z))] += p_c(z) u_i(z)`` (the deviation value);
* for ``z`` with ``σ_i(z) ⪰ σ̂``: ``A[σ(z), λ_σ̂] −= p_c(z) u_i(z)`` (the following value, times
  ``λ_σ̂ = Σ_a y[(Î, a)]``);
* with a welfare threshold τ, one more weight ``λ_τ`` gains ``τ − Σ_z p_c(z)(u_1 + u_2)(z) ξ[σ(z)]``
  (written bilinearly through ``ξ[∅, ∅] = 1``).

Two compiled chain engines with RM+ at every simplex, alternating updates and linear averaging
(section 5) give feasible iterates; the exact max deviation of the average is the stopping rule.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp

from games.arrays import concat_ranges
from games.game import Game
from games.payoffs import terminal_map
from games.memory import check_budget
from games.relevant import RelevantPairs, count_relevant_pairs, relevant_pairs
from polytopes.chain import Chain
from polytopes.decompose import check_decomposable, correlation_plan
from polytopes.triggers import TriggerSpace, trigger_deviations
from polytopes.vsf import vsf_constraints

from .engine import ChainEngine, chain_minimum, minimizer_factory
from .gaps import EFCEGapEvaluator
from .local import LocalRule, RegretMatching
from .protocol import MinimizerFactory
from .result import SolveResult, TraceRow


#: A saddle-point lower bound above this proves the welfare threshold unreachable.
CERTIFICATE_TOLERANCE = 1e-9


@dataclass
class EFCEModel:
    """Everything the saddle point needs, built once per game."""

    game: Game
    pairs: RelevantPairs
    xi_chain: Chain
    triggers: TriggerSpace
    A: sp.csr_matrix        # rows: Ξ entries (chain order); columns: Y entries
    At: sp.csr_matrix
    welfare_threshold: float | None


#: Peak memory of a saddle-point run per relevant pair, measured on the Battleship instances of
#: Table 1 (482 B on 3.89M pairs, 415 B on 26.4M), plus the interpreter and libraries.
BYTES_PER_RELEVANT_PAIR = 450
FIXED_BYTES = 300 * 2**20


def estimate_efce_bytes(game: Game) -> int:
    """Estimated peak memory of :func:`solve_efce` on ``game`` (see the constants above)."""
    return FIXED_BYTES + BYTES_PER_RELEVANT_PAIR * count_relevant_pairs(game)


def build_efce_model(game: Game, welfare_threshold: float | None = None,
                     pairs: RelevantPairs | None = None, xi_chain: Chain | None = None,
                     memory_budget: int | None = None) -> EFCEModel:
    """Ξ by DECOMPOSE, Y by :func:`polytopes.triggers.trigger_deviations`, and the sparse ``A``
    of the module docstring (rows in Ξ's entry order).  ``pairs``/``xi_chain`` may be passed to
    reuse ones already built.  A game whose estimated peak memory exceeds ``memory_budget``
    (bytes; default 60% of the available RAM) is refused before anything large is built."""
    check_decomposable(game)
    check_budget(estimate_efce_bytes(game), f"the EFCE saddle point of {game.name}", memory_budget)
    pairs = relevant_pairs(game) if pairs is None else pairs
    xi_chain = correlation_plan(game, pairs) if xi_chain is None else xi_chain
    triggers = trigger_deviations(game, welfare=welfare_threshold is not None)
    entry_of_pair = np.empty(len(pairs), dtype=np.int64)
    entry_of_pair[xi_chain.entry_index] = np.arange(len(pairs))
    A = _payoff_matrix(game, pairs, triggers, welfare_threshold, entry_of_pair)
    return EFCEModel(game, pairs, xi_chain, triggers, A, A.T.tocsr(), welfare_threshold)


def _payoff_matrix(game, pairs, triggers: TriggerSpace, tau, entry_of_pair) -> sp.csr_matrix:
    """``A`` with rows numbered by ``entry_of_pair`` (Ξ's chain entries), columns by Y's entries."""
    tm = terminal_map(game)
    weighted = tm.weighted_payoffs()
    term_pair = pairs.index(tm.sequences[:, 0], tm.sequences[:, 1])
    rows, cols, vals = [], [], []
    n_entries = triggers.chain.num_entries
    for i in (0, 1):
        space = game.sequences(i)
        own = tm.sequences[:, i].astype(np.int64)
        other = tm.sequences[:, 1 - i].astype(np.int64)
        order = np.argsort(own, kind="stable")
        count = np.bincount(own, minlength=space.num_sequences)
        start = np.cumsum(count) - count
        # Y entries of player i's triggers.
        entries = np.flatnonzero((triggers.entry_trigger >= 0)
                                 & (triggers.trigger_player[np.maximum(triggers.entry_trigger, 0)] == i))
        seq = triggers.entry_sequence[entries]
        trig = triggers.entry_trigger[entries]
        s_hat = triggers.trigger_sequence[trig]
        reps = count[seq]
        e_rep = np.repeat(entries, reps)
        z = order[concat_ranges(start[seq], reps)]
        s_hat_rep = np.repeat(s_hat, reps)
        # (a) deviation value.
        r1, r2 = (s_hat_rep, other[z]) if i == 0 else (other[z], s_hat_rep)
        rows.append(pairs.index(r1, r2))
        cols.append(e_rep)
        vals.append(weighted[z, i])
        # (b) following value on λ_σ̂, for terminals below σ̂ itself.
        below = space.is_descendant(seq, s_hat)
        reps_b = np.where(below, reps, 0)
        z_b = order[concat_ranges(start[seq], reps_b)]
        rows.append(term_pair[z_b])
        cols.append(1 + np.repeat(trig, reps_b))
        vals.append(-weighted[z_b, i])
    if tau is not None:
        lam = triggers.num_triggers  # the last weight, entry 1 + (K - 1)
        rows += [term_pair, np.array([0])]
        cols += [np.full(len(term_pair), lam), np.array([lam])]
        vals += [-weighted.sum(axis=1), np.array([float(tau)])]
    A = sp.csr_matrix((np.concatenate(vals), (entry_of_pair[np.concatenate(rows)], np.concatenate(cols))),
                      shape=(len(pairs), n_entries))
    A.sum_duplicates()
    return A


def solve_efce(game: Game, *, iterations: int = 10_000, time_limit: float | None = None,
               target_gap: float | None = 1e-3, welfare_threshold: float | None = None,
               rule: LocalRule | str | None = None, minimizer: MinimizerFactory | None = None,
               check_every: int | None = None,
               check_feasibility_every_iteration: bool = False,
               progress: Callable[[int, float, float], None] | None = None,
               model: EFCEModel | None = None, memory_budget: int | None = None) -> SolveResult:
    """Regret minimization on the EFCE saddle point (RM+ locally, alternating updates, linear
    averaging).  Stops at ``target_gap`` (max deviation of the average plan, and welfare within
    ``target_gap`` of the threshold), ``iterations`` or ``time_limit`` seconds.

    With a welfare threshold above the best EFCE welfare the gap cannot close; if the average
    deviator strategy ȳ proves ``min_ξ ξᵀ A ȳ > 0`` the status is ``"infeasible"`` (no EFCE
    with that welfare exists); otherwise the budget runs out and ``info["threshold_met"]`` is
    False.

    ``rule`` (a :class:`~solvers.local.LocalRule` or its name, default RM+) runs at every simplex
    of both chains; ``minimizer`` instead builds each side's regret minimizer from its chain (Ξ's,
    then Y's; points in entry order), e.g. ``lambda chain: chain_minimizer(chain, MyRule())`` or
    a composite of the :mod:`solvers.algebra` — see the tutorial, "Write your own regret
    minimizer".  Giving both is a ValueError."""
    started = time.perf_counter()
    make_minimizer = minimizer_factory(rule, minimizer, RegretMatching(plus=True))
    model = model or build_efce_model(game, welfare_threshold, memory_budget=memory_budget)
    xi_engine = ChainEngine(model.xi_chain, minimizer=make_minimizer(model.xi_chain))
    y_engine = ChainEngine(model.triggers.chain, minimizer=make_minimizer(model.triggers.chain))
    evaluator = EFCEGapEvaluator(game, model.pairs)
    constraints = vsf_constraints(game, model.pairs)
    setup = time.perf_counter() - started

    chain = model.xi_chain
    n = len(model.pairs)
    sum_x = np.zeros(chain.num_entries)
    sum_y = np.zeros(model.triggers.chain.num_entries)
    weight = 0.0
    trace: list[TraceRow] = []
    max_violation = 0.0
    status = "iteration_limit"
    t0 = time.perf_counter()
    y = y_engine.recommend()
    next_check = 1
    t = 0
    report = None
    for t in range(1, iterations + 1):
        xi_engine.observe(model.A @ y)
        x = xi_engine.recommend()
        y_engine.observe(-(model.At @ x))
        y = y_engine.recommend()
        sum_x += t * x
        sum_y += t * y
        weight += t
        if check_feasibility_every_iteration:
            max_violation = max(max_violation, constraints.max_violation(chain.to_natural(x, n)))
        last = t == iterations or (time_limit is not None and time.perf_counter() - t0 > time_limit)
        if t >= next_check or last:
            next_check = t + check_every if check_every else max(t + 1, int(t * 1.15))
            elapsed = time.perf_counter() - t0
            xbar = chain.to_natural(sum_x / weight, n)
            report = evaluator(xbar)
            violation = max(constraints.max_violation(chain.to_natural(x, n)),
                            constraints.max_violation(xbar))
            max_violation = max(max_violation, violation)
            shortfall = 0.0 if welfare_threshold is None else max(0.0, welfare_threshold - report.welfare)
            trace.append(TraceRow(t, elapsed, report.gap, violation,
                                  {"welfare": report.welfare, "welfare_shortfall": shortfall}))
            if progress:
                progress(t, report.gap, elapsed)
            if target_gap is not None and report.gap <= target_gap and shortfall <= target_gap:
                status = "converged"
                break
            if welfare_threshold is not None and shortfall > 0:
                # min_ξ ξᵀ A ȳ > 0 proves that no EFCE reaches the threshold: stop early.
                if chain_minimum(chain, model.A @ (sum_y / weight)) > CERTIFICATE_TOLERANCE:
                    status = "infeasible"
                    break
            if last:
                status = "time_limit" if t < iterations else "iteration_limit"
                break
    seconds = time.perf_counter() - t0
    xbar = chain.to_natural(sum_x / weight, n)
    report = evaluator(xbar)
    info = {"efce_gap": report.gap, "efcce_gap": None, "nfcce_gap": None,
            "welfare": report.welfare, "utilities": report.utilities,
            "max_violation": max_violation, "feasible_iterates": max_violation <= 1e-9}
    if welfare_threshold is not None:
        lower_bound = chain_minimum(chain, model.A @ (sum_y / weight))
        info.update({"welfare_threshold": welfare_threshold,
                     "threshold_met": report.welfare >= welfare_threshold - (target_gap or 0.0),
                     "saddle_value_lower_bound": lower_bound})
        if lower_bound > CERTIFICATE_TOLERANCE and status != "converged":
            status = "infeasible"
            info["message"] = (f"no EFCE has welfare ≥ {welfare_threshold}: the average deviation "
                               f"certifies a saddle-point value ≥ {lower_bound:.6g} > 0")
        elif status != "converged":
            info["message"] = f"no EFCE with welfare ≥ {welfare_threshold} found within the budget"
    return SolveResult(method="rm", point=xbar, status=status, iterations=t, setup_seconds=setup,
                       seconds=seconds, trace=trace, info=info)
