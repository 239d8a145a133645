"""The signal contract of :mod:`efce.interrupts`, in this process: the first signal is a stop
request that the running code honours at its next boundary; one that nothing honours within
the grace period escalates to an abort, as a second signal does at once; a loop that will honour
it is never aborted; builders stop between their phases."""

import os
import signal
import threading
import time

import numpy as np
import pytest

from efce import interrupts
from efce.errors import Interrupted
from efce.interrupts import (
    STOP_GRACE_SECONDS,
    acknowledge_stop,
    clear_stop,
    graceful,
    request_stop,
    stop_on_signals,
)
from tests.games.deep_chain import deep_chain

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX signals")


@pytest.fixture(autouse=True)
def clean_stop():
    clear_stop()
    yield
    clear_stop()


def _busy(seconds: float) -> None:
    """Python code without a single stop check (a phase with no boundary)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(1000))


def test_an_unhonoured_stop_escalates_to_an_abort_after_the_grace_period():
    started = time.monotonic()
    with stop_on_signals(), graceful(), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        _busy(STOP_GRACE_SECONDS + 5.0)
    took = time.monotonic() - started
    assert STOP_GRACE_SECONDS - 0.1 <= took < STOP_GRACE_SECONDS + 1.5
    assert interrupts.escalated()


def test_an_acknowledged_stop_is_not_escalated():
    with stop_on_signals(), graceful():
        os.kill(os.getpid(), signal.SIGINT)
        _busy(0.1)  # the handler runs
        assert interrupts.stop_requested()
        acknowledge_stop()
        _busy(STOP_GRACE_SECONDS + 1.0)  # no KeyboardInterrupt: the stop is being honoured
    assert not interrupts.escalated()


def test_a_second_signal_aborts_at_once():
    with stop_on_signals(), graceful():
        os.kill(os.getpid(), signal.SIGINT)
        _busy(0.1)
        acknowledge_stop()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            _busy(5.0)
        assert time.monotonic() - started < 0.5
    assert not interrupts.escalated()


def test_a_loop_with_slow_iterations_keeps_its_result_instead_of_being_aborted():
    # Iterations of a model with 10^8 pairs take seconds: a stop that arrives during one must
    # wait for its end (status interrupted, trace kept), not escalate to an abort.
    from efce.solvers.driver import IterationDriver
    from efce.solvers.result import TraceRow

    driver = IterationDriver(iterations=10**6, check_every=10**6)
    with stop_on_signals(), graceful():
        for t in driver:
            if driver.checkpoint_due():
                driver.record(TraceRow(t, driver.elapsed(), 1.0 / t))
            if t == 3:  # the signal lands in the middle of a slow iteration
                os.kill(os.getpid(), signal.SIGINT)
                _busy(STOP_GRACE_SECONDS + 0.5)
    assert driver.status == "interrupted" and driver.iteration == 4
    assert [row.iteration for row in driver.trace] == [4]
    assert not interrupts.escalated()


def test_check_stop_raises_interrupted_only_once_a_stop_was_requested():
    interrupts.check_stop("building")
    request_stop()
    with pytest.raises(Interrupted, match="interrupted while building"):
        interrupts.check_stop("building")


def _stop_after(seconds: float) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(seconds), request_stop()), daemon=True)
    thread.start()
    return thread


def test_a_ten_second_generator_build_stops_within_two_seconds_of_the_request():
    # goofspiel:ranks=5 (8.5M nodes) takes 8 to 20 s to build and count; the request comes
    # while its levels are being expanded.
    from efce.games.spec import make_game

    _stop_after(2.0)
    started = time.monotonic()
    with pytest.raises(Interrupted, match="building goofspiel"):
        make_game("goofspiel:ranks=5")
    assert time.monotonic() - started < 2.0 + 2.0


def test_reading_an_efg_file_stops_between_chunks_of_it():
    from efce.games.formats.efg import loads

    text = deep_chain(150_000)  # several seconds of tokens and nodes
    _stop_after(1.0)
    started = time.monotonic()
    with pytest.raises(Interrupted, match="reading"):
        loads(text, "chain.efg")
    assert time.monotonic() - started < 1.0 + 2.0


def test_finding_connected_infosets_stops_between_chunks():
    from efce.games.formats.efg import loads
    from efce.games.relevant import find_connected_infosets

    game = loads(deep_chain(2_000))
    request_stop()
    with pytest.raises(Interrupted, match="connected infosets"):
        find_connected_infosets(game)
    clear_stop()
    conn1, conn2 = find_connected_infosets(game)
    assert len(conn1) == 1000 * 1000  # every pair on the path
    assert np.all(np.diff(conn1.astype(np.int64) * 1000 + conn2) > 0)  # sorted, distinct
