"""Sequence-form payoff operators.

For a terminal node ``z`` let ``σ_i(z)`` be player i's sequence leading to ``z`` and ``p_c(z)`` the
product of chance probabilities on its path.  Player i's expected utility under sequence-form
strategies ``x_1, …, x_n`` is ``Σ_z p_c(z) u_i(z) Π_j x_j[σ_j(z)]`` (von Stengel 1996).  With two
players this is the bilinear form ``x_1ᵀ A_i x_2`` with the sparse matrices built below; a
correlation plan ξ (Farina et al. 2019, section 2.2) gives ``Σ_z p_c(z) u_i(z) ξ[σ_1(z), σ_2(z)]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .game import Game
from .relevant import require_two_players

if TYPE_CHECKING:  # annotations only: importing scipy here would load it for every solve
    import scipy.sparse as sp


@dataclass(frozen=True, eq=False)
class TerminalMap:
    """Per terminal: each player's sequence, the chance reach, and the payoffs.

    ``sequences`` : int32[T, n]; ``chance_reach`` : float64[T]; ``payoffs`` : float64[T, n]
    (rows in the order of ``game.payoffs``).
    """

    sequences: np.ndarray
    chance_reach: np.ndarray
    payoffs: np.ndarray

    def weighted_payoffs(self) -> np.ndarray:
        """``p_c(z) · u_i(z)``, float64[T, n]: the (read-only) payoffs themselves when no terminal
        is behind a chance move, since ``1.0 · u`` is ``u`` bit for bit and a copy would only
        hold the same numbers twice."""
        if np.all(self.chance_reach == 1.0):
            return self.payoffs
        return self.chance_reach[:, None] * self.payoffs


def terminal_map(game: Game) -> TerminalMap:
    """Every terminal's sequence of each player, its payoffs and its chance reach, in the order
    of the game's terminal index (see :class:`TerminalMap`)."""
    z = game.terminal_nodes
    order = np.argsort(game.terminal_index[z])
    z = z[order]
    seqs = np.stack([game.node_sequences(p)[z] for p in range(game.num_players)], axis=1)
    # Without chance every reach is 1: no per-node reach array is computed (and kept on the game).
    reach = game.reach_chance[z] if game.has_chance else np.ones(len(z))
    return TerminalMap(seqs.astype(np.int32), reach, game.payoffs)


def sequence_form_payoffs(game: Game) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """``(A_1, A_2)`` with ``A_i[σ1, σ2] = Σ_{z: σ(z) = (σ1, σ2)} p_c(z) u_i(z)`` (CSR, ``|Σ1| × |Σ2|``)."""
    require_two_players(game, "the bilinear sequence-form payoff operator")
    tm = terminal_map(game)
    shape = (game.sequences(0).num_sequences, game.sequences(1).num_sequences)
    weighted = tm.weighted_payoffs()
    import scipy.sparse as sp  # here: a solve that never builds the matrices does not load scipy

    return tuple(
        sp.coo_matrix((weighted[:, i], (tm.sequences[:, 0], tm.sequences[:, 1])), shape=shape).tocsr()
        for i in range(2)
    )
