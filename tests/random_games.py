"""Random tiny general-sum games for the tests: n players, with no chance moves, with public
chance moves (every player observes every chance outcome) or with private ones (some player who
acts later does not observe some outcome).

A game is a tree of rounds grouped in *stages*: in a stage every player moves once without
seeing the others' moves of the stage (a simultaneous move), and a chance round may open it;
every node of a round shares its mover, and a node may also end the game early.  Perfect recall
holds by construction: a player's information set is the player's *knowledge* at the node — the
round number, its own past actions, and the outcomes of earlier rounds revealed to it by then
(a fixed random choice per round and player: at once, at the end of the stage, or never; chance
outcomes at once to everyone in the public kind) — and knowledge only grows along a path.  The
number of actions of an information set is a function of its key, so every node of it agrees.

Everything here is built from the tree's arrays through :meth:`efce.games.game.Game.from_tree`;
nothing of the toolkit's solvers is used.
"""

from __future__ import annotations

import itertools

import numpy as np

from efce.games.game import CHANCE, TERMINAL, Game
from tests.brute_force_equilibria import count_joint_plans

KINDS = ("none", "public", "private")


def random_game(
    seed: int,
    *,
    players: int = 2,
    chance: str = "none",
    stages: int = 2,
    end_probability: float = 0.15,
    max_actions: int = 2,
    observe_probability: float = 0.6,
    payoff_range: int = 4,
    conflict: float = 0.5,
    max_nodes: int = 300,
    max_joint_plans: int = 4000,
) -> Game:
    """One random game (see the module docstring); the same arguments give the same game.

    Parameters
    ----------
    seed : int
    players : int
        Number of players (1 or more).
    chance : {"none", "public", "private"}
        Chance rounds: none, observed by everyone at once, or with at least one outcome hidden
        from a player who moves after it (the game is redrawn until it has one, and a public game
        until every information set lies behind one outcome of each chance node).
    stages : int
        Stages of moves: in each, every player moves once, in a random order, without seeing the
        others' moves of the stage; at its end each player observes each other's move of the
        stage with probability ``observe_probability`` (or never).  In the chance kinds a chance
        round may open a stage (the first stage always has one).
    end_probability : float
        Chance that a non-root node ends the game early.
    max_actions : int
        Actions per decision: 2 .. max_actions, drawn per information set.
    observe_probability : float
        See ``stages``; also the chance that a player observes a private chance outcome.
    payoff_range : int
        Integer payoff draws lie in ``[-payoff_range, payoff_range]``.
    conflict : float
        From 0 (every player's payoff drawn independently) to 1 (player ``i``'s payoff is the
        negative of the previous player's, plus a common term): games of mixed motives, where
        what the mediator reveals matters.
    max_nodes : int
        A drawn tree larger than this is redrawn.
    max_joint_plans : int
        So is one with more joint reduced pure plans (the brute force's columns).

    Returns
    -------
    Game
    """
    if chance not in KINDS:
        raise ValueError(f"chance must be one of {KINDS}")
    for attempt in range(1000):
        rng = np.random.default_rng([seed, attempt])
        game = _draw(
            rng,
            players,
            chance,
            stages,
            end_probability,
            max_actions,
            observe_probability,
            payoff_range,
            conflict,
            max_nodes,
            f"random-{chance}-{players}p-{seed}",
        )
        if game is not None and count_joint_plans(game) <= max_joint_plans:
            return game
    raise RuntimeError(f"no random game of kind {chance} found for seed {seed}")


NEVER = 1 << 30


def _draw(
    rng,
    n,
    chance,
    stages,
    end_probability,
    max_actions,
    observe_probability,
    payoff_range,
    conflict,
    max_nodes,
    name,
):
    # Rounds: (mover, reveal) where reveal[q] is the round from which player q knows the outcome.
    movers: list[int] = []
    reveal: list[list[int]] = []
    for s in range(stages):
        if chance != "none" and (s == 0 or rng.random() < 0.5):
            r = len(movers)
            movers.append(CHANCE)
            reveal.append(
                [
                    r + 1 if chance == "public" or rng.random() < observe_probability else NEVER
                    for _ in range(n)
                ]
            )
        order = rng.permutation(n)
        start = len(movers)
        end = start + n  # the first round after the stage
        for p in order:
            r = len(movers)
            movers.append(int(p))
            reveal.append(
                [
                    r + 1 if q == p else (end if rng.random() < observe_probability else NEVER)
                    for q in range(n)
                ]
            )
    rounds = len(movers)
    actions_of: dict[tuple, int] = {}
    keys: dict[tuple, int] = {}
    parent, action, player, key, payoffs, probs = [-1], [0], [], [], [], [1.0]
    history: list[tuple] = [()]  # per node: the outcome of every round so far
    v = 0
    while v < len(parent):
        t = len(history[v])
        if t == rounds or (v > 0 and rng.random() < end_probability):
            player.append(TERMINAL)
            key.append(-1)
            own = rng.integers(-payoff_range, payoff_range + 1, size=n).astype(float)
            common = float(rng.integers(-payoff_range, payoff_range + 1))
            opposed = -np.roll(own, 1) + common
            payoffs.append(np.round((1 - conflict) * own + conflict * opposed, 6))
            v += 1
            continue
        mover = movers[t]
        player.append(mover)
        if mover == CHANCE:
            k = int(rng.integers(2, max_actions + 1))
            p = np.round(rng.dirichlet(np.ones(k)), 3)
            p[-1] = 1.0 - p[:-1].sum()
            if np.any(p <= 0):
                p = np.full(k, 1.0 / k)
            key.append(-1)
        else:
            knows = tuple(a if reveal[r][mover] <= t else None for r, a in enumerate(history[v]))
            info = (mover, t, knows)
            if info not in actions_of:
                actions_of[info] = int(rng.integers(2, max_actions + 1))
            k = actions_of[info]
            key.append(keys.setdefault(info, len(keys)))
        for a in range(k):
            parent.append(v)
            action.append(a)
            probs.append(float(p[a]) if mover == CHANCE else 1.0)
            history.append(history[v] + (a,))
        if len(parent) > max_nodes:
            return None
        v += 1
    hidden = _mixes_chance_outcomes(parent, player, key)
    if (chance == "private") != hidden:
        return None
    return Game.from_tree(
        num_players=n,
        parent=parent,
        action=action,
        player=player,
        infoset_key=key,
        terminal_payoffs=np.array(payoffs),
        chance_prob=probs,
        name=name,
    )


def _mixes_chance_outcomes(parent, player, key) -> bool:
    """Some information set holds nodes below two different outcomes of one chance node (their
    deepest common ancestor is a chance node): a player does not observe that outcome, private
    chance.  Public chance is exactly the opposite."""

    def ancestors(v):
        out = [v]
        while parent[out[-1]] >= 0:
            out.append(parent[out[-1]])
        return out

    members: dict[tuple, list[int]] = {}
    for v, k in enumerate(key):
        if k >= 0:
            members.setdefault((player[v], k), []).append(v)
    for nodes in members.values():
        for u, w in itertools.combinations(nodes, 2):
            above_w = set(ancestors(w))
            meet = next(a for a in ancestors(u) if a in above_w)
            if player[meet] == CHANCE:
                return True
    return False
