"""The trace of ``rm --objective welfare`` (:func:`efce.solvers.methods.welfare.solve_optimal_welfare`)
keeps every bisection step's checkpoints, on the geometric schedule of the iteration driver, with
the step's threshold as a column; a stop in the middle of a step keeps that step's rows."""

import pytest

from efce.interrupts import clear_stop, request_stop
from efce.solvers.driver import CHECKPOINT_GROWTH
from efce.solvers.methods.welfare import solve_optimal_welfare

GAME = "sheriff:max_bribe=1,max_items=1,rounds=1"


@pytest.fixture(scope="module")
def bisection():
    from efce.games.spec import make_game

    return solve_optimal_welfare(make_game(GAME), step_iterations=400)


def _steps(trace):
    """The rows of each step: consecutive rows of one threshold."""
    steps: list[list] = []
    for row in trace:
        if not steps or steps[-1][-1].extra["threshold"] != row.extra["threshold"]:
            steps.append([])
        steps[-1].append(row)
    return steps


def test_every_step_keeps_its_checkpoints_with_its_threshold(bisection):
    steps = _steps(bisection.trace)
    recorded = bisection.info["steps"]
    assert len(steps) == len(recorded) > 1
    done = 0
    for rows, step in zip(steps, recorded, strict=True):
        assert all(row.extra["threshold"] == step["threshold"] for row in rows)
        local = [row.iteration - done for row in rows]
        # The driver's schedule: every iteration at first, then about 15% apart (or sooner,
        # aimed at the target), always the last one.
        assert local[: min(3, len(local))] == list(range(1, min(3, len(local)) + 1))
        assert all(b > a for a, b in zip(local, local[1:], strict=False))
        assert all(
            b <= max(a + 1, int(a * CHECKPOINT_GROWTH)) for a, b in zip(local, local[1:], strict=False)
        )
        assert local[-1] == step["iterations"]
        done += step["iterations"]
    assert done == bisection.iterations
    assert len(bisection.trace) > 2 * len(recorded)  # more than one row per step


def test_the_rows_carry_the_interval_and_time_runs_on_over_the_steps(bisection):
    seconds = [row.seconds for row in bisection.trace]
    assert seconds == sorted(seconds)
    lower, upper = bisection.info["welfare_interval"]
    last = bisection.trace[-1].extra
    assert last["lower"] <= lower and last["upper"] >= upper  # the interval as it then stood


def test_a_stop_during_the_first_step_keeps_its_checkpoints():
    from efce.games.spec import make_game

    rows = []

    def stop_after_ten(row) -> None:
        rows.append(row)
        if len(rows) == 10:
            request_stop()

    clear_stop()
    try:
        result = solve_optimal_welfare(make_game(GAME), step_iterations=100_000, progress=stop_after_ten)
    finally:
        clear_stop()
    assert result.status == "interrupted"
    assert result.trace == rows and len(rows) >= 10
    assert len({row.extra["threshold"] for row in rows}) == 1  # all of the first step


def test_the_trace_file_has_the_threshold_column_on_every_row(bisection, tmp_path):
    from efce.solvers.result import read_trace

    path = tmp_path / "welfare.csv"
    bisection.write_trace(str(path))
    rows = read_trace(path)
    assert len(rows) == len(bisection.trace)
    assert all(row["threshold"] is not None for row in rows)
