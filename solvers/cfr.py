"""CFR and CFR+ as regret minimization over sequence-form chains.

Section 3.2 of Farina, Ling, Fang, Sandholm 2019: Algorithm 1 applied to the chain of a player's
sequence-form polytope (section 3.1) with regret matching at every simplex *is* CFR (Zinkevich et
al. 2007); with RM+, alternating updates and linear averaging it is CFR+ (Tammelin et al. 2015).
Both players' chains run in the compiled :class:`~solvers.engine.ChainEngine`; the utility of a
player is the bilinear sequence-form payoff ``A_i`` against the opponent's current strategy.

Exploitability is NashConv: ``Σ_i max_{x_i'} u_i(x_i', x̄_{-i}) − u_i(x̄)`` of the average
strategies, with exact best responses by backward induction.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from games.game import Game, GameError
from games.payoffs import sequence_form_payoffs
from polytopes.sequence_form import sequence_form

from .best_response import best_response
from .engine import ChainEngine, minimizer_factory
from .local import LocalRule, RegretMatching
from .protocol import MinimizerFactory
from .result import SolveResult, TraceRow


def exploitability(game: Game, strategies, payoffs=None) -> tuple[float, np.ndarray]:
    """NashConv of sequence-form ``strategies = (x1, x2)`` and the players' utilities."""
    a1, a2 = sequence_form_payoffs(game) if payoffs is None else payoffs
    x1, x2 = strategies
    u = np.array([x1 @ (a1 @ x2), x1 @ (a2 @ x2)])
    br1, _ = best_response(game.sequences(0), a1 @ x2)
    br2, _ = best_response(game.sequences(1), a2.T @ x1)
    return float(br1 - u[0] + br2 - u[1]), u


def solve_cfr(game: Game, *, iterations: int = 1000, variant: str = "cfr+",
              rule: LocalRule | str | None = None, minimizer: MinimizerFactory | None = None,
              time_limit: float | None = None,
              target_gap: float | None = None, trace_every: int | None = None,
              progress: Callable[[int, float], None] | None = None) -> SolveResult:
    """Run CFR (``variant="cfr"``: RM, simultaneous updates, uniform averaging) or CFR+
    (``"cfr+"``: RM+, alternating updates, linear averaging) on a two-player game.

    ``trace_every`` iterations (default: a log-spaced schedule) the exploitability of the
    average strategy is recorded; ``target_gap`` stops once it is reached.

    ``rule`` (a :class:`~solvers.local.LocalRule` or its name; default RM for CFR, RM+ for CFR+)
    runs at every infoset; ``minimizer`` instead builds each player's regret minimizer from the
    chain of their sequence-form polytope (``polytopes.sequence_form``; points indexed by
    sequence).  Giving both is a ValueError."""
    started = time.perf_counter()
    if game.num_players != 2:
        raise GameError(f"CFR here solves two-player games; {game.name} has {game.num_players} players "
                        f"(use --method icfr or cfr-s for n players)")
    if variant not in ("cfr", "cfr+"):
        raise GameError(f"unknown CFR variant '{variant}' (cfr or cfr+)")
    plus = variant == "cfr+"
    make_minimizer = minimizer_factory(rule, minimizer, RegretMatching(plus=plus))
    payoffs = sequence_form_payoffs(game)
    a1, a2 = payoffs
    a2t = a2.T.tocsr()
    chains = [sequence_form(game.sequences(p)) for p in (0, 1)]
    engines = [ChainEngine(c, minimizer=make_minimizer(c)) for c in chains]
    sums = [np.zeros(c.num_entries) for c in chains]
    weight_total = 0.0
    setup = time.perf_counter() - started

    trace: list[TraceRow] = []
    checkpoints = _schedule(iterations, trace_every)
    status = "iteration_limit"
    t0 = time.perf_counter()
    x = [e.recommend() for e in engines]
    t = 0
    for t in range(1, iterations + 1):
        if plus:  # alternating: player 2 answers player 1's freshly updated strategy
            engines[0].observe(-(a1 @ x[1]), overwrite=True)
            x[0] = engines[0].recommend()
            engines[1].observe(-(a2t @ x[0]), overwrite=True)
            x[1] = engines[1].recommend()
        else:
            loss = [-(a1 @ x[1]), -(a2t @ x[0])]
            for p in (0, 1):
                engines[p].observe(loss[p], overwrite=True)
            x = [e.recommend() for e in engines]
        w = float(t) if plus else 1.0
        for p in (0, 1):
            sums[p] += w * x[p]
        weight_total += w
        if t in checkpoints or t == iterations:
            avg = [s / weight_total for s in sums]
            gap, _ = exploitability(game, avg, payoffs)
            elapsed = time.perf_counter() - t0
            trace.append(TraceRow(t, elapsed, gap))
            if progress:
                progress(t, gap)
            if target_gap is not None and gap <= target_gap:
                status = "converged"
                break
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            status = "time_limit"
            break
    seconds = time.perf_counter() - t0
    avg = [s / weight_total for s in sums]
    gap, u = exploitability(game, avg, payoffs)
    if not trace or trace[-1].iteration != t:
        trace.append(TraceRow(t, seconds, gap))
    return SolveResult(method=variant, point=tuple(avg), status=status, iterations=t,
                       setup_seconds=setup, seconds=seconds, trace=trace,
                       info={"exploitability": gap, "value": float(u[0]), "utilities": u,
                             "welfare": float(u.sum())})


def _schedule(iterations: int, every: int | None) -> set[int]:
    if every:
        return set(range(every, iterations + 1, every))
    points = np.unique(np.round(np.logspace(0, np.log10(max(iterations, 1)), 40)).astype(int))
    return set(points.tolist())
