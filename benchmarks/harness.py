"""Run benchmark cases each in a fresh process and collect their JSON reports.

A benchmark script defines ``CASES = {name: function}``; every function returns a dict of
measurements.  ``main(CASES)`` runs each selected case as ``python script.py --case NAME`` so that
peak memory (the high-water mark of that process) belongs to that case alone, then prints a table and
optionally writes the JSON list to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from efce.experiments.harness import run_child
from efce.games.resources.memory import peak_memory_mib as peak_mib


def timed(fn, *args, **kwargs):
    started = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - started


def main(cases: dict, description: str) -> None:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--case", help="run one case in this process and print its JSON")
    parser.add_argument("--only", default=None, help="comma-separated case names")
    parser.add_argument("--out", default=None, help="write all results as JSON to this file")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per case")
    args = parser.parse_args()
    if args.case:
        result = cases[args.case]()
        result.setdefault("peak_memory_mib", round(peak_mib(), 1))
        print(json.dumps({"case": args.case, **result}))
        return
    names = [n for n in cases if args.only is None or n in args.only.split(",")]
    results = []
    for name in names:
        print(f"… {name}", file=sys.stderr, flush=True)
        child = run_child([sys.executable, sys.argv[0], "--case", name], timeout=args.timeout)
        result = (
            child.payload
            if child.payload and not child.timed_out
            else {"case": name, "error": child.error or "failed"}
        )
        results.append(result)
        print(json.dumps(result), flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=2)
