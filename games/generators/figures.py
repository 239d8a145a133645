"""The small example games drawn in Farina, Ling, Fang and Sandholm (2019), "Efficient regret
minimization algorithm for extensive-form correlated equilibrium" (NeurIPS 2019).

The paper draws only the shape of the trees and names Player 1's sequences; it gives no payoffs
and leaves Player 2's part of Figure 1 implicit.  The trees below are the smallest ones
consistent with the figures, with small documented general-sum integer payoffs.  Both games are
two-player and chance-free.

Figure 1 (Player 1's sequences ∅ = 0, 1 .. 9 exactly as in the figure)::

    A (P1) ─1─► X (P2) ─x1─► B (P1) ─3─► (2, 1)    ─4─► (0, 0)
           │           └x2─► C (P1) ─5─► (0, 2)    ─6─► (3, 0)
           └2─► Y (P2) ─y1─► D (P1) ─7─► (1, 1) ─8─► (0, 3) ─9─► (2, 0)
                       └y2─► D (P1) ─7─► (0, 0) ─8─► (2, 2) ─9─► (1, 3)

  Player 1's infosets are A (root), B and C (below sequence 1; Player 1 sees Player 2's move
  there) and D (below sequence 2; two nodes, Player 1 does not see Player 2's move).  Player 2
  has infosets X (sequences x1, x2) and Y (y1, y2): he sees Player 1's first move.

Figure 2 (all sequence pairs are relevant)::

    A (P1) ─1─► B (P2) ─1─► (2, 1)   ─2─► (0, 0)
           └2─► C (P2) ─3─► (0, 0)   ─4─► (1, 2)

  Player 1 has one infoset A with sequences 1, 2; Player 2 has infoset B (sequences 1, 2, after
  Player 1's 1) and infoset C (sequences 3, 4, after Player 1's 2).

Payoffs are written (Player 1, Player 2).
"""

from __future__ import annotations

import numpy as np

from efce.games.game import TERMINAL, ExplicitLabels, Game
from efce.games.generators.params import GameGenerator
from efce.games.resources.estimate import SizeEstimate

#: Parameters of a game spec string (type and range; defaults: the function's own), read by
#: :data:`efce.games.spec.PARAMETERS`.
PARAMETERS: dict = {}


def _tree_game(
    name: str,
    nodes: list[tuple[int, int, int, int]],
    payoffs: list[tuple[int, int]],
    labels: tuple[list[dict], list[dict]],
) -> Game:
    """``nodes``: (parent, action, player, infoset_key) in a topological order; terminals use
    player TERMINAL and take their payoffs from ``payoffs`` in order of appearance."""
    parent, action, player, key = (np.array(col, dtype=np.int64) for col in zip(*nodes, strict=True))
    infoset_names, action_names = labels

    def finish(game: Game) -> dict:
        # Names are given by infoset key; the game numbers infosets canonically.
        return {
            "labels": ExplicitLabels(
                [[infoset_names[p][int(k)] for k in game.infoset_keys[p]] for p in range(2)],
                [[action_names[p][int(k)] for k in game.infoset_keys[p]] for p in range(2)],
            )
        }

    return Game.from_tree(
        num_players=2,
        parent=parent,
        action=action,
        player=player,
        infoset_key=key,
        terminal_payoffs=np.array(payoffs, dtype=np.float64),
        name=name,
        finish=finish,
    )


def farina_fig1() -> Game:
    """The game of Figure 1 of Farina et al. (2019): Player 1's sequences numbered ∅=0, 1..9."""
    T = TERMINAL
    nodes = [
        (-1, -1, 0, 0),  # 0  A
        (0, 0, 1, 0),
        (0, 1, 1, 1),  # 1  X (after 1), 2  Y (after 2)
        (1, 0, 0, 1),
        (1, 1, 0, 2),  # 3  B, 4  C
        (2, 0, 0, 3),
        (2, 1, 0, 3),  # 5  D (after y1), 6  D (after y2)
        (3, 0, T, -1),
        (3, 1, T, -1),  # B: 3, 4
        (4, 0, T, -1),
        (4, 1, T, -1),  # C: 5, 6
        (5, 0, T, -1),
        (5, 1, T, -1),
        (5, 2, T, -1),  # D after y1: 7, 8, 9
        (6, 0, T, -1),
        (6, 1, T, -1),
        (6, 2, T, -1),  # D after y2: 7, 8, 9
    ]
    payoffs = [(2, 1), (0, 0), (0, 2), (3, 0), (1, 1), (0, 3), (2, 0), (0, 0), (2, 2), (1, 3)]
    labels = (
        [{0: "A", 1: "B", 2: "C", 3: "D"}, {0: "X", 1: "Y"}],
        [
            {0: ["1", "2"], 1: ["3", "4"], 2: ["5", "6"], 3: ["7", "8", "9"]},
            {0: ["x1", "x2"], 1: ["y1", "y2"]},
        ],
    )
    return _tree_game("farina-fig1", nodes, payoffs, labels)


def farina_fig2() -> Game:
    """The game of Figure 2 of Farina et al. (2019): Player 1 chooses 1 or 2 at A; Player 2 then
    plays 1/2 at B (after 1) or 3/4 at C (after 2)."""
    T = TERMINAL
    nodes = [
        (-1, -1, 0, 0),  # 0  A
        (0, 0, 1, 0),
        (0, 1, 1, 1),  # 1  B, 2  C
        (1, 0, T, -1),
        (1, 1, T, -1),  # B: 1, 2
        (2, 0, T, -1),
        (2, 1, T, -1),  # C: 3, 4
    ]
    payoffs = [(2, 1), (0, 0), (0, 0), (1, 2)]
    labels = ([{0: "A"}, {0: "B", 1: "C"}], [{0: ["1", "2"]}, {0: ["1", "2"], 1: ["3", "4"]}])
    return _tree_game("farina-fig2", nodes, payoffs, labels)


#: The games spec strings name (:data:`efce.games.spec.GENERATORS`), with their exact sizes.
GAMES = (
    GameGenerator("farina-fig1", farina_fig1, PARAMETERS, estimate=lambda: SizeEstimate(17, 10, 2)),
    GameGenerator("farina-fig2", farina_fig2, PARAMETERS, estimate=lambda: SizeEstimate(7, 4, 2)),
)


__all__ = ["farina_fig1", "farina_fig2"]
