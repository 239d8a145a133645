"""Run a sweep on a SLURM or PBS cluster through dask-jobqueue (documented example; not run by
the tests).

    pip install dask-jobqueue
    python benchmarks/sweeps/jobqueue.py slurm benchmarks/sweeps/icfr_fig3.sweep.toml results-icfr

Run it on the cluster's login node, in the environment where efce-toolkit is installed: the batch
jobs start Dask workers with the same Python (``python -m distributed.cli.dask_worker``), and each
worker runs one sweep run at a time as its own ``python -m efce solve`` process.  The scheduler
lives in this process; results are written here, under the output folder.  Stop with Ctrl-C and
continue later with ``--resume`` semantics (the last argument ``resume``).
"""

import sys

import dask

from efce import sweep


def make_cluster(kind: str):
    # Each job: one node's cores as single-threaded worker processes (one run per core).
    # Adapt queue/account/walltime to your site; memory is per job, and each run's own limit
    # comes from the sweep file's [limits] memory.
    if kind == "slurm":
        from dask_jobqueue import SLURMCluster

        return SLURMCluster(
            queue="normal",
            account="my-project",
            cores=32,
            processes=32,
            memory="128GB",
            walltime="04:00:00",
            worker_extra_args=["--memory-limit", "0"],
        )
    if kind == "pbs":
        from dask_jobqueue import PBSCluster

        return PBSCluster(
            queue="workq",
            account="my-project",
            cores=32,
            processes=32,
            memory="128GB",
            walltime="04:00:00",
            resource_spec="select=1:ncpus=32:mem=128GB",
            worker_extra_args=["--memory-limit", "0"],
        )
    raise SystemExit(f"unknown cluster kind {kind!r}: slurm or pbs")


def main(kind: str, sweep_file: str, out_dir: str, resume: bool = False) -> None:
    # The scheduler runs in this process: one retry for a run whose worker (or job) dies.
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        cluster = make_cluster(kind)
    cluster.adapt(minimum_jobs=0, maximum_jobs=4)  # jobs are submitted while runs are waiting
    try:
        table = sweep(sweep_file, out_dir, scheduler=cluster.scheduler_address, resume=resume)
    finally:
        cluster.close()
    print(
        f"{table.executed} runs executed, {table.skipped} skipped, {table.failed} failed; "
        f"table in {out_dir}/table.csv"
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], resume=sys.argv[4:] == ["resume"])
