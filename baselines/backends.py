"""What every LP front end checks before calling its backend, and how backends that cannot share
one process are kept apart.

* :func:`check_lp_inputs` refuses a game or threshold the LP cannot represent (payoffs of
  magnitude 1e308 overflow the welfare row; a NaN threshold makes every comparison false) with
  one line, before any model is built or any backend is called.
* :class:`BackendError` is the one-line failure of a backend (HiGHS rejecting a model, a cvxpy
  solver error): the backend's name and its status, never a raw solver object.
* highspy and OR-Tools both contain HiGHS.  Whether the two can share one process depends on
  how each release links it: up to highspy 1.15 both shipped a ``libhighs.so.1`` (different
  versions, one soname), the dynamic loader kept whichever came first and the other extension
  failed to load; from highspy 1.16 HiGHS is linked into highspy's own extension and the two
  coexist.  :func:`must_isolate` decides by behaviour, not by file names: when the other
  package's extension is already loaded here, it asks :func:`highs_copies_coexist`, which loads
  both packages in both orders in a child process (once per process), and the callers run the
  backend in a fresh worker process (:class:`IsolatedWorker`) only when they cannot coexist.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable
from typing import Any

from efce.errors import BackendError, GameError, Interrupted  # Interrupted: re-exported
from efce.games.game import Game

#: Payoffs beyond this magnitude make sums over terminals overflow or lose every digit of the
#: other payoffs (the LP's welfare row adds all of them); such a game is refused up front.
MAX_ABS_PAYOFF = 1e12


def check_lp_inputs(game: Game, welfare_threshold: float | None = None) -> None:
    """Raise :class:`games.GameError` (one line) for payoffs or a threshold the LP cannot take."""
    import numpy as np

    payoffs = np.asarray(game.payoffs)
    if payoffs.size:
        worst = float(np.abs(payoffs).max())
        if not math.isfinite(worst) or worst > MAX_ABS_PAYOFF:
            raise GameError(
                f"payoffs of {game.name} reach {worst:g} in magnitude; the EFCE LP needs "
                f"finite payoffs of at most {MAX_ABS_PAYOFF:g} (rescale the game)"
            )
    if welfare_threshold is not None:
        try:
            tau = float(welfare_threshold)
        except (TypeError, ValueError):
            raise GameError(f"welfare threshold must be a number, not {welfare_threshold!r}") from None
        if not math.isfinite(tau):
            raise GameError(f"welfare threshold must be a finite number, not {tau}")


#: For each package that contains HiGHS, the modules whose import loads its copy of HiGHS.
HIGHS_MODULES = {
    "highspy": ("highspy",),
    "ortools": ("ortools.linear_solver.pywraplp", "ortools.pdlp.python.pdlp"),
}


def extension_loaded(package: str) -> bool:
    """True when a compiled extension module of ``package`` is imported in this process."""
    import importlib.machinery
    import sys

    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return any(
        name.partition(".")[0] == package and str(getattr(module, "__file__", "")).endswith(suffixes)
        for name, module in list(sys.modules.items())
    )


@functools.cache
def highs_copies_coexist() -> bool:
    """True when highspy and OR-Tools load into one process in either order.

    Tried in a child process per order (importing the modules of :data:`HIGHS_MODULES`); a
    child that fails, crashes or hangs for a minute counts as "they cannot coexist", the safe
    answer (the backend then runs in a worker).  The answer is cached for this process.
    """
    import subprocess
    import sys

    probe = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)"
    highspy, ortools = HIGHS_MODULES["highspy"], HIGHS_MODULES["ortools"]
    for order in (highspy + ortools, ortools + highspy):
        try:
            child = subprocess.run(
                [sys.executable, "-P", "-c", probe, *order],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        if child.returncode != 0:
            return False
    return True


def must_isolate(package: str) -> bool:
    """True when ``package``'s HiGHS (``"highspy"`` or ``"ortools"``) cannot be loaded in this
    process because the other package's is loaded here already and the two copies clash."""
    other = {"highspy": "ortools", "ortools": "highspy"}[package]
    return extension_loaded(other) and not highs_copies_coexist()


def stoppable() -> bool:
    """Whether a blocking solver call should run in an :class:`IsolatedWorker` so that a stop
    request can end it at once.  A solver in C code (HiGHS's IPX or PDLP, OR-Tools PDLP, cvxpy's
    solvers) does not return to Python until its own limits stop it, so a Python signal handler
    in this process only runs after it — a run could not be stopped.  True under
    :func:`solvers.driver.stop_on_signals` (the ``efce`` command); a library caller without
    signal handling keeps the in-process call."""
    from efce.interrupts import signals_handled

    return signals_handled()


class IsolatedWorker:
    """A fresh Python process (``python -m efce.baselines._worker``) that runs module-level functions
    sent to it (pickled by reference, arguments by value) one at a time: for a backend whose
    library clashes with one already loaded here, and for a solver call that a stop request
    must be able to end (:meth:`call` kills the worker and raises :class:`Interrupted`).  Unlike
    ``multiprocessing``'s spawn it never re-imports the caller's main script.  Use as a context
    manager or call :meth:`close`."""

    #: Seconds between two looks at the stop request while a call runs.
    POLL_SECONDS = 0.05

    def __init__(self):
        import signal
        import subprocess
        import sys

        # The worker ignores SIGINT and SIGTERM (the caller decides when a call ends), from its
        # very start: a signal to the whole process group while it still starts Python would
        # otherwise kill it, and the caller's "interrupted" would read "the worker died".  So it
        # is started with both blocked (a signal mask survives exec) and unblocks them once it
        # ignores them.  Here they are blocked around the fork alone, on this thread: a signal
        # meanwhile goes to another thread or waits, and is handled as usual.
        blocked = {signal.SIGINT, signal.SIGTERM}
        mask = (
            signal.pthread_sigmask(signal.SIG_BLOCK, blocked) if hasattr(signal, "pthread_sigmask") else None
        )
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "efce.baselines._worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        finally:
            if mask is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in the worker.

        The main thread waits for the reply in short slices, so signal handlers run meanwhile.

        Returns
        -------
        object
            What ``fn`` returned.

        Raises
        ------
        Interrupted
            A stop request came before the reply: the worker is killed (the call's work is lost,
            what the caller computed before it is not).
        BackendError
            The worker died (e.g. killed by the memory limit).
        Exception
            Whatever ``fn`` raised in the worker.
        """
        import pickle
        import select

        from efce.interrupts import acknowledge_stop, stop_requested

        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None  # both are pipes
        try:
            pickle.dump((fn, args), stdin, protocol=pickle.HIGHEST_PROTOCOL)
            stdin.flush()
            while not select.select([stdout], [], [], self.POLL_SECONDS)[0]:
                if stop_requested():
                    self.kill()
                    acknowledge_stop()  # the caller keeps what it computed before this call
                    raise Interrupted(f"{getattr(fn, '__name__', fn)} interrupted by a stop request")
            ok, value = pickle.load(stdout)
        except (EOFError, BrokenPipeError):
            raise BackendError("isolated worker", f"exited with code {self.proc.wait()}") from None
        except BaseException:  # a second Ctrl-C (KeyboardInterrupt) must not leave it computing
            self.kill()
            raise
        if not ok:
            raise value
        return value

    def kill(self) -> None:
        """End the worker now (SIGKILL), whatever it is computing; its pipes are closed.  Its peak
        memory so far is noted first (:func:`games.resources.memory.process_peak_rss_bytes`,
        read from the operating system: a killed worker cannot report it), so that an
        interrupted run's ``peak_memory_mib`` still counts its solver's copies."""
        from efce.games.resources.memory import note_worker_peak, process_peak_rss_bytes

        if self.proc.poll() is None:
            peak = process_peak_rss_bytes(self.proc.pid)
            if peak is not None:
                note_worker_peak(peak)
            self.proc.kill()
        self.proc.wait()
        self._close_pipes()

    def close(self) -> None:
        """End the worker once it has finished its call: it reports its peak memory
        (:func:`games.resources.memory.note_worker_peak`, so that the run's ``peak_memory_mib``
        counts the solver's copies), its input is closed, so it exits; then its pipes are closed
        (an unclosed one is a ``ResourceWarning``, an error under ``PYTHONWARNINGS=error``)."""
        if self.proc.poll() is None:
            self._report_peak()
            with contextlib.suppress(BrokenPipeError):
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
            self.proc.wait()
        self._close_pipes()

    def _report_peak(self, seconds: float = 1.0) -> None:
        """Ask the idle worker for its peak resident set size and note it; nothing when it does
        not answer within ``seconds``.  Not through :meth:`call`, which would take a stop request
        arriving meanwhile as its own and acknowledge it."""
        import pickle
        import select

        from efce.games.resources.memory import note_worker_peak, own_peak_rss_bytes

        stdin, stdout = self.proc.stdin, self.proc.stdout
        if stdin is None or stdout is None:
            return
        try:
            pickle.dump((own_peak_rss_bytes, ()), stdin, protocol=pickle.HIGHEST_PROTOCOL)
            stdin.flush()
            if select.select([stdout], [], [], seconds)[0]:
                ok, value = pickle.load(stdout)
                if ok:
                    note_worker_peak(value)
        except (OSError, EOFError, pickle.PickleError):  # a worker that has gone
            pass

    def _close_pipes(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):  # a pipe whose reader has gone
                    pipe.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def call_solver(fn: Callable[..., Any], *args: Any, isolate: bool, what: str) -> Any:
    """``fn(*args)``: a one-shot solver call, here or in an :class:`IsolatedWorker`.

    It runs in a worker when ``isolate`` (clashing HiGHS copies, :func:`must_isolate`) or when a
    stop request must be able to end it (:func:`stoppable`): a solver in C code does not return
    to Python before its own limits stop it, and a signal handler here would wait for it.

    Returns
    -------
    object
        What ``fn`` returned.

    Raises
    ------
    Interrupted
        A stop request came before or during the call (``what`` names the solver).
    """
    from efce.interrupts import acknowledge_stop, stop_requested

    if stop_requested():
        acknowledge_stop()
        raise Interrupted(f"stop requested before {what} started")
    if isolate or stoppable():
        with IsolatedWorker() as worker:
            return worker.call(fn, *args)
    return fn(*args)


def run_highs_stoppably(highs: Any) -> bool:
    """Run a prepared ``highspy.Highs`` to its end in a thread of this process while this thread
    keeps watching the stop request (:func:`efce.interrupts.stop_requested`): the signal
    handlers run meanwhile, and a stop request makes HiGHS return at its next interrupt check
    (simplex, interior-point and MIP callbacks, through highspy's ``cancelSolve``).  For a
    solver that is called many times from one loop (column generation), where a worker process
    per call would cost more than the calls.

    Returns
    -------
    bool
        Whether a stop request ended the run (its state is HiGHS's at that moment; the caller
        decides what to keep and acknowledges the request).
    """
    from efce.interrupts import stop_requested

    highs.HandleUserInterrupt = True
    highs.startSolve()
    cancelled = False
    try:
        while not highs.wait(0.05)[0]:
            if not cancelled and stop_requested():
                highs.cancelSolve()
                cancelled = True
    except BaseException:  # an abort (a second signal): HiGHS must not go on computing
        highs.cancelSolve()
        raise
    return cancelled


def highs_model(
    matrix: Any,
    cost: Any,
    col_lower: Any,
    col_upper: Any,
    row_lower: Any,
    row_upper: Any,
    *,
    maximize: bool = True,
    offset: float = 0.0,
    integer: int = 0,
) -> Any:
    """A ``highspy.HighsLp``: optimize ``cost · x + offset`` subject to ``row_lower ≤ matrix x ≤
    row_upper`` and ``col_lower ≤ x ≤ col_upper``, handed to HiGHS column-wise in one piece (no
    per-row Python calls); infinite bounds become HiGHS's infinity.

    Parameters
    ----------
    matrix : scipy.sparse matrix
        Converted to CSC.
    cost, col_lower, col_upper, row_lower, row_upper : array_like
    maximize : bool
    offset : float
        The objective's constant.
    integer : int
        The first ``integer`` columns are integer (a MIP), the others continuous.

    Returns
    -------
    highspy.HighsLp
    """
    import highspy
    import numpy as np
    import scipy.sparse as sp

    A = sp.csc_matrix(matrix)
    inf = highspy.kHighsInf

    def bound(values: Any) -> Any:
        values = np.asarray(values, dtype=np.float64)
        return np.where(np.isposinf(values), inf, np.where(np.isneginf(values), -inf, values))

    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = A.shape[1], A.shape[0]
    lp.col_cost_ = np.asarray(cost, dtype=np.float64)
    lp.col_lower_, lp.col_upper_ = bound(col_lower), bound(col_upper)
    lp.row_lower_, lp.row_upper_ = bound(row_lower), bound(row_upper)
    lp.offset_ = float(offset)
    lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = A.shape[1], A.shape[0]
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(np.float64, copy=False)  # no second copy of a big LP
    if integer:
        kinds = highspy.HighsVarType
        lp.integrality_ = [kinds.kInteger] * integer + [kinds.kContinuous] * (A.shape[1] - integer)
    return lp
