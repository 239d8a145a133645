"""Kuhn poker with any number of players and ranks (Kuhn 1950; 3-player variant of Szafron et
al. 2013, as described in Celli et al. 2020, appendix C.1).

One card of each rank; every player antes one chip and receives a private card.  Players act in
turn: while nobody has bet, a player may check or bet one chip; after a bet, every other player
(in turn order, wrapping around) folds or calls.  At the showdown the highest card among the
players still in wins the pot.
"""

from __future__ import annotations

import math
from itertools import permutations

import numpy as np

from efce.errors import GameError
from efce.games.game import CHANCE, TERMINAL, Game
from efce.games.generators.builder import Expansion, build_game, edges_from_counts
from efce.games.generators.params import GameGenerator, Param
from efce.games.resources.estimate import SizeEstimate, check_size

_ACTION_NAMES = ["check", "bet", "fold", "call"]


#: Parameters of a game spec string (type and range; defaults: the function's own), read by
#: :data:`efce.games.spec.PARAMETERS`.
PARAMETERS = {"players": Param("int", 2, 1000), "ranks": Param("int", 2, 1000, none=True)}


def kuhn(players: int = 2, ranks: int | None = None) -> Game:
    """Kuhn poker.

    Parameters
    ----------
    players : int
        Number of players (>= 2).
    ranks : int, optional
        Number of cards in the deck, one per rank (default ``players + 1``, must be >= players).
    """
    for key, value in (("players", players), ("ranks", ranks)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
            raise GameError(f"kuhn: {key} must be an integer, got {value!r}")
    players = int(players)
    ranks = players + 1 if ranks is None else int(ranks)
    if players < 2:
        raise GameError(f"kuhn: players must be at least 2, got {players}")
    if ranks < players:
        raise GameError(f"kuhn: ranks ({ranks}) must be at least the number of players ({players})")
    check_size(kuhn_size, f"kuhn:players={players},ranks={ranks}", players=players, ranks=ranks)
    deals = np.array(list(permutations(range(ranks), players)), dtype=np.int64)
    n = players

    def expand(state):
        size = len(state["step"])
        player = np.full(size, TERMINAL, dtype=np.int64)
        if state["step"][0] == -1:  # the root: deal
            e_parent, e_action = edges_from_counts([len(deals)])
            obs = 1 + deals  # each player sees her own card
            child = {
                "step": np.zeros(len(deals), np.int64),
                "cards": deals,
                "bettor": np.full(len(deals), -1),
                "contrib": np.ones((len(deals), n), np.int64),
                "folded": np.zeros((len(deals), n), bool),
            }
            return Expansion(
                np.array([CHANCE]),
                np.zeros((0, n)),
                e_parent,
                e_action,
                obs,
                child,
                edge_prob=np.full(len(deals), 1.0 / len(deals)),
            )
        step, bettor = state["step"], state["bettor"]
        no_bet = bettor < 0
        # With a bet at turn `bettor`, the n-1 other players answer in turns bettor+1 .. bettor+n-1.
        done = np.where(no_bet, step >= n, step >= bettor + n)
        actor = step % n
        player = np.where(done, TERMINAL, actor)
        live = ~done
        e_parent, e_action = edges_from_counts(np.where(live, 2, 0))
        par_bettor, par_step, a = bettor[e_parent], step[e_parent], e_action
        bets_now = (par_bettor < 0) & (a == 1)
        pays = (par_bettor >= 0) & (a == 1)  # a call
        folds = (par_bettor >= 0) & (a == 0)
        actor_e = par_step % n
        contrib = state["contrib"][e_parent].copy()
        contrib[np.arange(len(a)), actor_e] += bets_now | pays
        folded = state["folded"][e_parent].copy()
        folded[np.arange(len(a)), actor_e] |= folds
        child = {
            "step": par_step + 1,
            "cards": state["cards"][e_parent],
            "bettor": np.where(bets_now, par_step, par_bettor),
            "contrib": contrib,
            "folded": folded,
        }
        code = a + 2 * (par_bettor >= 0)
        obs = np.repeat((ranks + 1 + code)[:, None], n, axis=1)  # betting is public
        # Payoffs of terminal states: highest card among players still in takes the pot.
        term = np.flatnonzero(done)
        cards = np.where(state["folded"][term], -1, state["cards"][term])
        winner = np.argmax(cards, axis=1)
        pot = state["contrib"][term].sum(axis=1)
        pay = -state["contrib"][term].astype(float)
        pay[np.arange(len(term)), winner] += pot
        return Expansion(player, pay, e_parent, e_action, obs, child, edge_label=code)

    def token_label(p, t):
        return f"card{t - 1}" if t <= ranks else _ACTION_NAMES[t - ranks - 1]

    return build_game(
        name=f"kuhn:players={players},ranks={ranks}",
        num_players=n,
        root_state={"step": np.array([-1])},
        expand=expand,
        token_label=token_label,
        action_label=lambda p, c: _ACTION_NAMES[c],
    )


# ------------------------------------------------------------------------------ size estimate
def kuhn_size(players: int, ranks: int | None) -> SizeEstimate:
    """Exact node and terminal counts of :func:`kuhn` from its parameters (a lower bound beyond
    1000 players, too many to count quickly)."""
    n = players
    r = n + 1 if ranks is None else ranks
    if n > 1000:  # too large to count quickly: at least 2^n nodes below every deal
        return SizeEstimate(2**n, 2**n, n, exact=False, lower_bound=True)
    deals = math.perm(r, n)
    # Per deal: n checks in a row (n decision nodes, then the all-check terminal); a bet at
    # turn s is answered by the n-1 others, a full binary tree with 2^n - 1 nodes.
    per_deal = n + 1 + n * (2**n - 1)
    terminals = deals * (1 + n * 2 ** (n - 1))
    return SizeEstimate(1 + deals * per_deal, terminals, n)


#: The game spec strings name (:data:`efce.games.spec.GENERATORS`).
def _resolve(players: int, ranks: int | None) -> dict:
    """The parameters as :func:`kuhn` reads them: ``ranks=None`` is ``players + 1``."""
    return {"players": players, "ranks": players + 1 if ranks is None else ranks}


GAMES = (GameGenerator("kuhn", kuhn, PARAMETERS, estimate=kuhn_size, resolve=_resolve),)
