"""What one checkpoint of `efce solve --method rm` costs, by part, on 2, 1, 2 threads.

    python checkpoint_cost.py GAME

Prints JSON lines (ms, best and median of 3 calls after 20 iterations): the evaluator's gap
(``EFCEGapEvaluator.evaluate`` on the running sum, what a checkpoint read until e8da27e), the
saddle-point gap that replaced it (``saddle_point_gap``: ``Aᵀ`` on the running sum, then a
bottom-up pass over Y's chain) with its ``Aᵀ`` product alone, and the chain violations of the
iterate and the float32 average in one pass.  The first line checks that both gaps agree.
"""

import json
import sys
import time

import numba
import numpy as np

from efce.games.spec import make_game
from efce.solvers.evaluation.gaps import EFCEGapEvaluator
from efce.solvers.methods.efce import build_efce_model, saddle_point_gap, saddle_point_play
from efce.solvers.regret.engine import minimizer_factory


def timed(f, repeats=3):
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        f()
        times.append(time.perf_counter() - started)
    return round(min(times) * 1e3, 1), round(float(np.median(times)) * 1e3, 1)


def main(spec: str) -> None:
    game = make_game(spec)
    model = build_efce_model(game)
    play = saddle_point_play(model, minimizer_factory("prm+", None, None))
    evaluator = EFCEGapEvaluator(game, tables=model.tables)
    for t in range(1, 21):
        play.step(t)
    x, total, scale = play.points[0], play.sums[0], 1.0 / play.weight
    violations = model.xi_steps.violations((x, total), (1.0, scale))  # before work overwrites x
    work = play.idle_buffer(model.triggers.chain.num_entries)
    print(
        json.dumps(
            {
                "game": spec,
                "xi_entries": len(x),
                "y_entries": len(work),
                "evaluator_gap": evaluator.evaluate(total, scale).gap,
                "saddle_point_gap": saddle_point_gap(model, total, scale, work),
                "violations": violations,
            }
        ),
        flush=True,
    )
    for threads in (2, 1, 2):
        numba.set_num_threads(threads)
        print(
            json.dumps(
                {
                    "threads": threads,
                    "evaluator_gap_ms": timed(lambda: evaluator.evaluate(total, scale)),
                    "saddle_point_gap_ms": timed(lambda: saddle_point_gap(model, total, scale, work)),
                    "transpose_product_ms": timed(lambda: model.operator.rmatvec(total, out=work, sign=-1.0)),
                    # x now holds the saddle point's scratch: the pass's time does not
                    # depend on the values
                    "violations_ms": timed(lambda: model.xi_steps.violations((x, total), (1.0, scale))),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1])
