"""Battleship, the general-sum benchmark of Farina, Ling, Fang and Sandholm (2019c),
"Correlation in extensive-form games: saddle-point formulation and benchmarks" (NeurIPS 2019),
with exactly the rules of OpenSpiel's ``battleship`` (``open_spiel/games/battleship/battleship.cc``,
written by the same author), ``allow_repeated_shots=False``.

Rules
-----
* Each player has her own ``rows × cols`` grid and the same fleet of ships (``ship_sizes``).
* **Placement.**  The players place their ships one at a time, alternately, Player 1 first
  (P1 ship 1, P2 ship 1, P1 ship 2, ...), ships in the order given.  One placement is one
  decision: the top-left cell and the orientation.  Horizontal placements are listed first
  (row-major by top-left cell), then vertical ones; ships of length 1 have horizontal placements
  only (no duplicate "vertical" action).  Ships of one player cannot overlap, and a placement is
  legal only if the player's remaining ships can still all be placed after it.  A placement is
  seen only by the player who makes it.
* **Shooting.**  The players then shoot alternately at the opponent's grid, Player 1 first, each
  at most ``shots`` times and never twice at the same cell.  Both players see the cell of every
  shot and its outcome: water, hit, or hit-and-sunk (OpenSpiel shows the outcome to the shooter
  and the cell to the target, who knows her own ships; the information partition is the same).
* **End.**  The game ends as soon as all ships of one player are sunk, or when both players have
  fired all their shots.
* **Payoffs** (general-sum): a player gets the total value of the opponent's ships she sank
  minus ``loss_multiplier`` times the total value of her own ships that were sunk.

Information sets are the OpenSpiel information-state strings (move number + own placements +
every shot with its outcome).  Sizes (sequences include the empty one) match the published ones:
3×2 grid (or 2×3, the game is symmetric under transposition), one ship of length 1, 3 shots:
3,787 / 11,551 infosets, 15,343 / 46,987 sequences.

Implementation: the tree is built level by level by :func:`games.generators.builder.build_game`; every
state of a level is a row of small integer arrays (ship cells and fired shots as bit masks over
the ``rows*cols <= 63`` cells), so ``expand`` is pure numpy over the whole frontier.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from numbers import Integral, Real

import numpy as np

from efce.errors import CountLimitReached, GameError
from efce.games.game import TERMINAL, Game
from efce.games.generators.builder import Expansion, build_game, edges_from_counts
from efce.games.generators.params import GameGenerator, Param
from efce.games.resources.estimate import SizeEstimate, check_size

_OUTCOMES = ("miss", "hit", "sunk")
_MAX_CELLS = 63  # cells are bits of an int64


#: Parameters of a game spec string (type and range; defaults: the function's own), read by
#: :data:`efce.games.spec.PARAMETERS`.
PARAMETERS = {
    "rows": Param("int", 1, 63),
    "cols": Param("int", 1, 63),
    "ship_sizes": Param("int list", 1, 63),
    "ship_values": Param("number list", 0, None, none=True),
    "shots": Param("int", 1, 63),
    "loss_multiplier": Param("number"),
}


def _as_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (Integral, np.integer)):
        if isinstance(value, (Real, np.floating)) and float(value).is_integer():
            return int(float(value))
        raise GameError(f"battleship: {name} must be an integer, got {value!r}")
    return int(value)


def _as_list(value, name: str) -> list:
    if isinstance(value, (str, bytes)):
        raise GameError(f"battleship: {name} must be a number or a list of numbers, got {value!r}")
    try:
        return list(value)
    except TypeError:
        return [value]


class _Placements:
    """Every placement of every ship, numbered globally (ship by ship; within a ship horizontal
    placements row-major, then vertical ones row-major), and the prefix tree of the feasible
    complete fleets of one player."""

    def __init__(self, rows: int, cols: int, sizes: list[int]):
        self.rows, self.cols, self.sizes = rows, cols, sizes
        ship: list[int] = []
        cell: list[int] = []
        vertical: list[bool] = []
        mask: list[int] = []
        self.ship_offset: list[int] = []
        for s, length in enumerate(sizes):
            self.ship_offset.append(len(ship))
            directions = ([False] if length <= cols else []) + ([True] if 1 < length <= rows else [])
            for vert in directions:
                for r in range(rows - (length - 1 if vert else 0)):
                    for c in range(cols - (0 if vert else length - 1)):
                        m = 0
                        for i in range(length):
                            rr, cc = (r + i, c) if vert else (r, c + i)
                            m |= 1 << (rr * cols + cc)
                        ship.append(s)
                        cell.append(r * cols + c)
                        vertical.append(vert)
                        mask.append(m)
        self.ship = np.array(ship, dtype=np.int64)
        self.cell = np.array(cell, dtype=np.int64)
        self.vertical = np.array(vertical, dtype=bool)
        self.mask = np.array(mask, dtype=np.int64)
        self.count = len(ship)

        # Feasible complete fleets: rows of global placement ids, lexicographically sorted.
        fleets = np.zeros((1, 0), dtype=np.int64)
        occupied = np.zeros(1, dtype=np.int64)
        for s in range(len(sizes)):
            ids = np.flatnonzero(self.ship == s)
            ok = (occupied[:, None] & self.mask[ids][None, :]) == 0
            row, col = np.nonzero(ok)
            fleets = np.concatenate([fleets[row], ids[col][:, None]], axis=1)
            occupied = occupied[row] | self.mask[ids[col]]
        self.num_fleets = len(fleets)

        # Prefix tree: level k holds the distinct first-k-ship prefixes of feasible fleets;
        # the children of prefix q at level k are level-(k+1) ids child_start[k][q] + 0..count-1.
        self.child_start, self.child_count, self.place_of = [], [], []
        prefix = np.zeros(len(fleets), dtype=np.int64)
        num_prefixes = 1
        for k in range(len(sizes)):
            key = prefix * self.count + fleets[:, k]
            unique, inverse = np.unique(key, return_inverse=True)
            parent = unique // self.count
            self.place_of.append(unique % self.count)
            counts = np.bincount(parent, minlength=num_prefixes)
            self.child_count.append(counts)
            self.child_start.append(np.cumsum(counts) - counts)
            prefix = inverse.reshape(-1)
            num_prefixes = len(unique)

    def label(self, index: int) -> str:
        r, c = divmod(int(self.cell[index]), self.cols)
        if self.sizes[int(self.ship[index])] == 1:
            return f"place ({r},{c})"
        return f"place ({r},{c}) {'v' if self.vertical[index] else 'h'}"


def battleship(
    rows: int = 3,
    cols: int = 2,
    ship_sizes: int | Sequence[int] = (1,),
    ship_values: float | Sequence[float] | None = None,
    shots: int = 3,
    loss_multiplier: float = 2.0,
) -> Game:
    """Battleship (Farina et al. 2019c; OpenSpiel ``battleship`` without repeated shots).

    Parameters
    ----------
    rows, cols : int
        Grid size of each player's board (OpenSpiel ``board_height``, ``board_width``);
        at most 63 cells.
    ship_sizes : int or sequence of int
        Lengths of the ships of each player's fleet, placed in this order.
    ship_values : float or sequence of float, optional
        Value of each ship (>= 0); default 1.0 each.
    shots : int
        Shots per player (1 .. rows*cols).
    loss_multiplier : float
        A player's payoff is (value of opponent ships sunk) - loss_multiplier × (value of own
        ships sunk); 1.0 makes the game zero-sum.
    """
    rows = _as_int(rows, "rows")
    cols = _as_int(cols, "cols")
    shots = _as_int(shots, "shots")
    if rows < 1:
        raise GameError(f"battleship: rows must be at least 1, got {rows}")
    if cols < 1:
        raise GameError(f"battleship: cols must be at least 1, got {cols}")
    cells = rows * cols
    if cells > _MAX_CELLS:
        raise GameError(f"battleship: rows*cols must be at most {_MAX_CELLS}, got {cells}")
    sizes = [_as_int(s, "ship_sizes") for s in _as_list(ship_sizes, "ship_sizes")]
    if not sizes:
        raise GameError("battleship: ship_sizes must list at least one ship")
    for s in sizes:
        if s < 1:
            raise GameError(f"battleship: ship_sizes must be positive, got {s}")
        if s > max(rows, cols):
            raise GameError(
                f"battleship: ship_sizes has a ship of length {s}, longer than the {rows}x{cols} board"
            )
    if ship_values is None:
        values = [1.0] * len(sizes)
    else:
        values = _as_list(ship_values, "ship_values")
        if len(values) != len(sizes):
            raise GameError(
                f"battleship: ship_values has {len(values)} entries but ship_sizes has {len(sizes)}"
            )
        try:
            values = [float(v) for v in values]
        except (TypeError, ValueError):
            raise GameError(f"battleship: ship_values must be numbers, got {ship_values!r}") from None
        for v in values:
            if not math.isfinite(v) or v < 0:
                raise GameError(f"battleship: ship_values must be finite and >= 0, got {v}")
    if shots < 1:
        raise GameError(f"battleship: shots must be at least 1, got {shots}")
    if shots > cells:
        raise GameError(
            f"battleship: shots ({shots}) cannot exceed the number of cells ({cells}) "
            f"since repeated shots are not allowed"
        )
    try:
        loss_multiplier = float(loss_multiplier)
    except (TypeError, ValueError):
        raise GameError(f"battleship: loss_multiplier must be a number, got {loss_multiplier!r}") from None
    if not math.isfinite(loss_multiplier):
        raise GameError(f"battleship: loss_multiplier must be finite, got {loss_multiplier}")

    check_size(
        battleship_size,
        f"battleship:rows={rows},cols={cols},ship_sizes={sizes},shots={shots}",
        rows=rows,
        cols=cols,
        ship_sizes=sizes,
        shots=shots,
    )
    pl = _Placements(rows, cols, sizes)
    if pl.num_fleets == 0:
        raise GameError(f"battleship: ship_sizes {sizes} cannot all fit on a {rows}x{cols} board")
    S = len(sizes)
    P = pl.count
    values_arr = np.array(values, dtype=np.float64)
    shot_token_base = P + 1  # tokens 1..P: own placements; then (shooter, cell, outcome)
    cell_bits = np.left_shift(np.int64(1), np.arange(cells, dtype=np.int64))

    def expand(state):
        t = int(state["t"][0])
        F = len(state["t"])
        ships, fired = state["ships"], state["fired"]  # (F, 2, S) masks; (F, 2) masks of shots
        if t < 2 * S:  # placement of ship k by player p
            p, k = t % 2, t // 2
            prefix = state["prefix"]
            counts = pl.child_count[k][prefix[:, p]]
            e_parent, e_action = edges_from_counts(counts)
            child_prefix = pl.child_start[k][prefix[e_parent, p]] + e_action
            place = pl.place_of[k][child_prefix]
            new_ships = ships[e_parent]
            new_ships[:, p, k] = pl.mask[place]
            new_prefix = prefix[e_parent]
            new_prefix[:, p] = child_prefix
            obs = np.zeros((len(e_parent), 2), dtype=np.int64)
            obs[:, p] = 1 + place
            child = {
                "t": np.full(len(e_parent), t + 1, dtype=np.int64),
                "ships": new_ships,
                "fired": fired[e_parent],
                "prefix": new_prefix,
            }
            return Expansion(
                np.full(F, p, dtype=np.int64),
                np.zeros((0, 2)),
                e_parent,
                e_action,
                obs,
                child,
                edge_label=place,
            )

        j = t - 2 * S
        # sunk[:, q, s]: ship s of player q is sunk (all its cells shot by the opponent).
        sunk = (ships & ~fired[:, ::-1, None]) == 0
        all_sunk = sunk.all(axis=2).any(axis=1)
        done = all_sunk | (j >= 2 * shots)
        player = np.where(done, TERMINAL, j % 2).astype(np.int64)
        damage = sunk[done].astype(np.float64) @ values_arr  # (T, 2): value lost by each player
        payoffs = damage[:, ::-1] - loss_multiplier * damage
        live = np.flatnonzero(~done)
        if len(live) == 0:
            return Expansion(
                player,
                payoffs,
                np.zeros(0, np.int64),
                np.zeros(0, np.int64),
                np.zeros((0, 2), np.int64),
                {"t": np.zeros(0, np.int64)},
            )
        p, q = j % 2, 1 - j % 2
        free = (fired[live, p][:, None] & cell_bits[None, :]) == 0
        row, cell = np.nonzero(free)
        per_state = cells - j // 2
        e_parent = live[row]
        e_action = np.arange(len(row), dtype=np.int64) % per_state
        bit = cell_bits[cell]
        new_fired = fired[e_parent]
        new_fired[:, p] |= bit
        target = ships[e_parent, q]  # (E, S)
        covers = (target & bit[:, None]) != 0
        sinks = covers & ((target & ~new_fired[:, p][:, None]) == 0)
        outcome = covers.any(axis=1).astype(np.int64) + sinks.any(axis=1)
        token = shot_token_base + (p * cells + cell) * 3 + outcome
        obs = np.repeat(token[:, None], 2, axis=1)
        child = {
            "t": np.full(len(e_parent), t + 1, dtype=np.int64),
            "ships": ships[e_parent],
            "fired": new_fired,
        }
        return Expansion(player, payoffs, e_parent, e_action, obs, child, edge_label=P + cell)

    def cell_name(c: int) -> str:
        r, cc = divmod(int(c), cols)
        return f"({r},{cc})"

    def token_label(player: int, token: int) -> str:
        if token == 0:
            return ""
        if token <= P:
            return pl.label(token - 1)
        shooter_cell, outcome = divmod(token - shot_token_base, 3)
        shooter, c = divmod(shooter_cell, cells)
        who = "" if shooter == player else "opp "
        return f"{who}shoot {cell_name(c)} {_OUTCOMES[outcome]}"

    def action_label(player: int, code: int) -> str:
        return pl.label(code) if code < P else f"shoot {cell_name(code - P)}"

    root = {
        "t": np.zeros(1, dtype=np.int64),
        "ships": np.zeros((1, 2, S), dtype=np.int64),
        "fired": np.zeros((1, 2), dtype=np.int64),
        "prefix": np.zeros((1, 2), dtype=np.int64),
    }
    sizes_txt = ",".join(str(s) for s in sizes)
    values_txt = ",".join(f"{v:g}" for v in values)
    return build_game(
        name=(
            f"battleship:rows={rows},cols={cols},ship_sizes=[{sizes_txt}],"
            f"ship_values=[{values_txt}],shots={shots},loss_multiplier={loss_multiplier:g}"
        ),
        num_players=2,
        root_state=root,
        expand=expand,
        token_label=token_label,
        action_label=action_label,
    )


# ------------------------------------------------------------------------------ size estimate
def _placements(rows: int, cols: int, length: int) -> int:
    horizontal = rows * (cols - length + 1) if length <= cols else 0
    vertical = (rows - length + 1) * cols if 1 < length <= rows else 0
    return horizontal + vertical


#: (mask, ship) states the exact count of Battleship fleets may visit before it falls back to
#: the product bound: about 0.15 s of counting (every estimate answers within a second).  Past
#: it there are over 10^4 partial fleets per player, so over 10^8 tree nodes (30 GB at
#: :data:`~efce.games.resources.estimate.BYTES_PER_NODE`): refused by any budget below that
#: whichever count is used, and by the product bound above it.
_FLEET_STATE_LIMIT = 20_000


def _placement_masks(rows: int, cols: int, length: int) -> list[int]:
    """Cell masks of every placement of a ship (as :class:`_Placements` places them)."""
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
    None when counting them would visit more than ``_FLEET_STATE_LIMIT`` states."""
    masks = [_placement_masks(rows, cols, s) for s in sizes]
    m = len(sizes)
    visited = 0

    @cache
    def completable(k: int, occupied: int) -> bool:
        nonlocal visited
        visited += 1
        if visited > _FLEET_STATE_LIMIT:
            raise CountLimitReached
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
                raise CountLimitReached
            level = nxt
            counts.append(sum(level.values()))
        return counts
    except (CountLimitReached, RecursionError):
        return None


def battleship_size(
    rows: int, cols: int, ship_sizes: list[int] | int, shots: int, **_values: object
) -> SizeEstimate:
    """Node and terminal counts of :func:`battleship` from its parameters: exact.  The shooting
    phase has a closed form (every fleet covers the same number of cells, so how many shot
    sequences stay live does not depend on where the ships are); the legal placement prefixes are
    counted by a DP over occupied cells (a fleet that cannot fit is refused here, before
    building).  Only beyond ``_FLEET_STATE_LIMIT`` states (games far over any memory
    budget) is the placement phase bounded by the product of each ship's placement counts.

    Raises
    ------
    GameError
        The ships cannot all fit on the board.
    """
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


#: The game spec strings name (:data:`efce.games.spec.GENERATORS`).
def _resolve(**values) -> dict:
    """The parameters as :func:`battleship` reads them: one ship size is a fleet of one, and
    ``ship_values=None`` is a value of 1 per ship."""
    sizes = values["ship_sizes"]
    sizes = [sizes] if isinstance(sizes, int) else list(sizes)
    ship_values = values["ship_values"]
    if ship_values is None:
        ship_values = [1.0] * len(sizes)
    elif not isinstance(ship_values, (list, tuple)):
        ship_values = [ship_values]
    return {**values, "ship_sizes": sizes, "ship_values": list(ship_values)}


GAMES = (GameGenerator("battleship", battleship, PARAMETERS, estimate=battleship_size, resolve=_resolve),)


__all__ = ["battleship", "battleship_size"]
