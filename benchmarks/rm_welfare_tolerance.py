"""rm's welfare interval of one concept at a chosen ε (``gap_tolerance``: the max deviation a plan
must reach to count as the interval's lower end), on full Sheriff by default: how the interval
moves toward the LP's optimum as ε shrinks (docs/results.md, section 6).

    python benchmarks/rm_welfare_tolerance.py [--game SPEC] [--concept efcce] [--epsilon 1e-4]
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="sheriff:max_bribe=3,max_items=3,rounds=4")
    parser.add_argument("--concept", default="efcce", choices=("efce", "efcce", "nfcce"))
    parser.add_argument("--epsilon", type=float, default=1e-4)
    parser.add_argument("--time-limit", type=float, default=900.0)
    args = parser.parse_args()

    from efce.games.spec import make_game
    from efce.solvers.methods.welfare import solve_optimal_welfare

    game = make_game(args.game)
    started = time.perf_counter()
    result = solve_optimal_welfare(
        game, concept=args.concept, gap_tolerance=args.epsilon, tolerance=1e-2, time_limit=args.time_limit
    )
    print(
        json.dumps(
            {
                "game": args.game,
                "concept": args.concept,
                "gap_tolerance": args.epsilon,
                "status": result.status,
                "seconds": round(time.perf_counter() - started, 1),
                "welfare_interval": result.info["welfare_interval"],
                f"{args.concept}_gap": result.info.get(f"{args.concept}_gap"),
                "bisection_steps": result.info.get("bisection_steps"),
            }
        )
    )


if __name__ == "__main__":
    main()
