"""Definition 3 checked without building its matrix.

The explicit system of :func:`polytopes.vsf_constraints` has ~2.5 nonzeros per relevant pair plus
its CSR indices: on the large Battleship instance (111M pairs) it alone would need several GiB.
The same constraints can be read off the relevant-pair CSR (Farina, Ling, Fang, Sandholm 2019,
Definition 3; von Stengel and Forges 2008):

* ``ξ[∅, ∅] = 1`` and ``ξ ≥ 0``;
* player 1, infoset ``I`` with parent sequence ``σ(I)``: the rows of the sequences ``(I, a)``
  share one column pattern (``∅`` and the sequences of every ``J ⇌ I``), so for every column
  ``σ2`` of that pattern ``Σ_a ξ[(I, a), σ2] = ξ[σ(I), σ2]``, with the right-hand side found by
  merging the pattern into the (sorted, larger) row of ``σ(I)``;
* player 2, infoset ``J``: in every row ``σ1`` that holds ``J``'s sequences they are adjacent,
  and ``Σ_b ξ[σ1, (J, b)] = ξ[σ1, σ(J)]`` with ``σ(J)`` found by bisection in the same row.

This reads only the pairs and the two sequence spaces — never the chain — so it remains an
independent check of the chain's iterates, in ``O(#pairs · log)`` time and no extra memory.
Player 1's infosets are split into ranges of about equal pair counts, one per numba thread; the
result is a maximum, so it is the same on any number of threads.
"""

from __future__ import annotations

import numba
import numpy as np

from efce.games.arrays import balanced_part, lower_bound
from efce.games.game import Game
from efce.games.relevant import RelevantPairs


class FeasibilityCheck:
    """``check(values, index_map=None, scale=1.0)`` → the largest violation of Definition 3 by
    ``ξ[q] = scale · values[index_map[q]]`` (``values[q]`` without a map), i.e. the same number
    as ``vsf_constraints(game, pairs).max_violation(ξ)``; :meth:`violations` checks several
    plans (e.g. a solver's iterate and its running average) in one pass over the pairs."""

    def __init__(self, game: Game, pairs: RelevantPairs):
        s1, s2 = game.sequences(0), game.sequences(1)
        self.pairs = pairs
        self._first1 = s1.infoset_first_seq.astype(np.int64)
        self._nact1 = s1.infoset_num_actions.astype(np.int64)
        self._parent1 = s1.infoset_parent_seq.astype(np.int64)
        self._seq_infoset2 = s2.seq_infoset.astype(np.int64)
        self._nact2 = s2.infoset_num_actions.astype(np.int64)
        self._parent2 = s2.infoset_parent_seq.astype(np.int64)
        self._no_map = np.zeros(0, dtype=np.int32)
        # Pairs in the rows of each infoset of player 1, cumulated: the work split among threads.
        indptr = np.asarray(pairs.indptr, dtype=np.int64)
        per_infoset = indptr[self._first1 + self._nact1] - indptr[self._first1]
        self._cum_work = np.concatenate(([0], np.cumsum(per_infoset)))

    def __call__(self, values: np.ndarray, index_map: np.ndarray | None = None, scale: float = 1.0) -> float:
        return self.violations((values,), index_map, (scale,))[0]

    def violations(self, arrays, index_map: np.ndarray | None = None, scales=None) -> tuple[float, ...]:
        """The violation of each plan ``ξ_r[q] = scales[r] · arrays[r][index_map[q]]`` (all in
        the same order), in one pass: the pairs and the map are read once for all of them.

        Raises
        ------
        ValueError
            Arrays of the wrong length (without a map: not one value per relevant pair).
        AssertionError
            The relevant pairs miss a parent pair of Definition 3 (a broken pair set).
        """
        arrays = tuple(np.ascontiguousarray(a, dtype=np.float64) for a in arrays)
        scales = np.ones(len(arrays)) if scales is None else np.asarray(scales, dtype=np.float64)
        index_map = self._no_map if index_map is None else index_map
        expected = len(self.pairs) if len(index_map) == 0 else len(arrays[0])
        if any(len(a) != expected for a in arrays) or len(scales) != len(arrays):
            raise ValueError(
                f"ξ has {[len(a) for a in arrays]} entries, expected {expected}"
                + (" relevant pairs" if len(index_map) == 0 else "")
            )
        worst, bad = _max_violation(
            self.pairs.indptr,
            self.pairs.sigma2,
            self._first1,
            self._nact1,
            self._parent1,
            self._seq_infoset2,
            self._nact2,
            self._parent2,
            arrays,
            index_map,
            scales,
            self._cum_work,
            numba.get_num_threads(),
        )
        if bad >= 0:
            raise AssertionError(f"row {bad} of the relevant pairs misses a parent pair of Definition 3")
        return tuple(float(w) for w in worst)


@numba.njit(inline="always")
def _position(index_map, q):
    return q if len(index_map) == 0 else index_map[q]


@numba.njit(inline="always")
def _read_rows(arrays, scales, index_map, lo, hi, out):
    """``out[r, q - lo] = ξ_r[q]`` for the pairs ``q`` of one row, every array at once."""
    for q in range(lo, hi):
        e = _position(index_map, q)
        for r in range(len(arrays)):
            out[r, q - lo] = scales[r] * arrays[r][e]


@numba.njit(inline="always")
def _row_violations(sigma2, lo, hi, row_vals, seq_infoset2, nact2, parent2, worst):
    """Player 2's constraints inside one row, ``Σ_b ξ[σ1, (J, b)] = ξ[σ1, σ(J)]``, for every
    plan (``worst[r]`` raised); False if a parent is missing."""
    k = lo
    while k < hi:
        col = sigma2[k]
        if col == 0:
            k += 1
            continue
        j = seq_infoset2[col]
        nb = nact2[j]
        target = parent2[j]
        a = lower_bound(sigma2, lo, hi, target)
        if a >= hi or sigma2[a] != target:
            return False
        for r in range(row_vals.shape[0]):
            lhs = 0.0
            for b in range(nb):
                lhs += row_vals[r, k + b - lo]
            d = abs(lhs - row_vals[r, a - lo])
            if d > worst[r]:
                worst[r] = d
        k += nb
    return True


@numba.njit(inline="always")
def _infoset_violations(
    inf,
    indptr,
    sigma2,
    first1,
    nact1,
    parent1,
    seq_infoset2,
    nact2,
    parent2,
    arrays,
    index_map,
    scales,
    row_vals,
    col_sum,
    worst,
):
    """The constraints of player 1's infoset ``inf`` (its rows' player-2 constraints and the
    column sums against the parent row), ``worst[r]`` raised per plan; the bad row or -1."""
    f = first1[inf]
    width = indptr[f + 1] - indptr[f]
    n = len(arrays)
    for r in range(n):
        for o in range(width):
            col_sum[r, o] = 0.0
    for a in range(nact1[inf]):
        lo, hi = indptr[f + a], indptr[f + a + 1]
        _read_rows(arrays, scales, index_map, lo, hi, row_vals)
        if not _row_violations(sigma2, lo, hi, row_vals, seq_infoset2, nact2, parent2, worst):
            return f + a
        for r in range(n):
            for o in range(width):
                col_sum[r, o] += row_vals[r, o]
    # Player 1: Σ_a ξ[(I, a), σ2] = ξ[σ(I), σ2] over the shared pattern, merged into σ(I)'s row.
    lo = indptr[f]
    par = parent1[inf]
    q, q_end = indptr[par], indptr[par + 1]
    for o in range(width):
        col = sigma2[lo + o]
        while q < q_end and sigma2[q] < col:
            q += 1
        if q >= q_end or sigma2[q] != col:
            return par
        e = _position(index_map, q)
        for r in range(n):
            d = abs(col_sum[r, o] - scales[r] * arrays[r][e])
            if d > worst[r]:
                worst[r] = d
    return -1


@numba.njit(parallel=True, cache=True)
def _max_violation(
    indptr,
    sigma2,
    first1,
    nact1,
    parent1,
    seq_infoset2,
    nact2,
    parent2,
    arrays,
    index_map,
    scales,
    cum_work,
    parts,
):
    """One pass over the rows, infoset by infoset of player 1 (the rows of an infoset's
    sequences are adjacent): every value of every plan is read once into a row buffer, which
    serves player 2's constraints of that row and the column sums of player 1's constraints.
    The infosets are split into ``parts`` ranges of equal pair counts (``cum_work``), one thread
    each; the first bad row in infoset order is reported, as a serial pass would.  Returns
    ``(worst per plan, bad row or -1)``."""
    n = len(arrays)
    num_rows = len(indptr) - 1
    max_width = 0
    for r in range(num_rows):
        if indptr[r + 1] - indptr[r] > max_width:
            max_width = indptr[r + 1] - indptr[r]
    worst = np.zeros(n)
    e0 = _position(index_map, 0)
    for r in range(n):
        worst[r] = abs(scales[r] * arrays[r][e0] - 1.0)
    # Row ∅ (the root of player 1): player 2's constraints only.
    row_vals = np.empty((n, max_width))
    _read_rows(arrays, scales, index_map, indptr[0], indptr[1], row_vals)
    if not _row_violations(sigma2, indptr[0], indptr[1], row_vals, seq_infoset2, nact2, parent2, worst):
        return worst, np.int64(0)
    part_worst = np.zeros((parts, n))
    part_bad = np.full(parts, -1, np.int64)
    n_values = len(arrays[0])
    for part in numba.prange(parts):
        local = part_worst[part]
        # ξ ≥ 0, in storage order (the map is a bijection).
        for r in range(n):
            lowest = 0.0
            values = arrays[r]
            for q in range((n_values * part) // parts, (n_values * (part + 1)) // parts):
                if values[q] < lowest:
                    lowest = values[q]
            if -scales[r] * lowest > local[r]:
                local[r] = -scales[r] * lowest
        lo, hi = balanced_part(cum_work, part, parts)
        buf = np.empty((n, max_width))
        sums = np.empty((n, max_width))
        for inf in range(lo, hi):
            bad = _infoset_violations(
                inf,
                indptr,
                sigma2,
                first1,
                nact1,
                parent1,
                seq_infoset2,
                nact2,
                parent2,
                arrays,
                index_map,
                scales,
                buf,
                sums,
                local,
            )
            if bad >= 0:
                part_bad[part] = bad
                break
    for part in range(parts):
        if part_bad[part] >= 0:
            return worst, part_bad[part]
        for r in range(n):
            if part_worst[part, r] > worst[r]:
                worst[r] = part_worst[part, r]
    return worst, np.int64(-1)
