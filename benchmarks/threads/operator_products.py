"""The payoff operator's products on 1 and 2 threads, and the parallel kernels' parts apart.

    python operator_products.py [GAME] [REPEATS]

After 20 iterations of ``efce solve --method rm``'s loop on GAME (default medium Battleship),
prints one JSON line per thread count (1, 2, 1, 2), best of REPEATS, in ms: ``memset`` (a
serial ``fill(0)`` of ``A y``'s output, for scale), ``matvec`` (``A y``), ``rmatvec``
(``Aᵀ x``), and on 2 threads each parallel kernel alone: the following parts (``foll_mv``,
``foll_rmv``) and each player's deviation part (``dev_mv0/1``, ``dev_rmv0/1``).
"""

import json
import sys
import time

import numba
import numpy as np

from efce.games.spec import make_game
from efce.solvers.evaluation import payoff_operator as po
from efce.solvers.methods.efce import build_efce_model, saddle_point_play
from efce.solvers.regret.engine import minimizer_factory

MEDIUM = "battleship:rows=3,cols=2,ship_sizes=[1],shots=4"


def best_of(f, repeats):
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        f()
        times.append(time.perf_counter() - started)
    return round(min(times) * 1e3, 2)


def main(spec: str, repeats: int) -> None:
    model = build_efce_model(make_game(spec))
    play = saddle_point_play(model, minimizer_factory("prm+", None, None))
    for t in range(1, 21):  # past the first iterations' all-uniform points
        play.step(t)
    op = model.operator
    x, y = play.points
    out, out_y = np.empty(op.shape[0]), np.empty(op.shape[1])
    print(
        json.dumps(
            {
                "rows": op.shape[0],
                "columns": op.shape[1],
                "deviation_nonzeros": [len(t.rows) for t in op.tables.players],
                "zero_share_of_y": float(np.mean(y == 0)),
            }
        )
    )
    for threads in (1, 2, 1, 2):
        numba.set_num_threads(threads)
        line = {
            "threads": threads,
            "memset": best_of(lambda: out.fill(0.0), repeats),
            "matvec": best_of(lambda: op.matvec(y, out), repeats),
            "rmatvec": best_of(lambda: op.rmatvec(x, out_y, -1.0), repeats),
        }
        if threads > 1 and op._parallel:
            following = (
                op._seq_parent[0],
                op._seq_parent[1],
                op._own[0],
                op._own[1],
                op.tables.weighted,
                op._welfare_weight,
                op.tables.terminal_row,
            )
            line["foll_mv"] = best_of(
                lambda following=following, threads=threads: po._following_matvec_parallel(
                    *following, op._trigger_base[1], op._lambda_tau, 0.0, y, op._stacks, out, threads
                ),
                repeats,
            )
            for i, t in enumerate(op.tables.players):
                tables = (
                    *op._trigger_work[i],
                    t.first,
                    t.pos,
                    t.end,
                    t.cum,
                    t.term_ptr,
                    t.term_weight,
                    t.line_start,
                    t.line_term,
                    t.row_start,
                    t.rows,
                    op._trigger_base[i],
                    op.triggers.block_start,
                )
                line[f"dev_mv{i}"] = best_of(
                    lambda tables=tables, threads=threads: po._deviation_matvec_parallel(
                        *tables, y, out, threads
                    ),
                    repeats,
                )
                line[f"dev_rmv{i}"] = best_of(
                    lambda tables=tables, threads=threads: po._deviation_rmatvec_parallel(
                        *tables, x, -1.0, out_y, threads
                    ),
                    repeats,
                )
            line["foll_rmv"] = best_of(
                lambda following=following, threads=threads: po._following_rmatvec_parallel(
                    *following,
                    op._term_order,
                    op._trigger_base[1],
                    op.triggers.num_triggers,
                    op._lambda_tau,
                    0.0,
                    x,
                    -1.0,
                    out_y,
                ),
                repeats,
            )
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else MEDIUM, int(sys.argv[2]) if len(sys.argv) > 2 else 5)
