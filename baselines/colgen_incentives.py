"""The incentive constraints of column generation: every trigger agent of a solution concept, its
best deviation dualized, for any number of players and any chance moves.

A correlated distribution ``μ`` over joint reduced pure plans ``π = (π_1, …, π_n)`` is an
equilibrium of a concept when no trigger agent of it gains by deviating (Celli, Marchesi, Farina,
Gatti 2020, section 3; :mod:`efce.concepts`).  A trigger agent ``t`` of player ``i`` has

* a *firing sequence* ``s_t``: it fires on the plans that play ``s_t`` — EFCE's agent ``(Î, â)``
  fires on ``s_t = (Î, â)`` (reaching ``Î`` and being recommended ``â``), EFCCE's agent ``Î`` on
  ``s_t = σ(Î)`` (reaching ``Î``), NFCCE's agent on the empty sequence (always);
* *roots*: ``Î`` for EFCE and EFCCE, every root infoset of ``i`` for NFCCE; from them on it plays
  any plan ``π̂`` of the subtrees below them, the other players following their recommendations.

Write ``x_j`` for player ``j``'s sequence-form indicator vector of ``π_j``, ``σ_j(z)`` for ``j``'s
last sequence before terminal ``z``, ``w_j(z) = p_c(z) u_j(z)`` (chance reach times payoff) and
``r_{-i}(z) = Π_{j≠i} x_j[σ_j(z)]``.  The trigger's *following value* and its best *deviation
value* are

    F_t(μ) = Σ_π μ(π) Σ_{z below the roots, σ_i(z) ⪰ s_t} w_i(z) Π_j x_j[σ_j(z)],
    D_t(μ) = max_y Σ_{z below the roots} y[σ_i(z)] m_t(z),   m_t(z) = Σ_π μ(π) x_i[s_t] r_{-i}(z),

the max over the sequence-form strategies ``y`` of the subtrees below the roots.  Its dual (the
backward induction of a best response, as in :mod:`baselines.efce_lp`) has one free *value
variable* ``v[t, J]`` per infoset ``J`` at or below the roots and one row per ``(t, J, b)``:

    v[t, J] − Σ_{J' child of (J, b)} v[t, J'] − Σ_π μ(π) G_{t,(J,b)}(π) ≥ 0,
    G_{t,(J,b)}(π) = x_i[s_t] Σ_{z : σ_i(z) = (J, b)} w_i(z) r_{-i}(z),

and the incentive row ``Σ_π μ(π) F_t(π) − Σ_{J root of t} v[t, J] ≥ 0``: ``μ`` is an equilibrium
if and only if some value variables satisfy all of them.  The rows are polynomial in the tree
(EFCE: ``Σ_J |A_J| · #{triggers above J}`` per player), while ``μ`` has one variable per joint
plan: the master LP of column generation (:mod:`baselines.lp_colgen`) holds a growing subset of
the joint plans, and each joint plan's *column* is computed here (:meth:`Incentives.columns`).

Row layout of the master: row 0 ``Σ μ = 1``; then the incentive rows (one per trigger, players in
order); then the deviation rows (players in order, per trigger its infosets in the depth-first
preorder of :attr:`games.game.SequenceSpace.tree`, per infoset its actions).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from efce.concepts import check_concept
from efce.games.arrays import concat_ranges
from efce.games.game import Game, SequenceSpace


@dataclass(frozen=True, eq=False)
class PlayerIncentives:
    """The trigger agents of one player and their rows (module docstring); indices are local to
    the player (trigger ``t``, value variable ``v``, deviation row ``r``).

    Attributes
    ----------
    player : int
    num_sequences : int
    trigger_fire : int32[K]
        ``s_t``: the sequence whose play fires trigger ``t``.
    trigger_root : int32[K]
        Its root infoset ``Î`` (−1: every root infoset of the player, NFCCE).
    value_trigger, value_infoset : int32[V]
        The trigger and infoset ``J`` of each value variable ``v[t, J]``.
    value_parent_row : int64[V]
        The deviation row ``(t, J_p, b_p)`` whose action leads to ``J`` (where ``v[t, J]`` enters
        with −1), or −1 when ``J`` is a root of ``t`` (then ``v[t, J]`` enters ``t``'s incentive
        row with −1).
    row_value, row_sequence, row_trigger : int32[R]
        Per deviation row ``(t, J, b)``: its value variable ``v[t, J]``, its sequence ``(J, b)``
        and its trigger.
    row_follows : bool[R]
        ``(J, b) ⪰ s_t``: the terminals at ``(J, b)`` count in ``t``'s following value.
    """

    player: int
    num_sequences: int
    trigger_fire: np.ndarray
    trigger_root: np.ndarray
    value_trigger: np.ndarray
    value_infoset: np.ndarray
    value_parent_row: np.ndarray
    row_value: np.ndarray
    row_sequence: np.ndarray
    row_trigger: np.ndarray
    row_follows: np.ndarray

    @property
    def num_triggers(self) -> int:
        return len(self.trigger_fire)

    @property
    def num_values(self) -> int:
        return len(self.value_trigger)

    @property
    def num_rows(self) -> int:
        return len(self.row_value)


def _subtree_sizes(space: SequenceSpace) -> np.ndarray:
    """Infosets at or below each infoset (itself included): its subtree is
    ``tree.preorder[tree.position[J] : tree.position[J] + size[J]]``."""
    tree = space.tree
    below = tree.subtree_hi - tree.subtree_lo  # infosets below each sequence
    size = np.ones(space.num_infosets, dtype=np.int64)
    np.add.at(size, space.seq_infoset[1:], below[1:])
    return size


def player_incentives(game: Game, player: int, concept: str) -> PlayerIncentives:
    """The trigger agents of ``concept`` for ``player`` and their rows (vectorized: no loop per
    trigger or row).

    Returns
    -------
    PlayerIncentives

    Raises
    ------
    ValueError
        ``concept`` is not a concept of :data:`efce.concepts.CONCEPTS`.
    """
    check_concept(concept)
    space = game.sequences(player)
    tree = space.tree
    n_inf = space.num_infosets
    position = tree.position
    size = _subtree_sizes(space)
    parent_seq = space.infoset_parent_seq.astype(np.int64)
    if concept == "efce":
        fire = np.arange(1, space.num_sequences, dtype=np.int64)
        root = space.seq_infoset[1:].astype(np.int64)
        start, length = position[root], size[root]
    elif concept == "efcce":
        fire = parent_seq.copy()
        root = np.arange(n_inf, dtype=np.int64)
        start, length = position[root], size[root]
    else:  # nfcce: one agent at the root, deviating anywhere
        fire = np.zeros(1 if n_inf else 0, dtype=np.int64)
        root = np.full(len(fire), -1, dtype=np.int64)  # all root infosets
        start, length = np.zeros(len(fire), np.int64), np.full(len(fire), n_inf, np.int64)
    K = len(fire)
    block = np.zeros(K + 1, dtype=np.int64)
    np.cumsum(length, out=block[1:])
    value_infoset = tree.preorder[concat_ranges(start, length)].astype(np.int64)
    value_trigger = np.repeat(np.arange(K, dtype=np.int64), length)
    V = len(value_infoset)
    k = space.infoset_num_actions.astype(np.int64)[value_infoset]
    row_start = np.zeros(V + 1, dtype=np.int64)
    np.cumsum(k, out=row_start[1:])
    R = int(row_start[-1])
    row_value = np.repeat(np.arange(V, dtype=np.int64), k)
    row_sequence = space.infoset_first_seq.astype(np.int64)[value_infoset][row_value] + (
        np.arange(R, dtype=np.int64) - row_start[row_value]
    )
    row_trigger = value_trigger[row_value]
    # The parent row of v[t, J]: the row (t, J_p, b_p) of J's parent sequence, unless J is a root.
    p = parent_seq[value_infoset]
    is_root = p == 0 if concept == "nfcce" else value_infoset == root[value_trigger]
    parent_inf = space.seq_infoset.astype(np.int64)[p]
    parent_value = block[value_trigger] + position[np.maximum(parent_inf, 0)] - start[value_trigger]
    parent_row = row_start[np.where(is_root, 0, parent_value)] + space.seq_action.astype(np.int64)[p]
    value_parent_row = np.where(is_root, -1, parent_row)
    if concept == "efce":
        follows = space.is_descendant(row_sequence, fire[row_trigger])
    else:  # the firing sequence is above every infoset of the agent's subtrees
        follows = np.ones(R, dtype=bool)
    i32 = np.int32
    return PlayerIncentives(
        player=player,
        num_sequences=space.num_sequences,
        trigger_fire=fire.astype(i32),
        trigger_root=root.astype(i32),
        value_trigger=value_trigger.astype(i32),
        value_infoset=value_infoset.astype(i32),
        value_parent_row=value_parent_row,
        row_value=row_value.astype(i32),
        row_sequence=row_sequence.astype(i32),
        row_trigger=row_trigger.astype(i32),
        row_follows=np.asarray(follows, dtype=bool),
    )


def count_incentive_rows(game: Game, concept: str) -> tuple[int, int, int]:
    """``(triggers, value variables, deviation rows)`` over all players, counted from the tree
    without building them: a trigger's value variables are the infosets at or below its roots.

    Returns
    -------
    tuple of int
    """
    check_concept(concept)
    K = V = R = 0
    for p in range(game.num_players):
        space = game.sequences(p)
        covering = triggers_covering(space, concept)
        k = space.infoset_num_actions.astype(np.int64)
        K += {"efce": space.num_sequences - 1, "efcce": space.num_infosets}.get(
            concept, 1 if space.num_infosets else 0
        )
        V += int(covering.sum())
        R += int((k * covering).sum())
    return K, V, R


def triggers_covering(space: SequenceSpace, concept: str) -> np.ndarray:
    """int64[num_infosets]: how many trigger agents of ``concept`` deviate at each infoset ``J``
    (have ``J`` at or below their roots) — so many value variables ``v[t, J]`` exist, and
    ``|A_J|`` times so many deviation rows."""
    depth = space.infoset_depth.astype(np.int64)
    if concept == "nfcce":
        return np.ones(space.num_infosets, dtype=np.int64)
    if concept == "efcce":
        return depth + 1
    from efce.polytopes.triggers import triggers_above

    return np.asarray(triggers_above(space), dtype=np.int64)


@dataclass(frozen=True, eq=False)
class TerminalData:
    """Per terminal (payoff-row order): each player's last sequence ``σ_j(z)``
    (``sequences[z, j]``, int32), ``w_j(z) = p_c(z) u_j(z)`` (``weights[z, j]``)."""

    sequences: np.ndarray
    weights: np.ndarray

    @property
    def num_terminals(self) -> int:
        return len(self.weights)


def terminal_data(game: Game) -> TerminalData:
    """:class:`TerminalData` of ``game``."""
    nodes = game.terminal_nodes
    rows = np.asarray(game.terminal_index)[nodes]
    order = np.argsort(rows)
    nodes = nodes[order]
    seqs = np.stack([np.asarray(game.node_sequences(p))[nodes] for p in range(game.num_players)], axis=1)
    weights = np.asarray(game.reach_chance)[nodes, None] * np.asarray(game.payoffs, dtype=np.float64)
    return TerminalData(np.ascontiguousarray(seqs, dtype=np.int32), weights)


class Incentives:
    """Every trigger agent of ``concept`` in ``game`` (all players), the master LP's fixed part and
    each joint plan's column (module docstring).

    Parameters
    ----------
    game : Game
    concept : str
        One of :data:`efce.concepts.CONCEPTS`.

    Attributes
    ----------
    players : list of PlayerIncentives
    terminals : TerminalData
    trigger_offset, value_offset, row_offset : int64[n + 1]
        Where each player's triggers (incentive rows start at row 1), value variables and
        deviation rows (after the incentive rows) begin in the master's numbering.
    """

    def __init__(self, game: Game, concept: str):
        self.concept = check_concept(concept)
        self.num_players = game.num_players
        self.players = [player_incentives(game, p, concept) for p in range(game.num_players)]
        self.terminals = terminal_data(game)
        self.trigger_offset = np.zeros(self.num_players + 1, dtype=np.int64)
        self.value_offset = np.zeros(self.num_players + 1, dtype=np.int64)
        self.row_offset = np.zeros(self.num_players + 1, dtype=np.int64)
        np.cumsum([pl.num_triggers for pl in self.players], out=self.trigger_offset[1:])
        np.cumsum([pl.num_values for pl in self.players], out=self.value_offset[1:])
        np.cumsum([pl.num_rows for pl in self.players], out=self.row_offset[1:])
        # Per player: the sparse indicator of σ_i(z) over the terminals ([T, S_i]) and the sum of
        # the following rows per trigger ([S_i, K_i]), for the columns.
        T = self.terminals.num_terminals
        self._at_sequence = [
            sp.csr_matrix(
                (np.ones(T), (np.arange(T), self.terminals.sequences[:, p])), shape=(T, pl.num_sequences)
            )
            for p, pl in enumerate(self.players)
        ]
        self._following = [
            sp.csr_matrix(
                (
                    np.ones(int(pl.row_follows.sum())),
                    (pl.row_sequence[pl.row_follows], pl.row_trigger[pl.row_follows]),
                ),
                shape=(pl.num_sequences, pl.num_triggers),
            )
            for pl in self.players
        ]

    @property
    def num_triggers(self) -> int:
        return int(self.trigger_offset[-1])

    @property
    def num_values(self) -> int:
        return int(self.value_offset[-1])

    @property
    def num_deviation_rows(self) -> int:
        return int(self.row_offset[-1])

    @property
    def num_rows(self) -> int:
        """Rows of the master: convexity, incentive rows, deviation rows."""
        return 1 + self.num_triggers + self.num_deviation_rows

    def incentive_row(self, player: int, trigger: np.ndarray | int) -> np.ndarray | int:
        """Master row of ``player``'s local trigger(s)."""
        return 1 + self.trigger_offset[player] + trigger

    def deviation_row(self, player: int, row: np.ndarray | int) -> np.ndarray | int:
        """Master row of ``player``'s local deviation row(s)."""
        return 1 + self.num_triggers + self.row_offset[player] + row

    def fixed_columns(self) -> sp.csc_matrix:
        """The master's value variables (in ``value_offset`` order) and, last, the slack
        ``s`` of phase 1 (``+1`` in every incentive row: ``F_t − D_t + s ≥ 0``), as one CSC
        matrix of ``num_rows × (num_values + 1)``.

        Returns
        -------
        scipy.sparse.csc_matrix
        """
        rows, cols, vals = [], [], []
        for p, pl in enumerate(self.players):
            v_global = self.value_offset[p] + np.arange(pl.num_values)
            # +1 in each of its own rows (t, J, b)
            rows.append(self.deviation_row(p, np.arange(pl.num_rows)))
            cols.append(self.value_offset[p] + pl.row_value)
            vals.append(np.ones(pl.num_rows))
            # −1 in its parent row, or in its trigger's incentive row at a root
            root = pl.value_parent_row < 0
            rows.append(
                np.where(
                    root,
                    self.incentive_row(p, pl.value_trigger),
                    self.deviation_row(p, np.maximum(pl.value_parent_row, 0)),
                )
            )
            cols.append(v_global)
            vals.append(-np.ones(pl.num_values))
        slack = self.num_values
        rows.append(1 + np.arange(self.num_triggers))
        cols.append(np.full(self.num_triggers, slack))
        vals.append(np.ones(self.num_triggers))
        return sp.csc_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
            shape=(self.num_rows, self.num_values + 1),
        )

    def columns(self, plans: list[np.ndarray]) -> tuple[np.ndarray, sp.csc_matrix]:
        """The master columns of ``C`` joint plans.

        Parameters
        ----------
        plans : list of ndarray
            Per player ``j``, bool ``[C, S_j]``: the sequence-form indicator vector ``x_j`` of
            each joint plan's ``π_j`` (``x_j[0] = 1``).

        Returns
        -------
        utilities : ndarray
            ``[C, n]``: each player's expected utility under each joint plan.
        columns : scipy.sparse.csc_matrix
            ``num_rows × C``: 1 in the convexity row, ``F_t`` in the incentive rows and
            ``−G_{t,(J,b)}`` in the deviation rows (module docstring), zeros dropped.
        """
        td = self.terminals
        C = len(plans[0]) if plans else 0
        n = self.num_players
        reach = [np.asarray(plans[j][:, td.sequences[:, j]], dtype=np.float64) for j in range(n)]  # [C, T]
        both = np.ones((C, td.num_terminals))
        for r in reach:
            both *= r
        utilities = both @ td.weights  # [C, n]
        dense = np.zeros((C, self.num_rows))
        dense[:, 0] = 1.0
        for i, pl in enumerate(self.players):
            others = np.ones((C, td.num_terminals))
            for j in range(n):
                if j != i:
                    others *= reach[j]
            g = np.asarray((others * td.weights[:, i]) @ self._at_sequence[i])  # [C, S_i]
            follow = (np.asarray(plans[i], dtype=np.float64) * g) @ self._following[i]  # [C, K_i]
            start = self.incentive_row(i, 0)
            dense[:, start : start + pl.num_triggers] = follow
            fires = plans[i][:, pl.trigger_fire[pl.row_trigger]]
            start = self.deviation_row(i, 0)
            dense[:, start : start + pl.num_rows] = np.where(fires, -g[:, pl.row_sequence], 0.0)
        matrix = sp.csc_matrix(dense.T)
        return utilities, matrix
