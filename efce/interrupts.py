"""The stop request, and the contract every ``efce`` command keeps on SIGINT (Ctrl-C) and SIGTERM.

* The **first** signal is a *stop request* (:func:`request_stop`).  Code that runs for long polls
  it at its own boundaries and ends there: an iteration loop (:class:`solvers.driver.IterationDriver`)
  stops after a last checkpoint with status ``interrupted`` and keeps what it computed; a
  builder (a game generator, the ``.efg`` reader, the relevant pairs, DECOMPOSE...) calls
  :func:`check_stop` between two of its phases or chunks and raises
  :class:`~efce.errors.Interrupted`, since half a model is nothing to keep; a runner of child
  processes (``compare``, ``sweep``) forwards the request to its children and keeps their results.
  Code that honours the request says so (:func:`acknowledge_stop`), and a loop that will honour
  it at its next boundary runs inside :func:`honouring`.
* If nothing acknowledges the request within :data:`STOP_GRACE_SECONDS` (the process is in a
  phase without boundaries to stop at), the stop *escalates*: it acts as a second signal.
* The **second** signal (or the escalation) raises :class:`KeyboardInterrupt` in the main thread
  at once: the command ends with exit status 130 and, under ``--json``, one ``{"error": ...}``
  object.

The checks are cheap (one read of a :class:`threading.Event`), but they belong between phases
of a build, never in the body of a hot loop: a compiled kernel cannot be interrupted anyway, so a
long kernel is cut into chunks with a check between them.

>>> clear_stop()
>>> check_stop("nothing requested: no effect")
>>> request_stop()
>>> try:
...     check_stop("building the game")
... except Interrupted as exc:
...     print(exc)
interrupted while building the game
>>> clear_stop()
"""

from __future__ import annotations

import contextlib
import signal
import threading

from efce.errors import Interrupted

__all__ = [
    "STOP_GRACE_SECONDS",
    "acknowledge_stop",
    "check_stop",
    "clear_stop",
    "escalated",
    "graceful",
    "honouring",
    "ignore_signals",
    "request_stop",
    "signals_handled",
    "stop_on_signals",
    "stop_requested",
]

#: Seconds a stop request may wait for the code to reach a point where it stops gracefully
#: (and say so, :func:`acknowledge_stop`) before it acts as a second signal: together with the
#: time to write the result, the first signal ends every command within about 2 s.
STOP_GRACE_SECONDS = 1.5

_stop_requested = threading.Event()
_acknowledged = threading.Event()
_escalated = threading.Event()
_graceful_depth = 0  # > 0 while some code honours stop requests at its own boundaries
_honouring_depth = 0  # > 0 while a loop runs that will honour a stop at its next boundary
_signals_depth = 0  # > 0 while stop_on_signals() has its handlers installed
_timer: threading.Timer | None = None
_lock = threading.Lock()


def request_stop() -> None:
    """Ask every running loop and builder to stop at its next boundary."""
    _stop_requested.set()


def stop_requested() -> bool:
    """Whether a stop was requested (and not cleared since)."""
    return _stop_requested.is_set()


def clear_stop() -> None:
    """Forget a stop request (a new command, or a test, starts from a clean state)."""
    _cancel_escalation()
    _stop_requested.clear()
    _acknowledged.clear()
    _escalated.clear()


def check_stop(what: str = "") -> None:
    """Raise :class:`~efce.errors.Interrupted` if a stop was requested; ``what`` names the work
    being interrupted (``"building goofspiel"``) for the message.  Call it between phases or
    chunks of a long build, not inside a hot loop.

    Raises
    ------
    Interrupted
        ``interrupted while <what>``.
    """
    if _stop_requested.is_set():
        _cancel_escalation()  # the request is being honoured: the exception ends the command
        raise Interrupted(f"interrupted while {what}" if what else "interrupted")


def acknowledge_stop() -> None:
    """Say that the stop request is being honoured (the caller stops gracefully, keeping what it
    computed), so it does not escalate to an abort after :data:`STOP_GRACE_SECONDS`."""
    _acknowledged.set()
    _cancel_escalation()


def escalated() -> bool:
    """Whether the last abort came from a stop request that nothing acknowledged in time."""
    return _escalated.is_set()


def signals_handled() -> bool:
    """True inside :func:`stop_on_signals` (main thread): SIGINT and SIGTERM only set the stop
    request, so a call that blocks in C code (an LP solver) must run where that request can
    end it — :class:`baselines.backends.IsolatedWorker`, which is killed — or the signal would
    wait for the solver to finish."""
    return _signals_depth > 0


def _on_signal(signum, frame):
    # A second signal, or one outside any graceful block, interrupts at once.
    if _graceful_depth == 0 or stop_requested():
        _cancel_escalation()
        raise KeyboardInterrupt(signal.Signals(signum).name)
    request_stop()
    _arm_escalation()


def _arm_escalation() -> None:
    global _timer
    with _lock:
        if _acknowledged.is_set() or _timer is not None or _honouring_depth > 0:
            return
        _timer = threading.Timer(STOP_GRACE_SECONDS, _escalate)
        _timer.daemon = True
        _timer.start()


def _cancel_escalation() -> None:
    global _timer
    with _lock:
        if _timer is not None:
            _timer.cancel()
            _timer = None


def _escalate() -> None:
    """The grace period ran out with the stop unacknowledged: signal the main thread again (a
    real signal, so that a blocking system call there returns at once)."""
    global _timer
    with _lock:
        _timer = None
        if (
            _acknowledged.is_set()
            or _honouring_depth > 0
            or not _stop_requested.is_set()
            or _signals_depth == 0
        ):
            return
        _escalated.set()
    try:
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    except (AttributeError, OSError):  # no pthread_kill: a simulated signal
        import _thread

        _thread.interrupt_main(signal.SIGINT)


@contextlib.contextmanager
def graceful():
    """Within this block a stop request does not raise: the code polls :func:`stop_requested`
    (or calls :func:`check_stop`) at its own boundaries (every :class:`IterationDriver` loop
    runs inside one, and so does every ``efce`` command)."""
    global _graceful_depth
    _graceful_depth += 1
    try:
        yield
    finally:
        _graceful_depth -= 1


@contextlib.contextmanager
def honouring():
    """Within this block a loop runs that honours a stop request at its next boundary, however
    long its current step takes (an iteration of a model with 10^8 pairs takes seconds): a stop
    request made meanwhile never escalates, so the loop's result is kept."""
    global _honouring_depth
    _honouring_depth += 1
    try:
        yield
    finally:
        _honouring_depth -= 1


@contextlib.contextmanager
def stop_on_signals():
    """Within this block, SIGINT and SIGTERM follow the contract of this module (main thread
    only; elsewhere the block does nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _signals_depth
    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    _signals_depth += 1
    try:
        yield
    finally:
        _signals_depth -= 1
        if _signals_depth == 0:
            _cancel_escalation()
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def ignore_signals():
    """Within this block SIGINT and SIGTERM are ignored (main thread only): for the last step of
    a command, printing a result that is complete, which a late signal must not cut in half."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
