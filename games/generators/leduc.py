"""Leduc hold'em (Southey et al. 2005) and its n-player version (Celli et al. 2020, appendix C.1).

The deck holds ``suits`` cards of each of ``ranks`` ranks.  Every player antes one chip and is
dealt one private card; a betting round follows; one public board card is revealed; a second
betting round follows.  In each round the players act in turn starting from player 1 (folded
players are skipped).  A player may *fold* (only when facing a bet), *call* (a *check* when not
facing a bet) or *raise* by ``raise_sizes[round]`` chips on top of matching the current stake.
A round ends when, with no raise, every remaining player has checked, or, after a raise, every
other remaining player has called the last raise.  The hand ends when a single player is left
(she takes the pot) or after the second round (showdown: a card pairing the board beats any
unpaired card, otherwise the higher rank wins; tied best hands split the pot).  Payoffs are
chips won minus chips put in, so the game is zero-sum.

Suits never matter for payoffs, so cards are dealt and observed by rank only (dealing a rank
with probability proportional to the number of its cards left in the deck); this is the usual
suit-isomorphic form of Leduc (288 infosets in total for the standard two-player game).

Reading that reproduces the paper's numbers
-------------------------------------------
The paper's 3-player instance with 3 ranks ("the deck consists of three suits with r cards
each", at most two raises per round, raises of 2 and 4) has 3,294 infosets and 7,687
sequences per player.  Its rules leave the raise limit open for more than two players:

* a total cap of two raises per round (OpenSpiel's leduc_poker rule) gives 1,401 / 3,208 per
  player; a cap of three gives 6,522 / 15,703; allowing a fold when not facing a bet or keeping
  folded players' turns as forced moves give unequal counts across players, none 3,294;
* **each player may raise at most once per round** (no further total cap) gives exactly
  3,294 infosets and 7,687 sequences for every player.  With two players this is the same as
  the classic limit of two raises per round, so it is the natural n-player reading of "at most
  two raises per round"; it is what ``raises_per_player=1`` (the default) implements.

The 1-raise three-player instance of Celli et al. 2019 ("1200 total infosets") is
``leduc(players=3, ranks=4, max_raises=1)`` (400 infosets per player).  Other defaults: the
board card is dealt from the remaining deck; ``suits`` defaults to ``players`` (2 suits for the
classic game, 3 for the paper's 3-player game); round 2 starts from the first player still in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from itertools import product

import numpy as np

from efce.errors import CountLimitReached, GameError
from efce.games.game import CHANCE, TERMINAL, Game
from efce.games.generators.builder import Expansion, build_game, edges_from_counts
from efce.games.generators.params import GameGenerator, Param
from efce.games.resources.estimate import SizeEstimate, check_size

# Action codes (edge labels) of betting actions.
FOLD, CHECK, CALL, BET, RAISE = range(5)
_ACTION_NAMES = ["fold", "check", "call", "bet", "raise"]
_RANK_NAMES = "23456789TJQKA"

# Phases of a state.
_BETTING1, _BOARD, _BETTING2, _OVER = 1, 2, 3, 4


#: Parameters of a game spec string (type and range; defaults: the function's own), read by
#: :data:`efce.games.spec.PARAMETERS`.
PARAMETERS = {
    "players": Param("int", 2, 1000),
    "ranks": Param("int", 1, 1000),
    "suits": Param("int", 1, 1000, none=True),
    "raise_sizes": Param("number list", 0, None, length=2),
    "max_raises": Param("int", 0, 1000, none=True),
    "raises_per_player": Param("int", 0, 1000, none=True),
}


def check_parameters(
    *, max_raises: int | None = None, raises_per_player: int | None = 1, **_others: object
) -> None:
    """What the parameters must satisfy together (each is checked alone by its
    :data:`PARAMETERS` entry); :mod:`games.spec` calls it before estimating the size (it is the
    ``check`` of Leduc's declaration).

    Raises
    ------
    GameError
        With neither raise cap the betting would never end.
    """
    if max_raises is None and raises_per_player is None:
        raise GameError(
            "leduc: max_raises and raises_per_player cannot both be none: the betting would never "
            "end (give one of them)"
        )


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def rank_name(ranks: int, r: int) -> str:
    """Readable name of rank ``r`` (0-based) in a deck of ``ranks`` ranks (J, Q, K for 3)."""
    names = _RANK_NAMES[-ranks - 1 : -1] if ranks <= 12 else None
    return names[r] if names else str(r + 1)


def leduc(
    players: int = 2,
    ranks: int = 3,
    suits: int | None = None,
    raise_sizes: Sequence[float] = (2, 4),
    max_raises: int | None = None,
    raises_per_player: int | None = 1,
) -> Game:
    """Leduc hold'em.

    Parameters
    ----------
    players : int
        Number of players (>= 2).
    ranks : int
        Number of card ranks (>= 1).
    suits : int, optional
        Cards per rank (default ``players``).  The deck must hold at least ``players + 1``
        cards (one per player and the board).
    raise_sizes : pair of numbers
        Raise amount of the first and second betting round (each > 0).
    max_raises : int, optional
        Cap on the total number of raises in one betting round (None: no cap beyond
        ``raises_per_player``).
    raises_per_player : int, optional
        Cap on the raises of one player in one betting round (default 1; None: no cap).  At
        least one of the two caps must be given.
    """
    if not _is_int(players) or players < 2:
        raise GameError(f"leduc: players must be an integer >= 2, got {players!r}")
    if not _is_int(ranks) or ranks < 1:
        raise GameError(f"leduc: ranks must be an integer >= 1, got {ranks!r}")
    n, r = int(players), int(ranks)
    suits = n if suits is None else suits
    if not _is_int(suits) or suits < 1:
        raise GameError(f"leduc: suits must be an integer >= 1, got {suits!r}")
    s = int(suits)
    if r * s < n + 1:
        raise GameError(
            f"leduc: the deck ({r} ranks x {s} suits = {r * s} cards) is too small "
            f"for {n} players and a board card (ranks * suits must be >= {n + 1})"
        )
    try:
        sizes = tuple(float(x) for x in raise_sizes)
    except (TypeError, ValueError):
        raise GameError(f"leduc: raise_sizes must be two numbers, got {raise_sizes!r}") from None
    if len(sizes) != 2 or not all(np.isfinite(sizes)) or min(sizes) <= 0:
        raise GameError(f"leduc: raise_sizes must be two positive numbers, got {raise_sizes!r}")
    if max_raises is not None and (not _is_int(max_raises) or max_raises < 0):
        raise GameError(f"leduc: max_raises must be an integer >= 0 or None, got {max_raises!r}")
    if raises_per_player is not None and (not _is_int(raises_per_player) or raises_per_player < 0):
        raise GameError(
            f"leduc: raises_per_player must be an integer >= 0 or None, got {raises_per_player!r}"
        )
    check_parameters(max_raises=max_raises, raises_per_player=raises_per_player)
    total_cap = np.iinfo(np.int64).max if max_raises is None else int(max_raises)
    player_cap = np.iinfo(np.int64).max if raises_per_player is None else int(raises_per_player)
    check_size(
        leduc_size,
        f"leduc:players={n},ranks={r},suits={s}",
        players=n,
        ranks=r,
        suits=s,
        raise_sizes=sizes,
        max_raises=max_raises,
        raises_per_player=raises_per_player,
    )
    deck_size = r * s
    pidx = np.arange(n)

    # Deal of the private cards: every rank tuple that the deck allows, with its probability.
    deal_rows: list[tuple[int, ...]] = []
    deal_probs: list[float] = []
    for combo in product(range(r), repeat=n):
        left = np.full(r, s)
        prob = 1.0
        for k, c in enumerate(combo):
            prob *= left[c] / (deck_size - k)
            left[c] -= 1
        if prob > 0:
            deal_rows.append(combo)
            deal_probs.append(prob)
    deals = np.array(deal_rows, dtype=np.int64).reshape(-1, n)
    deal_prob = np.array(deal_probs)

    # Observation tokens: card c -> 1 + c; board c -> 1 + r + c; action a -> 1 + 2r + a.
    def token_label(p: int, t: int) -> str:
        if t == 0:
            return ""
        if t <= r:
            return f"card {rank_name(r, t - 1)}"
        if t <= 2 * r:
            return f"board {rank_name(r, t - 1 - r)}"
        return _ACTION_NAMES[t - 1 - 2 * r]

    def action_label(p: int, code: int) -> str:
        return _ACTION_NAMES[code]

    def _empty(n_edges=0):
        return np.zeros((n_edges, n), np.int64)

    def expand(state):
        phase = state["phase"]
        size = len(phase)
        if phase[0] == 0:  # the root: deal private cards
            e_parent, e_action = edges_from_counts([len(deals)])
            m = len(deals)
            child = {
                "phase": np.full(m, _BETTING1, np.int64),
                "cards": deals,
                "board": np.full(m, -1, np.int64),
                "cur": np.zeros(m, np.int64),
                "folded": np.zeros((m, n), bool),
                "contrib": np.ones((m, n)),
                "stake": np.ones(m),
                "raises": np.zeros(m, np.int64),
                "praises": np.zeros((m, n), np.int64),
                "calls": np.zeros(m, np.int64),
            }
            return Expansion(
                np.array([CHANCE]),
                np.zeros((0, n)),
                e_parent,
                e_action,
                1 + deals,
                child,
                edge_prob=deal_prob,
                edge_label=e_action,
            )

        betting = (phase == _BETTING1) | (phase == _BETTING2)
        board = phase == _BOARD
        over = phase == _OVER
        rows = np.arange(size)
        cur = state["cur"]
        player = np.where(betting, cur, np.where(board, CHANCE, TERMINAL))

        # Options of every state as a [size, width] mask; edges are its nonzero entries in
        # row-major order (parents nondecreasing, options in their natural order).
        width = max(3, r)
        valid = np.zeros((size, width), bool)
        facing = state["stake"] > state["contrib"][rows, cur]
        can_raise = (state["raises"] < total_cap) & (state["praises"][rows, cur] < player_cap)
        valid[:, 0] = betting & facing  # fold
        valid[:, 1] = betting  # check / call
        valid[:, 2] |= betting & can_raise  # bet / raise
        held = np.zeros((size, r), np.int64)  # cards of each rank out of the deck
        np.add.at(held, (np.repeat(rows, n), state["cards"].ravel()), 1)
        board_left = s - held
        valid[:, :r] |= board[:, None] & (board_left > 0)
        e_parent, col = np.nonzero(valid)
        counts = valid.sum(axis=1)
        starts = np.cumsum(counts) - counts
        e_action = np.arange(len(e_parent)) - starts[e_parent]
        child = {k: v[e_parent] for k, v in state.items()}
        num_edges = len(e_parent)
        obs = _empty(num_edges)
        code = np.zeros(num_edges, np.int64)
        prob = np.ones(num_edges)

        # ---- board card (chance) ---------------------------------------------------------
        eb = board[e_parent]
        if eb.any():
            card = col[eb]
            obs[eb] = (1 + r + card)[:, None]
            code[eb] = card
            prob[eb] = board_left[e_parent[eb], card] / (deck_size - n)
            child["board"][eb] = card
            child["phase"][eb] = _BETTING2
            # Round 2 starts with the first player still in.
            fo = child["folded"][eb]
            child["cur"][eb] = np.argmax(~fo, axis=1)

        # ---- betting -----------------------------------------------------------------------
        ea = np.flatnonzero(betting[e_parent])
        if len(ea):
            par = e_parent[ea]
            a = col[ea]  # 0 fold, 1 call, 2 raise
            actor = cur[par]
            stake = state["stake"][par]
            contrib = child["contrib"][ea]
            folded = child["folded"][ea]
            raises = state["raises"][par]
            calls = state["calls"][par].copy()
            praises = child["praises"][ea]
            rnd2 = phase[par] == _BETTING2
            size_now = np.where(rnd2, sizes[1], sizes[0])
            er = np.arange(len(ea))
            is_fold, is_call, is_raise = a == 0, a == 1, a == 2
            folded[er[is_fold], actor[is_fold]] = True
            contrib[er[is_call], actor[is_call]] = stake[is_call]
            new_stake = np.where(is_raise, stake + size_now, stake)
            contrib[er[is_raise], actor[is_raise]] = new_stake[is_raise]
            praises[er[is_raise], actor[is_raise]] += 1
            calls = np.where(is_call, calls + 1, np.where(is_raise, 0, calls))
            raises = raises + is_raise
            remaining = n - folded.sum(axis=1)
            ready = np.where(raises == 0, calls == remaining, calls == remaining - 1)
            ready &= ~is_raise
            alone = remaining == 1
            # Next player: first one still in after the actor.
            order = (actor[:, None] + 1 + pidx[None, :]) % n
            still_in = ~folded[er[:, None], order]
            nxt = order[er, np.argmax(still_in, axis=1)]
            new_phase = np.where(alone, _OVER, np.where(ready, np.where(rnd2, _OVER, _BOARD), phase[par]))
            round_over = ready & ~alone
            child["folded"][ea] = folded
            child["contrib"][ea] = contrib
            child["stake"][ea] = new_stake
            child["phase"][ea] = new_phase
            child["cur"][ea] = nxt
            child["raises"][ea] = np.where(round_over, 0, raises)
            child["calls"][ea] = np.where(round_over, 0, calls)
            child["praises"][ea] = np.where(round_over[:, None], 0, praises)
            was_facing = facing[par]
            label = np.where(
                is_fold,
                FOLD,
                np.where(is_call, np.where(was_facing, CALL, CHECK), np.where(raises - 1 == 0, BET, RAISE)),
            )
            code[ea] = label
            obs[ea] = (1 + 2 * r + label)[:, None]

        # ---- payoffs of terminal states -----------------------------------------------------
        term = np.flatnonzero(over)
        contrib_t = state["contrib"][term]
        folded_t = state["folded"][term]
        cards_t = state["cards"][term]
        board_t = state["board"][term][:, None]
        strength = np.where(cards_t == board_t, r + cards_t, cards_t)
        strength = np.where(folded_t, -1, strength)
        best = strength.max(axis=1, keepdims=True)
        winners = strength == best
        pot = contrib_t.sum(axis=1, keepdims=True)
        pay = winners * (pot / winners.sum(axis=1, keepdims=True)) - contrib_t

        return Expansion(player, pay, e_parent, e_action, obs, child, edge_prob=prob, edge_label=code)

    root = {
        "phase": np.zeros(1, np.int64),
        "cards": np.zeros((1, n), np.int64),
        "board": np.full(1, -1, np.int64),
        "cur": np.zeros(1, np.int64),
        "folded": np.zeros((1, n), bool),
        "contrib": np.ones((1, n)),
        "stake": np.ones(1),
        "raises": np.zeros(1, np.int64),
        "praises": np.zeros((1, n), np.int64),
        "calls": np.zeros(1, np.int64),
    }
    caps = f"max_raises={max_raises},raises_per_player={raises_per_player}"
    return build_game(
        name=f"leduc:players={n},ranks={r},suits={s},raise_sizes={sizes[0]:g}/{sizes[1]:g},{caps}",
        num_players=n,
        root_state=root,
        expand=expand,
        token_label=token_label,
        action_label=action_label,
    )


# ------------------------------------------------------------------------------ size estimate
#: Memoized betting states counted before Leduc's estimate falls back to a lower bound, times
#: the players up to 12 (a state's work grows with the players: its tuples and its map of leaves
#: to the board): 40,000 states at six players, which six-player Leduc needs to be counted
#: exactly rather than guessed under the budget (it visits 25,000-30,000), 20,000 from twelve on
#: (every estimate answers within a second; 200,000 states took 6-10 s for ``players=64``).
#: Every game found past it on a grid of 2-5 players, raise caps up to 16 and 3 or 6 ranks is
#: over 13 GiB by the exact count (``tests/games/test_spec_and_estimate.py``).
_LEDUC_STATE_WORK = 240_000

#: Above this many players (with raises) Leduc's estimate is the lower bound ``2^(n-1)`` at once:
#: 2^50 nodes is 400 PB, and counting the betting of 64 players to its state limit took 0.3 s.
_COUNTED_PLAYERS = 50


def leduc_size(
    players: int,
    ranks: int,
    suits: int | None,
    raise_sizes: list[float],
    max_raises: int | None,
    raises_per_player: int | None,
) -> SizeEstimate:
    """Node and terminal counts of :func:`leduc` from its parameters, by a memoized count of the
    betting rounds times the deals: exact when the deals are few enough to enumerate
    (``ranks ** players <= 20,000``), an upper bound otherwise, and a lower bound when the betting
    has too many states to count quickly (over ``_LEDUC_STATE_WORK`` divided by the players, at
    most 12: seven or more players, all of them terabytes; over ``_COUNTED_PLAYERS`` players it is not
    counted at all), so that it
    answers within a second for any parameters; :func:`games.resources.estimate.check_estimate`
    refuses a game known only by a lower bound.

    The count mirrors the betting rules of :func:`leduc`: a betting state is (player to
    act, folded players, players who matched the stake, raises in the round, raises per
    player, calls since the last raise); the tree below a state depends on nothing else."""
    n, r = players, ranks
    s = n if suits is None else suits
    total_cap = math.inf if max_raises is None else max_raises
    player_cap = math.inf if raises_per_player is None else raises_per_player
    everyone = (1 << n) - 1
    visited = 0
    state_limit = _LEDUC_STATE_WORK // min(n, 12)

    def next_in(actor: int, folded: int) -> int:
        for k in range(1, n + 1):
            p = (actor + k) % n
            if not folded >> p & 1:
                return p
        return actor

    @cache
    def round_tree(
        second: bool, cur: int, folded: int, matched: int, raises: int, praises: tuple, calls: int
    ):
        """(nodes, terminals of this round's tree, {folded mask: leaves going to the board})."""
        nonlocal visited
        visited += 1
        if visited > state_limit:
            raise CountLimitReached
        nodes, terminals = 1, 0
        to_board: dict[int, int] = {}
        options = []
        if not matched >> cur & 1:
            options.append("fold")
        options.append("call")
        if raises < total_cap and praises[cur] < player_cap:
            options.append("raise")
        for option in options:
            f, m, c, rz, pr = folded, matched, calls, raises, praises
            if option == "fold":
                f |= 1 << cur
            elif option == "call":
                m |= 1 << cur
                c += 1
            else:
                m, c, rz = 1 << cur, 0, rz + 1
                pr = pr[:cur] + (pr[cur] + 1,) + pr[cur + 1 :]
            left = n - bin(f).count("1")
            ready = option != "raise" and (c == left if rz == 0 else c == left - 1)
            if left == 1 or (ready and second):
                nodes += 1
                terminals += 1
            elif ready:
                to_board[f] = to_board.get(f, 0) + 1
            else:
                sub_nodes, sub_terminals, sub_board = round_tree(second, next_in(cur, f), f, m, rz, pr, c)
                nodes += sub_nodes
                terminals += sub_terminals
                for mask, k in sub_board.items():
                    to_board[mask] = to_board.get(mask, 0) + k
        return nodes, terminals, to_board

    zeros = (0,) * n
    if n > _COUNTED_PLAYERS and min(total_cap, player_cap) > 0:  # too many to count the betting
        # Each player's first turn offers check/bet or fold/call: 2^(n-1) nodes at least, far
        # over any budget.  (Without raises the betting is a chain of calls, counted below.)
        first_pass = 2 ** (n - 1)
        return SizeEstimate(first_pass, first_pass, n, exact=False, lower_bound=True)
    # Deals: rank tuples the deck allows; b = board ranks left after the deal.
    if r**n <= 20_000:
        deals = board_branches = 0
        for combo in product(range(r), repeat=n):
            held = [combo.count(k) for k in range(r)]
            if max(held) <= s:
                deals += 1
                board_branches += sum(h < s for h in held)
    else:  # bounds: every rank tuple, every rank on the board
        deals, board_branches = r**n, r ** (n + 1)
    try:
        nodes1, terminals1, to_board = round_tree(False, 0, 0, everyone, 0, zeros, 0)
        total, terminals = 1 + deals * nodes1, deals * terminals1
        for folded, leaves in to_board.items():
            first = next_in(n - 1, folded)
            nodes2, terminals2, _ = round_tree(True, first, folded, everyone, 0, zeros, 0)
            total += leaves * (deals + board_branches * nodes2)
            terminals += leaves * board_branches * terminals2
        return SizeEstimate(total, terminals, n, exact=r**n <= 20_000)
    except (CountLimitReached, RecursionError):
        # At least one node per distinct betting state visited, for every deal.
        lower = deals * state_limit
        return SizeEstimate(lower, lower, n, exact=False, lower_bound=True)


#: The game spec strings name (:data:`efce.games.spec.GENERATORS`).
def _resolve(**values) -> dict:
    """The parameters as :func:`leduc` reads them: ``suits=None`` is ``players``."""
    return {**values, "suits": values["players"] if values["suits"] is None else values["suits"]}


GAMES = (
    GameGenerator("leduc", leduc, PARAMETERS, estimate=leduc_size, check=check_parameters, resolve=_resolve),
)
