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

import numba
import numpy as np

from efce.errors import GameError

from .arrays import find_in_row
from .game import Game


def require_two_players(game: Game, what: str) -> None:
    if game.num_players != 2:
        raise GameError(f"{what} is defined for two-player games; {game.name} has {game.num_players} players")


def _infoset_above_pairs(game: Game, actor: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (infoset of the other player, infoset of ``actor``) where the first lies above."""
    other = 1 - actor
    nodes = np.flatnonzero(game.player == actor)
    other_space = game.sequences(other)
    num_seq = other_space.num_sequences
    key = game.infoset[nodes].astype(np.int64) * num_seq + game.node_sequences(other)[nodes]
    key = np.unique(key)
    actor_infoset, seq = key // num_seq, key % num_seq
    out_other, out_actor = [], []
    while len(seq):
        live = seq > 0
        actor_infoset, seq = actor_infoset[live], seq[live]
        infoset = other_space.seq_infoset[seq]
        out_other.append(infoset)
        out_actor.append(actor_infoset)
        seq = other_space.infoset_parent_seq[infoset]
    if not out_other:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_other).astype(np.int64), np.concatenate(out_actor).astype(np.int64)


def connected_infosets(game: Game) -> tuple[np.ndarray, np.ndarray]:
    """All connected infoset pairs ``(I1, I2)`` (Definition 1), sorted by ``I1`` then ``I2``
    (computed once per game: :attr:`Game.connected_infosets`)."""
    require_two_players(game, "connected information sets")
    return game.connected_infosets


def find_connected_infosets(game: Game) -> tuple[np.ndarray, np.ndarray]:
    """Compute what :func:`connected_infosets` returns (call that instead: it is kept)."""
    require_two_players(game, "connected information sets")
    p1_above, p2_below = _infoset_above_pairs(game, actor=1)
    p2_above, p1_below = _infoset_above_pairs(game, actor=0)
    n2 = game.sequences(1).num_infosets
    key = np.unique(np.concatenate([p1_above * n2 + p2_below, p1_below * n2 + p2_above]))
    result = ((key // n2).astype(np.int32), (key % n2).astype(np.int32))
    for arr in result:
        arr.setflags(write=False)
    return result


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

    def index(self, sigma1, sigma2, *, missing: str = "raise") -> np.ndarray:
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

    def contains(self, sigma1, sigma2) -> np.ndarray:
        return self.index(sigma1, sigma2, missing="-1") >= 0


def pair_positions(pairs: RelevantPairs, sigma1, sigma2) -> np.ndarray:
    """Positions of pairs known to be relevant (raises ``KeyError`` otherwise), int64."""
    return np.atleast_1d(pairs.index(sigma1, sigma2))


@numba.njit(cache=True)
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


@numba.njit(cache=True)
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


def count_relevant_pairs(game: Game) -> int:
    """Number of relevant pairs without materializing them."""
    s1, s2 = game.sequences(0), game.sequences(1)
    conn1, conn2 = connected_infosets(game)
    both = int((s1.infoset_num_actions[conn1].astype(np.int64) * s2.infoset_num_actions[conn2]).sum())
    return both + s1.num_sequences + s2.num_sequences - 1
