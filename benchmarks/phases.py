"""Each phase of an iteration of ``efce solve --method rm`` and of its checkpoints, timed through
the compute-backend interface, per thread count.

    python benchmarks/phases.py [GAME] [--threads 1,2,1,2] [--iterations 6] [--warmup 10]
                                [--rule prm+] [--backend cpu]

Builds GAME (default: medium Battleship), runs ``--warmup`` iterations of the loop (past the
first iterations' uniform points, which make ``A y`` touch every nonzero), then for each thread
count in ``--threads`` (in that order: repeat counts for an A B A B reading) builds the loop on a
new backend and prints one JSON line:

* ``passes_ms`` — per iteration (mean over ``--iterations``), in the order of
  :meth:`efce.solvers.methods.selfplay.DeviatorPlay.step`: ``A y`` (the deviator's point made
  block by block, its columns added into the correlator's loss), Ξ OBSERVELOSS and RECOMMEND
  (with the running sum), Y OBSERVE (the deviator's losses ``−Aᵀ x`` made block by block and
  observed); ``iteration_ms`` their sum;
* ``checkpoint_ms`` — one checkpoint's parts, best of 3: the saddle-point gap (the deviator's
  best response to the running sum, what a checkpoint reads), the evaluator's gap (the final
  report), the welfare, the chain violations of the iterate and the average in one pass;
* ``passes`` — which kernels ran (serial or parallel passes of Ξ, the products' parts).

The first line describes the model and checks that both gaps agree.  Nothing here reads numba:
every number is a call of the backend's objects, as the solver makes them.
"""

from __future__ import annotations

import argparse
import json
import time

from efce.games.spec import make_game
from efce.solvers.backends import get_backend
from efce.solvers.evaluation.gaps import EFCEGapEvaluator
from efce.solvers.methods.efce import build_efce_model, saddle_point_play
from efce.solvers.regret.engine import minimizer_factory
from efce.solvers.regret.local import RegretMatching

MEDIUM = "battleship:rows=3,cols=2,ship_sizes=[1],shots=4"
#: The passes of an iteration, in order: ``A y`` is the deviator's points made block by block and
#: their columns added into Ξ's loss, ``Y observe`` its losses ``−Aᵀ x`` made block by block and
#: observed (the fused deviator, :class:`~efce.solvers.backends.cpu.backend.FusedDeviator`).
PASSES = ("A y", "Xi observe", "Xi recommend", "Y observe")


def best_of(f, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        f()
        times.append(time.perf_counter() - started)
    return round(min(times) * 1e3, 3)


def loop(model, rule: str, backend):
    """The loop of ``solve_efce`` on ``backend``: its play and its products."""
    products = model.operator.products(backend)
    make = minimizer_factory(rule, None, RegretMatching(plus=True), backend)
    return saddle_point_play(model, make, products=products), products


def phases(model, rule: str, backend, warmup: int, iterations: int) -> dict:
    play, products = loop(model, rule, backend)
    for t in range(1, warmup + 1):
        play.step(t)
    xi, deviator, x = play.engine, play.deviator, play.points[0]
    total = play.sums[0]
    spent = dict.fromkeys(PASSES, 0.0)
    for t in range(warmup + 1, warmup + 1 + iterations):
        w = float(t)
        steps = (
            lambda: deviator.scatter(x),
            lambda: xi.observe(x, overwrite=True),
            lambda w=w: xi.recommend(out=x, accumulate=(total, w)),
            lambda: deviator.observe(x),
        )
        for name, step in zip(PASSES, steps, strict=True):
            started = time.perf_counter()
            step()
            spent[name] += time.perf_counter() - started
        play.weight += w
    passes_ms = {k: round(v / iterations * 1e3, 3) for k, v in spent.items()}
    scale = 1.0 / play.weight
    evaluator = EFCEGapEvaluator(model.game, tables=model.tables, backend=backend)
    chain = model.xi_steps
    checkpoint_ms = {
        "saddle_point_gap": best_of(lambda: max(0.0, -scale * deviator.best_response(total))),
        "evaluator_gap": best_of(lambda: evaluator.evaluate(total, scale)),
        "welfare": best_of(lambda: evaluator.welfare(total, scale)),
        "violations": best_of(lambda: chain.violations((x, total), (1.0, scale), backend=backend)),
    }
    return {
        "threads": backend.threads,
        "passes_ms": passes_ms,
        "iteration_ms": round(sum(passes_ms.values()), 3),
        "checkpoint_ms": checkpoint_ms,
        "passes": {
            "xi": "parallel" if xi.minimizer._passes.parallel else "serial",
            "operator_parts": products.parts,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("game", nargs="?", default=MEDIUM)
    parser.add_argument("--threads", default="1,2,1,2", help="thread counts, in order (default 1,2,1,2)")
    parser.add_argument("--iterations", type=int, default=6, help="timed iterations per thread count")
    parser.add_argument("--warmup", type=int, default=10, help="iterations before the timing")
    parser.add_argument("--rule", default="prm+", help="local rule (default prm+, efce solve's)")
    parser.add_argument("--backend", default="cpu")
    args = parser.parse_args()
    counts = [int(t) for t in args.threads.split(",")]
    backends = [get_backend(args.backend, threads=t) for t in counts]  # bad counts refused first
    model = build_efce_model(make_game(args.game))
    play, products = loop(model, args.rule, backends[0])
    for t in range(1, 21):
        play.step(t)
    total, scale = play.sums[0], 1.0 / play.weight
    evaluator = EFCEGapEvaluator(model.game, tables=model.tables, backend=backends[0])
    print(
        json.dumps(
            {
                "game": args.game,
                "rule": args.rule,
                "backend": args.backend,
                "xi_entries": model.xi_steps.num_entries,
                "y_entries": model.triggers.num_entries,
                "evaluator_gap": evaluator.evaluate(total, scale).gap,
                "saddle_point_gap": max(0.0, -scale * play.deviator.best_response(total)),
            }
        ),
        flush=True,
    )
    del play, products, evaluator, total
    for backend in backends:
        print(json.dumps(phases(model, args.rule, backend, args.warmup, args.iterations)), flush=True)


if __name__ == "__main__":
    main()
