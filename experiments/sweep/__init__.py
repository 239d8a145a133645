"""Sweeps: a grid of ``efce solve`` runs — games × methods × seeds × options — on Dask distributed.

A sweep file (TOML) names the grid::

    name = "tiny"
    games = ["kuhn:players=3,ranks=3", "goofspiel:players=2,ranks=3"]   # or a table label = spec
    methods = ["icfr", "cfr-s"]
    seeds = [0, 1]                     # or a count: seeds = 3 means 0, 1, 2

    [limits]                           # per run
    iterations = 2000
    time = 60                          # seconds (the run's --time-limit)
    memory = 2                         # GiB (address-space limit of the run's process)

    [options.subgradient]              # per method; a list is a grid axis
    step_size = [1e-3, 1e-4]

Every run is one ``efce solve GAME --method M --json --trace FILE [options]`` child process
(:mod:`experiments.harness`: its own process, its own memory and wall-clock limit), started by a
Dask task.  By default the tasks run on a :class:`distributed.LocalCluster` of worker processes,
one per core; ``scheduler="tcp://HOST:PORT"`` runs the same sweep on an existing cluster.

Nothing is lost: every finished run is written to ``DIR/runs/<key>.json`` (the ``solve`` JSON,
the trace and the run's parameters) atomically, as soon as it finishes; the key is derived from
the run's parameters, so ``resume=True`` skips what is done.  A worker that dies loses only the
run it was on, which the scheduler retries once on another worker; a run lost twice is recorded
as failed with the reason.  At the end the runs are aggregated over seeds into ``table.csv``
(loads straight into pandas), ``table.md`` and plots (``plots/``).

Methods without a ``seed`` option (``rm``, ``cfr``, ``cfr+``, ``lp-*``) are deterministic: they
run once per grid point, not once per seed.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import itertools
import json
import math
import os
import re
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from efce.games.atomic import atomic_open, atomic_savefig
from efce.errors import GameError, OptionError, SweepError
from efce.games.spec import check_spec
from efce.solvers.driver import graceful, stop_requested

from .compare import (SUCCESS_STATUSES, THRESHOLDS, check_game, child_status, child_timeout,
                      option_arguments)
from .harness import MAX_MEMORY_LIMIT_GIB, efce_command, run_child
from .paths import check_output_folder
from .solve import (METHODS, check_folder_argument, describe_value, is_integer, is_real,
                    validate_options)




#: Top-level keys of a sweep file.
SWEEP_KEYS = ("name", "games", "methods", "seeds", "limits", "options")
#: Keys of a sweep file's ``[limits]`` table: per-run limits.
LIMIT_KEYS = {"time": "seconds for the run's iterations (its --time-limit)",
              "memory": "GiB of address space for the run's process",
              "iterations": "iterations of the run (methods that iterate)"}
#: Most runs a sweep may have: the grid is expanded in memory and every run is a process and a
#: record file, so a larger grid (``seeds = 100000000``) is refused up front with its size.
MAX_RUNS = 100_000
#: The Dask event topic on which workers announce each start of a run (counts attempts).
START_TOPIC = "efce-sweep-start"
#: Seconds between a running task's checks of the sweep's stop event.
STOP_POLL_SECONDS = 2.0


# ----------------------------------------------------------------------------- the grid
@dataclass
class Run:
    """One run of a sweep: ``efce solve game --method method [--seed seed] [options]``.

    Attributes
    ----------
    key : str
        ``<game slug>-<method>[-s<seed>]-<digest>``, the digest a hash of every parameter below
        (but the label): the name of the run's result file.
    label : str
        The game's name in tables and plots (the sweep file's label, or the spec itself).
    game : str
        The spec or ``.efg`` path as written in the sweep file.
    game_path : str
        What the child is given (a relative ``.efg`` path resolved against the sweep file).
    method : str
    seed : int or None
        None for methods without a seed.
    options : dict
        The options the sweep sets explicitly (validated), the limits' ``iterations`` and
        ``time_limit`` included.
    memory_gib : float or None
    """

    key: str
    label: str
    game: str
    game_path: str
    method: str
    seed: int | None
    options: dict[str, Any] = field(default_factory=dict)
    memory_gib: float | None = None

    def params(self) -> dict[str, Any]:
        """The run's parameters as JSON (what its result file records)."""
        return {"key": self.key, "label": self.label, "game": self.game, "method": self.method,
                "seed": self.seed, "options": dict(self.options), "memory_gib": self.memory_gib}

    def command(self, trace_path: str) -> list[str]:
        """The child's command line (:func:`experiments.harness.efce_command`)."""
        options = dict(self.options)
        if self.seed is not None:
            options["seed"] = self.seed
        return efce_command("solve", self.game_path, "--method", self.method, "--json",
                            "--trace", trace_path, *option_arguments(options))


@dataclass
class Sweep:
    """A validated sweep: its name and its runs in grid order (games, methods, options, seeds)."""

    name: str
    runs: list[Run]
    source: str | None = None


def _slug(text: str, limit: int = 40) -> str:
    return re.sub(r"[^A-Za-z0-9+]+", "_", text).strip("_")[:limit].strip("_") or "game"


def run_key(game: str, method: str, seed: int | None, options: dict, memory_gib: float | None) -> str:
    """The stable key of a run: readable, plus a digest of all its parameters.

    The digest hashes the canonical JSON of ``(game, method, seed, options, memory_gib)``
    (options sorted by name, values as validated), so the same run in another sweep file, in
    another order, has the same key.
    """
    canonical = json.dumps({"game": game, "method": method, "seed": seed,
                            "options": {k: options[k] for k in sorted(options)},
                            "memory_gib": memory_gib}, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:12]
    stem = os.path.basename(game)[:-4] if game.lower().endswith(".efg") else game
    seed_part = "" if seed is None else f"-s{seed}"
    return f"{_slug(stem)}-{_slug(method)}{seed_part}-{digest}"


def load_sweep(spec_or_path) -> Sweep:
    """Read and validate a sweep: a TOML file path, or the same content as a dict.

    Every game spec, method, option value and limit is checked here, before anything runs.

    Parameters
    ----------
    spec_or_path : str, os.PathLike or dict
        A ``.toml`` sweep file, or its parsed content (relative ``.efg`` paths are then relative
        to the working folder).

    Returns
    -------
    Sweep

    Raises
    ------
    SweepError
        A missing or malformed file, an unknown key, a bad game, method, option or limit (the
        message names where), or a grid with the same run twice.
    """
    if not isinstance(spec_or_path, (str, os.PathLike, dict)):
        raise OptionError(f"the sweep must be a .toml path or a dict of its content, got "
                          f"{describe_value(spec_or_path)}")
    if isinstance(spec_or_path, dict):
        content, base, source, default_name = spec_or_path, os.getcwd(), None, "sweep"
    else:
        import tomllib
        path = os.fspath(spec_or_path)
        if not os.path.isfile(path):
            raise SweepError(f"no such sweep file: {path}")
        try:
            with open(path, "rb") as fh:
                content = tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise SweepError(f"{path}: not valid TOML ({exc})") from None
        base, source = os.path.dirname(os.path.abspath(path)), path
        default_name = os.path.basename(path).split(".")[0]
    unknown = sorted(set(content) - set(SWEEP_KEYS))
    if unknown:
        raise SweepError(f"unknown sweep key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
                         f"valid: {', '.join(SWEEP_KEYS)}")
    name = content.get("name", default_name)
    if not isinstance(name, str) or not name:
        raise SweepError(f"name must be a non-empty string, got {name!r}")
    games = _games(content.get("games"), base)
    methods = _methods(content.get("methods"))
    seeds = _seeds(content.get("seeds", [0]))
    limits = _limits(content.get("limits", {}))
    options = content.get("options", {})
    if not isinstance(options, dict):
        raise SweepError("options must be a table of tables: [options.METHOD]")
    stray = sorted(set(options) - set(methods))
    if stray:
        raise SweepError(f"[options] names method(s) not in methods: {', '.join(stray)}")
    # The size of the grid from the axis lengths alone, before any of it is expanded.
    total = 0
    for method in methods:
        axes = options.get(method, {})
        combos = math.prod(len(v) if isinstance(v, list) else 1 for v in axes.values()) \
            if isinstance(axes, dict) else 1
        total += len(games) * combos * (len(seeds) if "seed" in METHODS[method].defaults else 1)
    if total > MAX_RUNS:
        raise SweepError(f"the grid has {total:,} runs, more than the {MAX_RUNS:,} a sweep may have "
                         f"(games × methods × option values × seeds); split it into smaller sweeps")
    runs, seen = [], {}
    for label, game, game_path in games:
        for method in methods:
            for explicit in _option_grid(method, options.get(method, {})):
                uses_seed = "seed" in METHODS[method].defaults
                for seed in (seeds if uses_seed else [None]):
                    given = dict(explicit)
                    for option, limit in (("iterations", "iterations"), ("time_limit", "time")):
                        if option in METHODS[method].defaults and limit in limits:
                            given.setdefault(option, limits[limit])
                    try:
                        valid = validate_options(method, {**given, "seed": seed})
                    except OptionError as exc:
                        raise SweepError(f"[options.{method}]: {exc}") from None
                    given = {k: valid[k] for k in given}
                    key = run_key(game, method, seed, given, limits.get("memory"))
                    if key in seen:
                        raise SweepError(f"the grid has the run {key} twice (game {game!r} listed twice?)")
                    seen[key] = True
                    runs.append(Run(key, label, game, game_path, method, seed, given,
                                    limits.get("memory")))
    return Sweep(name, runs, source)


def _games(value, base: str) -> list[tuple[str, str, str]]:
    """``(label, game as written, path for the child)`` for every game, each spec checked."""
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = [(g, g) for g in value]
    else:
        raise SweepError("games must be a list of game specs (or .efg paths), or a table label = spec")
    if not items:
        raise SweepError("games is empty: give at least one game")
    out = []
    for label, game in items:
        if not isinstance(game, str) or not game.strip():
            raise SweepError(f"games: expected a spec string or .efg path, got {game!r}")
        game_path = game
        if game.lower().endswith(".efg") and not os.path.isabs(game):
            game_path = os.path.join(base, game)
        try:
            check_game(game_path)  # a .efg file is parsed: not run (and recorded) broken
        except GameError as exc:
            raise SweepError(f"games: {exc}") from None
        out.append((str(label), game, game_path))
    return out


def _methods(value) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(m, str) for m in value):
        raise SweepError(f"methods must be a non-empty list of method names from: {', '.join(METHODS)}")
    for method in value:
        if method not in METHODS:
            raise SweepError(f"unknown method '{method}'; valid: {', '.join(METHODS)}")
    if len(set(value)) != len(value):
        raise SweepError("methods lists a method twice")
    return value


def _seeds(value) -> list[int]:
    # Integers of any type (NumPy's too, from a dict built in Python); not bools.
    if is_integer(value):
        if value < 1:
            raise SweepError(f"seeds: a count must be at least 1, got {value}")
        if value > MAX_RUNS:
            raise SweepError(f"seeds: a count of {int(value):,} seeds is more than the "
                             f"{MAX_RUNS:,} runs a sweep may have")
        return list(range(int(value)))
    if (isinstance(value, list) and value and all(is_integer(s) and s >= 0 for s in value)
            and len(set(map(int, value))) == len(value)):
        return [int(s) for s in value]
    raise SweepError(f"seeds must be a count ≥ 1 or a list of distinct integers ≥ 0, got {value!r}")


def _limits(value) -> dict[str, float]:
    if not isinstance(value, dict):
        raise SweepError("limits must be a table: [limits] with " + ", ".join(LIMIT_KEYS))
    unknown = sorted(set(value) - set(LIMIT_KEYS))
    if unknown:
        raise SweepError(f"unknown limit{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; valid: "
                         + "; ".join(f"{k} ({v})" for k, v in LIMIT_KEYS.items()))
    for name, limit in value.items():
        if not is_real(limit) or not math.isfinite(float(limit)) or limit <= 0:
            raise SweepError(f"limits.{name} must be a positive number, got {limit!r}")
    if "memory" in value and value["memory"] > MAX_MEMORY_LIMIT_GIB:
        raise SweepError(f"limits.memory must be at most {MAX_MEMORY_LIMIT_GIB:.0f} GiB (2^63 "
                         f"bytes), got {value['memory']:g}")
    if "iterations" in value and not float(value["iterations"]).is_integer():
        raise SweepError(f"limits.iterations must be an integer, got {value['iterations']!r}")
    return {k: (int(v) if k == "iterations" else float(v)) for k, v in value.items()}


def _option_grid(method: str, axes) -> list[dict[str, Any]]:
    """Every combination of the method's option values (a list is an axis), in file order."""
    if not isinstance(axes, dict):
        raise SweepError(f"[options.{method}] must be a table of option = value or [values]")
    if "seed" in axes:
        raise SweepError(f"[options.{method}]: give seeds with the top-level seeds key, not as an option")
    names, values = list(axes), []
    for name in names:
        value = axes[name]
        value = value if isinstance(value, list) else [value]
        if not value:
            raise SweepError(f"[options.{method}]: {name} is an empty list")
        values.append(value)
    return [dict(zip(names, combo)) for combo in itertools.product(*values)]


# ----------------------------------------------------------------------------- one run
def read_trace(path: str) -> list[dict]:
    """The rows of an ``efce solve --trace`` CSV: ``iteration`` (int), ``seconds``, ``gap``,
    ``infeasibility`` and the method's extra columns (floats; empty cells → None)."""
    if not os.path.exists(path):
        return []
    rows = []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            row.pop("method", None)
            out = {"iteration": int(row.pop("iteration"))}
            for name, text in row.items():
                out[name] = float(text) if text not in ("", None) else None
            rows.append(out)
    return rows


def execute_run(run: Run, sweep_id: str | None = None, stop_event: str | None = None) -> dict:
    """Run one sweep run in a child process and return its record (the Dask task).

    Never raises for the run's own failures (they are in ``status`` and ``error``).  On a Dask
    worker it announces its start on :data:`START_TOPIC` (so the client counts attempts) and
    interrupts its child (SIGINT: the child keeps its result so far) once the sweep's stop event
    is set.

    Returns
    -------
    dict
        The run's parameters (:meth:`Run.params`) and ``status``, ``error``, ``wall_seconds``,
        ``peak_memory_mib``, ``worker``, ``result`` (the child's ``solve`` JSON, or None) and
        ``trace`` (:func:`read_trace`).
    """
    worker = _announce_start(run, sweep_id)
    with tempfile.TemporaryDirectory(prefix="efce-run-") as folder:
        trace_path = os.path.join(folder, "trace.csv")
        memory = None if run.memory_gib is None else int(run.memory_gib * 2**30)
        child = run_child(run.command(trace_path), timeout=child_timeout(run.options.get("time_limit")),
                          memory_limit_bytes=memory, stop_requested=_stop_poller(stop_event))
        trace = read_trace(trace_path)
    status, error = child_status(child)
    return {**run.params(), "status": status, "error": error,
            "wall_seconds": round(child.wall_seconds, 6), "peak_memory_mib": child.peak_memory_mib,
            "worker": worker, "result": child.payload if error is None else None, "trace": trace}


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
    state = {"checked": 0.0, "set": False}

    def poll() -> bool:
        now = time.monotonic()
        if not state["set"] and now - state["checked"] >= STOP_POLL_SECONDS:
            state["checked"] = now
            try:
                state["set"] = event.is_set()
            except Exception:  # scheduler unreachable for a moment: the run goes on
                pass
        return state["set"]
    return poll


# ----------------------------------------------------------------------------- results on disk
def runs_folder(out_dir: str) -> str:
    return os.path.join(out_dir, "runs")


def write_record(out_dir: str, record: dict) -> str:
    """Write ``runs/<key>.json`` atomically (a temporary file renamed into place)."""
    from .cli import _finite
    folder = runs_folder(out_dir)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, record["key"] + ".json")
    with atomic_open(path, "w") as fh:
        json.dump(_finite(record), fh, allow_nan=False)
    return path


def load_records(out_dir: str, keys=None) -> list[dict]:
    """The run records of a sweep folder (``runs/*.json``), optionally only those of ``keys``
    (in that order)."""
    folder = runs_folder(out_dir)
    if keys is not None:
        paths = [os.path.join(folder, k + ".json") for k in keys]
    else:
        paths = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".json")) \
            if os.path.isdir(folder) else []
    records = []
    for path in paths:
        if not os.path.isfile(path):
            continue
        try:
            with open(path) as fh:
                record = json.load(fh)
            if not isinstance(record, dict) or "key" not in record:
                raise ValueError("not a run record")
        except (ValueError, UnicodeDecodeError) as exc:
            # A damaged record (a crash while it was copied, a hand edit) must neither block the
            # sweep nor count as done: set it aside under a name that is no record, so its run
            # is redone on --resume.
            aside = path + ".damaged"
            with contextlib.suppress(OSError):
                os.replace(path, aside)
            import warnings
            warnings.warn(f"damaged run record {path} ({str(exc).splitlines()[0][:80]}); moved to "
                          f"{aside}, its run will be redone", stacklevel=2)
            continue
        records.append(record)
    return records


def finished(record: dict) -> bool:
    """A record of a run that needs no rerun: the child ended on its own (whatever its status,
    including the method's own errors), not lost or interrupted."""
    return record.get("outcome") == "finished"


# ----------------------------------------------------------------------------- execution
class SweepTable(list):
    """The aggregated table of a sweep: a list of row dicts (:func:`aggregate`), with

    Attributes
    ----------
    out_dir : str
    runs : int
        Runs in the grid.
    executed, skipped, failed : int
        Runs run by this call, skipped as already finished (resume), and recorded as failed.
    interrupted : bool
        A stop request (Ctrl-C, SIGTERM) ended the sweep early; finished runs are kept.
    wall_seconds : float
    """

    def __init__(self, rows=(), **facts):
        super().__init__(rows)
        self.out_dir = facts.get("out_dir", "")
        self.runs = facts.get("runs", 0)
        self.executed = facts.get("executed", 0)
        self.skipped = facts.get("skipped", 0)
        self.failed = facts.get("failed", 0)
        self.interrupted = facts.get("interrupted", False)
        self.wall_seconds = facts.get("wall_seconds", 0.0)

    def summary(self) -> dict:
        return {"out_dir": self.out_dir, "runs": self.runs, "executed": self.executed,
                "skipped": self.skipped, "failed": self.failed, "interrupted": self.interrupted,
                "wall_seconds": round(self.wall_seconds, 3)}


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, workers: int | None = None):
    """A Dask client: on the cluster at ``scheduler``, or on a new local cluster of ``workers``
    single-threaded worker processes (one per core by default).

    The local cluster's scheduler allows one failure per task (a run whose worker dies is
    retried once); on an existing cluster that is the scheduler's own setting
    ``distributed.scheduler.allowed-failures`` (Dask's default is 3; the examples in
    ``docs/examples/`` set 1).
    """
    import logging

    import dask
    import distributed
    if scheduler:
        try:
            client = distributed.Client(scheduler, timeout=f"{SCHEDULER_TIMEOUT:g}s")
        except Exception as exc:  # whatever the handshake with a non-Dask server raises
            raise SweepError(f"no Dask scheduler answers at {scheduler} (within "
                             f"{SCHEDULER_TIMEOUT:g} s): {type(exc).__name__}") from None
        try:
            yield client
        finally:
            client.close()
        return
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), _workers_ignore_sigint():
        cluster = distributed.LocalCluster(n_workers=workers or default_workers(), threads_per_worker=1,
                                           processes=True, dashboard_address=None, memory_limit=0,
                                           silence_logs=logging.ERROR)
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
    """The checks of :func:`sweep` on its arguments (the sweep itself: :func:`load_sweep`); the
    output folder last, since checking it creates it."""
    if scheduler is not None and workers is not None:
        raise SweepError("--workers sizes the local cluster; with --scheduler the cluster's own "
                         "workers run the sweep")
    if workers is not None and (not is_integer(workers) or workers < 1):
        raise SweepError(f"--workers must be an integer ≥ 1, got {workers!r}")
    if scheduler is not None and not isinstance(scheduler, str):
        raise OptionError(f"--scheduler must be an address string such as tcp://HOST:PORT, got "
                          f"{describe_value(scheduler)}")
    if scheduler is not None and not re.match(r"^[a-z]+://\S+$", scheduler):
        raise SweepError(f"--scheduler must be an address such as tcp://HOST:PORT, got '{scheduler}'")
    if scheduler is not None:
        _check_reachable(scheduler)
    check_output_folder(out_dir)


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
        raise SweepError(f"cannot reach the Dask scheduler at {scheduler}: "
                         f"{exc.strerror or exc or 'no answer'}") from None


def sweep(spec_or_path, out_dir: str, scheduler: str | None = None, workers: int | None = None,
          resume: bool = False, *, progress: bool | None = None) -> SweepTable:
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
    if not isinstance(spec_or_path, (str, os.PathLike, dict)):
        raise OptionError(f"the sweep must be a .toml path or a dict of its content, got "
                          f"{describe_value(spec_or_path)}")
    spec = load_sweep(spec_or_path)
    check_sweep_arguments(out_dir, scheduler=scheduler, workers=workers)
    keys = [r.key for r in spec.runs]
    done = {r["key"] for r in load_records(out_dir, keys) if finished(r)}
    if done and not resume:
        raise SweepError(f"{out_dir} already holds {len(done)} finished run(s) of this sweep; pass "
                         f"--resume to skip them, or choose another --out")
    todo = [r for r in spec.runs if r.key not in done]
    os.makedirs(runs_folder(out_dir), exist_ok=True)
    with atomic_open(os.path.join(out_dir, "sweep.json"), "w") as fh:
        json.dump({"name": spec.name, "source": spec.source,
                   "runs": [r.params() for r in spec.runs]}, fh, indent=1)
    executed = failed = 0
    interrupted = False
    if todo:
        local_workers = None if scheduler else min(int(workers or default_workers()), len(todo))
        with graceful(), dask_client(scheduler, local_workers) as client:
            executed, failed, interrupted = _execute(client, todo, out_dir, len(spec.runs),
                                                     len(done), progress)
    records = load_records(out_dir, keys)
    table = aggregate([r for r in records if finished(r) or r.get("outcome") == "failed"])
    write_table(table, out_dir)
    with contextlib.suppress(ValueError):  # no trace to plot (every run failed)
        plot_sweep(records, os.path.join(out_dir, "plots"))
    return SweepTable(table, out_dir=out_dir, runs=len(spec.runs), executed=executed,
                      skipped=len(done), failed=failed, interrupted=interrupted,
                      wall_seconds=time.perf_counter() - started)


def _execute(client, todo: list[Run], out_dir: str, total: int, skipped: int,
             progress: bool | None) -> tuple[int, int, bool]:
    """Submit every run, write each record as it finishes; ``(executed, failed, interrupted)``."""
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
    futures = {client.submit(execute_run, run, sweep_id, stop_event.name, key=f"efce-{run.key}-{sweep_id[:8]}",
                             pure=False, retries=1): run for run in todo}
    pending = distributed.as_completed(list(futures))
    enabled = sys.stderr.isatty() if progress is None else progress
    bar = tqdm(total=total, initial=skipped, desc="runs", unit="run", file=sys.stderr,
               disable=not enabled, dynamic_ncols=True)
    executed = failed = 0
    try:
        while not pending.is_empty():
            if stop_requested():
                break
            batch = pending.next_batch(block=False)
            if not batch:
                time.sleep(0.2)
                continue
            for future in batch:
                run = futures.pop(future)
                record = _record(future, run, starts)
                if record is None:  # interrupted by the stop request: not a result
                    continue
                write_record(out_dir, record)
                executed += 1
                failed += record["outcome"] == "failed"
                bar.update(1)
                if failed:
                    bar.set_postfix_str(f"{failed} failed")
    finally:
        bar.close()
        if futures:  # stopped: cancel the pending runs, interrupt the running ones
            stop_event.set()
            client.cancel(list(futures))
        client.unsubscribe_topic(START_TOPIC)
    return executed, failed, bool(futures)


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
        record = {**run.params(), "status": "failed", "outcome": "failed",
                  "error": "cancelled by the scheduler (lost connection?)", "trace": []}
    else:
        exc = future.exception()
        reason = f"{type(exc).__name__}: {exc}"
        if type(exc).__name__ == "KilledWorker":  # the scheduler gave up after allowed-failures
            deaths = exc.allowed_failures + 1
            last = getattr(exc.last_worker, "address", exc.last_worker)
            reason = f"its worker died while running it, {deaths} time(s) (last on {last})"
        record = {**run.params(), "status": "failed", "outcome": "failed", "error": reason,
                  "trace": []}
    record["attempts"] = attempts
    return record


# ----------------------------------------------------------------------------- aggregation
#: Final values aggregated over seeds: the trace's last gap (EFCE max deviation; exploitability
#: for cfr/cfr+) and the solve JSON's gaps.
GAP_COLUMNS = ("final_gap", "efce_gap", "efcce_gap", "nfcce_gap")


def _mean_std(values: list[float]) -> tuple[float | None, float | None]:
    """Mean and population standard deviation (ddof = 0, as the ICFR table of docs/results)."""
    if not values:
        return None, None
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def _options_text(options: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in options.items()) or "—"


def _series_options(record: dict) -> dict:
    """A record's options without the per-run limits common to the grid."""
    return {k: v for k, v in record["options"].items() if k not in ("iterations", "time_limit")}


def aggregate(records: list[dict]) -> list[dict]:
    """One row per (game, method, options): mean ± std over seeds.

    Columns: ``game`` (label), ``spec``, ``method``, one column per option set anywhere in the
    sweep (empty where not set), ``runs``, ``finished``, ``failed``, ``statuses`` (e.g.
    ``iteration_limit×3``), ``iterations_mean``, ``<gap>_mean`` / ``<gap>_std`` for each of
    :data:`GAP_COLUMNS`, ``time_to_<t>_mean`` / ``_std`` / ``_reached`` (seconds since the
    iterations started until the trace's gap first is ≤ t, over the runs that reach it, for
    each of :data:`experiments.compare.THRESHOLDS`), ``seconds_mean`` / ``_std`` (the solve's
    own seconds), ``iteration_seconds_mean``, ``wall_seconds_mean`` (the whole child process)
    and ``peak_memory_mib_max``.  Missing values are None.
    """
    option_names = list(dict.fromkeys(k for r in records for k in r["options"]))
    groups: dict[tuple, list[dict]] = {}
    for record in records:
        group = (record["label"], record["game"], record["method"],
                 json.dumps(record["options"], sort_keys=True))
        groups.setdefault(group, []).append(record)
    rows = []
    for (label, game, method, _), members in groups.items():
        ok = [r for r in members if finished(r) and r.get("result")]
        row = {"game": label, "spec": game, "method": method}
        for name in option_names:
            row[name] = members[0]["options"].get(name)
        statuses: dict[str, int] = {}
        for r in members:
            statuses[r["status"]] = statuses.get(r["status"], 0) + 1
        row.update(runs=len(members), finished=len(ok),
                   failed=sum(r.get("outcome") == "failed" for r in members),
                   statuses=" ".join(f"{s}×{n}" for s, n in statuses.items()),
                   iterations_mean=_mean_std([r["result"]["iterations"] for r in ok])[0])
        for column in GAP_COLUMNS:
            values = [_final(r, column) for r in ok]
            row[f"{column}_mean"], row[f"{column}_std"] = _mean_std([v for v in values if v is not None])
        for threshold in THRESHOLDS:
            hits = [t for t in (_time_to(r["trace"], threshold) for r in ok) if t is not None]
            name = f"time_to_{threshold:g}"
            row[f"{name}_mean"], row[f"{name}_std"] = _mean_std(hits)
            row[f"{name}_reached"] = len(hits)
        row["seconds_mean"], row["seconds_std"] = _mean_std([r["result"]["seconds"] for r in ok])
        row["iteration_seconds_mean"] = _mean_std(
            [r["result"]["iteration_seconds"] for r in ok if r["result"].get("iteration_seconds") is not None])[0]
        row["wall_seconds_mean"] = _mean_std([r["wall_seconds"] for r in ok])[0]
        peaks = [r["peak_memory_mib"] for r in ok if r.get("peak_memory_mib") is not None]
        row["peak_memory_mib_max"] = max(peaks) if peaks else None
        rows.append(row)
    return rows


def option_columns(row: dict) -> list[str]:
    """The option columns of an :func:`aggregate` row (between ``method`` and ``runs``)."""
    names = list(row)
    return names[names.index("method") + 1:names.index("runs")]


def shown_options(rows: list[dict]) -> list[str]:
    """The option columns worth showing: every option, but the per-run limits (iterations,
    time limit) only where they differ between rows."""
    names = option_columns(rows[0]) if rows else []
    return [n for n in names if n not in ("iterations", "time_limit")
            or len({json.dumps(r.get(n)) for r in rows}) > 1]


def _final(record: dict, column: str) -> float | None:
    if column == "final_gap":
        return record["trace"][-1]["gap"] if record["trace"] else None
    return record["result"].get(column)


def _time_to(trace: list[dict], threshold: float) -> float | None:
    return next((row["seconds"] for row in trace if row["gap"] is not None and row["gap"] <= threshold), None)


def write_table(rows: list[dict], out_dir: str) -> None:
    """``table.csv`` (every column of :func:`aggregate`; empty cells for missing values) and
    ``table.md`` (the columns worth reading)."""
    columns = list(dict.fromkeys(k for row in rows for k in row)) or ["game", "spec", "method"]
    with atomic_open(os.path.join(out_dir, "table.csv"), "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if row.get(k) is None else row[k]) for k in columns})
    with atomic_open(os.path.join(out_dir, "table.md"), "w") as fh:
        fh.write(markdown_table(rows) + "\n")


def _cell(mean, std) -> str:
    if mean is None:
        return "—"
    return f"{mean:.3g} ± {std:.2g}" if std is not None else f"{mean:.3g}"


def markdown_table(rows: list[dict]) -> str:
    """The aggregated table in Markdown: mean ± std over seeds; columns without any value are
    left out."""
    option_names = shown_options(rows)
    heads = {"final_gap": "final gap", "efce_gap": "EFCE gap", "efcce_gap": "EFCCE gap",
             "nfcce_gap": "NFCCE gap"}
    columns = [("game", lambda r: r["game"])]
    if any(r["game"] != r["spec"] for r in rows):
        columns.append(("spec", lambda r: f"`{r['spec']}`"))
    columns.append(("method", lambda r: r["method"]))
    columns += [(name, (lambda n: lambda r: "—" if r.get(n) is None else str(r[n]))(name))
                for name in option_names]
    columns += [("runs", lambda r: f"{r['finished']}/{r['runs']}"),
                ("iterations", lambda r: "—" if r["iterations_mean"] is None else f"{r['iterations_mean']:.0f}")]
    for column in GAP_COLUMNS:
        if any(r[f"{column}_mean"] is not None for r in rows):
            columns.append((heads[column], (lambda c: lambda r: _cell(r[f"{c}_mean"], r[f"{c}_std"]))(column)))
    for threshold in THRESHOLDS:
        name = f"time_to_{threshold:g}"
        if any(r[f"{name}_reached"] for r in rows):
            columns.append((f"s to {threshold:g}", (lambda n: lambda r: "—" if not r[f"{n}_reached"] else
                            _cell(r[f"{n}_mean"], r[f"{n}_std"]) + f" ({r[f'{n}_reached']}/{r['finished']})")(name)))
    columns += [("iteration s", lambda r: _cell(r["iteration_seconds_mean"], None)),
                ("solve s", lambda r: _cell(r["seconds_mean"], r["seconds_std"])),
                ("process s", lambda r: _cell(r["wall_seconds_mean"], None)),
                ("status", lambda r: r["statuses"])]
    lines = ["| " + " | ".join(h for h, _ in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(f(r) for _, f in columns) + " |" for r in rows]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- plots
def _series_label(record: dict) -> str:
    options = _series_options(record)
    return record["method"] + (f" ({_options_text(options)})" if options else "")


def seed_band(records: list[dict], metric: str = "gap", x: str = "iterations"):
    """Mean and std over seeds of ``metric`` along the trace checkpoints common to all runs.

    Returns
    -------
    tuple of lists or None
        ``(xs, mean, std)`` — ``xs`` the iterations, or the mean over seeds of the seconds at
        those iterations when ``x="seconds"`` — or None without a common checkpoint.
    """
    traces = [{row["iteration"]: row for row in r["trace"] if row.get(metric) is not None}
              for r in records if r.get("trace")]
    if not traces:
        return None
    common = sorted(set.intersection(*(set(t) for t in traces)))
    if not common:
        return None
    xs, means, stds = [], [], []
    for it in common:
        mean, std = _mean_std([t[it][metric] for t in traces])
        xs.append(it if x == "iterations" else _mean_std([t[it]["seconds"] for t in traces])[0])
        means.append(mean)
        stds.append(std)
    return xs, means, stds


def _draw_band(ax, band, label):
    xs, mean, std = band
    floor = 1e-12
    points = [(x, m, s) for x, m, s in zip(xs, mean, std) if x > 0]
    if not points:
        return
    xs, mean, std = zip(*points)
    line, = ax.plot(xs, [max(m, floor) for m in mean], "o-" if len(xs) < 3 else "-",
                    markersize=3, label=label)
    if any(std):
        ax.fill_between(xs, [max(m - s, floor) for m, s in zip(mean, std)],
                        [max(m + s, floor) for m, s in zip(mean, std)], alpha=0.2, color=line.get_color())


def plot_sweep(source, folder: str) -> list[str]:
    """The plots of a sweep: per game, the gap against iterations and against seconds, one line
    per (method, options) with a band of ± one std over seeds (``<game>.png``); and an overview
    (``overview.png``) with one panel per (method, options) and trace metric (``gap``, and the
    ICFR/CFR-S ``efcce`` and ``nfcce`` when present), one line per game, against iterations
    (the layout of Celli et al. 2020, Figure 3).

    Parameters
    ----------
    source : str or list of dict
        A sweep folder (every finished record in its ``runs/``) or records.
    folder : str
        Where to write the PNG files.

    Returns
    -------
    list of str
        The files written.

    Raises
    ------
    ValueError
        No finished run with a trace.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = load_records(source) if isinstance(source, str) else source
    records = [r for r in records if finished(r) and r.get("trace")]
    if not records:
        raise ValueError("no finished run with a trace to plot")
    os.makedirs(folder, exist_ok=True)
    written = []
    games = list(dict.fromkeys((r["label"], r["game"]) for r in records))
    series = list(dict.fromkeys(_series_label(r) for r in records))
    for label, game in games:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for name in series:
            members = [r for r in records if r["game"] == game and _series_label(r) == name]
            for ax, x in zip(axes, ("iterations", "seconds")):
                band = seed_band(members, "gap", x) if members else None
                if band:
                    _draw_band(ax, band, f"{name} ({len(members)} run{'s' if len(members) > 1 else ''})")
        for ax, x in zip(axes, ("iterations", "runtime [s]")):
            ax.set_xscale("log" if x == "iterations" else "linear")
            ax.set_yscale("log")
            ax.set_xlabel(x)
            ax.set_ylabel("gap (max deviation)")
            ax.grid(True, which="both", alpha=0.3)
            if ax.lines:
                ax.legend(fontsize=8)
        axes[0].set_title(label if label == game else f"{label}: {game}", fontsize=10)
        fig.tight_layout()
        path = os.path.join(folder, _slug(label, 60) + ".png")
        atomic_savefig(fig, path, dpi=110)
        plt.close(fig)
        written.append(path)
    metrics = ["gap"] + [m for m in ("efcce", "nfcce") if any(m in r["trace"][0] for r in records)]
    titles = {"gap": "gap (max EFCE deviation)", "efcce": "EFCCE gap", "nfcce": "NFCCE gap"}
    fig, axes = plt.subplots(len(series), len(metrics), figsize=(5 * len(metrics), 4 * len(series)),
                             squeeze=False)
    for row, name in enumerate(series):
        for col, metric in enumerate(metrics):
            ax = axes[row][col]
            for label, game in games:
                members = [r for r in records if r["game"] == game and _series_label(r) == name]
                band = seed_band(members, metric) if members else None
                if band:
                    _draw_band(ax, band, f"{label} ({len(members)})")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{name}: {titles[metric]}", fontsize=10)
            ax.set_xlabel("iterations")
            ax.grid(True, which="both", alpha=0.3)
            if ax.lines:
                ax.legend(fontsize=7)
    fig.tight_layout()
    path = os.path.join(folder, "overview.png")
    atomic_savefig(fig, path, dpi=100)
    plt.close(fig)
    written.append(path)
    return written


def text_table(table: SweepTable) -> str:
    """The aggregated table for a terminal: mean ± std over seeds."""
    width = min(max([len(row["game"]) for row in table] + [4]) + 2, 50)
    head = (f"{'game':<{width}}{'method':<13}{'options':<22}{'runs':>6}{'final gap':>22}"
            + "".join(f"{'t(' + format(t, 'g') + ')':>12}" for t in THRESHOLDS) + f"{'solve s':>10}  status")
    lines = [head, "-" * len(head)]
    shown = shown_options(table)
    for row in table:
        options = {k: row[k] for k in shown if row[k] is not None}
        times = []
        for t in THRESHOLDS:
            name = f"time_to_{t:g}"
            times.append(f"{row[name + '_mean']:>12.2f}" if row[name + "_reached"] else f"{'—':>12}")
        solve = f"{row['seconds_mean']:>10.1f}" if row["seconds_mean"] is not None else f"{'—':>10}"
        lines.append(f"{row['game'][:width - 1]:<{width}}{row['method']:<13}{_options_text(options)[:21]:<22}"
                     f"{str(row['finished']) + '/' + str(row['runs']):>6}"
                     f"{_cell(row['final_gap_mean'], row['final_gap_std']):>22}{''.join(times)}{solve}  "
                     f"{row['statuses']}")
    return "\n".join(lines)
