"""The von Stengel–Forges constraints of the correlation-plan polytope Ξ.

Definition 3 of Farina, Ling, Fang, Sandholm 2019 (von Stengel and Forges 2008): ξ ≥ 0 indexed
by relevant sequence pairs, and

* ``ξ[∅, ∅] = 1``;
* ``Σ_{a ∈ A_I} ξ[(I, a), σ2] = ξ[σ(I), σ2]`` for every ``I ∈ I1`` and ``σ2`` with ``I ⋈ σ2``;
* ``Σ_{b ∈ A_J} ξ[σ1, (J, b)] = ξ[σ1, σ(J)]`` for every ``J ∈ I2`` and ``σ1`` with ``σ1 ⋈ J``.

This is the one constraint builder of the project: the chain verification and the LP baselines
both use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from efce.games.game import Game
from efce.games.relevant import RelevantPairs, connected_infosets, relevant_pairs

from .decompose import check_decomposable

if TYPE_CHECKING:  # annotations only: importing scipy here would load it for every solve
    import scipy.sparse as sp


@dataclass(frozen=True, eq=False)
class VSFConstraints:
    """``C ξ = b``, ``ξ ≥ 0`` over relevant-pair positions.

    Row ``r`` (``r ≥ 1``) is the constraint of player ``row_player[r]``'s infoset
    ``row_infoset[r]`` against the opponent's sequence ``row_other_seq[r]``; row 0 is
    ``ξ[∅, ∅] = 1`` (player -1).
    """

    matrix: sp.csr_matrix
    rhs: np.ndarray
    row_player: np.ndarray
    row_infoset: np.ndarray
    row_other_seq: np.ndarray
    pairs: RelevantPairs
    spaces: tuple  # the two players' SequenceSpace objects

    @property
    def num_rows(self) -> int:
        return self.matrix.shape[0]

    def residual(self, xi: np.ndarray) -> np.ndarray:
        """``C ξ − b`` for ξ in relevant-pair order."""
        return self.matrix @ xi - self.rhs

    def max_violation(self, xi: np.ndarray) -> float:
        """Largest violation of Definition 3: ``max(|C ξ − b|_∞, max(−ξ))``."""
        return float(max(np.abs(self.residual(xi)).max(initial=0.0), (-xi).max(initial=0.0), 0.0))

    def _key(self, player, infoset, other):
        width = int(max(self.row_other_seq.max(initial=0), 0)) + 1
        height = int(max(self.row_infoset.max(initial=0), 0)) + 1
        return (
            (np.asarray(player, np.int64) + 1) * height * width
            + np.asarray(infoset, np.int64) * width
            + np.asarray(other, np.int64)
        )

    def rows_of(self, player: ArrayLike, infoset: ArrayLike, other: ArrayLike) -> np.ndarray:
        """Rows of the constraints ``(player, infoset, other sequence)`` (-1 where none)."""
        keys = self._key(self.row_player[1:], self.row_infoset[1:], self.row_other_seq[1:])
        order = np.argsort(keys)
        q = self._key(player, infoset, other)
        pos = np.minimum(np.searchsorted(keys[order], q), len(keys) - 1)
        return np.where(keys[order][pos] == q, order[pos] + 1, -1)

    def find_row(self, player: int, infoset: int, other_seq: int) -> int:
        """Row of the constraint of ``player``'s ``infoset`` against the opponent's sequence
        ``other_seq`` (-1 if that pair is not relevant)."""
        return int(self.rows_of([player], [infoset], [other_seq])[0])

    def describe(self, row: int, game: Game) -> str:
        """The constraint in the paper's notation."""
        if row == 0:
            return "ξ[∅, ∅] = 1"
        p, infoset, other = (
            int(self.row_player[row]),
            int(self.row_infoset[row]),
            int(self.row_other_seq[row]),
        )
        names = (game.sequence_labels(0), game.sequence_labels(1))
        space = game.sequences(p)
        first, k = int(space.infoset_first_seq[infoset]), int(space.infoset_num_actions[infoset])
        parent = int(space.infoset_parent_seq[infoset])

        def cell(mine: int) -> str:
            pair = (mine, other) if p == 0 else (other, mine)
            return f"ξ[{names[0][pair[0]]}, {names[1][pair[1]]}]"

        return " + ".join(cell(first + a) for a in range(k)) + " = " + cell(parent)


def vsf_constraints(game: Game, pairs: RelevantPairs | None = None) -> VSFConstraints:
    """The sparse equality system of Definition 3 (nonnegativity is implicit)."""
    check_decomposable(game)
    pairs = relevant_pairs(game) if pairs is None else pairs
    s = (game.sequences(0), game.sequences(1))
    c1, c2 = (a.astype(np.int64) for a in connected_infosets(game))
    rows_player, rows_infoset, rows_other = [np.array([-1])], [np.array([-1])], [np.array([-1])]
    for p, mine, other in ((0, c1, c2), (1, c2, c1)):
        o = 1 - p
        # Against the empty sequence: every infoset of p.  Against (J, b): every connected J.
        n_inf = s[p].num_infosets
        rows_player.append(np.full(n_inf, p))
        rows_infoset.append(np.arange(n_inf))
        rows_other.append(np.zeros(n_inf, dtype=np.int64))
        counts = s[o].infoset_num_actions[other].astype(np.int64)
        rep = np.repeat(np.arange(len(mine)), counts)
        offset = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        rows_player.append(np.full(len(rep), p))
        rows_infoset.append(mine[rep])
        rows_other.append(s[o].infoset_first_seq[other][rep].astype(np.int64) + offset)
    row_player = np.concatenate(rows_player)
    row_infoset = np.concatenate(rows_infoset)
    row_other = np.concatenate(rows_other)

    # Coefficients: +1 on ((I, a), other) for every a, −1 on (σ(I), other).
    r_idx, cols, vals = [np.array([0])], [np.array([0])], [np.array([1.0])]
    for p in (0, 1):
        rows = np.flatnonzero(row_player == p)
        inf = row_infoset[rows]
        k = s[p].infoset_num_actions[inf].astype(np.int64)
        rep = np.repeat(np.arange(len(rows)), k)
        offset = np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k)
        mine_seq = s[p].infoset_first_seq[inf][rep].astype(np.int64) + offset
        other_seq = row_other[rows][rep]
        parent_seq = s[p].infoset_parent_seq[inf].astype(np.int64)
        for mine_s, other_s, sign, r in (
            (mine_seq, other_seq, 1.0, rows[rep]),
            (parent_seq, row_other[rows], -1.0, rows),
        ):
            s1, s2 = (mine_s, other_s) if p == 0 else (other_s, mine_s)
            r_idx.append(r)
            cols.append(pairs.index(s1, s2))
            vals.append(np.full(len(r), sign))
    import scipy.sparse as sp  # here: importing the package (every solve does) loads no scipy

    matrix = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(r_idx), np.concatenate(cols))),
        shape=(len(row_player), len(pairs)),
    )
    rhs = np.zeros(len(row_player))
    rhs[0] = 1.0
    return VSFConstraints(
        matrix,
        rhs,
        row_player.astype(np.int8),
        row_infoset.astype(np.int64),
        row_other.astype(np.int64),
        pairs,
        s,
    )
