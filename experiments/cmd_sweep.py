"""``efce sweep SWEEP.toml --out DIR [--scheduler tcp://HOST:PORT] [--workers N] [--resume]``:
a thin layer over :func:`experiments.sweep.sweep`."""

from __future__ import annotations

import argparse
import os

from efce.errors import Interrupted, ResultWithError

from .cli import command, integer_argument
from .sweep import sweep, text_table


def _configure(p):
    p.add_argument(
        "sweep_file",
        metavar="SWEEP.toml",
        help="the grid: games, methods, seeds, per-method options, per-run limits",
    )
    p.add_argument("--out", required=True, help="output folder (runs/, table.csv, table.md, plots/)")
    p.add_argument(
        "--scheduler",
        default=None,
        help="address of a running Dask scheduler (tcp://HOST:PORT); default: a local "
        "cluster of worker processes",
    )
    p.add_argument(
        "--workers",
        type=integer_argument(1, 4096),
        default=None,
        help="worker processes of the local cluster (default: one per core)",
    )
    p.add_argument("--resume", action="store_true", help="skip the runs already finished in --out")


@command("sweep", _configure)
def run_sweep(args: argparse.Namespace) -> tuple[dict, str]:
    """Run a grid of solves (games × methods × seeds × options) on Dask, resumable."""
    table = sweep(
        args.sweep_file,
        args.out,
        scheduler=args.scheduler,
        workers=args.workers,
        resume=args.resume,
        progress=None if not args.json else False,
    )
    if table.interrupted and not table.executed and not table.skipped:
        raise Interrupted("interrupted before the first run finished")
    facts = table.summary()
    lines = [
        *table.damaged,
        text_table(table),
        "",
        f"{facts['runs']} runs: {facts['executed']} run now, {facts['skipped']} already finished, "
        f"{facts['failed']} failed{' (interrupted: rerun with --resume)' if facts['interrupted'] else ''}"
        f" — {facts['wall_seconds']:.1f} s",
        f"files in {args.out}: runs/, table.csv, table.md, plots/",
    ]
    result, text = {**facts, "out_dir": os.path.abspath(args.out), "table": list(table)}, "\n".join(lines)
    problems = list(table.unsaved)
    if facts["failed"]:  # the table is printed either way; the exit code says runs failed
        problems.insert(0, f"{facts['failed']} run(s) failed (see runs/ in {args.out}; --resume reruns them)")
    if problems:
        raise ResultWithError("; ".join(problems), result, text)
    return result, text
