"""Goofspiel with any number of players (Ross 1971), in the limited-information variant of
Celli et al. 2020, appendix C.1.

Every player holds the cards ``1 .. ranks``; a prize stack holds the same cards.  Each turn a
prize card is revealed (drawn uniformly at random from the remaining prizes, or in the fixed
order ``1, 2, .., ranks`` when ``prizes="sorted"``, which leaves the game without chance), then
all players bid one of their remaining cards simultaneously.  The unique highest bid wins the
prize; when the highest bid is tied the prize is discarded, which makes even the two-player
game general-sum.  A player's payoff is the sum of the face values of the prizes she won.

Simultaneous bids are modelled sequentially: players bid in the order ``1 .. n`` and nobody
observes a bid of the current turn before placing her own.  The last turn, with one card left
in every hand, is kept as a forced move (an information set with a single action) for every
player, and with random prizes the last prize is a chance node with a single outcome.

Reading of "limited information"
--------------------------------
The paper says that "actions of the other players are observed only at the end of the game",
which taken literally (players see only the prizes and their own bids) gives 57 infosets per
player in the 2-player, 3-rank game instead of the paper's 213.  The reading that reproduces
every size in the paper's Figure 4 is: **after each turn every player observes the set of
players who placed the highest bid** (a single player: the winner; several: the players who
tied, the prize being discarded), never the bid values.  Per player, with random prizes:

=========  =====  ========  =========
players    ranks  infosets  sequences
=========  =====  ========  =========
2          3      213       262
2          4      8,716     10,649
3          3      837       934
=========  =====  ========  =========

(sequence counts include the empty sequence).  Readings that do not match: observing nothing of
the others (57 / 57 / 57 for the 2p-3, 3p-3 rows), observing only the winner or "tie" (213 and
8,716 for two players but 369 for three), observing one's own win/tie/loss (237 for three
players), observing all bids (273), observing the winner and the winning bid (243).
"""

from __future__ import annotations

import numpy as np

from efce.errors import GameError
from efce.games.game import CHANCE, TERMINAL, Game
from efce.games.generators.builder import Expansion, build_game
from efce.games.generators.params import GameGenerator, Param
from efce.games.resources.estimate import SizeEstimate, check_size

_PRIZE_ORDERS = ("random", "sorted")


#: Parameters of a game spec string (type and range; defaults: the function's own), read by
#: :data:`efce.games.spec.PARAMETERS`.
PARAMETERS = {
    "players": Param("int", 2, 16),
    "ranks": Param("int", 1, 62),
    "prizes": Param("choice", choices=("random", "sorted")),
    "limited_info": Param("bool"),
}


def goofspiel(players: int = 2, ranks: int = 3, prizes: str = "random", limited_info: bool = True) -> Game:
    """Goofspiel.

    Parameters
    ----------
    players : int
        Number of players (>= 2).
    ranks : int
        Cards ``1 .. ranks`` in every hand and in the prize stack (>= 1).
    prizes : {"random", "sorted"}
        "random": each turn's prize is drawn by chance uniformly from the remaining prizes;
        "sorted": prizes are revealed in the order ``1 .. ranks`` (no chance at all).
    limited_info : bool
        True (the paper's setting): after each turn the players observe only the set of
        highest bidders.  False: after each turn every bid is revealed.
    """
    if isinstance(players, bool) or not isinstance(players, (int, np.integer)) or players < 2:
        raise GameError(f"goofspiel: players must be an integer >= 2, got {players!r}")
    if isinstance(ranks, bool) or not isinstance(ranks, (int, np.integer)) or ranks < 1:
        raise GameError(f"goofspiel: ranks must be an integer >= 1, got {ranks!r}")
    if prizes not in _PRIZE_ORDERS:
        raise GameError(f"goofspiel: prizes must be 'random' or 'sorted', got {prizes!r}")
    n, r = int(players), int(ranks)
    if r > 62:
        raise GameError(f"goofspiel: ranks must be at most 62 (cards are stored as bit masks), got {r}")
    if n > 16:
        raise GameError(f"goofspiel: players must be at most 16, got {n}")
    check_size(
        goofspiel_size,
        f"goofspiel:players={n},ranks={r},prizes={prizes}",
        players=n,
        ranks=r,
        prizes=prizes,
        limited_info=limited_info,
    )
    random_prizes = prizes == "random"
    limited = bool(limited_info)
    full = (1 << r) - 1
    card_bits = np.int64(1) << np.arange(r, dtype=np.int64)  # bit of card c is 1 << (c-1)

    # ---- observation tokens (disjoint ranges; 0 = nothing) -------------------------------
    # prize v            -> v                                  (1 .. r)
    # own bid b          -> r + b                              (r+1 .. 2r)
    # outcome o          -> 2r + 1 + o                         (o = top-set mask, or all bids)
    # own bid b + outcome-> out_base + (b-1) * num_outcomes + o (the last bidder sees both)
    num_outcomes = (1 << n) if limited else r**n
    out_base = 2 * r + 1
    combo_base = out_base + num_outcomes

    def outcome_code(bids: np.ndarray) -> np.ndarray:
        """bids: int[E, n] with values 1..r -> outcome code observed by everybody."""
        if limited:
            top = bids.max(axis=1, keepdims=True)
            return ((bids == top).astype(np.int64) << np.arange(n, dtype=np.int64)).sum(axis=1)
        return ((bids - 1) * (r ** np.arange(n, dtype=np.int64))).sum(axis=1)

    def decode_outcome(o: int) -> str:
        if limited:
            top = [j for j in range(n) if o >> j & 1]
            if len(top) == 1:
                return f"P{top[0] + 1} wins"
            return "tie " + "=".join(f"P{j + 1}" for j in top)
        return "bids " + ",".join(str(o // r**j % r + 1) for j in range(n))

    def token_label(p: int, t: int) -> str:
        if t == 0:
            return ""
        if t <= r:
            return f"prize {t}"
        if t <= 2 * r:
            return f"bid {t - r}"
        if t < combo_base:
            return decode_outcome(t - out_base)
        b, o = divmod(t - combo_base, num_outcomes)
        return f"bid {b + 1}/{decode_outcome(o)}"

    def action_label(p: int, code: int) -> str:
        return f"bid {code}"

    # ---- state --------------------------------------------------------------------------
    # stage: 0 = prize reveal, 1 + i = player i bids; "turn" counts finished turns.
    root = {
        "stage": np.zeros(1, np.int64),
        "turn": np.zeros(1, np.int64),
        "hands": np.full((1, n), full, np.int64),
        "left": np.full(1, full, np.int64),
        "prize": np.zeros(1, np.int64),
        "bids": np.zeros((1, n), np.int64),
        "score": np.zeros((1, n), np.int64),
    }

    def expand(state):
        size = len(state["stage"])
        stage = int(state["stage"][0])  # every state of one depth is at the same stage
        turn = int(state["turn"][0])
        if turn == r:  # all prizes dealt: terminal
            return Expansion(
                np.full(size, TERMINAL, np.int64),
                state["score"].astype(float),
                np.zeros(0, np.int64),
                np.zeros(0, np.int64),
                np.zeros((0, n), np.int64),
                {k: v[:0] for k, v in state.items()},
            )
        if stage == 0 and not random_prizes:
            # Sorted prizes: no reveal node; the prize (turn + 1) is announced on the edges of
            # the first bid of the turn.
            return _bid(state, 0, prize_token=np.full(size, turn + 1, np.int64))
        if stage == 0:  # chance reveals a prize uniformly among those left
            avail = (state["left"][:, None] & card_bits) != 0
            e_parent, col = np.nonzero(avail)
            e_action = np.arange(len(e_parent)) - np.searchsorted(e_parent, e_parent)
            prize = col + 1
            child = {k: v[e_parent] for k, v in state.items()}
            child["stage"] = np.ones(len(e_parent), np.int64)
            child["prize"] = prize
            child["left"] = child["left"] & ~card_bits[col]
            obs = np.repeat(prize[:, None], n, axis=1)
            return Expansion(
                np.full(size, CHANCE, np.int64),
                np.zeros((0, n)),
                e_parent,
                e_action,
                obs,
                child,
                edge_prob=1.0 / avail.sum(axis=1)[e_parent],
                edge_label=prize,
            )
        return _bid(state, stage - 1, prize_token=None)

    def _bid(state, i, prize_token):
        """Player i bids at every state of the frontier."""
        size = len(state["stage"])
        avail = (state["hands"][:, i][:, None] & card_bits) != 0
        e_parent, col = np.nonzero(avail)
        e_action = np.arange(len(e_parent)) - np.searchsorted(e_parent, e_parent)
        bid = col + 1
        child = {k: v[e_parent] for k, v in state.items()}
        child["hands"] = child["hands"].copy()
        child["hands"][:, i] &= ~card_bits[col]
        bids = child["bids"].copy()
        bids[:, i] = bid
        obs = np.zeros((len(e_parent), n), np.int64)
        if i < n - 1:
            obs[:, i] = r + bid
            child["bids"] = bids
            child["stage"] = np.full(len(e_parent), i + 2, np.int64)
        else:  # last bidder: resolve the turn
            o = outcome_code(bids)
            obs[:] = (out_base + o)[:, None]
            obs[:, i] = combo_base + (bid - 1) * num_outcomes + o
            top = bids.max(axis=1, keepdims=True)
            is_top = bids == top
            single = is_top.sum(axis=1) == 1
            score = child["score"] + np.where(is_top & single[:, None], child["prize"][:, None], 0)
            child["score"] = score
            child["bids"] = np.zeros_like(bids)
            child["turn"] = child["turn"] + 1
            child["stage"] = np.zeros(len(e_parent), np.int64)
        if prize_token is not None:  # sorted prizes: announce the prize on this edge
            pt = prize_token[e_parent]
            child["prize"] = pt
            child["left"] = child["left"] & ~card_bits[pt - 1]
            obs = _with_prize(obs, pt)
        player = np.full(size, i, np.int64)
        return Expansion(player, np.zeros((0, n)), e_parent, e_action, obs, child, edge_label=bid)

    # Sorted prizes carry the prize announcement on the first bid edge.  Tokens there must stay
    # distinct per own action and readable: use a separate range above everything else.
    sorted_base = combo_base + r * num_outcomes

    def _with_prize(obs, pt):
        # On player 1's bid edge obs is r + bid for her (she is never the last bidder since
        # n >= 2) and 0 for the others; the new token is sorted_base + (pt-1)*(r+1) + (bid or 0).
        own = np.where(obs > 0, obs - r, 0)
        return sorted_base + (pt[:, None] - 1) * (r + 1) + own

    def token_label_all(p: int, t: int) -> str:
        if t >= sorted_base:
            pt, b = divmod(t - sorted_base, r + 1)
            return f"prize {pt + 1}" + (f"/bid {b}" if b else "")
        return token_label(p, t)

    kind = "limited" if limited else "full"
    return build_game(
        name=f"goofspiel:players={n},ranks={r},prizes={prizes},info={kind}",
        num_players=n,
        root_state=root,
        expand=expand,
        token_label=token_label_all,
        action_label=action_label,
    )


# ------------------------------------------------------------------------------ size estimate
def goofspiel_size(players: int, ranks: int, prizes: str, limited_info: bool) -> SizeEstimate:
    """Exact node and terminal counts of :func:`goofspiel` from its parameters."""
    count, total = 1, 1
    for left in range(ranks, 0, -1):
        if prizes == "random":  # the prize reveal: a chance node with `left` outcomes
            count *= left
            total += count
        for _ in range(players):
            count *= left
            total += count
    return SizeEstimate(total, count, players)


#: The game spec strings name (:data:`efce.games.spec.GENERATORS`).
GAMES = (GameGenerator("goofspiel", goofspiel, PARAMETERS, estimate=goofspiel_size),)
