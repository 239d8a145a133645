"""A warm-up's compiling shared among the machine's cores.

On an empty cache a warm-up (:mod:`efce.solvers.warm_up`) compiles every kernel variant the
run will call, one after another: numba compiles under one lock per process, so rm's 85
variants took some 40 s on one core of this 2-core machine while the other waited.  The work is
shared among processes instead.  At the warm-up's first compilation (loading a variant from the
cache is not one, so a warm cache starts nothing), :func:`compile_together` starts
:func:`compile_workers` helper processes that make the same tiny runs, and this process makes
them too, all in *claimed* mode (:func:`efce.games.resources.compiled.claimed_compiles`): each
variant is compiled by the first process to claim it, which writes it to the on-disk cache; the
others run that call as Python (microseconds on the tiny game) and go on to claim the next one.
When the helpers have ended, the warm-up proper runs as before, loading from the cache what the
helpers compiled: the kernels the timed run calls and its results are the same; only a first
run's wait is shorter.

A helper that fails, hangs or is killed costs time, nothing else: whatever it did not write to
the cache, the warm-up proper compiles.  A command stopped while it compiles removes the claims'
folder, and its helpers then end after the variant each is compiling.  ``EFCE_COMPILE_WORKERS``
sets the number of helpers (``0``: none).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from efce.errors import OptionError
from efce.games.resources import numba_cache
from efce.games.resources.compiled import claimed_compiles
from efce.games.resources.memory import usable_cores
from efce.interrupts import check_stop, forget_on_abort, remove_on_abort

#: The environment variable that sets the number of helper processes.
WORKERS_VARIABLE = "EFCE_COMPILE_WORKERS"

#: Most helpers started by default: past a few, the longest kernel (DECOMPOSE's, about 9 s)
#: bounds the wait, and each helper holds an interpreter with numba (about 150 MiB).
MAX_WORKERS = 3

#: Seconds the helpers get, after this process's own claimed runs end, before they are killed:
#: what the slowest single variant takes to compile, with room for a busy machine.
HELPER_GRACE_SECONDS = 120.0


def compile_workers() -> int:
    """Helper processes a warm-up that compiles starts: ``EFCE_COMPILE_WORKERS`` if set, else one
    fewer than the cores this process may run on, at most :data:`MAX_WORKERS`.

    Raises
    ------
    OptionError
        ``EFCE_COMPILE_WORKERS`` is set to something other than a whole number ≥ 0.
    """
    value = os.environ.get(WORKERS_VARIABLE)
    if value is not None and value.strip():
        try:
            workers = int(value)
        except ValueError:
            workers = -1
        if workers < 0:
            raise OptionError(f"{WORKERS_VARIABLE} must be a whole number ≥ 0, got {value!r}")
        return workers
    return max(0, min(usable_cores() - 1, MAX_WORKERS))


def _twin_runs(payload: Mapping[str, Any]) -> None:
    """The warm-up's tiny runs of ``payload``: ``run`` on :func:`~.warm_up.twin_game` once per
    size class (:func:`~.warm_up.tiny_run`)."""
    from efce.solvers.warm_up import tiny_run, twin_game

    twin = twin_game(payload["players"], payload["chance"])
    for size in payload["sizes"]:
        check_stop("compiling")
        tiny_run(payload["run"], twin, payload["settings"], size)


def compile_together(
    run: Callable[..., Any],
    players: int,
    chance: str,
    settings: Mapping[str, Any],
    sizes: Iterable[tuple[int, int] | None],
    threads: int | None = None,
    notice: Callable[[int], None] | None = None,
) -> bool:
    """Make the warm-up's tiny runs (``run(twin_game(players, chance), **settings)`` per size
    class of ``sizes``) in claimed mode, with helper processes started at the first compilation
    making them too, and wait for the helpers: every variant the runs call is then compiled in
    this process or in numba's cache.

    Parameters
    ----------
    run : callable
        The method's runner, a module-level function (the helpers receive it pickled).
    players, chance : int, str
        The twin game's kind (:func:`~.warm_up.twin_game`).
    settings : mapping
        The tiny runs' options (the warm-up's budget included).
    sizes : iterable of (int, int) or None
        The stand-in size classes, None for the tiny run's own.
    threads : int, optional
        The cores the run was given (its ``threads`` option): the helpers are at most one fewer,
        so that ``--threads 1`` keeps a warm-up on one core as well.
    notice : callable, optional
        Called with the number of helpers when they start (tests).

    Returns
    -------
    bool
        Whether the runs made here were the whole warm-up: they ran and started no helper (a
        warm cache, or every variant claimed here), so that every variant they call is compiled
        in this process.  False when helpers compiled some of them (the warm-up is to run again,
        loading those from the cache), and when nothing ran: no helper is allowed
        (``EFCE_COMPILE_WORKERS`` is 0, one core, ``threads`` 1), numba caches nothing, or the
        options cannot be sent to another process.

    Raises
    ------
    Interrupted
        A stop was requested; the helpers are killed first.
    """
    workers = compile_workers() if threads is None else min(compile_workers(), max(threads - 1, 0))
    sizes = list(sizes)
    if workers == 0 or numba_cache.mode == "disabled":
        return False
    message = {"run": run, "players": players, "chance": chance, "settings": dict(settings), "sizes": sizes}
    try:
        data = pickle.dumps(message)
    except Exception:  # an option another process cannot receive: compile here alone
        return False
    from efce.solvers.warm_up import compile_notice

    helpers: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="efce-claims-") as claims:
        # A command aborted inside the compiler ends at once, without this block's cleanup: the
        # folder is then removed by the abort, and the helpers, finding it gone, compile nothing
        # more (efce.games.resources.compiled._claim) and end after their current variant.
        remove_on_abort(claims)

        tried: list[bool] = []

        def start() -> None:
            if tried:
                return
            tried.append(True)
            for _ in range(workers):
                try:
                    helper = subprocess.Popen(
                        [sys.executable, "-c", _HELPER, claims],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                except (OSError, ValueError):  # no interpreter to start (embedded Python): alone
                    break
                assert helper.stdin is not None  # stdin=PIPE
                try:
                    helper.stdin.write(data)
                    helper.stdin.close()
                except OSError:  # it ended at once: the warm-up proper compiles its share
                    pass
                helpers.append(helper)
            if notice is not None:
                notice(len(helpers))

        try:
            with compile_notice(start), claimed_compiles(claims):
                _twin_runs(message)
            deadline = time.monotonic() + HELPER_GRACE_SECONDS
            for helper in helpers:
                while helper.poll() is None and time.monotonic() < deadline:
                    check_stop("compiling")
                    time.sleep(0.05)
        finally:
            for helper in helpers:
                if helper.poll() is None:
                    helper.kill()
                helper.wait()
            forget_on_abort(claims)
    return not helpers


#: A helper process's program.
_HELPER = "import sys; from efce.solvers.parallel_compile import helper_main; sys.exit(helper_main())"


def helper_main() -> int:
    """A helper process: the tiny runs of the pickled message on its stdin, in claimed mode in the
    claims' folder its first argument names."""
    message = pickle.loads(sys.stdin.buffer.read())
    with claimed_compiles(sys.argv[1]):
        _twin_runs(message)
    return 0


__all__ = ["HELPER_GRACE_SECONDS", "MAX_WORKERS", "WORKERS_VARIABLE", "compile_together", "compile_workers"]
