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
loop; the row (or column) ``ξ[σ̂, ·]`` is scattered into a dense buffer once per trigger, so one
evaluation costs ``O(#pairs + Σ_σ̂ |subtree(Î)|)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from games.game import Game
from games.payoffs import terminal_map
from games.relevant import RelevantPairs, relevant_pairs, require_two_players
from polytopes.decompose import _preorder


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
    """Precomputes the per-game structures once; call it on any ξ (relevant-pair order)."""

    def __init__(self, game: Game, pairs: RelevantPairs | None = None):
        require_two_players(game, "the correlation-plan EFCE gap")
        self.game = game
        self.pairs = relevant_pairs(game) if pairs is None else pairs
        tm = terminal_map(game)
        self.terminal_pair = self.pairs.index(tm.sequences[:, 0], tm.sequences[:, 1])
        self.weighted = tm.weighted_payoffs()  # p_c(z) u_i(z)
        self._players = [self._player_tables(i, tm) for i in (0, 1)]
        # Lines ξ[σ̂, ·]: rows of the CSR for player 1, columns (a CSC permutation) for player 2.
        n1, n2 = self.pairs.num_sequences
        col_order = np.argsort(self.pairs.sigma2, kind="stable")
        col_ptr = np.zeros(n2 + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.pairs.sigma2, minlength=n2), out=col_ptr[1:])
        self._lines = [(self.pairs.indptr, self.pairs.sigma2.astype(np.int64), None),
                       (col_ptr, self.pairs.sigma1.astype(np.int64)[col_order], col_order)]

    def _player_tables(self, i: int, tm):
        space = self.game.sequences(i)
        own = tm.sequences[:, i].astype(np.int64)
        other = tm.sequences[:, 1 - i].astype(np.int64)
        order = np.argsort(own, kind="stable")
        term_ptr = np.zeros(space.num_sequences + 1, dtype=np.int64)
        np.cumsum(np.bincount(own, minlength=space.num_sequences), out=term_ptr[1:])
        child_order = np.argsort(space.infoset_parent_seq, kind="stable").astype(np.int64)
        child_ptr = np.zeros(space.num_sequences + 1, dtype=np.int64)
        np.cumsum(np.bincount(space.infoset_parent_seq, minlength=space.num_sequences), out=child_ptr[1:])
        first = space.infoset_first_seq.astype(np.int64)
        num_actions = space.infoset_num_actions.astype(np.int64)
        pos, pre, _, sub_hi = _preorder(child_ptr, child_order, first, num_actions, space.num_sequences)
        return dict(first=first, num_actions=num_actions, child_ptr=child_ptr, child_inf=child_order,
                    pos=pos, pre=pre, sub_hi=sub_hi, term_ptr=term_ptr, term_order=order,
                    term_own=own, term_other=other[order],
                    infoset_parent=space.infoset_parent_seq.astype(np.int64))

    def utilities(self, xi: np.ndarray) -> np.ndarray:
        """Expected utility of each player under ξ: ``Σ_z p_c(z) u_i(z) ξ[σ(z)]``."""
        return self.weighted.T @ xi[self.terminal_pair]

    def __call__(self, xi: np.ndarray) -> GapReport:
        xi = np.ascontiguousarray(xi, dtype=np.float64)
        if xi.shape != (len(self.pairs),):
            raise ValueError(f"ξ has shape {xi.shape}, expected ({len(self.pairs)},) relevant pairs")
        at_terminal = xi[self.terminal_pair]
        gains = []
        for i in (0, 1):
            t = self._players[i]
            w = self.weighted[:, i]
            # Following values: per own sequence, then accumulated over subtrees.
            per_seq = np.bincount(t["term_own"], weights=w * at_terminal, minlength=len(t["term_ptr"]) - 1)
            follow = _subtree_sums(per_seq, t["first"], t["num_actions"], t["infoset_parent"])
            line_ptr, line_other, line_perm = self._lines[i]
            line_val = xi if line_perm is None else xi[line_perm]
            g = _trigger_gains(t["first"], t["num_actions"], t["child_ptr"], t["child_inf"], t["pos"],
                               t["pre"], t["sub_hi"], t["term_ptr"], t["term_other"],
                               w[t["term_order"]], follow, line_ptr, line_other, line_val,
                               self.pairs.num_sequences[1 - i])
            gains.append(g)
        best = [(float(np.nanmax(g)) if np.any(~np.isnan(g)) else -np.inf) for g in gains]
        player = int(np.argmax(best))
        gap = max(0.0, best[player])
        worst_seq = int(np.nanargmax(gains[player])) if np.isfinite(best[player]) else -1
        return GapReport(gap, gains, self.weighted.T @ at_terminal, (player, worst_seq))


def efce_gap(game: Game, xi: np.ndarray, pairs: RelevantPairs | None = None) -> float:
    """Max deviation of the correlation plan ``xi`` (relevant-pair order), raw payoff units."""
    return EFCEGapEvaluator(game, pairs)(xi).gap


def plan_utilities(game: Game, xi: np.ndarray, pairs: RelevantPairs | None = None) -> np.ndarray:
    """Expected utilities of both players under the correlation plan ``xi``."""
    return EFCEGapEvaluator(game, pairs).utilities(xi)


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


@numba.njit(cache=True)
def _trigger_gains(first, num_actions, child_ptr, child_inf, pos, pre, sub_hi, term_ptr, term_other,
                   term_w, follow, line_ptr, line_other, line_val, num_other):
    n_seq = len(follow)
    gains = np.full(n_seq, np.nan)
    dense = np.zeros(num_other)
    value = np.zeros(len(first))
    for trig_inf in range(len(first)):
        lo = pos[trig_inf]
        hi = sub_hi[first[trig_inf] + num_actions[trig_inf] - 1]
        for a_hat in range(num_actions[trig_inf]):
            s_hat = first[trig_inf] + a_hat
            for k in range(line_ptr[s_hat], line_ptr[s_hat + 1]):
                dense[line_other[k]] = line_val[k]
            # Best response of the trigger agent, bottom-up over Î's subtree (reverse preorder).
            for p in range(hi - 1, lo - 1, -1):
                inf = pre[p]
                best = -np.inf
                for b in range(num_actions[inf]):
                    s = first[inf] + b
                    v = 0.0
                    for t in range(term_ptr[s], term_ptr[s + 1]):
                        v += term_w[t] * dense[term_other[t]]
                    for c in range(child_ptr[s], child_ptr[s + 1]):
                        v += value[child_inf[c]]
                    if v > best:
                        best = v
                value[inf] = best
            gains[s_hat] = value[trig_inf] - follow[s_hat]
            for k in range(line_ptr[s_hat], line_ptr[s_hat + 1]):
                dense[line_other[k]] = 0.0
    return gains
