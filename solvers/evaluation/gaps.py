"""Exact "max deviation" of a two-player correlation plan ξ (the y-axis of Figure 3 in Farina,
Ling, Fang, Sandholm 2019, and the stopping criterion of the EFCE solvers).

For player ``i`` and trigger sequence ``σ̂ = (Î, â)`` (von Stengel & Forges 2008; Farina et al.
2019c, the saddle-point formulation):

* following value ``F(σ̂) = Σ_{z : σ_i(z) ⪰ σ̂} p_c(z) u_i(z) ξ[σ_1(z), σ_2(z)]``;
* deviation value ``D(σ̂) = max_y Σ_{z ∈ Z(Î)} p_c(z) u_i(z) y[σ_i(z)] ξ[σ̂, σ_{-i}(z)]`` over
  sequence-form strategies ``y`` of player ``i``'s subtree rooted at ``Î`` (the trigger agent
  deviates when recommended ``â`` at ``Î`` and keeps the opponent's correlation with ``σ̂``);

and the max deviation is ``max(0, max_{i, σ̂} D(σ̂) − F(σ̂))`` in raw payoff units.  ``D`` is a
best response computed by backward induction over the subtree, for every trigger, in a compiled
loop that reads ``ξ[σ̂, σ_{-i}(z)]`` through the trigger tables of :mod:`solvers.evaluation.payoff_operator`;
one evaluation costs ``O(Σ_σ̂ (|subtree(Î)| + |Z(Î)|))``, about one product with ``Aᵀ``.  The
trigger infosets are split into ranges of about equal work, one per numba thread; every gain is
computed by one thread in the serial order, so the report is the same on any thread count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from efce.games.arrays import balanced_part
from efce.games.game import Game
from efce.games.relevant import RelevantPairs, relevant_pairs, require_two_players
from efce.solvers.evaluation.payoff_operator import TriggerTables, trigger_tables


@dataclass
class GapReport:
    """``gap`` = max deviation; ``gains[i][σ̂]`` per trigger sequence (NaN for the empty one);
    ``utilities`` per player; ``worst`` = (player, trigger sequence) attaining the gap."""

    gap: float
    gains: list[np.ndarray]
    utilities: np.ndarray
    worst: tuple[int, int]

    @property
    def welfare(self) -> float:
        return float(self.utilities.sum())


class EFCEGapEvaluator:
    """Precomputes the per-game structures once; call it on any ξ (relevant-pair order).

    The structures are the :class:`solvers.evaluation.payoff_operator.TriggerTables` (terminals in
    preorder and the line table that locates ``ξ[σ̂, σ_{-i}(z)]``); the EFCE solver passes the
    ones its payoff operator already holds (in Ξ's chain-entry order), so nothing per pair is
    built twice.  Calling the evaluator on ξ in relevant-pair order needs ``pairs`` and, for
    tables in entry order, ``entry_of_pair`` (each relevant pair's entry); :meth:`evaluate`, which
    reads values in the tables' own order, needs neither — the solver's loop builds its evaluator
    from the tables alone, so it holds no array per relevant pair.
    """

    def __init__(
        self,
        game: Game,
        pairs: RelevantPairs | None = None,
        tables: TriggerTables | None = None,
        entry_of_pair: np.ndarray | None = None,
    ):
        require_two_players(game, "the correlation-plan EFCE gap")
        self.game = game
        if tables is None:
            pairs = relevant_pairs(game) if pairs is None else pairs
            tables = trigger_tables(game, pairs)
        self.pairs = pairs
        self.tables = tables
        self._entry_of_pair = entry_of_pair
        self.terminal_pair = self.tables.terminal_pair
        self.weighted = self.tables.weighted  # p_c(z) u_i(z)
        self._cum_work = tuple(_cumulative_work(t) for t in self.tables.players)

    def utilities(self, xi: np.ndarray) -> np.ndarray:
        """Expected utility of each player under ξ: ``Σ_z p_c(z) u_i(z) ξ[σ(z)]``."""
        return self.weighted.T @ xi[self.terminal_pair]

    def __call__(self, xi: np.ndarray) -> GapReport:
        """The report of ``ξ`` given in relevant-pair order.

        Raises
        ------
        ValueError
            ``ξ`` is not one value per relevant pair, or the evaluator was built without the
            pairs (or, over entry-order tables, without ``entry_of_pair``): use :meth:`evaluate`.
        """
        if self.pairs is None or (self.tables.entry_order and self._entry_of_pair is None):
            raise ValueError(
                "this evaluator reads ξ in Ξ's chain-entry order only (evaluate); ξ in "
                "relevant-pair order needs the pairs and the pair → entry map"
            )
        xi = np.ascontiguousarray(xi, dtype=np.float64)
        if xi.shape != (len(self.pairs),):
            raise ValueError(f"ξ has shape {xi.shape}, expected ({len(self.pairs)},) relevant pairs")
        if self._entry_of_pair is None:
            return self.evaluate(xi)
        values = np.empty(len(xi))
        values[self._entry_of_pair] = xi
        return self.evaluate(values)

    def evaluate(self, values: np.ndarray, scale: float = 1.0) -> GapReport:
        """The report of ``ξ = scale · values``, with ``values`` in the tables' order (Ξ's chain
        entries when built with its entry map, else relevant pairs): the solver passes its running
        sum of iterates and ``1 / Σ weights``, so the average plan is never materialized.  Gains
        are linear in ξ, so they are computed on ``values`` and scaled."""
        players = self.tables.players
        per_seq0, per_seq1, utilities = _terminal_sums(
            values,
            self.tables.terminal_row,
            self.tables.terminal_sequences,
            self.weighted,
            players[0].num_sequences,
            players[1].num_sequences,
        )
        gains = []
        for i, per_seq in enumerate((per_seq0, per_seq1)):
            t = players[i]
            # Following values: per own sequence, then accumulated over subtrees.
            follow = _subtree_sums(per_seq, t.first, t.num_actions, t.infoset_parent)
            g = _trigger_gains(
                t.first,
                t.num_actions,
                t.child_ptr,
                t.child_inf,
                t.pos,
                t.pre,
                t.end,
                t.cum,
                t.term_ptr,
                t.term_weight,
                t.line_start,
                t.line_term,
                t.row_start,
                t.rows,
                follow,
                values,
                self._cum_work[i],
                numba.get_num_threads(),
            )
            if scale != 1.0:
                g *= scale
            gains.append(g)
        best = [(float(np.nanmax(g)) if np.any(~np.isnan(g)) else -np.inf) for g in gains]
        player = int(np.argmax(best))
        gap = max(0.0, best[player])
        worst_seq = int(np.nanargmax(gains[player])) if np.isfinite(best[player]) else -1
        return GapReport(gap, gains, scale * utilities, (player, worst_seq))

    def welfare(self, values: np.ndarray, scale: float = 1.0) -> float:
        """``Σ_z p_c(z) (u_1 + u_2)(z) ξ[σ(z)]`` for ``ξ = scale · values`` in the tables' order
        (as :meth:`evaluate`; one pass over the terminals, no temporary)."""
        return scale * _welfare(values, self.tables.terminal_row, self.weighted)


def efce_gap(game: Game, xi: np.ndarray, pairs: RelevantPairs | None = None) -> float:
    """Max deviation of the correlation plan ``xi`` (relevant-pair order), raw payoff units."""
    return EFCEGapEvaluator(game, pairs)(xi).gap


def plan_utilities(game: Game, xi: np.ndarray, pairs: RelevantPairs | None = None) -> np.ndarray:
    """Expected utilities of both players under the correlation plan ``xi``."""
    return EFCEGapEvaluator(game, pairs).utilities(xi)


@numba.njit(cache=True)
def _welfare(values, terminal_row, weighted):
    total = 0.0
    for z in range(len(terminal_row)):
        total += (weighted[z, 0] + weighted[z, 1]) * values[terminal_row[z]]
    return total


@numba.njit(cache=True)
def _terminal_sums(values, terminal_row, own, weighted, n_seq0, n_seq1):
    """One pass over the terminals: ``per_seq_i[σ] = Σ_{z: σ_i(z) = σ} p_c(z) u_i(z) ξ[σ(z)]`` for
    both players, and their utilities ``Σ_z p_c(z) u_i(z) ξ[σ(z)]`` (no temporary per terminal)."""
    per_seq0 = np.zeros(n_seq0)
    per_seq1 = np.zeros(n_seq1)
    utilities = np.zeros(2)
    for z in range(len(terminal_row)):
        v = values[terminal_row[z]]
        a = weighted[z, 0] * v
        b = weighted[z, 1] * v
        per_seq0[own[z, 0]] += a
        per_seq1[own[z, 1]] += b
        utilities[0] += a
        utilities[1] += b
    return per_seq0, per_seq1, utilities


@numba.njit(cache=True)
def _subtree_sums(per_seq, first, num_actions, infoset_parent):
    """``out[σ] = Σ_{σ' ⪰ σ} per_seq[σ']`` (infosets are numbered top-down)."""
    out = per_seq.copy()
    for inf in range(len(first) - 1, -1, -1):
        total = 0.0
        for a in range(num_actions[inf]):
            total += out[first[inf] + a]
        out[infoset_parent[inf]] += total
    return out


def _cumulative_work(t) -> np.ndarray:
    """Running cost of the trigger infosets ``0..I-1`` in :func:`_trigger_gains`: per action, a
    pass over the subtree's sequences and the infoset's line of terminals."""
    subtree_sequences = t.cum[t.end] - t.cum[t.pos]
    width = np.diff(t.line_start)
    per_infoset = t.num_actions.astype(np.int64) * (subtree_sequences + width + 1)
    return np.concatenate(([0], np.cumsum(per_infoset)))


@numba.njit(parallel=True, cache=True)
def _trigger_gains(
    first,
    num_actions,
    child_ptr,
    child_inf,
    pos,
    pre,
    end,
    cum,
    term_ptr,
    term_w,
    line_start,
    line_term,
    row_start,
    rows,
    follow,
    values,
    cum_work,
    parts,
):
    n_seq = len(follow)
    n_inf = len(first)
    gains = np.full(n_seq, np.nan)
    for part in numba.prange(parts):
        lo, hi = balanced_part(cum_work, part, parts)
        value = np.zeros(n_inf)
        _gains_of_infosets(
            lo,
            hi,
            first,
            num_actions,
            child_ptr,
            child_inf,
            pos,
            pre,
            end,
            cum,
            term_ptr,
            term_w,
            line_start,
            line_term,
            row_start,
            rows,
            follow,
            values,
            value,
            gains,
        )
    return gains


@numba.njit(inline="always")
def _gains_of_infosets(
    i_lo,
    i_hi,
    first,
    num_actions,
    child_ptr,
    child_inf,
    pos,
    pre,
    end,
    cum,
    term_ptr,
    term_w,
    line_start,
    line_term,
    row_start,
    rows,
    follow,
    values,
    value,
    gains,
):
    """The gains of the triggers at infosets ``i_lo .. i_hi-1`` (``value``: infoset scratch)."""
    for trig_inf in range(i_lo, i_hi):
        lo, hi = pos[trig_inf], end[trig_inf]
        shift = line_start[trig_inf] - term_ptr[cum[lo]]
        width = line_start[trig_inf + 1] - line_start[trig_inf]
        for a_hat in range(num_actions[trig_inf]):
            s_hat = first[trig_inf] + a_hat
            rshift = row_start[trig_inf] + a_hat * width - line_start[trig_inf]
            # Best response of the trigger agent, bottom-up over Î's subtree (reverse preorder).
            for q in range(hi - 1, lo - 1, -1):
                inf = pre[q]
                best = -np.inf
                for b in range(num_actions[inf]):
                    s = first[inf] + b
                    p = cum[q] + b
                    v = 0.0
                    for k in range(term_ptr[p] + shift, term_ptr[p + 1] + shift):
                        v += term_w[line_term[k]] * values[rows[rshift + k]]
                    for c in range(child_ptr[s], child_ptr[s + 1]):
                        v += value[child_inf[c]]
                    if v > best:
                        best = v
                value[inf] = best
            gains[s_hat] = value[trig_inf] - follow[s_hat]
    return gains
