"""A comparison's kernels compiled in the background while its other runs go.

``efce compare`` runs each method in a child process.  A child whose method compiles numba
kernels of its own (:attr:`~efce.solvers.options.Method.compiles_kernels`: ``rm``, the CFR
family, the trigger dynamics, ``lp-colgen``) spends its warm-up compiling them on an empty numba
cache: a minute or more of one core for rm's two size classes in the README's job, while the
LPs' runs of the same job leave one of a 2-core machine's cores idle for a minute and a half.
:class:`CompileAhead` uses that core.  One background process after another, each at the lowest
priority (``nice 19``: a measured run that wants the core gets it), makes ``efce solve ...
--compile-only`` of those runs (:func:`~efce.experiments.solve.compile_kernels`) in the order
they will run, and :func:`~efce.experiments.compare.compare_games` runs them after the runs of
the other methods.

Nothing is measured differently: a run's warm-up still runs before its clock and loads, or
compiles, every kernel the run calls.  When a compiling run starts whose command the
background has not ended successfully (:meth:`CompileAhead.compiled`), the background work is
stopped (its process is killed): the run's own warm-up, with its helper processes on every
core (:mod:`efce.solvers.parallel_compile`), compiles what the background did not write to the
cache.  A run whose command it has ended only loads its kernels, and the background goes on
with the later runs' meanwhile.  A background process that fails costs nothing but its time.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Sequence

from efce.solvers.parallel_compile import WORKERS_VARIABLE

from .harness import child_environment, child_setup

#: The background processes' niceness: the lowest priority, so that they only take what the
#: measured runs leave idle.
NICENESS = 19


class CompileAhead:
    """Run ``commands`` (``efce solve ... --compile-only``), one after another, each in a
    background process at priority :data:`NICENESS` with ``EFCE_COMPILE_WORKERS=0`` (one core:
    the other is the measured runs'), until :meth:`stop`.

    Parameters
    ----------
    commands : sequence of list of str
        The command lines, in the order their runs will start.
    memory_limit_bytes : int, optional
        Address-space limit of each process (the comparison's own).
    environment : dict, optional
        The processes' environment (default: this process's), ``EFCE_COMPILE_WORKERS=0`` added.
    """

    def __init__(
        self,
        commands: Sequence[list[str]],
        memory_limit_bytes: int | None = None,
        environment: dict[str, str] | None = None,
    ) -> None:
        self._commands = [list(c) for c in commands]
        self._limit = memory_limit_bytes
        self._environment = child_environment() if environment is None else dict(environment)
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._stopped = False
        #: The exit status of each command that has ended, in order (negative: killed).
        self.returncodes: list[int] = []
        self._thread = threading.Thread(target=self._work, name="efce-compile-ahead", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        environment = {**self._environment, WORKERS_VARIABLE: "0"}
        setup = child_setup(self._limit, NICENESS)
        for command in self._commands:
            with self._lock:
                if self._stopped:
                    return
                try:
                    # Its own process group: a Ctrl-C on the terminal is this process's to handle.
                    self._process = subprocess.Popen(
                        command,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        env=environment,
                        preexec_fn=setup,
                        process_group=0,
                    )
                except (OSError, subprocess.SubprocessError):  # no process: the runs compile alone
                    return
                process = self._process
            returncode = process.wait()
            with self._lock:
                self.returncodes.append(returncode)

    @property
    def finished(self) -> int:
        """How many commands have ended (successfully or not)."""
        return len(self.returncodes)

    def compiled(self, index: int) -> bool:
        """Whether command ``index`` (of the order given) has ended successfully: its run's
        kernels are in numba's cache."""
        returncodes = self.returncodes
        return index < len(returncodes) and returncodes[index] == 0

    @property
    def done(self) -> bool:
        """Whether every command has ended (or the work was stopped)."""
        return not self._thread.is_alive()

    def stop(self) -> None:
        """Stop the work: no further command starts, and a running one is killed (whatever it
        wrote to numba's cache stays there)."""
        with self._lock:
            self._stopped = True
            process = self._process
            if process is not None and process.poll() is None:
                process.kill()
        if process is not None:
            process.wait()
        self._thread.join()


__all__ = ["NICENESS", "CompileAhead"]
