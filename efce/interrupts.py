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

**Signals during a compiled call.**  Python runs a signal handler in the main thread only between
two bytecodes, so a handler (and any Python thread, while the call holds the GIL) waits for a
long compiled call to return: DECOMPOSE on 26M pairs is one 2-second call.  So the time is kept
by a *watchdog* thread of :func:`stop_on_signals`, woken through ``signal.set_wakeup_fd``:
the C-level handler writes the signal's number to a pipe the moment the signal arrives, whatever
the main thread does.  Every compiled kernel of the toolkit releases the GIL (``nogil=True``: they
touch no Python object; a test checks every one), and so do numpy's long calls (sorts,
``argsort``, ``searchsorted``, ufunc loops; not ``np.unique(..., axis=0)``), so the watchdog runs
beside them.  It starts the grace period at the signal and, when that ends unacknowledged or a
second signal comes, asks the main thread to abort (a :class:`KeyboardInterrupt`, as above).  If
the main thread does not take the abort over — its handler has not run since the signal, or
does not run within :data:`TAKEOVER_SECONDS` of the abort: it is inside a compiled call —
the watchdog ends the process itself: the ``abort`` callback of :func:`stop_on_signals` writes
the one error (the ``efce`` command's ``{"error": ..., "status": "interrupted"}``), the temporary
files registered with :func:`remove_on_abort` are removed, and the process exits with status
:data:`ABORT_STATUS` at once (``os._exit``: a thread inside a compiled call cannot be
unwound).  A builder's half-made model is lost either way, as with :class:`~efce.errors.Interrupted`.

**Signals during a compilation.**  numba compiles in Python and LLVM in C, which calls back into
Python through ctypes: a :class:`KeyboardInterrupt` raised there is printed and dropped ("Exception
ignored"), and one raised elsewhere in the compiler may leave LLVM half-changed (a later call
crashes).  So while the main thread runs code of :data:`COMPILER_MODULES` the handler raises
nothing and the watchdog ends the process itself, as for a compiled call; a stop that was
acknowledged (or that a loop will honour) still ends the process if the main thread is then
found compiling, since a compilation is no result to keep; a warm-up's run (:func:`discarding`)
ends at its next boundary without a result; and an abort the main thread took over but did not
finish within :data:`UNWIND_SECONDS` (its interrupt swallowed) is ended by the watchdog too.

The checks are cheap (one read of a :class:`threading.Event`), but they belong between phases
of a build, never in the body of a hot loop; a compiled kernel needs none.

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
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType

from efce.errors import Interrupted

__all__ = [
    "ABORT_STATUS",
    "COMPILE_POLL_SECONDS",
    "COMPILER_MODULES",
    "STOP_GRACE_SECONDS",
    "TAKEOVER_SECONDS",
    "UNWIND_SECONDS",
    "acknowledge_stop",
    "check_stop",
    "clear_stop",
    "discarded",
    "discarding",
    "escalated",
    "forget_on_abort",
    "graceful",
    "honouring",
    "ignore_signals",
    "in_compiler",
    "remove_on_abort",
    "request_stop",
    "signals_handled",
    "stop_on_signals",
    "stop_requested",
    "wrapped_abort",
]

#: Seconds a stop request may wait for the code to reach a point where it stops gracefully
#: (and say so, :func:`acknowledge_stop`) before it acts as a second signal: together with
#: :data:`TAKEOVER_SECONDS` and the time to write the result, the first signal ends every
#: command within 2 s.
STOP_GRACE_SECONDS = 1.5
#: Seconds the watchdog gives the main thread to take an abort over (its signal handler raises
#: :class:`KeyboardInterrupt` at its next bytecode) before ending the process itself: the main
#: thread is then inside a compiled call.  Short: either way the command ends with the same one
#: error, and what the main thread's unwinding would have removed is removed by the watchdog
#: (:func:`remove_on_abort`).
TAKEOVER_SECONDS = 0.1
#: Seconds the watchdog gives the main thread, once it has taken an abort over, to end the
#: command (unwind and leave :func:`stop_on_signals`) before ending the process itself: the
#: :class:`KeyboardInterrupt` may have been swallowed (raised inside a ctypes callback or a
#: finalizer, Python prints "Exception ignored" and goes on).
UNWIND_SECONDS = 0.3
#: Seconds between two looks of the watchdog at the main thread, after a stop request it
#: honours, for a compilation (which then ends the process, :func:`acknowledge_stop`).
COMPILE_POLL_SECONDS = 0.05
#: Exit status of a command ended by a signal (128 + SIGINT, the shell's convention).
ABORT_STATUS = 130

#: Modules whose code the main thread must not be interrupted in: numba's compiler and llvmlite
#: (a first run compiles for a minute).  A :class:`KeyboardInterrupt` raised there is lost (llvmlite
#: calls back into Python from C, where an exception is printed and dropped) or leaves LLVM's
#: state half-changed (a later call crashes the process); an abort during a compilation is
#: therefore the watchdog's, which ends the process without unwinding it.
COMPILER_MODULES = ("numba.core.", "llvmlite.")

_stop_requested = threading.Event()
_acknowledged = threading.Event()
_escalated = threading.Event()
_abort_requested = threading.Event()  # the watchdog decided to abort: the next handler call raises
_aborting = threading.Event()  # the main thread raised KeyboardInterrupt: it ends the command itself
_graceful_depth = 0  # > 0 while some code honours stop requests at its own boundaries
_honouring_depth = 0  # > 0 while a loop runs that will honour a stop at its next boundary
_discarding_depth = 0  # > 0 while the work in progress is worth nothing (a warm-up)
_signals_depth = 0  # > 0 while stop_on_signals() has its handlers installed
_lock = threading.Lock()  # guards the watchdog's state
_watchdog: _Watchdog | None = None
_abort_paths: set[str] = set()  # removed when the watchdog ends the process (remove_on_abort)


def request_stop() -> None:
    """Ask every running loop and builder to stop at its next boundary."""
    _stop_requested.set()


def stop_requested() -> bool:
    """Whether a stop was requested (and not cleared since)."""
    return _stop_requested.is_set()


def clear_stop() -> None:
    """Forget a stop request (a new command, or a test, starts from a clean state)."""
    with _lock:
        if _watchdog is not None:
            _watchdog.reset()
    _stop_requested.clear()
    _acknowledged.clear()
    _escalated.clear()
    _abort_requested.clear()
    _aborting.clear()


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
        acknowledge_stop()  # the request is being honoured: the exception ends the command
        raise Interrupted(f"interrupted while {what}" if what else "interrupted")


def acknowledge_stop() -> None:
    """Say that the stop request is being honoured (the caller stops gracefully, keeping what it
    computed), so it does not escalate to an abort after :data:`STOP_GRACE_SECONDS` — unless the
    main thread is then found compiling (:data:`COMPILER_MODULES`): a compilation is no result
    to keep, and can take a minute."""
    _acknowledged.set()


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
    # A second signal, one outside any graceful block, or one the watchdog turned into an abort
    # (Python runs a handler once for several signals of one number that arrived during a
    # compiled call) interrupts at once.
    if _graceful_depth == 0 or stop_requested() or _abort_requested.is_set():
        if _watchdog_ends_process() and in_compiler(frame):
            return  # the watchdog ends the process (COMPILER_MODULES): nothing is raised there
        _aborting.set()
        raise KeyboardInterrupt(signal.Signals(signum).name)
    request_stop()


def in_compiler(frame: FrameType | None) -> bool:
    """Whether ``frame`` or a frame below it runs code of :data:`COMPILER_MODULES`."""
    while frame is not None:
        module = frame.f_globals.get("__name__")
        if isinstance(module, str) and module.startswith(COMPILER_MODULES):
            return True
        frame = frame.f_back
    return False


def _main_thread_in_compiler() -> bool:
    """:func:`in_compiler` for the main thread's current frame (read from another thread)."""
    import sys

    return in_compiler(sys._current_frames().get(threading.main_thread().ident or -1))


def _watchdog_ends_process() -> bool:
    """Whether a watchdog runs that ends the process on an abort (an ``efce`` command's)."""
    watchdog = _watchdog
    return watchdog is not None and watchdog.abort is not None and not watchdog.closing


def _interrupt_main_thread() -> None:
    """A real SIGINT to the main thread, so that a blocking system call there returns at once
    and its handler runs."""
    main = threading.main_thread().ident
    assert main is not None  # the main thread is always started
    try:
        signal.pthread_kill(main, signal.SIGINT)
    except (AttributeError, OSError):  # no pthread_kill: a simulated signal
        import _thread

        _thread.interrupt_main(signal.SIGINT)


class _Watchdog:
    """The thread that keeps the signal contract's clock while the main thread cannot run Python
    (module doc): it reads the signal numbers the C-level handler writes to its pipe
    (``signal.set_wakeup_fd``), starts the grace period at the first signal, and aborts at
    its end (unacknowledged) or at the second signal.  ``abort``: writes the one error before
    the process ends by itself (None: never end the process, only ask the main thread)."""

    def __init__(self, abort: Callable[[], None] | None):
        self.abort = abort
        self.signals = 0  # SIGINT and SIGTERM received since the last clear_stop()
        self.deadline: float | None = None  # when the unacknowledged stop request escalates
        self.aborting = False  # an abort was decided (since the last clear_stop())
        self.closing = False  # stop_on_signals() is ending: never end the process from now on
        self.ending = False  # this thread is ending the process
        self.closed = threading.Event()  # close() began: the main thread ends the command itself
        self.read_fd, self.write_fd = os.pipe()
        for fd in (self.read_fd, self.write_fd):
            os.set_blocking(fd, False)
        try:
            self.previous_fd = signal.set_wakeup_fd(self.write_fd, warn_on_full_buffer=False)
        except (ValueError, OSError):
            self._close_fds()
            raise
        self.thread = threading.Thread(target=self._run, name="efce-stop-watchdog", daemon=True)
        self.thread.start()

    # ------------------------------------------------------------------ the thread
    def _run(self) -> None:
        while True:
            with _lock:
                deadline = self.deadline
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                readable = select.select([self.read_fd], [], [], timeout)[0]
                data = os.read(self.read_fd, 256) if readable else b""
            except BlockingIOError:
                data = b""
            except (OSError, ValueError):  # the pipe was closed: stop_on_signals() ended
                return
            if data and self.previous_fd >= 0:  # whoever set a wakeup fd before still hears
                with contextlib.suppress(OSError):
                    os.write(self.previous_fd, data.replace(b"\0", b""))
            for signum in data:
                if signum == 0:  # close()'s sentinel
                    return
                if signum in (signal.SIGINT, signal.SIGTERM):
                    self._signal()
            if deadline is not None and time.monotonic() >= deadline:
                self._expire()

    def _signal(self) -> None:
        with _lock:
            self.signals += 1
            if self.signals == 1 and _graceful_depth > 0:
                self.deadline = time.monotonic() + STOP_GRACE_SECONDS
                return
            self.deadline = None
        # A second signal, or a first one outside any graceful block: the signal itself is
        # pending for the main thread's handler already.
        self._abort(escalation=False)

    def _expire(self) -> None:
        with _lock:
            if self.deadline is None or time.monotonic() < self.deadline:
                return  # moved meanwhile
            self.deadline = None
            if self.closing:
                return
            waiting = _acknowledged.is_set() or _honouring_depth > 0
        if waiting and not (self.abort is not None and _main_thread_in_compiler()):
            # Honoured (or a loop will honour it at its next boundary): no escalation, but a
            # command's main thread is looked at again in a moment, in case it starts compiling.
            if self.abort is not None:
                with _lock:
                    if not self.closing and self.deadline is None:
                        self.deadline = time.monotonic() + COMPILE_POLL_SECONDS
            return
        _escalated.set()
        self._abort(escalation=True)

    def _abort(self, escalation: bool) -> None:
        with _lock:
            if self.aborting or self.closing:
                return
            self.aborting = True
            _abort_requested.set()
            # At the end of the grace period: if the main thread's handler has not run since
            # the signal, the main thread has been inside one compiled call all along.
            stuck = escalation and not (_stop_requested.is_set() or _aborting.is_set())
        # Inside numba's compiler the main thread must not be interrupted (COMPILER_MODULES):
        # this thread ends the process at once.
        compiling = self.abort is not None and _main_thread_in_compiler()
        if escalation and not compiling:
            _interrupt_main_thread()
        if self.abort is None:
            return  # the caller owns the process: the main thread aborts when it can
        if not (stuck or compiling):
            _aborting.wait(TAKEOVER_SECONDS)
            # Taken over: the main thread ends the command, unless its KeyboardInterrupt was
            # swallowed on the way (UNWIND_SECONDS).
            if _aborting.is_set() and self.closed.wait(UNWIND_SECONDS):
                return
        with _lock:
            if self.closing:
                return
            self.ending = True
        try:
            self.abort()
        finally:
            _remove_abort_paths()
            os._exit(ABORT_STATUS)

    # ------------------------------------------------------------------ the main thread
    def reset(self) -> None:
        """Forget the signals so far (under ``_lock``)."""
        self.signals = 0
        self.deadline = None
        self.aborting = False

    def close(self) -> None:
        """Stop the thread and give the wakeup fd back; if the thread is ending the process,
        wait for the end (the one error is being written)."""
        with _lock:
            ending = self.ending
            self.closing = True
            self.deadline = None
        self.closed.set()
        while ending:
            time.sleep(1.0)
        with contextlib.suppress(ValueError, OSError):
            signal.set_wakeup_fd(self.previous_fd)
        with contextlib.suppress(OSError):
            os.write(self.write_fd, b"\0")
        self.thread.join(timeout=5.0)
        self._close_fds()

    def _close_fds(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def remove_on_abort(path: str) -> None:
    """Have ``path`` (a file or a folder: temporary data the normal path removes itself) removed
    if the watchdog ends the process (module doc), which runs no ``finally`` block, no context
    manager's exit and no ``atexit`` function; :func:`forget_on_abort` once it is gone."""
    _abort_paths.add(path)


def forget_on_abort(path: str) -> None:
    """Undo :func:`remove_on_abort` (the path was removed, or kept, by its owner)."""
    _abort_paths.discard(path)


def _remove_abort_paths() -> None:
    import shutil

    for path in list(_abort_paths):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.remove(path)


def _forget_watchdog_after_fork() -> None:
    """A forked child has no watchdog thread: the wakeup fd would feed the parent's."""
    global _watchdog
    if _watchdog is not None:
        with contextlib.suppress(ValueError, OSError):
            signal.set_wakeup_fd(-1)
        _watchdog = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_watchdog_after_fork)


@contextlib.contextmanager
def graceful() -> Iterator[None]:
    """Within this block a stop request does not raise: the code polls :func:`stop_requested`
    (or calls :func:`check_stop`) at its own boundaries (every :class:`~solvers.driver.IterationDriver` loop
    runs inside one, and so does every ``efce`` command)."""
    global _graceful_depth
    _graceful_depth += 1
    try:
        yield
    finally:
        _graceful_depth -= 1


@contextlib.contextmanager
def honouring() -> Iterator[None]:
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
def discarding() -> Iterator[None]:
    """Within this block the work in progress is worth nothing if stopped (a warm-up: a method
    run on a tiny game to compile its kernels): a loop that would end gracefully on a stop
    request, keeping its result (:class:`~solvers.driver.IterationDriver`), raises
    :class:`~efce.errors.Interrupted` at its boundary instead (:func:`discarded`), so that
    nothing after it — a final report, more compiling — delays the stop."""
    global _discarding_depth
    _discarding_depth += 1
    try:
        yield
    finally:
        _discarding_depth -= 1


def discarded() -> bool:
    """True inside :func:`discarding`: a stop request ends the work without a result."""
    return _discarding_depth > 0


def wrapped_abort(exc: BaseException) -> bool:
    """True for an abort's :class:`KeyboardInterrupt` that numba reports as another exception:
    raised by the signal handler while numba boxed the arrays a nogil kernel returned, it comes
    out as a ``SystemError`` caused by it."""
    return isinstance(exc, SystemError) and isinstance(exc.__cause__, KeyboardInterrupt)


@contextlib.contextmanager
def stop_on_signals(abort: Callable[[], None] | None = None) -> Iterator[None]:
    """Within this block, SIGINT and SIGTERM follow the contract of this module (main thread
    only; elsewhere the block does nothing), its watchdog included.

    Parameters
    ----------
    abort : callable, optional
        Called on the watchdog's thread when the process must end while its main thread is
        inside a compiled call (module doc): it writes the one error the process leaves (with
        raw ``os.write``: the main thread may hold any Python stream's lock), and the
        process then exits with :data:`ABORT_STATUS`.  Without it (a library caller, who owns
        the process) the watchdog only asks the main thread to abort, which happens when the
        compiled call returns.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _signals_depth, _watchdog
    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    _signals_depth += 1
    started = None
    if _watchdog is None:
        with contextlib.suppress(ValueError, OSError):  # no pipe to spare: handlers alone
            started = _watchdog = _Watchdog(abort)
    try:
        yield
    except SystemError as exc:
        cause = exc.__cause__
        if wrapped_abort(exc) and cause is not None:  # the caller gets the KeyboardInterrupt it is
            raise cause from None
        raise
    finally:
        _signals_depth -= 1
        if started is not None:
            started.close()
            with _lock:
                _watchdog = None
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def ignore_signals() -> Iterator[None]:
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
