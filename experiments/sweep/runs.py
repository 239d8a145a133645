"""One run of a sweep: an ``efce solve`` child process started by a Dask task."""

from __future__ import annotations

import contextlib
import os
import time

from efce.errors import GameError
from efce.solvers.result import read_trace as _read_trace

from ..compare import child_status, child_timeout
from ..harness import run_solve
from .grid import START_TOPIC, STOP_POLL_SECONDS, Run


def read_trace(path: str) -> list[dict]:
    """The rows of an ``efce solve --trace`` CSV as a run record keeps them
    (:func:`efce.solvers.result.read_trace` without the method column): ``iteration`` (int),
    ``seconds``, ``gap``, ``infeasibility`` and the method's extra columns (floats; empty cells
    → None); no file → no rows.

    Raises
    ------
    GameError
        A malformed file (naming the line).
    """
    if not os.path.exists(path):
        return []
    return [_without_method(row) for row in _read_trace(path)]


def _without_method(row: dict) -> dict:
    row.pop("method", None)
    return row


def execute_run(run: Run, sweep_id: str | None = None, stop_event: str | None = None) -> dict:
    """Run one sweep run in a child process and return its record (the Dask task).

    Never raises for the run's own failures (they are in ``status`` and ``error``).  On a Dask
    worker it announces its start on :data:`~efce.experiments.sweep.grid.START_TOPIC` (so the
    client counts attempts) and interrupts its child (SIGINT: the child keeps its result so far)
    once the sweep's stop event is set.

    Returns
    -------
    dict
        The run's parameters (:meth:`Run.params`) and ``status``, ``error``, ``wall_seconds``,
        ``peak_memory_mib``, ``worker``, ``result`` (the child's ``solve`` JSON, or None) and
        ``trace`` (:func:`read_trace`'s rows).
    """
    worker = _announce_start(run, sweep_id)
    memory = None if run.memory_gib is None else int(run.memory_gib * 2**30)
    try:
        child, rows = run_solve(
            run.solve_arguments(),
            timeout=child_timeout(run.options.get("time_limit")),
            memory_limit_bytes=memory,
            stop_requested=_stop_poller(stop_event),
        )
    except GameError as exc:  # the child's trace file is malformed: the run failed
        return {
            **run.params(),
            "status": "error",
            "error": str(exc),
            "wall_seconds": 0.0,
            "peak_memory_mib": None,
            "worker": worker,
            "result": None,
            "trace": [],
        }
    status, error = child_status(child)
    return {
        **run.params(),
        "status": status,
        "error": error,
        "wall_seconds": round(child.wall_seconds, 6),
        "peak_memory_mib": child.peak_memory_mib,
        "worker": worker,
        "result": child.payload if error is None else None,
        "trace": [_without_method(row) for row in rows],
    }


def _announce_start(run: Run, sweep_id: str | None) -> str | None:
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):  # not on a Dask worker (a direct call)
        return None
    if sweep_id is not None:
        worker.log_event(START_TOPIC, {"sweep": sweep_id, "run": run.key})
    return worker.address


def _stop_poller(name: str | None):
    """A ``stop_requested`` callable for :func:`run_child` that reads the sweep's Dask event."""
    if name is None:
        return lambda: False
    from distributed import Event

    event = Event(name)
    checked, is_set = 0.0, False

    def poll() -> bool:
        nonlocal checked, is_set
        now = time.monotonic()
        if not is_set and now - checked >= STOP_POLL_SECONDS:
            checked = now
            # scheduler unreachable for a moment: the run goes on
            with contextlib.suppress(Exception):
                is_set = event.is_set()
        return is_set

    return poll
