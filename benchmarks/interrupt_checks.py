"""Cost of the stop-request checks in the builders (:func:`efce.interrupts.check_stop`, called
between phases and chunks) on the build of a game: A B A B in one process, A with the checks as
they are, B with every builder's ``check_stop`` replaced by a function that does nothing.

The build timed is what ``efce info GAME`` does: build the game, then count its relevant pairs.
Each round builds the game afresh once in each mode (the order alternating), after one warm-up
build that compiles the kernels; the result is the median of each mode and their ratio.

    python benchmarks/interrupt_checks.py                          # small Battleship, 15 rounds
    python benchmarks/interrupt_checks.py --game goofspiel:ranks=4 --rounds 9 --json

Run it on a quiet machine: the checks cost well under 1 % of a build (the target is 2 %), far
below the noise of a loaded one.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time

SMALL_BATTLESHIP = "battleship:rows=3,cols=2,ship_sizes=[1],shots=3"


def _builders_with_checks() -> list:
    """Every loaded module that calls ``check_stop`` (it imported the name)."""
    from efce import interrupts

    return [
        module
        for module in list(sys.modules.values())
        if module is not None
        and module is not interrupts
        and getattr(module, "check_stop", None) is interrupts.check_stop
    ]


def _build(spec: str) -> float:
    from efce.games.relevant import count_relevant_pairs
    from efce.games.spec import make_game

    gc.collect()
    started = time.perf_counter()
    game = make_game(spec)
    if game.num_players == 2:
        count_relevant_pairs(game)
    return time.perf_counter() - started


def measure(spec: str, rounds: int) -> dict:
    """Medians of the build with the checks (A) and without them (B), over ``rounds``."""
    from efce import interrupts

    _build(spec)  # compile and cache the kernels, import everything
    modules = _builders_with_checks()
    times = {"checks": [], "no_checks": []}

    check_stop = interrupts.check_stop

    def set_checks(on: bool) -> None:
        for module in modules:
            module.check_stop = check_stop if on else (lambda what="": None)

    try:
        for r in range(rounds):
            order = ("checks", "no_checks") if r % 2 == 0 else ("no_checks", "checks")
            for mode in order:
                set_checks(mode == "checks")
                times[mode].append(_build(spec))
    finally:
        set_checks(True)
    a, b = statistics.median(times["checks"]), statistics.median(times["no_checks"])
    return {
        "game": spec,
        "rounds": rounds,
        "modules_with_checks": sorted(m.__name__ for m in modules),
        "median_seconds_checks": a,
        "median_seconds_no_checks": b,
        "cost_percent": 100.0 * (a / b - 1.0),
        "seconds": times,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default=SMALL_BATTLESHIP)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = measure(args.game, args.rounds)
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"{result['game']}: build {result['median_seconds_no_checks']:.4f} s without the checks, "
        f"{result['median_seconds_checks']:.4f} s with them ({result['cost_percent']:+.2f} %), "
        f"medians of {result['rounds']} A B rounds"
    )


if __name__ == "__main__":
    main()
