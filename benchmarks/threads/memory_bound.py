"""Why two threads give less than 2x here: the machine's memory bandwidth, and the passes that hit it.

    python memory_bound.py [GAME] [ITERATIONS]

Prints one JSON line per thread count (1, 2, 1, 2 in one process):

* ``stream_ms``: ``b = 1.0001 a + b`` over two 200 MB float64 arrays (bandwidth-bound);
* ``compute_ms``: 20 dependent divisions per element of a 20M range (compute-bound);
* per pass of one iteration of ``efce solve --method rm``'s loop on GAME (default medium
  Battleship), ms: ``A y`` (correlator's loss), Ξ OBSERVELOSS and RECOMMEND, ``Aᵀ x``
  (deviator's loss), Y OBSERVELOSS and RECOMMEND — the order of
  :meth:`solvers.methods.selfplay.SelfPlay.step`.
"""

import json
import sys
import time

import numba
import numpy as np
from numba import njit, prange

from efce.games.spec import make_game
from efce.solvers.methods.efce import build_efce_model, saddle_point_play
from efce.solvers.regret.engine import minimizer_factory

MEDIUM = "battleship:rows=3,cols=2,ship_sizes=[1],shots=4"


@njit(parallel=True, cache=True)
def stream(a, b):
    for i in prange(a.size):
        b[i] = a[i] * 1.0001 + b[i]


@njit(parallel=True, cache=True)
def compute(n):
    total = 0.0
    for i in prange(n):
        x = i * 1e-7
        for _ in range(20):
            x = x * 0.999 + 1e-3 / (1.0 + x)
        total += x
    return total


def best_of(f, repeats=5):
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        f()
        times.append(time.perf_counter() - started)
    return round(min(times) * 1e3, 1)


def main(spec: str, iterations: int) -> None:
    a = np.ones(25_000_000)
    b = np.zeros_like(a)
    stream(a, b)
    compute(1000)
    game = make_game(spec)
    model = build_efce_model(game)
    play = saddle_point_play(model, minimizer_factory("prm+", None, None))
    (xi, y), (loss_xi, loss_y), (x, z) = play.engines, play.losses, play.points
    for t in range(1, 11):  # past the first iterations' all-uniform points
        play.step(t)
    for threads in (1, 2, 1, 2):
        numba.set_num_threads(threads)
        passes = dict.fromkeys(
            ("A y", "Xi observe", "Xi recommend", "A^T x", "Y observe", "Y recommend"), 0.0
        )
        for t in range(11, 11 + iterations):
            steps = (
                (lambda: loss_xi(z, x)),
                (lambda: xi.observe(x, overwrite=True)),
                (lambda t=t: xi.recommend(out=x, accumulate=(play.sums[0], float(t)))),
                (lambda: loss_y(x, z)),
                (lambda: y.observe(z, overwrite=True)),
                (lambda: y.recommend(out=z)),
            )
            for name, step in zip(passes, steps, strict=True):
                started = time.perf_counter()
                step()
                passes[name] += time.perf_counter() - started
        line = {
            "threads": threads,
            "stream_ms": best_of(lambda: stream(a, b)),
            "compute_ms": best_of(lambda: compute(20_000_000), 2),
            "game": spec,
            "passes_ms": {k: round(v / iterations * 1e3, 1) for k, v in passes.items()},
        }
        line["iteration_ms"] = round(sum(line["passes_ms"].values()), 1)
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else MEDIUM, int(sys.argv[2]) if len(sys.argv) > 2 else 6)
