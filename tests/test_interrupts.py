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


#: A process that enters one compiled call of ~100 s which releases the GIL (``nogil``), as the
#: builders' kernels do, within the signal contract; the readiness marker is a file.
_LONG_KERNEL = """
import os, sys
import numba
from efce.interrupts import graceful, stop_on_signals

@numba.njit(nogil=True)
def spin(n):
    s = 0.0
    for i in range(n):
        s += (i % 7) * 1e-9
    return s

spin(10)  # compiled before the marker

def abort():
    os.write(1, b'{"error": "aborted"}\\n')

with stop_on_signals(abort), graceful():
    open(sys.argv[1], "w").close()
    spin(10**11)
os.write(1, b"the kernel returned\\n")
"""


@pytest.mark.parametrize("second_signal", [False, True])
def test_a_signal_during_a_long_compiled_call_ends_the_process_within_two_seconds(tmp_path, second_signal):
    # The main thread cannot run the handler until the kernel returns: the watchdog escalates
    # after the grace period (first signal alone) or at once (a second signal), writes the one
    # error through the abort callback and exits with status 130.
    import subprocess
    import sys

    from tests.experiments.signals import signal_and_wait, wait_until
    from tests.paths import ROOT

    ready = tmp_path / "ready"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-P", "-c", _LONG_KERNEL, str(ready)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert wait_until(ready.exists, proc=proc), proc.communicate()
        signals = (signal.SIGINT, signal.SIGTERM) if second_signal else (signal.SIGINT,)
        out, err, took = signal_and_wait(proc, *signals)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == interrupts.ABORT_STATUS, (out, err)
    assert out == '{"error": "aborted"}\n', (out, err)
    assert took < (1.0 if second_signal else 2.0), f"took {took:.2f} s"
    if not second_signal:  # the grace period was given first
        assert took >= STOP_GRACE_SECONDS - 0.1


def test_a_library_caller_without_an_abort_callback_keeps_its_process():
    # No abort callback: the watchdog only asks the main thread, which aborts when it can.
    with stop_on_signals(), graceful(), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        _busy(5.0)


def test_an_abort_that_numba_wraps_in_a_system_error_reaches_the_caller_as_keyboard_interrupt():
    # With nogil kernels, the handler can run while numba boxes a kernel's returned arrays; numba
    # then reports the handler's KeyboardInterrupt as a SystemError caused by it.
    with pytest.raises(KeyboardInterrupt) as raised, stop_on_signals():
        try:
            raise KeyboardInterrupt("SIGINT")
        except KeyboardInterrupt as abort:
            raise SystemError("<built-in function x> returned a result with an exception set") from abort
    assert str(raised.value) == "SIGINT"
    with pytest.raises(SystemError), stop_on_signals():  # any other SystemError is left as it is
        raise SystemError("a real one")


def _package_kernels():
    """Every numba dispatcher defined in a module of the toolkit: ``(module.name, dispatcher)``."""
    import importlib
    import pkgutil

    import numba.core.registry

    import efce

    found = {}
    subpackages = ("games", "polytopes", "solvers", "baselines", "experiments")
    names = [info.name for info in pkgutil.iter_modules(efce.__path__, "efce.")]
    for sub in subpackages:
        package = importlib.import_module(f"efce.{sub}")
        names += [info.name for info in pkgutil.walk_packages(package.__path__, f"efce.{sub}.")]
    for module_name in names:
        if ".cuda" in module_name or module_name.endswith("__main__"):
            continue  # the CUDA kernels run on the device; efce.__main__ runs the command line
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # an optional extra that is not installed
            continue
        for name, value in vars(module).items():
            if isinstance(value, numba.core.registry.CPUDispatcher) and value.__module__ == module_name:
                found[f"{module_name}.{name}"] = value
    import efce.solvers.backends.cuda.layouts as layouts  # CPU kernels that build the layouts

    for name, value in vars(layouts).items():
        if isinstance(value, numba.core.registry.CPUDispatcher) and value.__module__ == layouts.__name__:
            found[f"{layouts.__name__}.{name}"] = value
    return found


def test_every_compiled_kernel_releases_the_gil():
    # A kernel holding the GIL would keep the signal watchdog from running while it does.
    kernels = _package_kernels()
    assert len(kernels) > 30  # the walk found the package's kernels
    holding = [
        name
        for name, dispatcher in kernels.items()
        if not dispatcher.targetoptions.get("nogil") and dispatcher.targetoptions.get("inline") != "always"
    ]
    assert not holding, f"compiled without nogil=True: {holding}"
