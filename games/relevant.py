"""Connected information sets and relevant sequence pairs of two-player games.

Farina, Ling, Fang, Sandholm 2019, Definitions 1 and 2:

* ``I1 ⇌ I2`` (connected) iff some node of ``I1`` lies on the path to some node of ``I2`` or
  vice versa;
* ``(σ1, σ2)`` is relevant iff one of them is the empty sequence, or ``σ1 = (I1, a1)``,
  ``σ2 = (I2, a2)`` with ``I1 ⇌ I2``.

Everything here is an array program: with perfect recall, the infosets of player 1 above a node
``v`` are exactly the infosets along the chain of ``σ1(v)``, so the connected pairs are found by
deduplicating ``(I2(v), σ1(v))`` over player-2 nodes (and symmetrically) and walking the short
sequence chains upwards in vectorized steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from efce.errors import GameError
from efce.games.resources.compiled import compiled
from efce.interrupts import check_stop

from .arrays import find_in_row
from .game import Game


def require_two_players(game: Game, what: str) -> None:
    if game.num_players != 2:
        raise GameError(f"{what} is defined for two-player games; {game.name} has {game.num_players} players")


#: Steps of the compiled walks below between two looks at the stop request (about 0.1 s).
WALK_CHUNK_STEPS = 2**24


def _nodes_by_infoset(game: Game, player: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``(indptr, nodes)`` of the nodes of each infoset of ``player`` (a counting sort:
    linear in the nodes, where an argsort of them would not be)."""
    return _counting_sort(game.player, game.infoset, player, game.sequences(player).num_infosets)


@compiled(cache=True, nogil=True)
def _counting_sort(player, infoset, p, num_infosets):
    indptr = np.zeros(num_infosets + 1, np.int64)
    for v in range(len(player)):
        if player[v] == p:
            indptr[infoset[v] + 1] += 1
    for i in range(num_infosets):
        indptr[i + 1] += indptr[i]
    fill = indptr[:-1].copy()
    nodes = np.empty(indptr[-1], np.int64)
    for v in range(len(player)):
        if player[v] == p:
            nodes[fill[infoset[v]]] = v
            fill[infoset[v]] += 1
    return indptr, nodes


@compiled(cache=True, nogil=True)
def _walk_above(lo, max_steps, indptr, nodes, node_seq, seq_infoset, parent_seq, walked, out, fill):
    """For the actor infosets ``I = lo, lo+1, ...``: every infoset ``J`` of the other player on the
    path to some node of ``I`` (the infosets on the chains of the nodes' sequences ``σ(v)``),
    each once per ``I``.  ``walked[J] == I`` marks the ``J`` reached already, so a walk up a chain
    stops at the first one (the rest of that chain was walked before): the work is the size of
    the answer plus one step per node.  With ``fill`` None, counts the answers of each ``J`` into
    ``out``; else writes ``I`` at ``out[fill[J]]`` (the answers grouped by ``J``).  Returns the
    next ``I`` after about ``max_steps`` steps."""
    steps = 0
    num = len(indptr) - 1
    i = lo
    while i < num and steps < max_steps:
        for k in range(indptr[i], indptr[i + 1]):
            s = node_seq[nodes[k]]
            steps += 1
            while s > 0:
                J = seq_infoset[s]
                if walked[J] == i:
                    break
                walked[J] = i
                if fill is None:
                    out[J] += 1
                else:
                    out[fill[J]] = i
                    fill[J] += 1
                steps += 1
                s = parent_seq[J]
        i += 1
    return i


@compiled(cache=True, nogil=True)
def _union_below_and_above(
    lo,
    max_steps,
    below_ptr,
    below,
    indptr,
    nodes,
    node_seq,
    seq_infoset,
    parent_seq,
    walked,
    member,
    out,
    fill,
):
    """For the infosets ``I1 = lo, ...`` of player 1: the union of the player-2 infosets below
    ``I1`` (``below[below_ptr[I1]:below_ptr[I1+1]]``, distinct) and those above it (the walk of
    ``_walk_above`` from ``I1``'s nodes).  Counts into ``out[I1]`` (``fill`` None) or writes
    each answer at ``out[fill[I1]]``, sorted; returns the next ``I1`` after about ``max_steps``."""
    steps = 0
    num = len(indptr) - 1
    i = lo
    while i < num and steps < max_steps:
        start = 0 if fill is None else fill[i]
        count = 0
        for k in range(below_ptr[i], below_ptr[i + 1]):
            J = below[k]
            member[J] = i
            if fill is not None:
                out[start + count] = J
            count += 1
            steps += 1
        for k in range(indptr[i], indptr[i + 1]):
            s = node_seq[nodes[k]]
            steps += 1
            while s > 0:
                J = seq_infoset[s]
                if walked[J] == i:
                    break
                walked[J] = i
                if member[J] != i:
                    member[J] = i
                    if fill is not None:
                        out[start + count] = J
                    count += 1
                steps += 1
                s = parent_seq[J]
        if fill is None:
            out[i] = count
        else:
            out[start : start + count].sort()
        i += 1
    return i


def _in_chunks(kernel, count: int, what: str, *args) -> None:
    """Run ``kernel(lo, WALK_CHUNK_STEPS, *args) -> next lo`` until ``count``, looking at the stop
    request between two calls (a compiled call cannot be interrupted)."""
    lo = 0
    while lo < count:
        check_stop(what)
        lo = kernel(lo, WALK_CHUNK_STEPS, *args)
    check_stop(what)


def connected_infosets(game: Game) -> tuple[np.ndarray, np.ndarray]:
    """All connected infoset pairs ``(I1, I2)`` (Definition 1), sorted by ``I1`` then ``I2``
    (computed once per game: :attr:`games.game.Game.connected_infosets`)."""
    require_two_players(game, "connected information sets")
    return game.connected_infosets


def find_connected_infosets(game: Game) -> tuple[np.ndarray, np.ndarray]:
    """Compute what :func:`connected_infosets` returns (call that instead: it is kept).

    ``I1 ⇌ I2`` iff an infoset lies on the path to a node of the other: with perfect recall the
    infosets of player 1 above a node ``v`` are those on the chain of ``σ1(v)`` (and the same for
    player 2).  Compiled walks up those chains, grouped by infoset, find each answer once
    (``_walk_above``), in time linear in the nodes and the pairs; a stop request is honoured
    between chunks of them.

    Raises
    ------
    Interrupted
        A stop was requested.
    """
    require_two_players(game, "connected information sets")
    what = f"finding the connected infosets of {game.name}"
    s1, s2 = game.sequences(0), game.sequences(1)
    n1, n2 = s1.num_infosets, s2.num_infosets
    chains = [
        (sp.seq_infoset.astype(np.int64), sp.infoset_parent_seq.astype(np.int64), sp.num_infosets)
        for sp in (s1, s2)
    ]
    # Player 1's infosets above each infoset of player 2, grouped by the player-1 infoset: the
    # player-2 infosets *below* each I1.
    indptr2, nodes2 = _nodes_by_infoset(game, 1)
    seq1 = game.node_sequences(0)
    count_below = np.zeros(n1, np.int64)
    walked = np.full(n1, -1, np.int64)
    _in_chunks(_walk_above, n2, what, indptr2, nodes2, seq1, *chains[0][:2], walked, count_below, None)
    below_ptr = np.zeros(n1 + 1, np.int64)
    np.cumsum(count_below, out=below_ptr[1:])
    del count_below
    below = np.empty(below_ptr[-1], np.int32)
    walked[:] = -1
    fill = below_ptr[:-1].copy()
    _in_chunks(_walk_above, n2, what, indptr2, nodes2, seq1, *chains[0][:2], walked, below, fill)
    del indptr2, nodes2, seq1, fill, walked
    # Union with player 2's infosets above each I1.
    indptr1, nodes1 = _nodes_by_infoset(game, 0)
    seq2 = game.node_sequences(1)
    walked = np.full(n2, -1, np.int64)
    member = np.full(n2, -1, np.int64)
    sizes = np.zeros(n1, np.int64)
    args = (below_ptr, below, indptr1, nodes1, seq2, *chains[1][:2], walked, member)
    _in_chunks(_union_below_and_above, n1, what, *args, sizes, None)
    ptr = np.zeros(n1 + 1, np.int64)
    np.cumsum(sizes, out=ptr[1:])
    conn2 = np.empty(ptr[-1], np.int32)
    walked[:] = -1
    member[:] = -1
    _in_chunks(_union_below_and_above, n1, what, *args, conn2, ptr[:-1].copy())
    conn1 = np.repeat(np.arange(n1, dtype=np.int32), sizes)
    for arr in (conn1, conn2):
        arr.setflags(write=False)
    return conn1, conn2


@compiled(cache=True, nogil=True)
def _chain_weights(parent_seq, first_seq, num_actions, num_sequences):
    """``W[σ]``: the actions of the infosets on the chain of ``σ`` (its own included), summed:
    the sequences of the other player a pair with ``σ``'s infosets can take."""
    W = np.zeros(num_sequences, np.int64)
    for J in range(len(parent_seq)):  # top-down: a parent sequence is done before
        w = W[parent_seq[J]] + num_actions[J]
        for a in range(num_actions[J]):
            W[first_seq[J] + a] = w
    return W


@compiled(cache=True, nogil=True)
def _bound_terms(indptr, nodes, node_seq, num_actions, W, seen):
    """Over the infosets ``I`` of one player: ``Σ_I |A_I| Σ_σ W[σ]`` and ``Σ_I |A_I| max_σ W[σ]``,
    ``σ`` over the distinct other player's sequences of ``I``'s nodes (``seen`` marks them)."""
    upper = 0
    lower = 0
    for i in range(len(indptr) - 1):
        total = 0
        best = 0
        for k in range(indptr[i], indptr[i + 1]):
            s = node_seq[nodes[k]]
            if seen[s] == i:
                continue
            seen[s] = i
            total += W[s]
            best = max(best, W[s])
        upper += num_actions[i] * total
        lower += num_actions[i] * best
    return upper, lower


def relevant_pair_bounds(game: Game) -> tuple[int, int]:
    """Bounds ``(low, high)`` on :func:`count_relevant_pairs` from the tree's structure alone, in
    time linear in the nodes and sequences, without finding a single connected pair: for the
    infosets of each player, the pairs with the infosets above their nodes are at most the sum
    and at least the largest of the chains' weights (``_chain_weights``); the connected
    pairs are those of both directions.  On a deep chain of alternating moves both bounds are
    exact.  They let a game with far too many pairs be refused at once."""
    require_two_players(game, "relevant sequence pairs")
    spaces = (game.sequences(0), game.sequences(1))
    upper = lower = 0
    for actor in (0, 1):
        other = spaces[1 - actor]
        W = _chain_weights(
            other.infoset_parent_seq.astype(np.int64),
            other.infoset_first_seq.astype(np.int64),
            other.infoset_num_actions.astype(np.int64),
            other.num_sequences,
        )
        indptr, nodes = _nodes_by_infoset(game, actor)
        seen = np.full(other.num_sequences, -1, np.int64)
        up, low = _bound_terms(
            indptr,
            nodes,
            game.node_sequences(1 - actor),
            spaces[actor].infoset_num_actions.astype(np.int64),
            W,
            seen,
        )
        upper += int(up)
        lower = max(lower, int(low))
    singles = spaces[0].num_sequences + spaces[1].num_sequences - 1
    return lower + singles, upper + singles


@dataclass(frozen=True, eq=False)
class RelevantPairs:
    """The relevant sequence pairs of a two-player game in CSR form, sorted by ``(σ1, σ2)``.

    Row ``σ1`` holds the ``σ2`` with ``(σ1, σ2)`` relevant: ``sigma2[indptr[σ1]:indptr[σ1+1]]``.
    The pair at position ``k`` is ``(sigma1[k], sigma2[k])``.
    """

    indptr: np.ndarray  # int64[|Σ1| + 1]
    sigma2: np.ndarray  # int32[num_pairs]
    num_sequences: tuple[int, int]

    def __len__(self) -> int:
        return len(self.sigma2)

    @cached_property
    def sigma1(self) -> np.ndarray:
        counts = np.diff(self.indptr)
        return np.repeat(np.arange(self.num_sequences[0], dtype=np.int32), counts)

    @cached_property
    def keys(self) -> np.ndarray:
        """Sorted int64 keys ``σ1 · |Σ2| + σ2`` (for vectorized lookups)."""
        return self.sigma1.astype(np.int64) * self.num_sequences[1] + self.sigma2

    def index(self, sigma1: npt.ArrayLike, sigma2: npt.ArrayLike, *, missing: str = "raise") -> np.ndarray:
        """Positions of the pairs ``(sigma1, sigma2)``; ``missing="raise"`` or ``"-1"``.

        Bisection inside the CSR row of each ``sigma1``: no per-pair key array is needed."""
        s1 = np.asarray(sigma1)
        s2 = np.asarray(sigma2)
        shape = np.broadcast(s1, s2).shape
        b1 = np.ascontiguousarray(np.broadcast_to(s1, shape).ravel(), dtype=np.int64)
        b2 = np.ascontiguousarray(np.broadcast_to(s2, shape).ravel(), dtype=np.int64)
        inside = (b1 >= 0) & (b1 < self.num_sequences[0]) & (b2 >= 0) & (b2 < self.num_sequences[1])
        pos = np.full(len(b1), -1, dtype=np.int64)
        if inside.all():
            pos = _positions(self.indptr, self.sigma2, b1, b2)
        elif inside.any():
            pos[inside] = _positions(self.indptr, self.sigma2, b1[inside], b2[inside])
        if missing == "raise" and np.any(pos < 0):
            bad = int(np.flatnonzero(pos < 0)[0])
            raise KeyError(f"({b1[bad]}, {b2[bad]}) is not a relevant sequence pair")
        return pos.reshape(shape) if shape else pos[0]

    def contains(self, sigma1: npt.ArrayLike, sigma2: npt.ArrayLike) -> np.ndarray:
        """Whether each ``(sigma1, sigma2)`` is a relevant pair (bool, shaped as the broadcast)."""
        return self.index(sigma1, sigma2, missing="-1") >= 0


def pair_positions(pairs: RelevantPairs, sigma1: npt.ArrayLike, sigma2: npt.ArrayLike) -> np.ndarray:
    """Positions of pairs known to be relevant (raises ``KeyError`` otherwise), int64."""
    return np.atleast_1d(pairs.index(sigma1, sigma2))


@compiled(cache=True, nogil=True)
def _positions(indptr, sigma2, s1, s2):
    out = np.empty(len(s1), np.int64)
    for k in range(len(s1)):
        out[k] = find_in_row(indptr, sigma2, s1[k], s2[k])
    return out


#: Peak bytes per relevant pair of :func:`relevant_pairs` and the lookups cached on the result
#: (``sigma2`` int32, ``sigma1`` int32, ``keys`` int64, and a temporary of the same size).
BYTES_PER_PAIR = 24


def relevant_pairs(game: Game, memory_budget: int | None = None) -> RelevantPairs:
    """The relevant sequence pairs of Definition 2, as compact arrays.

    The pairs are counted first (from the connected infoset pairs, linear in the tree) and a
    game whose pairs alone exceed ``memory_budget`` (bytes; default
    :func:`games.resources.memory.check_budget`'s share of the RAM) is refused before they are built:
    a ``.efg`` file has no size estimate before it is read, and its pairs grow quadratically.

    Raises
    ------
    games.resources.memory.MemoryBudgetExceeded
        With the number of pairs and the bytes they need.
    """
    from efce.games.resources.memory import check_budget

    count = count_relevant_pairs(game)
    check_budget(BYTES_PER_PAIR * count, f"the {count:,} relevant pairs of {game.name}", memory_budget)
    s1, s2 = game.sequences(0), game.sequences(1)
    conn1, conn2 = connected_infosets(game)
    # Row of any sequence (I1, a): ∅ followed by the sequences of every I2 connected to I1, in
    # increasing order (infosets are sorted and their sequence ranges are increasing).
    per_infoset = np.bincount(conn1, weights=s2.infoset_num_actions[conn2], minlength=s1.num_infosets)
    row_len_infoset = 1 + per_infoset.astype(np.int64)
    seq_row_len = np.empty(s1.num_sequences, dtype=np.int64)
    seq_row_len[0] = s2.num_sequences
    seq_row_len[1:] = row_len_infoset[s1.seq_infoset[1:]]
    indptr = np.zeros(s1.num_sequences + 1, dtype=np.int64)
    np.cumsum(seq_row_len, out=indptr[1:])

    sigma2 = _fill_rows(
        indptr,
        s1.seq_infoset.astype(np.int64),
        conn1.astype(np.int64),
        conn2.astype(np.int64),
        s2.infoset_first_seq.astype(np.int64),
        s2.infoset_num_actions.astype(np.int64),
        s1.num_infosets,
        s2.num_sequences,
    )
    return RelevantPairs(indptr, sigma2, (s1.num_sequences, s2.num_sequences))


@compiled(cache=True, nogil=True)
def _fill_rows(indptr, seq_infoset1, conn1, conn2, first2, num_actions2, num_infosets1, num_sequences2):
    """Row ∅ holds every σ2; row (I1, a) holds ∅ then the sequences of each I2 connected to I1
    (``conn1`` sorted, so rows come out sorted)."""
    sigma2 = np.empty(indptr[-1], np.int32)
    for s in range(num_sequences2):
        sigma2[s] = s
    conn_start = np.zeros(num_infosets1 + 1, np.int64)
    for k in range(len(conn1)):
        conn_start[conn1[k] + 1] += 1
    for i in range(num_infosets1):
        conn_start[i + 1] += conn_start[i]
    for s1 in range(1, len(seq_infoset1)):
        i1 = seq_infoset1[s1]
        pos = indptr[s1]
        sigma2[pos] = 0
        pos += 1
        for k in range(conn_start[i1], conn_start[i1 + 1]):
            j = conn2[k]
            for b in range(num_actions2[j]):
                sigma2[pos] = first2[j] + b
                pos += 1
    return sigma2


#: Bytes per connected infoset pair of :func:`find_connected_infosets` (the pairs, int32 twice,
#: and the grouped answers of its first walk, int32).
BYTES_PER_CONNECTED_PAIR = 12


def count_relevant_pairs(game: Game, memory_budget: int | None = None) -> int:
    """Number of relevant pairs without materializing them.

    From the connected infoset pairs when they are known or their bounds do not meet
    (:func:`relevant_pair_bounds`, which settle a chain-like game at once, however many pairs it
    has); finding the connected pairs is refused when even the fewest it could hold exceed
    ``memory_budget`` (bytes; default :func:`games.resources.memory.check_budget`'s share).

    Raises
    ------
    games.resources.memory.MemoryBudgetExceeded
        Too many connected pairs to count.
    Interrupted
        A stop was requested while they were being found.
    """
    s1, s2 = game.sequences(0), game.sequences(1)
    if "connected_infosets" not in vars(game):  # not found yet: bound them first
        low, high = relevant_pair_bounds(game)
        if low == high:
            return low
        from efce.games.resources.memory import check_budget

        widest = max(
            1, int(s1.infoset_num_actions.max(initial=1)) * int(s2.infoset_num_actions.max(initial=1))
        )
        fewest = (low - s1.num_sequences - s2.num_sequences + 1) // widest
        check_budget(
            BYTES_PER_CONNECTED_PAIR * fewest,
            f"counting the relevant pairs of {game.name} (at least {low:,})",
            memory_budget,
        )
    conn1, conn2 = connected_infosets(game)
    both = int((s1.infoset_num_actions[conn1].astype(np.int64) * s2.infoset_num_actions[conn2]).sum())
    return both + s1.num_sequences + s2.num_sequences - 1
