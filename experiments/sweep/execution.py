"""Execution on Dask distributed: the cluster, the :func:`sweep` entry, resuming, stopping."""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

from efce.errors import OptionError, SweepError
from efce.games.resources.atomic import atomic_open
from efce.games.resources.memory import usable_cores
from efce.interrupts import acknowledge_stop, graceful, stop_requested
from efce.solvers.options import describe_value, is_integer

from ..compare import SUCCESS_STATUSES
from ..paths import check_outputs, make_output_folder
from ..solve import check_folder_argument
from .aggregation import SweepTable, aggregate, write_table
from .grid import START_TOPIC, Run, load_sweep
from .plots import plot_sweep
from .runs import execute_run
from .storage import finished, load_records, runs_folder, write_record

if TYPE_CHECKING:  # annotations only: distributed is imported when a sweep runs
    import distributed


def default_workers() -> int:
    """One worker per core this process may use."""
    return usable_cores()


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, workers: int | None = None) -> Iterator[distributed.Client]:
    """A Dask client: on the cluster at ``scheduler``, or on a new local cluster of ``workers``
    single-threaded worker processes (one per core by default).

    The local cluster's scheduler allows one failure per task (a run whose worker dies is
    retried once); on an existing cluster that is the scheduler's own setting
    ``distributed.scheduler.allowed-failures`` (Dask's default is 3; the examples in
    ``benchmarks/sweeps/`` set 1).
    """
    import logging

    import dask
    import distributed

    if scheduler:
        try:
            client = distributed.Client(scheduler, timeout=f"{SCHEDULER_TIMEOUT:g}s")
        except Exception as exc:  # whatever the handshake with a non-Dask server raises
            raise SweepError(
                f"no Dask scheduler answers at {scheduler} (within "
                f"{SCHEDULER_TIMEOUT:g} s): {type(exc).__name__}"
            ) from None
        try:
            yield client
        finally:
            client.close()
        return
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), _workers_ignore_sigint():
        cluster = distributed.LocalCluster(
            n_workers=workers or default_workers(),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            memory_limit=0,
            silence_logs=logging.ERROR,
        )
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@contextlib.contextmanager
def _workers_ignore_sigint():
    """Worker processes started in this block ignore SIGINT (they inherit the disposition), so a
    Ctrl-C on the terminal reaches the sweep, which stops them in order, instead of every
    worker printing a traceback."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def check_sweep_arguments(out_dir: str, *, scheduler: str | None, workers: int | None) -> None:
    """The checks of :func:`sweep` on its arguments (the sweep itself: :func:`load_sweep`), the
    output folder and the run records folder in it included; nothing is written."""
    if scheduler is not None and workers is not None:
        raise SweepError(
            "--workers sizes the local cluster; with --scheduler the cluster's own workers run the sweep"
        )
    if workers is not None and (not is_integer(workers) or workers < 1):
        raise SweepError(f"--workers must be an integer ≥ 1, got {workers!r}")
    if scheduler is not None and not isinstance(scheduler, str):
        raise OptionError(
            f"--scheduler must be an address string such as tcp://HOST:PORT, got {describe_value(scheduler)}"
        )
    if scheduler is not None and not re.match(r"^[a-z]+://\S+$", scheduler):
        raise SweepError(f"--scheduler must be an address such as tcp://HOST:PORT, got '{scheduler}'")
    if scheduler is not None:
        _check_reachable(scheduler)
    check_outputs(folders={"output folder (--out)": (out_dir, SWEEP_OUTPUTS)})


#: What :func:`sweep` writes into its output folder (a trailing ``/`` marks a folder).
SWEEP_OUTPUTS = ("runs/", "sweep.json", "table.csv", "table.md", "plots/")


#: Seconds to wait for a scheduler to accept a connection (and for the Dask handshake).
SCHEDULER_TIMEOUT = 5.0


def _check_reachable(scheduler: str) -> None:
    """Refuse a scheduler address that no one listens on, in a few seconds and before the
    output folder is written (Dask's own client would try for its whole timeout)."""
    import socket
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(scheduler)
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise SweepError(f"--scheduler {scheduler}: {exc}") from None
    if parts.scheme != "tcp" or not host or port is None:
        return  # other protocols (tls, inproc, ...) are left to Dask
    try:
        socket.create_connection((host, port), timeout=SCHEDULER_TIMEOUT).close()
    except OSError as exc:
        raise SweepError(
            f"cannot reach the Dask scheduler at {scheduler}: {exc.strerror or exc or 'no answer'}"
        ) from None


def sweep(
    spec_or_path: str | os.PathLike | dict,
    out_dir: str,
    scheduler: str | None = None,
    workers: int | None = None,
    resume: bool = False,
    *,
    progress: bool | None = None,
) -> SweepTable:
    """Run a sweep on Dask distributed and aggregate it.

    Parameters
    ----------
    spec_or_path : str, os.PathLike or dict
        A sweep file (TOML) or its content (:func:`load_sweep`).
    out_dir : str
        Output folder: ``runs/<key>.json`` per run, ``table.csv``, ``table.md``, ``plots/``,
        ``sweep.json`` (the expanded grid).
    scheduler : str, optional
        ``tcp://HOST:PORT`` of an existing Dask scheduler; default: a local cluster.
    workers : int, optional
        Worker processes of the local cluster (default: one per core).
    resume : bool
        Skip the runs already finished in ``out_dir``.  Without it, a folder that already holds
        finished runs of this sweep is refused (nothing is overwritten by accident).
    progress : bool, optional
        A progress bar over runs on stderr (default: when stderr is a terminal).

    Returns
    -------
    SweepTable
        The rows of :func:`aggregate` over every finished run of the grid, with the counts of
        runs executed, skipped and failed.  A stop request (Ctrl-C / SIGTERM inside
        :func:`solvers.driver.stop_on_signals`) stops submitting, cancels pending runs,
        interrupts running ones and keeps the finished ones (``interrupted`` is then True).

    Raises
    ------
    OptionError
        An argument of the wrong type (a sweep that is neither a path nor a dict, None as the
        output folder, a scheduler that is not a string); numbers may be of any numeric type.
    SweepError
        A bad sweep, output folder, worker count or scheduler address (before anything runs),
        or an unreachable scheduler.
    """
    started = time.perf_counter()
    # Argument types first, each named, before the (possibly slow) checks of the grid.
    out_dir = check_folder_argument(out_dir, "the output folder (out_dir)")
    if not isinstance(resume, bool):
        raise OptionError(f"resume must be True or False, got {describe_value(resume)}")
    if progress is not None and not isinstance(progress, bool):
        raise OptionError(f"progress must be True, False or None, got {describe_value(progress)}")
    if not isinstance(spec_or_path, (str, os.PathLike, dict)):
        raise OptionError(
            f"the sweep must be a .toml path or a dict of its content, got {describe_value(spec_or_path)}"
        )
    spec = load_sweep(spec_or_path)
    check_sweep_arguments(out_dir, scheduler=scheduler, workers=workers)
    keys = [r.key for r in spec.runs]
    damaged: list[str] = []
    done = {r["key"] for r in load_records(out_dir, keys, damaged) if finished(r)}
    if done and not resume:
        raise SweepError(
            f"{out_dir} already holds {len(done)} finished run(s) of this sweep; pass "
            f"--resume to skip them, or choose another --out"
        )
    todo = [r for r in spec.runs if r.key not in done]
    executed = failed = 0
    interrupted = False
    unsaved: list[str] = []
    not_written: list[tuple[dict, str]] = []
    with contextlib.ExitStack() as stack:
        # The cluster first: a scheduler that cannot be reached (or is no Dask scheduler) is
        # refused before anything is written.
        client = None
        if todo:
            local_workers = None if scheduler else min(int(workers or default_workers()), len(todo))
            client = stack.enter_context(dask_client(scheduler, local_workers))
        make_output_folder(runs_folder(out_dir), "runs folder")
        with atomic_open(os.path.join(out_dir, "sweep.json"), "w") as fh:
            json.dump(
                {"name": spec.name, "source": spec.source, "runs": [r.params() for r in spec.runs]},
                fh,
                indent=1,
            )
        if client is not None:
            with graceful():
                executed, failed, interrupted, not_written = _execute(
                    client, todo, out_dir, len(spec.runs), len(done), progress
                )
    records = load_records(out_dir, keys, damaged)
    if not_written:  # records that could not be written are still in the table
        folder = runs_folder(out_dir)
        reason = not_written[0][1]
        unsaved.append(f"{len(not_written)} run record(s) could not be written to {folder}: {reason}")
        written = {r["key"] for r in records}
        records += [r for r, _ in not_written if r["key"] not in written]
    table = aggregate([r for r in records if finished(r) or r.get("outcome") == "failed"])
    try:
        write_table(table, out_dir)
        # The plots wait for a sweep that ran to its end (--resume draws them): after a stop
        # the table keeps every finished run, and drawing would hold the exit for seconds.
        if not interrupted and any(finished(r) for r in records):
            with contextlib.suppress(ValueError):  # no trace to plot (every run failed)
                plot_sweep(records, os.path.join(out_dir, "plots"))
    except OSError as exc:
        unsaved.append(f"cannot write the table or plots in {out_dir}: {exc.strerror or exc}")
    return SweepTable(
        table,
        out_dir=out_dir,
        runs=len(spec.runs),
        executed=executed,
        skipped=len(done),
        failed=failed,
        interrupted=interrupted,
        wall_seconds=time.perf_counter() - started,
        unsaved=unsaved,
        damaged=damaged,
    )


#: Runs in flight (submitted, not finished) per worker thread of the cluster, and at least
#: :data:`MIN_IN_FLIGHT`: the scheduler holds a window of the grid, not all of it, so a grid of
#: tens of thousands of runs starts at once and stops (its queue dropped) in moments.
IN_FLIGHT_PER_THREAD = 4
#: The least number of runs in flight, whatever the cluster's size.
MIN_IN_FLIGHT = 64


def _execute(
    client,
    todo: list[Run],
    out_dir: str,
    total: int,
    skipped: int,
    progress: bool | None,
) -> tuple[int, int, bool, list[tuple[dict, str]]]:
    """Submit every run (a window of them at a time, :data:`IN_FLIGHT_PER_THREAD`), write each
    record as it finishes;
    ``(executed, failed, interrupted, not written)``, the last the records whose file could not
    be written (the folder removed during the sweep, a full disk), with the reason: their
    results are kept in the table all the same."""
    import sys

    import distributed
    from tqdm import tqdm

    sweep_id = uuid.uuid4().hex
    starts: dict[str, int] = {}

    def count_start(event):
        message = event[1]
        if isinstance(message, dict) and message.get("sweep") == sweep_id:
            starts[message["run"]] = starts.get(message["run"], 0) + 1

    client.subscribe_topic(START_TOPIC, count_start)
    stop_event = distributed.Event(f"efce-sweep-stop-{sweep_id}", client=client)
    futures: dict = {}
    pending = distributed.as_completed()
    enabled = sys.stderr.isatty() if progress is None else progress
    bar = tqdm(
        total=total,
        initial=skipped,
        desc="runs",
        unit="run",
        file=sys.stderr,
        disable=not enabled,
        dynamic_ncols=True,
    )
    executed = failed = 0
    not_written: list[tuple[dict, str]] = []
    submitted = 0

    def collect(batch) -> None:
        nonlocal executed, failed
        for future in batch:
            run = futures.pop(future)
            record = _record(future, run, starts)
            if record is None:  # interrupted by the stop request: not a result
                continue
            try:
                write_record(out_dir, record)
            except OSError as exc:
                not_written.append((record, exc.strerror or str(exc)))
            executed += 1
            failed += record["outcome"] == "failed"
            bar.update(1)
            if failed:
                bar.set_postfix_str(f"{failed} failed")

    window, window_checked = MIN_IN_FLIGHT, 0.0
    try:
        while submitted < len(todo) or not pending.is_empty():
            if stop_requested():
                acknowledge_stop()  # the finished runs are kept; the others are stopped below
                break
            now = time.monotonic()
            if now - window_checked > 2.0:  # the cluster may grow or shrink
                with contextlib.suppress(Exception):
                    threads = sum(client.nthreads().values())
                    window = max(MIN_IN_FLIGHT, IN_FLIGHT_PER_THREAD * threads)
                window_checked = now
            room = min(window - len(futures), len(todo) - submitted)
            if room > 0:
                batch_runs = todo[submitted : submitted + room]
                batch = client.map(
                    execute_run,
                    batch_runs,
                    sweep_id=sweep_id,
                    stop_event=stop_event.name,
                    key=[f"efce-{run.key}-{sweep_id[:8]}" for run in batch_runs],
                    pure=False,
                    retries=1,
                )
                futures.update(zip(batch, batch_runs, strict=True))
                pending.update(batch)
                submitted += len(batch_runs)
            done = pending.next_batch(block=False)
            if done:
                collect(done)
            else:
                time.sleep(0.05)
    finally:
        bar.close()
        if futures or submitted < len(todo):  # stopped: interrupt the running runs, drop the others
            with contextlib.suppress(Exception):  # a lost scheduler must not hide the results
                stop_event.set()
                client.cancel(list(futures))
        with contextlib.suppress(Exception):
            client.unsubscribe_topic(START_TOPIC)
    return executed, failed, bool(futures) or submitted < len(todo), not_written


def _record(future, run: Run, starts: dict[str, int]) -> dict | None:
    """The record of a completed future: the run's result, or the reason it failed."""
    attempts = max(1, starts.get(run.key, 0))
    if future.status == "finished":
        record = future.result()
        if record["status"] == "interrupted":
            if stop_requested():
                return None
            record.update(outcome="failed", error="interrupted (the run's process got SIGINT)")
        else:
            # A run that ended in error / out_of_memory is a failure: rerun on --resume.
            record["outcome"] = "finished" if record["status"] in SUCCESS_STATUSES else "failed"
    elif future.status == "cancelled":
        if stop_requested():
            return None
        record = {
            **run.params(),
            "status": "failed",
            "outcome": "failed",
            "error": "cancelled by the scheduler (lost connection?)",
            "trace": [],
        }
    else:
        exc = future.exception()
        reason = f"{type(exc).__name__}: {exc}"
        if type(exc).__name__ == "KilledWorker":  # the scheduler gave up after allowed-failures
            deaths = exc.allowed_failures + 1
            last = getattr(exc.last_worker, "address", exc.last_worker)
            reason = f"its worker died while running it, {deaths} time(s) (last on {last})"
        record = {**run.params(), "status": "failed", "outcome": "failed", "error": reason, "trace": []}
    record["attempts"] = attempts
    return record
