"""Optimal correlated equilibria of tiny games by brute force: the test oracle of every exact
method (the two-player LPs, ``rm --objective welfare``, column generation).

A distribution ``μ`` over joint reduced pure plans, and every trigger agent's incentive
constraint written out deviation by deviation (Celli, Marchesi, Farina, Gatti 2020, section 3):

* **EFCE** (Definitions 1-2): for player ``i``, sequence ``(I, a)`` and every reduced plan ``π̂``
  of the subtree rooted at ``I``:
  ``Σ_{π : π_i plays a at I} μ(π) [u_i(π_i ⊕_I π̂, π_{-i}) − u_i(π)] ≤ 0``;
* **EFCCE** (Definitions 3-4): for ``i``, infoset ``I`` and every ``π̂`` of ``I``'s subtree:
  ``Σ_{π : π_i reaches I} μ(π) [u_i(π_i ⊕_I π̂, π_{-i}) − u_i(π)] ≤ 0``;
* **NFCCE**: for ``i`` and every reduced plan ``π̂`` of ``i``:
  ``Σ_π μ(π) [u_i(π̂, π_{-i}) − u_i(π)] ≤ 0``;

where ``π_i ⊕_I π̂`` plays ``π̂`` at ``I`` and below and ``π_i`` elsewhere.  The LP maximizes the
social welfare or one player's expected utility (scipy's ``linprog``).

The oracle reads nothing but the tree's own arrays (``parent``, ``player``, ``infoset``,
``action``, ``chance_prob``, ``payoffs``, ``terminal_index``): plans, reaches and subtrees are
recomputed here from scratch, so that it shares no code with what it checks.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.optimize

CONCEPTS = ("efce", "efcce", "nfcce")


@dataclass
class _Player:
    """Player ``p``'s infosets (their numbers as in ``game.infoset``), per infoset its number of
    actions and its own parent ``(infoset, action)`` (None at a root), and per terminal the
    ``(infoset, action)`` pairs of ``p`` on its path."""

    infosets: list[int]
    actions: dict[int, int]
    own_parent: dict[int, tuple[int, int] | None]
    path: list[list[tuple[int, int]]]  # per terminal (in terminal-row order)

    def children(self, parent: tuple[int, int] | None) -> list[int]:
        return [i for i in self.infosets if self.own_parent[i] == parent]

    def below(self, infoset: int) -> set[int]:
        """``infoset`` and every own infoset under it."""
        out, frontier = {infoset}, [infoset]
        while frontier:
            j = frontier.pop()
            for k in self.infosets:
                parent = self.own_parent[k]
                if parent is not None and parent[0] == j and k not in out:
                    out.add(k)
                    frontier.append(k)
        return out

    def plans_from(self, roots: list[int]) -> list[dict[int, int]]:
        """Every reduced plan of the sub-forest under ``roots``: an action at each root and,
        recursively, at the infosets under the chosen actions."""
        if not roots:
            return [{}]
        per_root = []
        for r in roots:
            options = []
            for a in range(self.actions[r]):
                for sub in self.plans_from(self.children((r, a))):
                    options.append({r: a, **sub})
            per_root.append(options)
        return [dict(kv for part in combo for kv in part.items()) for combo in itertools.product(*per_root)]

    def count_plans(self, parent: tuple[int, int] | None = None) -> int:
        """Reduced plans of the sub-forest under ``parent`` (None: the whole treeplex), counted
        without listing them."""
        total = 1
        for r in self.children(parent):
            total *= sum(self.count_plans((r, a)) for a in range(self.actions[r]))
        return total

    def reach(self, plan: dict[int, int]) -> np.ndarray:
        """Per terminal, 1 where every action of this player on its path is the plan's."""
        return np.array([all(plan.get(i) == a for i, a in steps) for steps in self.path], dtype=float)


def _parse(game) -> tuple[np.ndarray, np.ndarray, list[_Player]]:
    """From the tree's arrays: the terminal nodes in terminal-row order, their chance reach, and
    every player's :class:`_Player`."""
    n = game.num_players
    nodes = np.flatnonzero(np.asarray(game.terminal_index) >= 0)
    terminals = nodes[np.argsort(np.asarray(game.terminal_index)[nodes])]
    parent, player = np.asarray(game.parent), np.asarray(game.player)
    infoset, action = np.asarray(game.infoset), np.asarray(game.action)
    prob = np.asarray(game.chance_prob, dtype=float)
    chance_reach = np.ones(len(terminals))
    paths: list[list[list[tuple[int, int]]]] = [[[] for _ in terminals] for _ in range(n)]
    for t, z in enumerate(terminals):
        v = int(z)
        while parent[v] >= 0:
            u = int(parent[v])
            if player[u] >= 0:
                paths[player[u]][t].append((int(infoset[u]), int(action[v])))
            else:
                chance_reach[t] *= prob[v]
            v = u
        for p in range(n):
            paths[p][t].reverse()
    players = []
    for p in range(n):
        mine = np.flatnonzero(player == p)
        sets = sorted({int(infoset[v]) for v in mine})
        actions, own_parent = {}, {}
        for v in mine:
            i = int(infoset[v])
            actions[i] = int(np.sum(parent == v))
            # The last own (infoset, action) above v: the same for every node of i.
            w, above = int(v), None
            while parent[w] >= 0:
                u = int(parent[w])
                if player[u] == p:
                    above = (int(infoset[u]), int(action[w]))
                    break
                w = u
            if own_parent.setdefault(i, above) != above:
                raise ValueError(f"player {p + 1}'s infoset {i} is not of perfect recall")
        players.append(_Player(sets, actions, own_parent, paths[p]))
    return terminals, chance_reach, players


def count_joint_plans(game) -> int:
    """The number of joint reduced pure plans (the oracle's LP columns), without listing them."""
    return int(np.prod([pl.count_plans() for pl in _parse(game)[2]]))


class BruteForce:
    """The normal-form LPs of a tiny game (see the module docstring).

    Attributes
    ----------
    plans : list of list of dict
        Per player, its reduced pure plans (infoset → action).
    joint : list of tuple
        The joint plans (one index per player), the LP's columns.
    utilities : ndarray
        ``[players, joint]``: each player's expected utility under each joint plan.
    """

    def __init__(self, game, max_joint: int = 20_000):
        self.game = game
        n = game.num_players
        self.n = n
        terminals, self.chance_reach, self.players = _parse(game)
        self.payoffs = np.asarray(game.payoffs, dtype=float)  # terminal-row order
        count = int(np.prod([pl.count_plans() for pl in self.players]))
        if count > max_joint:
            raise ValueError(f"{count} joint plans: too many for the brute force")
        self.plans = [pl.plans_from(pl.children(None)) for pl in self.players]
        self.reach = [
            np.array([pl.reach(x) for x in plans]) for pl, plans in zip(self.players, self.plans, strict=True)
        ]
        self.joint = list(itertools.product(*[range(len(x)) for x in self.plans]))
        self._others = [self._others_reach(i) for i in range(n)]
        weights = self.chance_reach[:, None] * self.payoffs  # [T, n]
        together = self._others[0] * self.reach[0][[j[0] for j in self.joint]]  # [J, T]
        self.utilities = (together @ weights).T

    def _others_reach(self, i: int) -> np.ndarray:
        """``[joint, terminals]``: the product of the other players' reach (chance excluded)."""
        out = np.ones((len(self.joint), len(self.chance_reach)))
        for p in range(self.n):
            if p != i:
                out *= self.reach[p][[j[p] for j in self.joint]]
        return out

    # ------------------------------------------------------------------ constraints
    def incentive_rows(self, concept: str) -> np.ndarray:
        """One row per (trigger agent, pure deviation): the coefficients of ``μ`` in
        ``gain ≤ 0``."""
        if concept not in CONCEPTS:
            raise ValueError(concept)
        rows = []
        for i in range(self.n):
            me = self.players[i]
            w = self.chance_reach * self.payoffs[:, i]  # [T]
            mine = np.array([j[i] for j in self.joint])
            follow = self.reach[i][mine]  # [J, T]
            others = self._others[i]
            if concept == "nfcce":
                for plan in self.plans[i]:
                    rows.append((others * (me.reach(plan)[None, :] - follow)) @ w)
                continue
            for inf in me.infosets:
                sub = me.below(inf)
                region = np.array([any(j == inf for j, _ in steps) for steps in me.path], dtype=float)
                # π_i reaches I: its actions on the path to I are the plan's, i.e. I is in its domain.
                reaches = np.array([inf in plan for plan in self.plans[i]])
                triggers = (
                    [
                        (reaches & np.array([plan.get(inf) == a for plan in self.plans[i]]))
                        for a in range(me.actions[inf])
                    ]
                    if concept == "efce"
                    else [reaches]
                )
                for dev in me.plans_from([inf]):
                    # π_i ⊕_I π̂ reaches the terminals below I as π̂ does (π_i reaches I).
                    dev_reach = np.array(
                        [all(dev.get(j) == a for j, a in steps if j in sub) for steps in me.path], dtype=float
                    )
                    gain = (others * region * (dev_reach[None, :] - follow)) @ w  # [J]
                    for fired in triggers:
                        rows.append(gain * fired[mine])
        return np.array(rows).reshape(len(rows), len(self.joint))

    def solve(self, concept: str, objective: str | int = "welfare") -> tuple[float, np.ndarray]:
        """The largest social welfare (``"welfare"``) or utility of player ``objective``
        (0-based int or ``"player1"``, ...) over the concept's equilibria, and a distribution
        over :attr:`joint` attaining it."""
        if isinstance(objective, str) and objective.startswith("player"):
            objective = int(objective[len("player") :]) - 1
        c = self.utilities.sum(axis=0) if objective == "welfare" else self.utilities[int(objective)]
        A = self.incentive_rows(concept)
        result = scipy.optimize.linprog(
            -c,
            A_ub=A if len(A) else None,
            b_ub=np.zeros(len(A)) if len(A) else None,
            A_eq=np.ones((1, len(self.joint))),
            b_eq=[1.0],
            bounds=(0, None),
            method="highs",
        )
        if result.status != 0:
            raise RuntimeError(f"the brute-force LP failed: {result.message}")
        return float(-result.fun), np.maximum(result.x, 0.0)

    def optimum(self, concept: str, objective: str | int = "welfare") -> float:
        """The optimal value of :meth:`solve`."""
        return self.solve(concept, objective)[0]

    def sequence_pair_probabilities(self, mu: np.ndarray) -> np.ndarray:
        """Two players: ``ξ[σ1, σ2] = Σ_π μ(π) [σ1 ∈ π1] [σ2 ∈ π2]`` as a dense matrix, the
        sequences named by their last ``(infoset, action)`` (None for the empty one), rows and
        columns ordered as :meth:`sequence_names`."""
        names = self.sequence_names()
        holds = [
            np.array(
                [[seq is None or plan.get(seq[0]) == seq[1] for seq in names[p]] for plan in self.plans[p]],
                dtype=float,
            )
            for p in (0, 1)
        ]
        out = np.zeros((len(names[0]), len(names[1])))
        for weight, (a, b) in zip(mu, self.joint, strict=True):
            if weight > 0:
                out += weight * np.outer(holds[0][a], holds[1][b])
        return out

    def sequence_names(self) -> list[list[tuple[int, int] | None]]:
        """Per player: the empty sequence (None) and every ``(infoset, action)``."""
        return [[None] + [(i, a) for i in pl.infosets for a in range(pl.actions[i])] for pl in self.players]

    def gains(self, concept: str, mu: np.ndarray) -> float:
        """The concept's gap of the distribution ``mu`` over :attr:`joint`: the largest gain of a
        trigger agent's best deviation, clipped at 0."""
        return max(0.0, float((self.incentive_rows(concept) @ mu).max(initial=0.0)))
