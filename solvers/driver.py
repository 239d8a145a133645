"""The one iteration driver every iterative method runs under.

A method's loop does its own arithmetic; the driver owns everything around it, once for all
methods: the budget (iterations and wall-clock seconds), the checkpoint schedule, the trace, the
progress callback, the stopping rule on the gap, and interruption (here the "gap" of
iteration ``t`` is simply ``1/t``):

>>> from efce.solvers.result import TraceRow
>>> driver = IterationDriver(iterations=10_000, time_limit=60.0)
>>> for t in driver:
...     gap = 1.0 / t                        # one iteration, then its gap
...     if driver.checkpoint_due():
...         with driver.paused():            # not counted in iteration_seconds
...             row = TraceRow(t, driver.elapsed(), gap)
...         if driver.record(row, converged=gap <= 1e-3):
...             break
>>> driver.status, driver.iteration, len(driver.trace)
('converged', 1139, 47)
>>> driver.iteration_seconds <= driver.elapsed()
True

Checkpoints fall on a geometric schedule (every iteration at first, then about 15% apart, so a
run of ``T`` iterations spends ``O(log T)`` evaluations) or every ``check_every`` iterations, and
always on the last iteration, however the run ends.  A method with a target tells
:meth:`IterationDriver.record` its gap and target (``aim``); near the target the next checkpoint
then comes where the gap's recent trend meets it, so a run stops within about 2% of the first
iteration that meets the target instead of up to 15% after it (with the default growth).

Interruption (:mod:`efce.interrupts`, the contract of every command): :func:`stop_on_signals`
turns SIGINT and SIGTERM into a request that every running driver honours at its next iteration
boundary (status ``"interrupted"``, after a last checkpoint), so a long run keeps what it
computed; a request during setup (a model's builders check it between their phases) ends the
run before it starts.  A second signal, or one outside any :func:`graceful` block, has the usual
effect (``KeyboardInterrupt``).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator

# The stop request and the signal contract live in efce.interrupts (builders below the solvers
# check it too); the driver's names are kept for the code that imports them from here.
from efce.interrupts import (
    acknowledge_stop,
    check_stop,
    clear_stop,
    discarded,
    graceful,
    honouring,
    request_stop,
    signals_handled,
    stop_on_signals,
    stop_requested,
)

from .result import TraceRow

#: Checkpoints after the first come at least this factor apart (geometric schedule).
CHECKPOINT_GROWTH = 1.15

#: Aimed checkpoints (see :meth:`IterationDriver.record`) cut a step of the geometric schedule
#: into at most this many: they come at least ``(growth − 1) / AIM_SPLIT · t`` apart (2 % of the
#: iterations with the default growth; more for the sparser schedules of costly gaps).
AIM_SPLIT = 8

ProgressCallback = Callable[[TraceRow], None]

__all__ = [
    "AIM_SPLIT",
    "CHECKPOINT_GROWTH",
    "IterationDriver",
    "ProgressCallback",
    "clear_stop",
    "graceful",
    "request_stop",
    "signals_handled",
    "stop_on_signals",
    "stop_requested",
]


class IterationDriver:
    """Budget, checkpoints, trace, progress and interruption of one iterative run.

    Parameters
    ----------
    iterations : int
        Iteration budget (at least 1).
    time_limit : float, optional
        Wall-clock seconds for the iterations (checkpoints included).
    check_every : int, optional
        Checkpoint every this many iterations instead of the geometric schedule.
    growth : float
        Factor between consecutive checkpoints of the geometric schedule.
    progress : callable, optional
        Called with every recorded :class:`~solvers.result.TraceRow`.

    Attributes
    ----------
    status : str
        ``"iteration_limit"``, ``"time_limit"``, ``"interrupted"`` or ``"converged"`` (set by
        :meth:`record`); a method may overwrite it (e.g. ``"infeasible"``).
    trace : list of TraceRow
    iteration : int
        The last iteration started.
    """

    def __init__(
        self,
        *,
        iterations: int,
        time_limit: float | None = None,
        check_every: int | None = None,
        growth: float = CHECKPOINT_GROWTH,
        progress: ProgressCallback | None = None,
    ):
        if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
            raise ValueError(f"iterations must be an integer ≥ 1, got {iterations!r}")
        if time_limit is not None and not time_limit > 0:  # also refuses NaN
            raise ValueError(f"time_limit must be a positive number of seconds, got {time_limit!r}")
        self.iterations = int(iterations)
        self.time_limit = time_limit
        self.check_every = check_every
        self.growth = growth
        self.progress = progress
        self.status = "iteration_limit"
        self.trace: list[TraceRow] = []
        self.iteration = 0
        self._next_check = check_every or 1
        self._ending: str | None = None
        self._checked = False
        self._paused = 0.0
        self._t0 = time.perf_counter()
        self._finished_at: float | None = None
        self._last_aim: tuple[int, float] | None = None  # (iteration, gap) of the last aimed record

    # ------------------------------------------------------------------ loop
    def __iter__(self) -> Iterator[int]:
        self._t0 = time.perf_counter()
        with graceful(), contextlib.ExitStack() as honoured:
            try:
                for t in range(1, self.iterations + 1):
                    self.iteration = t
                    self._ending = None
                    self._checked = False
                    if t == 2:
                        # From now on a stop request waits for the next boundary, however long
                        # an iteration takes; the first one (which may compile the kernels)
                        # is not waited for: the stop then escalates to an abort.
                        honoured.enter_context(honouring())
                    yield t
                    if self.status == "converged" or self._ending is not None:
                        return
                    # A stop that arrives after the body's checkpoint_due() said "go on" is
                    # honoured at the next iteration's checkpoint_due(), so the last
                    # iteration always gets its checkpoint (and its trace row).
                    if not self._checked and (reason := self._stop_reason(t)) is not None:
                        self.status = reason
                        return
            finally:  # also when the caller breaks out of the loop
                self._finished_at = time.perf_counter()

    def _stop_reason(self, t: int) -> str | None:
        if stop_requested():
            if discarded():  # a warm-up's run: nothing to keep, and nothing more to compile
                check_stop("warming up")
            acknowledge_stop()  # this run ends gracefully, after a last checkpoint
            return "interrupted"
        if t >= self.iterations:
            return "iteration_limit"
        if self.time_limit is not None and self.elapsed() >= self.time_limit:
            return "time_limit"
        return None

    def checkpoint_due(self) -> bool:
        """Whether to evaluate at the current iteration: on schedule, or because the run ends
        after it (budget spent or a stop requested).  Call once per iteration."""
        t = self.iteration
        self._checked = True
        self._ending = self._stop_reason(t)
        if self._ending is not None:
            self.status = self._ending
            return True
        if t >= self._next_check:
            self._next_check = t + self.check_every if self.check_every else max(t + 1, int(t * self.growth))
            return True
        return False

    @property
    def ending(self) -> bool:
        """True at the last iteration of the run (known once :meth:`checkpoint_due` was called)."""
        return self._ending is not None

    def record(
        self, row: TraceRow, *, converged: bool = False, aim: tuple[float, float | None] | None = None
    ) -> bool:
        """Append ``row`` to the trace and report it; returns True when the run should stop
        here (``converged``, or this was the last iteration).  The row gains the extra
        ``iteration_seconds`` (time in iterations so far, checkpoints excluded), so per-iteration
        speed can be read from any trace.

        ``aim = (gap, target)``: the quantity the method's stopping rule compares, and its
        target (``None``: no target, nothing to aim at).  While the gap is above the target and
        falling, the next checkpoint moves forward to the iteration where the power law through
        this and the previous aimed checkpoint, ``gap(t) = gap · (t / t_now)^b``, meets the
        target: ``t* = t_now · (target/gap)^(1/b)``, rounded up, but at least
        ``(growth − 1) / AIM_SPLIT · t_now`` later and never later than the geometric schedule
        (with ``check_every`` the schedule is the caller's and stays)."""
        row.extra.setdefault("iteration_seconds", self.iteration_seconds)
        self.trace.append(row)
        if self.progress is not None:
            self.progress(row)
        if converged:
            self.status = "converged"
            self._ending = "converged"
        elif aim is not None and self.check_every is None:
            self._aim_next_check(*aim)
        return self._ending is not None

    def _aim_next_check(self, gap: float, target: float | None) -> None:
        if target is None:
            return
        t, previous = self.iteration, self._last_aim
        self._last_aim = (t, gap)
        if previous is None or not (previous[1] > gap > target > 0) or previous[0] >= t:
            return  # no falling trend to follow (or nothing to aim at)
        slope = math.log(gap / previous[1]) / math.log(t / previous[0])  # < 0
        log_predicted = math.log(t) + math.log(target / gap) / slope  # in logs: a flat trend overflows
        if log_predicted >= math.log(self._next_check):
            return
        earliest = t + max(1, math.ceil((self.growth - 1.0) / AIM_SPLIT * t))
        self._next_check = max(earliest, math.ceil(math.exp(log_predicted)))

    # ------------------------------------------------------------------ time
    def elapsed(self) -> float:
        """Seconds since the loop started (checkpoints included)."""
        end = self._finished_at if self._finished_at is not None else time.perf_counter()
        return end - self._t0

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Time spent in this block (gap evaluations, checkpoints) is not iteration time."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self._paused += time.perf_counter() - started

    @property
    def iteration_seconds(self) -> float:
        """Seconds spent in the iterations alone, without checkpoints."""
        return self.elapsed() - self._paused
