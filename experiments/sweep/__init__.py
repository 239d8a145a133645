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

The package follows the stages of a sweep: :mod:`.grid` (the sweep file and its runs),
:mod:`.runs` (one child run), :mod:`.storage` (records on disk), :mod:`.execution` (Dask,
the :func:`sweep` entry), :mod:`.aggregation` (tables) and :mod:`.plots`.
"""

from efce.errors import SweepError

from .aggregation import (
    GAP_COLUMNS,
    SweepTable,
    aggregate,
    markdown_table,
    option_columns,
    shown_options,
    text_table,
    write_table,
)
from .execution import SCHEDULER_TIMEOUT, check_sweep_arguments, dask_client, default_workers, sweep
from .grid import (
    LIMIT_KEYS,
    MAX_RUNS,
    START_TOPIC,
    STOP_POLL_SECONDS,
    SWEEP_KEYS,
    Run,
    Sweep,
    load_sweep,
    run_key,
)
from .plots import plot_sweep, seed_band
from .runs import execute_run, read_trace
from .storage import finished, load_records, runs_folder, write_record

__all__ = [
    "GAP_COLUMNS",
    "LIMIT_KEYS",
    "MAX_RUNS",
    "Run",
    "SCHEDULER_TIMEOUT",
    "START_TOPIC",
    "STOP_POLL_SECONDS",
    "SWEEP_KEYS",
    "Sweep",
    "SweepError",
    "SweepTable",
    "aggregate",
    "check_sweep_arguments",
    "dask_client",
    "default_workers",
    "execute_run",
    "finished",
    "load_records",
    "load_sweep",
    "markdown_table",
    "option_columns",
    "plot_sweep",
    "read_trace",
    "run_key",
    "runs_folder",
    "seed_band",
    "shown_options",
    "sweep",
    "text_table",
    "write_record",
    "write_table",
]
