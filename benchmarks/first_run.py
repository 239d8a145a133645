"""A first run's wall clock on an empty numba cache, against the same command warm, and where its
compiling goes (numba's compile events per kernel and argument types).

    python benchmarks/first_run.py [--only NAME,...] [--repeats N] [--profile] [--out FILE]
    python benchmarks/first_run.py --command 'efce solve farina-fig1 --method rm' --profile

Each case runs ``efce ...`` (of the venv this script runs in) in a new process twice: first with
``NUMBA_CACHE_DIR`` set to a new empty folder (a fresh clone, a new Dask worker), then again with
that folder filled (warm).  ``--profile`` runs the command inside this script's ``--child`` mode,
which records numba's ``numba:compile`` events and prints, per kernel and variant, the seconds
spent compiling it (its own, the kernels it compiled inside excluded) on stderr; it compiles
every variant in that process (``EFCE_COMPILE_WORKERS=0`` unless set: a warm-up's helper processes
would compile some of them unseen), so its cold wall clock is that of one core.  One JSON line
per case on stdout: ``cold_s``, ``warm_s``, ``compile_s`` (the events' outermost total) and the
command.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

#: The commands of issue 40's table, with the decomposition check and a device's gaps.
CASES = {
    "rm-fig1": "solve farina-fig1 --method rm",
    "trigger-kuhn3": "solve kuhn:players=3 --method trigger --iterations 200",
    "lp-sheriff": "solve sheriff:max_bribe=1,max_items=1,rounds=1 --method lp-highs",
    "cfr+-kuhn": "solve kuhn:players=2 --method cfr+",
    "decompose-fig2": "decompose farina-fig2 --verify",
    "gap-fig2": "gap farina-fig2 --device {device}",
}


def child(argv: list[str]) -> None:
    """Run ``efce argv`` in this process with numba's compile events recorded; print the
    per-kernel table on stderr at exit."""
    import atexit
    import time as clock

    from numba.core import event

    stack: list[list] = []  # [name, start, time inside nested compiles]
    rows: dict[str, float] = {}
    total = [0.0]

    class Recorder(event.Listener):
        def on_start(self, ev) -> None:
            dispatcher = ev.data["dispatcher"]
            name = f"{dispatcher.py_func.__module__}.{dispatcher.py_func.__qualname__}"
            args = ",".join(str(a) for a in ev.data["args"])
            stack.append([f"{name}({args})", clock.perf_counter(), 0.0])

        def on_end(self, ev) -> None:
            name, started, inner = stack.pop()
            spent = clock.perf_counter() - started
            rows[name] = rows.get(name, 0.0) + spent - inner
            if stack:
                stack[-1][2] += spent
            else:
                total[0] += spent

    event.register("numba:compile", Recorder())

    def report() -> None:
        print(f"compile events: {len(rows)} variants, {total[0]:.2f} s", file=sys.stderr)
        for name, spent in sorted(rows.items(), key=lambda r: -r[1]):
            print(f"  {spent:7.2f} s  {name[:220]}", file=sys.stderr)

    atexit.register(report)
    from efce.experiments.cli import main

    sys.exit(main(argv))


def efce_command(args: str, profile: bool) -> list[str]:
    if profile:
        return [sys.executable, os.path.abspath(__file__), "--child", *shlex.split(args)]
    return [os.path.join(os.path.dirname(sys.executable), "efce"), *shlex.split(args)]


def timed(command: list[str], cache: str, profile: bool = False) -> tuple[float, subprocess.CompletedProcess]:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    if profile:  # every variant compiled in the profiled process, none by a warm-up's helpers
        env.setdefault("EFCE_COMPILE_WORKERS", "0")
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    return time.perf_counter() - started, done


def device_file(folder: str) -> str:
    """A device of farina-fig2 (trigger's distribution after 50 iterations), written once."""
    path = os.path.join(folder, "device.json")
    if not os.path.exists(path):
        cache = tempfile.mkdtemp(prefix="first-run-device-")
        line = f"solve farina-fig2 --method trigger --iterations 50 --device-out {path}"
        command = efce_command(line, False)
        subprocess.run(command, env={**os.environ, "NUMBA_CACHE_DIR": cache}, check=True, capture_output=True)
        shutil.rmtree(cache, ignore_errors=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=None, help="comma-separated case names")
    parser.add_argument("--command", default=None, help="an efce command (no 'efce') instead")
    parser.add_argument("--repeats", type=int, default=1, help="cold/warm pairs per case")
    parser.add_argument("--profile", action="store_true", help="per-kernel compile seconds on stderr")
    parser.add_argument("--out", default=None, help="append the JSON lines to this file")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="first-run-")
    cases = {"command": args.command} if args.command else CASES
    names = [n for n in cases if args.only is None or n in args.only.split(",")]
    try:
        for name in names:
            line = cases[name]
            if "{device}" in line:
                line = line.format(device=device_file(work))
            for _ in range(args.repeats):
                cache = tempfile.mkdtemp(prefix="first-run-cache-")
                cold, done = timed(efce_command(line, args.profile), cache, args.profile)
                if args.profile:
                    print(f"== {name} (cold)\n{done.stderr}", file=sys.stderr)
                warm, again = timed(efce_command(line, False), cache)
                shutil.rmtree(cache, ignore_errors=True)
                record = {
                    "case": name,
                    "command": f"efce {line}",
                    "cold_s": round(cold, 2),
                    "warm_s": round(warm, 2),
                    "rc": [done.returncode, again.returncode],
                    "load": os.getloadavg(),
                }
                print(json.dumps(record), flush=True)
                if args.out:
                    with open(args.out, "a") as fh:
                        fh.write(json.dumps(record) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
    else:
        main()
