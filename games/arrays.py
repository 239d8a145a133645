"""Small array helpers shared by every layer."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from efce.games.resources.compiled import compiled

#: Index compiled hot loops through ``U(i)`` where ``i`` is known to be non-negative: numba wraps
#: a negative signed index around, and the test this costs at every access (and the vectorization
#: it blocks) made the payoff operator's loops about twice as slow (small Battleship: 3.7 → 1.8 ns
#: per nonzero) and the chain passes ~16% slower (45.7 → 38.2 ms per RECOMMEND on its Ξ chain).
U = np.uint64


def concat_ranges(starts: ArrayLike, lengths: ArrayLike) -> np.ndarray:
    """``concatenate([arange(s, s + l) for s, l in zip(starts, lengths)])``, vectorized."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(np.asarray(starts, dtype=np.int64) - offsets, lengths) + np.arange(total, dtype=np.int64)


@compiled(inline="always")
def lower_bound(arr: np.ndarray, lo: int, hi: int, value: int) -> int:
    """First ``k`` in ``[lo, hi)`` with ``arr[k] >= value`` (``hi`` if none): binary search in
    the sorted slice ``arr[lo:hi]``, for compiled kernels."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if arr[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


@compiled(inline="always")
def find_in_row(indptr: np.ndarray, indices: np.ndarray, row: int, value: int) -> int:
    """Position of ``value`` among the sorted column indices of CSR row ``row``, or -1."""
    hi = indptr[row + 1]
    k = lower_bound(indices, indptr[row], hi, value)
    return k if k < hi and indices[k] == value else -1
