"""Which numba kernel variants a method's warm-up and its run compile or load, in a fresh process.

``python -m tests.experiments.kernel_loads CASE`` (from the repository root; ``CASE`` a JSON object
with ``game``, ``method``, ``options`` and optionally ``device``, ``parallel_min_size`` and
``float32_min_entries``, which lower the CPU backend's thresholds so that a small game runs the
variants of a big one) runs ``efce.solve`` once and prints one JSON object: per phase — ``warm_up``
(the method's :attr:`~efce.solvers.options.Method.warm_up`), ``run`` (everything after it: the
model's setup, the iterations, the final report) and ``clock`` (the part of ``run`` inside an
:class:`~efce.solvers.driver.IterationDriver` loop, the trace's clock) — the kernel variants that
became available in that phase, each ``module.function(argument types)``; and the result's
``status`` and ``compile_seconds``.

A variant "becomes available" when a dispatcher gains an overload: numba compiled it (the
``numba:compile`` event of :mod:`numba.core.event` fires) or loaded it from its cache (no event
fires; the dispatcher's :meth:`~numba.core.dispatcher.Dispatcher.compile` returns one more
overload).  Both cost time in the phase they happen in, so both are recorded.  The process must be
fresh: a variant an earlier run of the same process made available is not made available again.
"""

from __future__ import annotations

import dataclasses
import json
import sys


def main(case: dict) -> dict:
    from numba.core import dispatcher

    from efce.solvers.backends.cpu import backend
    from efce.solvers.regret import local

    if case.get("parallel_min_size") is not None:
        backend.PARALLEL_MIN_ENTRIES = backend.PARALLEL_MIN_ROWS = int(case["parallel_min_size"])
    if case.get("float32_min_entries") is not None:
        local.FLOAT32_STATE_MIN_ENTRIES = int(case["float32_min_entries"])

    from efce.experiments.solve import METHODS, solve
    from efce.solvers import driver

    loaded: dict[str, list[str]] = {"warm_up": [], "run": [], "clock": []}
    phase: list[str | None] = [None]
    in_clock = [False]
    compile_overload = dispatcher.Dispatcher.compile

    def compile_and_record(self, sig):
        before = len(self.overloads)
        entry = compile_overload(self, sig)
        if len(self.overloads) > before and phase[0] is not None:
            name = f"{self.py_func.__module__}.{self.py_func.__qualname__}{tuple(map(str, sig))}"
            loaded[phase[0]].append(name)
            if phase[0] == "run" and in_clock[0]:
                loaded["clock"].append(name)
        return entry

    dispatcher.Dispatcher.compile = compile_and_record

    iterate = driver.IterationDriver.__iter__

    def iterate_on_the_clock(self):
        outer = in_clock[0]
        in_clock[0] = True
        try:
            yield from iterate(self)
        finally:
            in_clock[0] = outer

    driver.IterationDriver.__iter__ = iterate_on_the_clock

    spec = METHODS[case["method"]]

    def in_phase(name, function):
        def call(*args, **kwargs):
            phase[0] = name
            try:
                return function(*args, **kwargs)
            finally:
                phase[0] = None

        return call

    METHODS[case["method"]] = dataclasses.replace(
        spec, warm_up=in_phase("warm_up", spec.warm_up), run=in_phase("run", spec.run)
    )
    result = solve(case["game"], case["method"], device=case.get("device", False), **case.get("options", {}))
    return {**loaded, "status": result.status, "compile_seconds": result.compile_seconds}


def in_a_fresh_process(case: dict, env: dict | None = None, timeout: float = 600) -> dict:
    """:func:`main` of ``case`` in a new Python process (environment ``env``, default this
    process's), run from the repository root within ``timeout`` seconds."""
    import subprocess

    from tests.paths import ROOT

    child = subprocess.run(
        [sys.executable, "-m", "tests.experiments.kernel_loads", json.dumps(case)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    return json.loads(child.stdout.splitlines()[-1])


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
