"""Who observes the chance moves: none, public or private chance.

A game has *public chance* when every player observes every chance outcome: no information set
holds nodes behind two different outcomes of a chance move.  Farina & Sandholm (NeurIPS 2020,
"Polynomial-time computation of optimal correlated equilibria in two-player extensive-form games
with public chance moves and beyond") show that a two-player game with public chance moves is
*triangle-free*, and that in a triangle-free game the von Stengel–Forges polytope (Definition 3 of
Farina, Ling, Fang, Sandholm 2019, :mod:`polytopes.vsf`) *is* the set of correlation plans: the
LPs and the scaled-extension regret minimizer then compute exact EFCE, EFCCE and NFCCE.  With
private chance (Kuhn, Leduc: a player does not see the other's card) the polytope is only a
relaxation, and optimizing over correlated equilibria is NP-hard (von Stengel & Forges 2008).

The test is the definition, on the tree: no information set holds nodes below two different
children of one chance node (equivalently, no two nodes of an information set have a chance node
as their deepest common ancestor).  Chance nodes that are distinct nodes of the tree but show the
same outcomes — Goofspiel's prize draws, repeated below each pair of hidden bids — are public as
long as every player tells their outcomes apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .game import CHANCE, Game

#: The kinds of ``ChanceVisibility.kind``.
NO_CHANCE, PUBLIC_CHANCE, PRIVATE_CHANCE = "none", "public", "private"


@dataclass(frozen=True)
class ChanceVisibility:
    """Whether a game has chance moves and who observes them.

    Attributes
    ----------
    kind : str
        ``"none"`` (no chance move), ``"public"`` (every player observes every chance outcome)
        or ``"private"``.
    reason : str or None
        For private chance, a sentence naming a player who does not observe a chance outcome, the
        information set and the two outcomes it mixes; else None.
    """

    kind: str
    reason: str | None = None

    @property
    def public(self) -> bool:
        """No chance move, or only public ones: the two-player LPs and ``rm`` are exact."""
        return self.kind != PRIVATE_CHANCE


def chance_visibility(game: Game) -> ChanceVisibility:
    """Classify ``game``'s chance moves (module docstring).

    The deepest common ancestors of a set of nodes are those of its consecutive members in
    depth-first preorder, so each information set needs one ancestor per node: the nodes of
    every infoset, sorted by preorder, are paired with their successors and both climb, level by
    level, until they meet — vectorized over all pairs, ``O(nodes · depth)`` at worst.

    Returns
    -------
    ChanceVisibility
        ``kind`` and, for private chance, the ``reason``.
    """
    if not game.has_chance:
        return ChanceVisibility(NO_CHANCE)
    preorder = _preorder(game)
    u_parts, w_parts, who = [], [], []
    for p in range(game.num_players):
        nodes = np.flatnonzero(game.player == p)
        if len(nodes) < 2:
            continue
        order = np.lexsort((preorder[nodes], game.infoset[nodes]))
        nodes = nodes[order]
        same = game.infoset[nodes[1:]] == game.infoset[nodes[:-1]]
        u_parts.append(nodes[:-1][same])
        w_parts.append(nodes[1:][same])
        who.append(np.full(int(same.sum()), p))
    if not u_parts:
        return ChanceVisibility(PUBLIC_CHANCE)
    u, w, player = np.concatenate(u_parts), np.concatenate(w_parts), np.concatenate(who)
    meet = _common_ancestors(game, u, w)
    mixed = np.flatnonzero(game.player[meet] == CHANCE)
    if len(mixed):
        k = int(mixed[0])
        reason = _reason(game, int(player[k]), int(u[k]), int(w[k]), int(meet[k]))
        return ChanceVisibility(PRIVATE_CHANCE, reason)
    return ChanceVisibility(PUBLIC_CHANCE)


def _preorder(game: Game) -> np.ndarray:
    """Each node's position in a depth-first preorder (children in action order): a node comes
    one after its parent plus the subtrees of its earlier siblings."""
    size = np.ones(game.num_nodes, dtype=np.int64)
    for lo, hi in reversed(game.levels[1:]):
        np.add.at(size, game.parent[lo:hi], size[lo:hi])
    position = np.zeros(game.num_nodes, dtype=np.int64)
    for lo, hi in game.levels[1:]:
        parent = game.parent[lo:hi].astype(np.int64)
        # Siblings are contiguous and in action order: an exclusive running sum within each group.
        running = np.cumsum(size[lo:hi]) - size[lo:hi]
        group_start = running[game.first_child[parent].astype(np.int64) - lo]
        position[lo:hi] = position[parent] + 1 + running - group_start
    return position


def _common_ancestors(game: Game, u: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The deepest common ancestor of each pair ``(u[k], w[k])``."""
    depth = game.depth
    u, w = u.astype(np.int64).copy(), w.astype(np.int64).copy()
    while True:
        deeper_u = depth[u] > depth[w]
        deeper_w = depth[w] > depth[u]
        apart = (u != w) & ~deeper_u & ~deeper_w
        if not (deeper_u.any() or deeper_w.any() or apart.any()):
            return u
        step_u = deeper_u | apart
        step_w = deeper_w | apart
        u[step_u] = game.parent[u[step_u]]
        w[step_w] = game.parent[w[step_w]]


def _reason(game: Game, player: int, u: int, w: int, fork: int) -> str:
    """Why ``player``'s infoset of nodes ``u`` and ``w`` mixes the outcomes of chance node
    ``fork``: the player and the two outcomes."""
    labels = game.labels.chance_actions(game, fork)
    outcomes = [labels[int(game.action[_child_towards(game, fork, v)])] for v in (u, w)]
    name = game.infoset_label(player, int(game.infoset[u]))
    return (
        f"{game.player_names[player]} does not observe the outcome of the chance move at node "
        f"{fork}: its infoset '{name}' holds nodes behind outcomes '{outcomes[0]}' and '{outcomes[1]}'"
    )


def _child_towards(game: Game, ancestor: int, v: int) -> int:
    """The child of ``ancestor`` on the path to its descendant ``v``."""
    while game.parent[v] != ancestor:
        v = int(game.parent[v])
    return v
