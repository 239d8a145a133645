"""Breadth-first, vectorized construction of game trees from batches of states.

Generators describe a game by one function, ``expand(state) -> Expansion``, applied to a whole
*frontier* (every node of one depth at once, as arrays).  The builder never creates a Python
object per node, which is what makes Battleship with tens of millions of nodes buildable in
seconds.

Information sets come from *observations*: every edge gives each player an integer token
(0 = nothing seen).  A player's observation history is the sequence of tokens on the path; nodes
where the same player acts with the same history form one information set.  A player must
observe her own actions (distinct tokens per action) for perfect recall; the game constructor
checks it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from efce.errors import GameError
from efce.games.game import CHANCE, TERMINAL, Game, Labels
from efce.interrupts import check_stop


@dataclass
class Expansion:
    """What happens at every node of a frontier of ``F`` states.

    Attributes
    ----------
    player : int[F]
        Acting player, :data:`~efce.games.game.CHANCE` or :data:`~efce.games.game.TERMINAL` for each state.
    payoffs : float[num_terminal_states, num_players]
        Payoffs of the terminal states, in frontier order.
    edge_parent : int[E]
        Frontier index of the state each child edge leaves; nondecreasing.
    edge_action : int[E]
        Action index ``0..k-1`` of the edge at its parent.
    edge_observation : int[E, num_players]
        Token each player observes along the edge (>= 0; 0 = nothing).
    child_state : dict[str, ndarray]
        State arrays of the children, each with ``E`` rows.
    edge_prob : float[E], optional
        Chance probability of each edge (used where the parent is a chance node).
    edge_label : int[E], optional
        Code naming the action of each edge (decoded by ``action_label``); defaults to the
        action index.
    """

    player: np.ndarray
    payoffs: np.ndarray
    edge_parent: np.ndarray
    edge_action: np.ndarray
    edge_observation: np.ndarray
    child_state: dict[str, np.ndarray]
    edge_prob: np.ndarray | None = None
    edge_label: np.ndarray | None = None


@dataclass
class _HistoryForest:
    """Observation histories of one player as a forest of (parent history, token)."""

    parent: list[np.ndarray] = field(default_factory=list)
    token: list[np.ndarray] = field(default_factory=list)
    size: int = 1  # history 0 is the empty history

    def extend(self, parent_hist: np.ndarray, token: np.ndarray) -> np.ndarray:
        if len(parent_hist) == 0:
            return np.zeros(0, dtype=np.int64)
        base = int(token.max()) + 1
        key = parent_hist.astype(np.int64) * base + token
        unique, inverse = np.unique(key, return_inverse=True)
        self.parent.append(unique // base)
        self.token.append(unique % base)
        ids = self.size + inverse
        self.size += len(unique)
        return ids

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        parent = np.concatenate([np.array([-1], dtype=np.int64), *self.parent])
        token = np.concatenate([np.array([0], dtype=np.int64), *self.token])
        return _narrowed(parent), _narrowed(token)


def _narrowed(values: np.ndarray) -> np.ndarray:
    """Integer ``values`` as int32 when they fit, else unchanged: the labels live as long as the
    game, about one entry per node, and int32 halves them."""
    info = np.iinfo(np.int32)
    if len(values) == 0 or (values.min() >= info.min and values.max() <= info.max):
        return values.astype(np.int32)
    return values


class HistoryLabels(Labels):
    """Infoset names spelled from the acting player's observation history, computed on demand."""

    def __init__(self, forests, token_label, action_label, node_action_code):
        self._forests = forests
        self._token_label = token_label
        self._action_label = action_label
        self._node_action_code = node_action_code

    def infoset(self, game: Game, player: int, infoset: int) -> str:
        parent, token = self._forests[player]
        # Games built by build_game come from Game.from_tree, which always records the keys.
        assert game.infoset_keys is not None, "HistoryLabels needs a game built from a tree"
        hist = int(game.infoset_keys[player][infoset])
        parts = []
        while hist > 0:
            text = self._token_label(player, int(token[hist]))
            if text:
                parts.append(text)
            hist = int(parent[hist])
        return "/".join(reversed(parts)) or "root"

    def actions(self, game: Game, player: int, infoset: int) -> list[str]:
        node = int(np.flatnonzero((game.player == player) & (game.infoset == infoset))[0])
        first, k = int(game.first_child[node]), int(game.num_children[node])
        assert game.original_order is not None, "HistoryLabels needs a game built from a tree"
        codes = self._node_action_code[game.original_order[first : first + k]]
        return [self._action_label(player, int(c)) for c in codes]


def build_game(
    *,
    name: str,
    num_players: int,
    root_state: dict[str, np.ndarray],
    expand: Callable[[dict[str, np.ndarray]], Expansion],
    token_label: Callable[[int, int], str] = lambda p, t: str(t) if t else "",
    action_label: Callable[[int, int], str] = lambda p, c: str(c),
    player_names: Sequence[str] | None = None,
) -> Game:
    """Build a :class:`~efce.games.game.Game` by expanding ``root_state`` (arrays with one row)
    level by level.

    A stop request (:mod:`efce.interrupts`) is honoured between two levels.

    Raises
    ------
    Interrupted
        A stop was requested while the tree was being built.
    """
    parents, actions, players, keys, probs, codes, payoffs = [], [], [], [], [], [], []
    forests = [_HistoryForest() for _ in range(num_players)]
    state = {k: np.asarray(v) for k, v in root_state.items()}
    frontier_ids = np.zeros(1, dtype=np.int64)
    frontier_hist = np.zeros((1, num_players), dtype=np.int64)
    parents.append(np.array([-1]))
    actions.append(np.array([-1]))
    probs.append(np.ones(1))
    codes.append(np.array([-1]))
    next_id = 1
    while len(frontier_ids):
        check_stop(f"building {name}")
        exp = expand(state)
        player = np.asarray(exp.player, dtype=np.int64)
        if player.shape != frontier_ids.shape:
            raise GameError(f"{name}: expand returned {player.shape} players for {len(frontier_ids)} states")
        key = np.full(len(player), -1, dtype=np.int64)
        acting = player >= 0
        key[acting] = frontier_hist[acting, player[acting]]
        players.append(player)
        keys.append(key)
        payoffs.append(np.asarray(exp.payoffs, dtype=np.float64).reshape(-1, num_players))
        edge_parent = np.asarray(exp.edge_parent, dtype=np.int64)
        num_edges = len(edge_parent)
        obs = np.asarray(exp.edge_observation, dtype=np.int64).reshape(num_edges, num_players)
        if num_edges and (obs.min() < 0):
            raise GameError(f"{name}: observation tokens must be nonnegative")
        new_hist = np.empty((num_edges, num_players), dtype=np.int64)
        for p in range(num_players):
            check_stop(f"building {name}")
            new_hist[:, p] = forests[p].extend(frontier_hist[edge_parent, p], obs[:, p])
        parents.append(frontier_ids[edge_parent])
        actions.append(np.asarray(exp.edge_action, dtype=np.int64))
        probs.append(np.ones(num_edges) if exp.edge_prob is None else np.asarray(exp.edge_prob, float))
        codes.append(np.asarray(exp.edge_action if exp.edge_label is None else exp.edge_label, np.int64))
        frontier_ids = np.arange(next_id, next_id + num_edges, dtype=np.int64)
        next_id += num_edges
        frontier_hist = new_hist
        state = exp.child_state
    check_stop(f"building {name}")
    del state, exp, frontier_hist, new_hist, frontier_ids  # the last level's, all terminals
    labels = HistoryLabels(
        [f.finish() for f in forests], token_label, action_label, _narrowed(_joined(codes))
    )
    # Each list is joined and emptied before the next: the node arrays are handed to
    # Game.from_tree with no other reference, so that it frees each as soon as it is read.
    return Game.from_tree(
        num_players=num_players,
        parent=_joined(parents),
        action=_joined(actions),
        player=_joined(players),
        infoset_key=_joined(keys),
        terminal_payoffs=_joined(payoffs) if payoffs else np.zeros((0, num_players)),
        chance_prob=_joined(probs),
        name=name,
        player_names=player_names,
        labels=labels,
    )


def _joined(pieces: list[np.ndarray]) -> np.ndarray:
    """The pieces concatenated, and the list emptied (the pieces' memory goes with it)."""
    joined = np.concatenate(pieces)
    pieces.clear()
    return joined


def edges_from_counts(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(edge_parent, edge_action)`` for states with ``counts[i]`` children each."""
    counts = np.asarray(counts, dtype=np.int64)
    edge_parent = np.repeat(np.arange(len(counts)), counts)
    starts = np.cumsum(counts) - counts
    edge_action = np.arange(len(edge_parent)) - starts[edge_parent]
    return edge_parent, edge_action


__all__ = ["Expansion", "build_game", "edges_from_counts", "CHANCE", "TERMINAL"]
