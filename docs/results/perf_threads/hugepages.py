"""Do 2 MiB pages speed up the passes?  (No, on this machine: eighth session.)

    python hugepages.py GAME ITERATIONS

Times the six passes of one iteration (as memory_bound.py) on 1 and 2 threads, then asks the
kernel to back every writable anonymous mapping of 4 MiB or more with transparent huge pages
(``madvise(MADV_HUGEPAGE)`` and the synchronous ``MADV_COLLAPSE`` of Linux 6.1+; numpy already
asks for them for its own large arrays, numba's allocations do not), and times them twice more.
Each line gives the process's resident and huge-page kilobytes (``/proc/self/smaps_rollup``).
"""

import ctypes
import json
import sys
import time

import numba

from efce.games.spec import make_game
from efce.solvers.methods.efce import build_efce_model, saddle_point_play
from efce.solvers.regret.engine import minimizer_factory

MADV_HUGEPAGE, MADV_COLLAPSE, HUGE = 14, 25, 2 << 20


def resident() -> dict:
    fields = dict(line.split(":", 1) for line in open("/proc/self/smaps_rollup") if ":" in line)
    return {k: fields[k].strip() for k in ("Rss", "AnonHugePages")}


def collapse_anonymous_mappings(min_bytes: int = 4 << 20) -> dict:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    collapsed, refused = 0, 0
    for line in open("/proc/self/maps").read().splitlines():
        fields = line.split()
        lo, hi = (int(v, 16) for v in fields[0].split("-"))
        if "rw" not in fields[1] or (len(fields) > 5 and fields[5] != "[heap]"):
            continue
        lo, hi = (lo + HUGE - 1) // HUGE * HUGE, hi // HUGE * HUGE
        if hi - lo < min_bytes:
            continue
        libc.madvise(lo, hi - lo, MADV_HUGEPAGE)
        if libc.madvise(lo, hi - lo, MADV_COLLAPSE):
            refused += 1
        else:
            collapsed += hi - lo
    return {"collapsed_mib": collapsed >> 20, "refused_mappings": refused}


def main(spec: str, iterations: int) -> None:
    model = build_efce_model(make_game(spec))
    play = saddle_point_play(model, minimizer_factory("prm+", None, None))
    (xi, y), (loss_xi, loss_y), (x, z) = play.engines, play.losses, play.points
    for t in range(1, 11):
        play.step(t)

    def measure(pages: str) -> None:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            passes = dict.fromkeys(
                ("A y", "Xi observe", "Xi recommend", "A^T x", "Y observe", "Y recommend"), 0.0
            )
            for t in range(11, 11 + iterations):
                steps = (
                    (lambda: loss_xi(z, x)),
                    (lambda: xi.observe(x, overwrite=True)),
                    (lambda: xi.recommend(out=x, accumulate=(play.sums[0], float(t)))),
                    (lambda: loss_y(x, z)),
                    (lambda: y.observe(z, overwrite=True)),
                    (lambda: y.recommend(out=z)),
                )
                for name, step in zip(passes, steps, strict=True):
                    started = time.perf_counter()
                    step()
                    passes[name] += time.perf_counter() - started
            ms = {k: round(v / iterations * 1e3, 1) for k, v in passes.items()}
            print(
                json.dumps(
                    {
                        "pages": pages,
                        "threads": threads,
                        "passes_ms": ms,
                        "iteration_ms": round(sum(ms.values()), 1),
                        **resident(),
                    }
                ),
                flush=True,
            )

    measure("4 KiB")
    print(json.dumps(collapse_anonymous_mappings()), flush=True)
    measure("2 MiB")
    measure("2 MiB")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
