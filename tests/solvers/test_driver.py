"""The iteration driver: budget, schedule, trace, stop requests."""

import itertools
import time

import pytest

from efce.solvers import driver as drv
from efce.solvers.driver import IterationDriver
from efce.solvers.result import TraceRow


def run(d, gaps=lambda t: 1.0 / t, target=None, work=lambda: None, aim=False):
    checked = []
    for t in d:
        work()
        if d.checkpoint_due():
            checked.append(t)
            if d.record(
                TraceRow(t, d.elapsed(), gaps(t)),
                converged=target is not None and gaps(t) <= target,
                aim=(gaps(t), target) if aim else None,
            ):
                break
    return checked


def test_geometric_schedule_always_ends_with_the_last_iteration():
    d = IterationDriver(iterations=1000)
    checked = run(d)
    assert checked[:5] == [1, 2, 3, 4, 5] and checked[-1] == 1000
    assert all(b >= a * drv.CHECKPOINT_GROWTH - 1 for a, b in zip(checked[5:], checked[6:-1], strict=False))
    assert len(checked) < 60 and d.status == "iteration_limit" and d.iteration == 1000


def test_check_every_and_convergence():
    d = IterationDriver(iterations=1000, check_every=10)
    checked = run(d, target=0.02)
    assert checked == [10, 20, 30, 40, 50] and d.status == "converged" and d.iteration == 50


def test_aimed_checkpoints_stop_near_the_first_iteration_that_meets_the_target():
    geometric = run(IterationDriver(iterations=10**6), target=1e-3)
    assert geometric[-1] == 1139  # the schedule's first checkpoint past t = 1000
    # a power law is followed exactly: the first checkpoint at or past t = 1000 allowed by the spacing
    aimed = run(IterationDriver(iterations=10**6), target=1e-3, aim=True)
    assert (
        1000 <= aimed[-1] <= 1000 * (1 + (drv.CHECKPOINT_GROWTH - 1) / drv.AIM_SPLIT)
        and len(aimed) <= len(geometric) + 1
    )

    # a steeper curve than the last two checkpoints suggest: checkpoints every 2% at most
    def steep(t):
        return 1.0 / t if t < 800 else 800.0 / t**2

    aimed = run(IterationDriver(iterations=10**6), gaps=steep, target=1e-3, aim=True)
    first = next(t for t in range(1, 10**6) if steep(t) <= 1e-3)
    assert first <= aimed[-1] <= first * (1 + (drv.CHECKPOINT_GROWTH - 1) / drv.AIM_SPLIT) + 1
    assert all(
        b - a >= (drv.CHECKPOINT_GROWTH - 1) / drv.AIM_SPLIT * a
        for a, b in itertools.pairwise(aimed)
        if a >= 50
    )


def test_aim_without_target_or_with_a_fixed_schedule_changes_nothing():
    plain = run(IterationDriver(iterations=5000))
    assert run(IterationDriver(iterations=5000), aim=True) == plain  # target None
    assert run(IterationDriver(iterations=1000, check_every=10), target=0.02, aim=True) == [
        10,
        20,
        30,
        40,
        50,
    ]

    # a gap that rises between checkpoints gives no trend: the geometric schedule goes on
    def bumpy(t):
        return 1.0 / t * (3.0 if t % 2 else 1.0)

    aimed = run(IterationDriver(iterations=10**6), gaps=bumpy, target=1e-6, aim=True)
    assert aimed[-1] > 0 and len(aimed) < 200

    # an almost flat trend predicts an astronomically late crossing: the schedule goes on
    def flat(t):
        return 1.0 + 1e-12 / t

    assert run(IterationDriver(iterations=5000), gaps=flat, target=1e-3, aim=True) == plain


def test_time_limit_stops_at_an_iteration_boundary_with_a_last_checkpoint():
    d = IterationDriver(iterations=10**9, time_limit=0.2, check_every=10**8)
    checked = run(d, work=lambda: time.sleep(0.01))
    assert d.status == "time_limit" and checked == [d.iteration]
    assert 0.2 <= d.elapsed() < 1.0


def test_stop_request_interrupts_and_paused_time_is_not_iteration_time():
    d = IterationDriver(iterations=10**9, check_every=10**8)
    try:
        for t in d:
            if t == 5:
                drv.request_stop()
            if d.checkpoint_due():
                with d.paused():
                    time.sleep(0.1)
                d.record(TraceRow(t, d.elapsed(), 0.0))
    finally:
        drv.clear_stop()
    assert d.status == "interrupted" and d.iteration == 5 and len(d.trace) == 1
    assert d.iteration_seconds < 0.05 <= d.elapsed()
    # The row carries the iteration time as it was when recorded, before this checkpoint's pause.
    assert d.trace[0].extra["iteration_seconds"] < 0.05


def test_a_stop_after_the_checkpoint_test_still_ends_with_a_checkpoint():
    # The signal lands after checkpoint_due() said "go on" (the race a real SIGINT hits): the run
    # must still end on a checkpointed iteration, so the trace's last row is the result's.
    d = IterationDriver(iterations=10**9, check_every=10**8)
    try:
        for t in d:
            if d.checkpoint_due():
                d.record(TraceRow(t, d.elapsed(), 0.0))
            if t == 5:
                drv.request_stop()
    finally:
        drv.clear_stop()
    assert d.status == "interrupted" and d.iteration == 6
    assert [row.iteration for row in d.trace] == [6]


def test_every_trace_row_carries_its_iteration_seconds():
    d = IterationDriver(iterations=30, check_every=10)
    run(d, work=lambda: time.sleep(0.002))
    spent = [row.extra["iteration_seconds"] for row in d.trace]
    assert len(spent) == 3 and spent == sorted(spent) and spent[0] >= 10 * 0.002
    assert all(row.extra["iteration_seconds"] <= row.seconds + 1e-3 for row in d.trace)


def test_signal_outside_a_graceful_block_interrupts_at_once():
    import os
    import signal

    with drv.stop_on_signals(), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)
    drv.clear_stop()
