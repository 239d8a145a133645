"""Size of a generated game computed from its parameters alone, in milliseconds, so that a game
that cannot fit in memory is refused before the generator starts building it.

:func:`estimate_size` gives the number of nodes and terminals of each generator's tree:

* ``kuhn``, ``goofspiel``, ``sheriff``, the figure games: exact closed forms.
* ``battleship``: exact.  The shooting phase has a closed form (every fleet covers the same
  number of cells, so how many shot sequences stay live does not depend on where the ships
  are); the legal placement prefixes are counted by a DP over occupied cells (a fleet that
  cannot fit is refused here, before building).  Only beyond :data:`_FLEET_STATE_LIMIT` states
  (games far over any memory budget) is the placement phase bounded by the product of each
  ship's placement counts.
* ``leduc``: a memoized count of the betting rounds times the deals: exact when the deals are
  few enough to enumerate (``ranks ** players <= 20,000``), an upper bound otherwise, and a
  lower bound when the betting has too many states to count quickly (over 200,000: eight or
  more players); :func:`check_estimate` refuses a game known only by a lower bound.

:func:`estimate_bytes` turns nodes into bytes with the peak memory the builder and
``efce info`` take per node (see :data:`BYTES_PER_NODE`).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from itertools import product

#: Peak bytes per node of building a game and reading its sizes (builder states, observation
#: histories, the game's arrays, sequence spaces, relevant-pair count): the peak RSS of
#: ``efce info GAME --json`` minus the ~100 MB of an empty run, over the node count, was 333
#: (goofspiel:ranks=5, 8.5M nodes), 340 (goofspiel:players=3,ranks=4), 346 (battleship 2x3,
#: 3 shots), 362 (leduc:players=3) and 400 (kuhn:players=6); the largest is used.
BYTES_PER_NODE = 400

#: Memoized betting states counted before Leduc's estimate falls back to a lower bound.
_LEDUC_STATE_LIMIT = 200_000


@dataclass(frozen=True)
class SizeEstimate:
    """Estimated size of a game tree.

    ``nodes`` and ``terminals`` are Python integers (they may be astronomically large);
    ``exact`` says whether they are exact counts rather than bounds."""

    nodes: int
    terminals: int
    players: int
    exact: bool = True
    lower_bound: bool = False  # when not exact: a lower (else an upper) bound

    @property
    def bytes(self) -> int:
        return estimate_bytes(self.nodes, self.terminals, self.players)

    def describe(self) -> str:
        """``about 1,234 nodes`` (or ``at least``/``at most`` for bounds)."""
        return f"{self.bound} {format_count(self.nodes)} nodes"

    @property
    def bound(self) -> str:
        return "about" if self.exact else ("at least" if self.lower_bound else "at most")


def format_count(n: int) -> str:
    """``1,234,567`` up to 10^15, then ``9.43e+159`` (exact for Python integers of any size,
    which ``float`` would overflow), and ``10^301029`` (the exponent rounded down) beyond about
    a thousand digits."""
    if n < 10**15:
        return f"{n:,}"
    if n.bit_length() > 3000:  # str() of huge integers is slow (and capped by Python)
        return f"10^{int((n.bit_length() - 1) * math.log10(2))}"
    digits = str(n)
    return f"{digits[0]}.{digits[1:3]}e+{len(digits) - 1}"


_ALREADY_CHECKED: ContextVar[bool] = ContextVar("games_size_checked", default=False)


def check_size(name: str, display: str, **params) -> None:
    """Refuse to build generator ``name`` with ``params`` when its estimated size exceeds the
    memory budget (:func:`games.resources.memory.check_budget`); generators call this after checking
    their parameters and before building.  ``display`` names the game in the message.

    Raises
    ------
    games.resources.memory.MemoryBudgetExceeded
        With the estimated number of nodes and bytes.
    """
    if _ALREADY_CHECKED.get():
        return
    estimate = estimate_size(name, params)
    if estimate is not None:
        check_estimate(estimate, display)


def check_estimate(estimate: SizeEstimate, display: str, budget: int | None = None) -> None:
    """The one rule deciding from an estimate whether a game may be built: exact counts and
    upper bounds are checked against the memory budget; a *lower* bound (a game too intricate
    to count quickly) is refused unless it already exceeds the budget, since a lower bound
    under the budget says nothing about the true size.

    Raises
    ------
    games.resources.memory.MemoryBudgetExceeded
        Over the budget, or only a lower bound is known.
    """
    from efce.errors import MemoryBudgetExceeded
    from efce.games.resources.memory import check_budget, gib

    check_budget(estimate.bytes, f"game {display} ({estimate.describe()})", budget)
    if estimate.lower_bound:
        raise MemoryBudgetExceeded(
            f"game {display} is too large to size from its parameters quickly ({estimate.describe()}, "
            f"{gib(estimate.bytes)} or more); not building a game of unknown size"
        )


@contextmanager
def size_already_checked():
    """Within this block generators skip :func:`check_size` (the caller checked the size
    against its own budget, as :func:`games.spec.make_game` does)."""
    token = _ALREADY_CHECKED.set(True)
    try:
        yield
    finally:
        _ALREADY_CHECKED.reset(token)


def estimate_bytes(nodes: int, terminals: int, players: int) -> int:
    """Peak bytes of building a game with ``nodes`` nodes (``terminals`` of them terminal)."""
    return nodes * BYTES_PER_NODE + terminals * 8 * players


def estimate_size(name: str, params: dict) -> SizeEstimate | None:
    """Size of generator ``name`` called with ``params`` (every parameter, defaults filled in and
    already checked by :mod:`games.spec`); None for generators without an estimate."""
    fn = _ESTIMATORS.get(name)
    return fn(**params) if fn else None


# ------------------------------------------------------------------------------ Kuhn
def _kuhn(players: int, ranks: int | None) -> SizeEstimate:
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


# ------------------------------------------------------------------------------ Goofspiel
def _goofspiel(players: int, ranks: int, prizes: str, limited_info: bool) -> SizeEstimate:
    count, total = 1, 1
    for left in range(ranks, 0, -1):
        if prizes == "random":  # the prize reveal: a chance node with `left` outcomes
            count *= left
            total += count
        for _ in range(players):
            count *= left
            total += count
    return SizeEstimate(total, count, players)


# ------------------------------------------------------------------------------ Sheriff
def _sheriff(max_bribe: int, max_items: int, rounds: int, **_values) -> SizeEstimate:
    if rounds > 1000:  # at least 2^rounds nodes; counting them is slow
        return SizeEstimate(2**rounds, 2**rounds, 2, exact=False, lower_bound=True)
    count = max_items + 1
    total = 1 + count
    for _ in range(rounds):
        count *= max_bribe + 1
        total += count
        count *= 2
        total += count
    return SizeEstimate(total, count, 2)


# ------------------------------------------------------------------------------ Battleship
def _placements(rows: int, cols: int, length: int) -> int:
    horizontal = rows * (cols - length + 1) if length <= cols else 0
    vertical = (rows - length + 1) * cols if 1 < length <= rows else 0
    return horizontal + vertical


#: (mask, ship) states the exact count of Battleship fleets may visit before it falls back to
#: the product bound.  Past it there are over 10^5 partial fleets per player, so over 10^10 tree
#: nodes: the game is refused whichever count is used.
_FLEET_STATE_LIMIT = 200_000


def _placement_masks(rows: int, cols: int, length: int) -> list[int]:
    """Cell masks of every placement of a ship (as :class:`games.battleship._Placements`)."""
    masks = []
    for vertical in ([False] if length <= cols else []) + ([True] if 1 < length <= rows else []):
        for r in range(rows - (length - 1 if vertical else 0)):
            for c in range(cols - (0 if vertical else length - 1)):
                m = 0
                for i in range(length):
                    rr, cc = (r + i, c) if vertical else (r, c + i)
                    m |= 1 << (rr * cols + cc)
                masks.append(m)
    return masks


def _fleet_prefixes(rows: int, cols: int, sizes: list[int]) -> list[int] | None:
    """``F[k]``: the placements of the first ``k`` ships of one player that can still be
    completed to a whole fleet (the legal prefixes of the placement phase), for k = 0..len;
    None when counting them would visit more than :data:`_FLEET_STATE_LIMIT` states."""
    masks = [_placement_masks(rows, cols, s) for s in sizes]
    m = len(sizes)
    visited = 0

    class TooMany(Exception):
        pass

    @cache
    def completable(k: int, occupied: int) -> bool:
        nonlocal visited
        visited += 1
        if visited > _FLEET_STATE_LIMIT:
            raise TooMany
        return k == m or any(not (occupied & p) and completable(k + 1, occupied | p) for p in masks[k])

    try:
        if not completable(0, 0):
            return [1] + [0] * m
        counts, level = [1], {0: 1}  # occupied mask -> legal prefixes reaching it
        for k in range(m):
            nxt: dict[int, int] = {}
            for occupied, ways in level.items():
                for p in masks[k]:
                    if not occupied & p and completable(k + 1, occupied | p):
                        nxt[occupied | p] = nxt.get(occupied | p, 0) + ways
            visited += len(nxt)
            if visited > _FLEET_STATE_LIMIT:
                raise TooMany
            level = nxt
            counts.append(sum(level.values()))
        return counts
    except (TooMany, RecursionError):
        return None


def _battleship(rows: int, cols: int, ship_sizes, shots: int, **_values) -> SizeEstimate:
    sizes = list(ship_sizes) if isinstance(ship_sizes, (list, tuple)) else [ship_sizes]
    cells = rows * cols
    fleet_cells = sum(sizes)
    # Placement tree: P1 ship 1, P2 ship 1, P1 ship 2, ...  The legal prefixes of each player
    # are counted exactly (a DP over occupied cells; a placement is legal when the remaining
    # ships still fit); for very many of them the product of placement counts bounds them.
    prefixes = _fleet_prefixes(rows, cols, sizes) if cells <= 63 else None
    exact = prefixes is not None
    if prefixes is None:
        prefixes = [1]
        for length in sizes:
            prefixes.append(prefixes[-1] * _placements(rows, cols, length))
    elif prefixes[-1] == 0:
        from efce.errors import GameError

        raise GameError(f"battleship: ship_sizes {sizes} cannot all fit on a {rows}x{cols} board")
    count, total = 1, 1
    for k in range(1, len(sizes) + 1):
        for player in range(2):
            count = prefixes[k] * prefixes[k if player else k - 1]
            total += count
    fleets_squared = count

    def live(t: int) -> int:
        """Ordered sequences of t distinct shots that have not yet hit every fleet cell."""
        covering = (
            math.perm(t, fleet_cells) * math.perm(cells - fleet_cells, t - fleet_cells)
            if t >= fleet_cells
            else 0
        )
        return math.perm(cells, t) - covering

    # Shooting level j: j shots fired, alternately from Player 1 (a_j by P1, b_j by P2).  A
    # state is live when neither player has hit every cell of the other's fleet and shots
    # remain; the live states are the pairs of non-covering shot sequences.
    def shots_of(j: int) -> tuple[int, int]:
        return (j + 1) // 2, j // 2

    def live_states(j: int) -> int:
        a, b = shots_of(j)
        return live(a) * live(b) if j < 2 * shots else 0

    nodes, terminals = 0, 1 - live_states(0)
    for j in range(1, 2 * shots + 1):
        a, b = shots_of(j - 1)
        level = live_states(j - 1) * (cells - (a if (j - 1) % 2 == 0 else b))
        nodes += level
        terminals += level - live_states(j)
    return SizeEstimate(total + fleets_squared * nodes, fleets_squared * terminals, 2, exact)


_ESTIMATORS = {}


# ------------------------------------------------------------------------------ Leduc
def _leduc(
    players: int,
    ranks: int,
    suits: int | None,
    raise_sizes,
    max_raises: int | None,
    raises_per_player: int | None,
) -> SizeEstimate:
    """Mirrors the betting rules of :func:`games.leduc.leduc`: a betting state is (player to
    act, folded players, players who matched the stake, raises in the round, raises per
    player, calls since the last raise); the tree below a state depends on nothing else."""
    n, r = players, ranks
    s = n if suits is None else suits
    total_cap = math.inf if max_raises is None else max_raises
    player_cap = math.inf if raises_per_player is None else raises_per_player
    everyone = (1 << n) - 1
    visited = 0

    class TooMany(Exception):
        pass

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
        if visited > _LEDUC_STATE_LIMIT:
            raise TooMany
        nodes, terminals, to_board = 1, 0, {}
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
    if n > 64 and min(total_cap, player_cap) > 0:  # too many players to count the betting
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
    except (TooMany, RecursionError):
        # At least one node per distinct betting state visited, for every deal.
        lower = deals * _LEDUC_STATE_LIMIT
        return SizeEstimate(lower, lower, n, exact=False, lower_bound=True)


_ESTIMATORS.update(
    {
        "kuhn": _kuhn,
        "goofspiel": _goofspiel,
        "sheriff": _sheriff,
        "battleship": _battleship,
        "leduc": _leduc,
        "farina-fig1": lambda: SizeEstimate(17, 10, 2),
        "farina-fig2": lambda: SizeEstimate(7, 4, 2),
    }
)
