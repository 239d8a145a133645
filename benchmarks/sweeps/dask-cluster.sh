#!/usr/bin/env bash
# Run a sweep on machines you start Dask on yourself (documented example; not run by the tests).
#
# Every machine needs the same Python environment with efce-toolkit installed
# (`pip install -e .` from the same checkout, or the same wheel): workers import
# `efce.experiments.sweep` and start `python -m efce solve ...` children.  Games given as .efg paths
# must be readable at the same path on every worker.  Results are written on the machine that
# runs `efce sweep`; workers need no shared file system.
set -euo pipefail

# 1. On the scheduler machine (HOST).  allowed-failures=1: a run whose worker dies is retried once,
#    then recorded as failed (Dask's own default is 3 retries).
DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=1 \
    dask scheduler --host 0.0.0.0 --port 8786 &

# 2. On each worker machine: one single-threaded worker process per core (each run is a
#    single-threaded child process with its own memory limit, so threads would only oversubscribe).
#    --memory-limit 0: the runs carry their own limits ([limits] memory in the sweep file).
dask worker tcp://HOST:8786 --nworkers "$(nproc)" --nthreads 1 --memory-limit 0 &

# 3. Anywhere that reaches the scheduler: the sweep, its results under --out.
efce sweep benchmarks/sweeps/icfr_fig3.sweep.toml --out results-icfr --scheduler tcp://HOST:8786

# Interrupted (Ctrl-C, lost connection)?  The same command with --resume runs only the missing runs.
efce sweep benchmarks/sweeps/icfr_fig3.sweep.toml --out results-icfr --scheduler tcp://HOST:8786 --resume
