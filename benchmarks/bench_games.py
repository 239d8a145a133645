"""Issue 2: time and peak memory to build the Battleship games of Table 1 and their relevant
sequence pairs.  Targets on a 2-core machine: ≤ 2 s, ≤ 20 s, ≤ 120 s and ≤ 12 GiB.

    python benchmarks/bench_games.py [--only small,medium,large] [--out FILE]
"""

from harness import main, timed

INSTANCES = {
    "small": dict(ship_sizes=[1], shots=3),
    "medium": dict(ship_sizes=[1], shots=4),
    "large": dict(ship_sizes=[2], shots=4),
}


def case(kwargs):
    def run():
        from efce import games
        from efce.games.relevant import relevant_pairs

        game, build = timed(games.battleship, rows=3, cols=2, **kwargs)
        pairs, seconds_pairs = timed(relevant_pairs, game)
        return {
            "nodes": game.num_nodes,
            "infosets": [game.sequences(p).num_infosets for p in (0, 1)],
            "sequences": [game.sequences(p).num_sequences for p in (0, 1)],
            "relevant_pairs": len(pairs),
            "build_seconds": round(build, 2),
            "pairs_seconds": round(seconds_pairs, 2),
            "total_seconds": round(build + seconds_pairs, 2),
        }

    return run


if __name__ == "__main__":
    main({name: case(kw) for name, kw in INSTANCES.items()}, __doc__)
