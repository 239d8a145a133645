"""Issue 4: seconds per iteration and memory of the EFCE saddle-point solver on the Table 1
Battleship instances, and of CFR+ on 2-player Leduc.  Targets on a 2-core machine: ≤ 0.2 s per
iteration on the 3.89M-pair instance, ≤ 2 s on the 26.4M-pair one; CFR+ on Leduc ≤ 2 ms.

Per iteration the EFCE solver makes two chain passes on Ξ and on Y (the trigger deviations) and
two sparse products with A; ``bytes_per_iteration`` counts the arrays those passes stream, and
``bandwidth_fraction`` compares bytes/second with a measured large-array copy.

    python benchmarks/bench_solvers.py [--only efce-small,efce-medium,efce-large,cfr+-leduc] [--out FILE]
"""

import time

import numpy as np
from bench_games import INSTANCES
from harness import main, timed


def copy_bandwidth() -> float:
    """Bytes per second of a large numpy copy (read + write) on this machine."""
    a = np.ones(100_000_000 // 8)
    b = np.empty_like(a)
    best = np.inf
    for _ in range(5):
        started = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - started)
    return 2 * a.nbytes / best


def efce_case(kwargs, iterations):
    def run():
        from efce import games
        from efce.solvers.evaluation.gaps import EFCEGapEvaluator
        from efce.solvers.methods.efce import build_efce_model, solve_efce

        game = games.battleship(rows=3, cols=2, **kwargs)
        model, setup = timed(build_efce_model, game)
        # RM+ named, not the default: the per-iteration figures of the results pages are RM+'s,
        # and an A B A B comparison with older commits must run one configuration.
        solve_efce(games.farina_fig2(), iterations=2, rule="rm+")  # compile outside the timing
        result = solve_efce(
            game, iterations=iterations, target_gap=None, check_every=10**9, model=model, rule="rm+"
        )
        evaluator = EFCEGapEvaluator(game, model.pairs)
        _, gap_seconds = timed(evaluator, result.point)
        per_iteration = result.info["iteration_seconds"] / result.iterations
        xi, y = model.xi_chain, model.triggers.chain
        # Streamed per pass: point, loss, regrets (8 B each per entry), sources (8 B), pointers.
        chain_bytes = sum(c.num_entries * 8 * 4 + len(c.source) * 8 + c.num_steps * 8 * 2 for c in (xi, y))
        matvec_bytes = 2 * model.operator.nbytes  # A·y and Aᵀ·x each read the operator's tables once
        total = 2 * chain_bytes + matvec_bytes
        bandwidth = copy_bandwidth()
        return {
            "relevant_pairs": len(model.pairs),
            "y_entries": y.num_entries,
            "operator_bytes": int(model.operator.nbytes),
            "setup_seconds": round(setup, 2),
            "iterations": result.iterations,
            "seconds_per_iteration": round(per_iteration, 4),
            "gap_evaluation_seconds": round(gap_seconds, 3),
            "gap_after": result.info["efce_gap"],
            "bytes_per_iteration": int(total),
            "copy_bandwidth_gb_s": round(bandwidth / 1e9, 2),
            "bandwidth_fraction": round(total / per_iteration / bandwidth, 3) if per_iteration else None,
        }

    return run


def cfr_leduc():
    from efce import games
    from efce.solvers.methods.cfr import solve_cfr

    game = games.leduc(2)
    solve_cfr(game, iterations=5)
    result = solve_cfr(game, iterations=2000, check_every=2000)
    return {
        "infosets": [game.sequences(p).num_infosets for p in (0, 1)],
        "iterations": result.iterations,
        "ms_per_iteration": round(1e3 * result.seconds / result.iterations, 4),
        "exploitability": result.info["exploitability"],
        "value": result.info["value"],
    }


CASES = {
    "efce-small": efce_case(INSTANCES["small"], 50),
    "efce-medium": efce_case(INSTANCES["medium"], 10),
    "efce-large": efce_case(INSTANCES["large"], 3),
    "cfr+-leduc": cfr_leduc,
}

if __name__ == "__main__":
    main(CASES, __doc__)
