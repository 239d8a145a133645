"""Small array helpers shared by every layer."""

from __future__ import annotations

import numba
import numpy as np

#: Index compiled hot loops through ``U(i)`` where ``i`` is known to be non-negative: numba wraps
#: a negative signed index around, and the test this costs at every access (and the vectorization
#: it blocks) made the payoff operator's loops about twice as slow (small Battleship: 3.7 → 1.8 ns
#: per nonzero) and the chain passes ~16% slower (45.7 → 38.2 ms per RECOMMEND on its Ξ chain).
U = np.uint64


def concat_ranges(starts, lengths) -> np.ndarray:
    """``concatenate([arange(s, s + l) for s, l in zip(starts, lengths)])``, vectorized."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(np.asarray(starts, dtype=np.int64) - offsets, lengths) + np.arange(total, dtype=np.int64)


@numba.njit(inline="always")
def balanced_part(cum_work, part, parts):
    """Items ``[lo, hi)`` of part ``part`` of ``parts`` with about equal work, where
    ``cum_work[i]`` is the work of items ``0 .. i-1`` (``len(cum_work)`` = items + 1): the
    parts cover every item once, in order, for compiled kernels that split a loop by work."""
    n = len(cum_work) - 1
    total = cum_work[n]
    lo = 0 if part == 0 else np.searchsorted(cum_work, (total * part) // parts, side="right") - 1
    hi = (
        n if part == parts - 1 else np.searchsorted(cum_work, (total * (part + 1)) // parts, side="right") - 1
    )
    return lo, hi


@numba.njit(inline="always")
def lower_bound(arr, lo, hi, value):
    """First ``k`` in ``[lo, hi)`` with ``arr[k] >= value`` (``hi`` if none): binary search in
    the sorted slice ``arr[lo:hi]``, for compiled kernels."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if arr[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(inline="always")
def find_in_row(indptr, indices, row, value):
    """Position of ``value`` among the sorted column indices of CSR row ``row``, or -1."""
    hi = indptr[row + 1]
    k = lower_bound(indices, indptr[row], hi, value)
    return k if k < hi and indices[k] == value else -1


#: Bytes kept free after each row of :func:`thread_rows`: two cache lines, so no line that one
#: thread writes (nor the line the adjacent-line prefetcher pairs with it) holds another
#: thread's row.
THREAD_ROW_GAP = 128


def thread_rows(width: int, dtype=np.float64) -> np.ndarray:
    """Per-thread scratch for compiled parallel kernels: one row per thread of numba's pool
    (``NUMBA_NUM_THREADS``), each row's first ``width`` slots usable.

    Rows of a plain ``(threads, width)`` array share cache lines when ``width`` is small (Ξ's
    widest simplex on Battleship has 6 entries: 48-byte rows), and every write to one thread's
    row then evicts the line from the other core — false sharing, which made the two-thread
    OBSERVELOSS pass on medium Battleship slower than the one-thread one (151 against 166 ms;
    with rows apart, 103).  Here each row is followed by :data:`THREAD_ROW_GAP` unused bytes.

    Returns
    -------
    ndarray
        Uninitialized, shape ``(NUMBA_NUM_THREADS, stride)`` with ``stride ≥ width``; kernels
        use ``rows[p, :width]``.
    """
    itemsize = np.dtype(dtype).itemsize
    gap = -(-THREAD_ROW_GAP // itemsize)
    stride = -(-max(int(width), 1) // gap) * gap + gap
    return np.empty((int(numba.config.NUMBA_NUM_THREADS), stride), dtype=dtype)
