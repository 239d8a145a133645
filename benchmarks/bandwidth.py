"""What this machine's memory moves: a STREAM triad ``a[i] = b[i] + s·c[i]`` over 50M float64 on
numba's threads, best of five, in GB/s (24 bytes per element: two reads and a write) on one and
two threads.  ``docs/results/memory.md`` compares it with the bytes an iteration of ``rm`` must
move.

    python benchmarks/bandwidth.py
"""

from __future__ import annotations

import json
import time

import numba
import numpy as np


@numba.njit(parallel=True)
def triad(a, b, c, s):
    for i in numba.prange(len(a)):
        a[i] = b[i] + s * c[i]


def main() -> None:
    n = 50_000_000
    a, b, c = np.zeros(n), np.ones(n), np.ones(n)
    for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
        numba.set_num_threads(threads)
        triad(a, b, c, 2.0)
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            triad(a, b, c, 2.0)
            best = min(best, time.perf_counter() - start)
        print(json.dumps({"threads": threads, "triad_gb_per_s": round(24 * n / best / 1e9, 1)}))


if __name__ == "__main__":
    main()
