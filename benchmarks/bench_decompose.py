"""Issue 3: DECOMPOSE time and peak memory on the Battleship instances of Table 1
(3.89M / 26.4M / 111M relevant pairs).  Targets on a 2-core machine: ≤ 2 s, ≤ 10 s, ≤ 60 s,
peak ≤ 16 GiB (the paper: 2 s / 6 s / 40 s on 8 threads).  The first run compiles the kernels
(numba caches them); ``decompose_seconds`` excludes building the game and its relevant pairs.

    python benchmarks/bench_decompose.py [--only small,medium,large] [--out FILE]
"""

from bench_games import INSTANCES
from harness import main, timed


def case(kwargs):
    def run():
        from efce import games
        from efce.games.relevant import relevant_pairs
        from efce.polytopes import correlation_plan

        correlation_plan(games.farina_fig2())  # load the compiled kernels outside the timing
        game = games.battleship(rows=3, cols=2, **kwargs)
        pairs, seconds_pairs = timed(relevant_pairs, game)
        chain, seconds = timed(correlation_plan, game, pairs)
        return {
            "relevant_pairs": len(pairs),
            "entries": chain.num_entries,
            "simplex_steps": chain.num_simplex_steps,
            "singleton_steps": chain.num_singleton_steps,
            "levels": chain.depth,
            "pairs_seconds": round(seconds_pairs, 2),
            "decompose_seconds": round(seconds, 2),
        }

    return run


if __name__ == "__main__":
    main({name: case(kw) for name, kw in INSTANCES.items()}, __doc__)
