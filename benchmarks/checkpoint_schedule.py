"""How much of the time to a target the gap checks take, and how much any schedule could save.

    python checkpoint_schedule.py trace GAME ITERATIONS OUT.jsonl  # default solver, a check per iteration
    python checkpoint_schedule.py simulate OUT.jsonl ...           # schedules replayed on those traces

``trace`` runs ``solve_efce`` (PRM+, linear averaging, alternating: the default of
``efce solve --method rm``) with a gap check at every iteration and writes one line per
iteration: the max deviation and the cumulative seconds with and without the checks.
``simulate`` replays :class:`solvers.driver.IterationDriver` (the solver's own schedule) and a
few sparser variants on a trace, and prints, per target, the iteration each stops at, its
number of checks, and its time over that of an oracle that checks once, at the first
iteration meeting the target (seconds per iteration and per check from the trace).
"""

import json
import sys

from efce.solvers.driver import IterationDriver
from efce.solvers.result import TraceRow


def trace(spec: str, iterations: int, out: str) -> None:
    from efce.games.spec import make_game
    from efce.solvers.methods.efce import solve_efce

    game = make_game(spec)
    solve_efce(game, iterations=2, rule="prm+")  # loads the cached kernels
    result = solve_efce(game, iterations=iterations, target_gap=None, check_every=1, rule="prm+")
    with open(out, "w") as f:
        for row in result.trace:
            f.write(
                json.dumps(
                    {
                        "t": row.iteration,
                        "gap": row.gap,
                        "elapsed": round(row.seconds, 4),
                        "iteration_seconds": round(row.extra["iteration_seconds"], 4),
                    }
                )
                + "\n"
            )


class FarSchedule(IterationDriver):
    """The driver's schedule, but ``growth_far`` apart while the last gap exceeds ``far`` × target."""

    def __init__(self, *, far: float, growth_far: float, **kw):
        super().__init__(**kw)
        self.far, self.growth_far, self._last = far, growth_far, None

    def checkpoint_due(self) -> bool:
        saved = self.growth
        if self._last is not None and self._last[0] > self.far * self._last[1]:
            self.growth = self.growth_far
        try:
            return super().checkpoint_due()
        finally:
            self.growth = saved

    def record(self, row, *, converged=False, aim=None):
        self._last = aim
        return super().record(row, converged=converged, aim=aim)


VARIANTS = {
    "driver (1.15, aimed)": (IterationDriver, {}),
    "x1.5 while gap > 10 target": (FarSchedule, {"far": 10, "growth_far": 1.5}),
    "x2 while gap > 20 target": (FarSchedule, {"far": 20, "growth_far": 2.0}),
}


def replay(gaps: dict, target: float, cls, kw) -> tuple[int, int, str]:
    driver = cls(iterations=max(gaps), **kw)
    checks = 0
    for t in driver:
        if driver.checkpoint_due():
            checks += 1
            if driver.record(TraceRow(t, 0.0, gaps[t]), converged=gaps[t] <= target, aim=(gaps[t], target)):
                break
    return driver.iteration, checks, driver.status


def simulate(paths: list[str]) -> None:
    for path in paths:
        with open(path) as fh:
            rows = [json.loads(line) for line in fh]
        gaps = {r["t"]: r["gap"] for r in rows}
        per_iteration = rows[-1]["iteration_seconds"] / len(rows)
        per_check = (rows[-1]["elapsed"] - rows[-1]["iteration_seconds"]) / len(rows)
        for target in (1e-2, 3e-3, 1e-3, 3e-4, 1e-4):
            first = next((r["t"] for r in rows if r["gap"] <= target), None)
            if first is None:
                continue
            oracle = first * per_iteration + per_check
            line = {
                "trace": path,
                "target": target,
                "first_iteration": first,
                "check_over_iteration": round(per_check / per_iteration, 2),
            }
            for name, (cls, kw) in VARIANTS.items():
                stop, checks, status = replay(gaps, target, cls, kw)
                seconds = stop * per_iteration + checks * per_check
                line[name] = {
                    "stop": stop,
                    "checks": checks,
                    "over_oracle": round(seconds / oracle, 3) if status == "converged" else None,
                }
            print(json.dumps(line))


if __name__ == "__main__":
    if sys.argv[1] == "trace":
        trace(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        simulate(sys.argv[2:])
