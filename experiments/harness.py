"""The one subprocess harness: run a command in its own process under a wall-clock limit and an
address-space limit, and read back the one JSON object it prints.

``efce compare``, ``efce sweep`` and the benchmark scripts all start their children here, so a
method that runs out of memory or time is recorded as such while the others go on, and peak
memory belongs to that child alone.  Children of the toolkit itself are started with
:func:`efce_command`: ``python -P -m efce ...``, which never puts the working folder on
``sys.path``, so a user's own ``experiments/``, ``games/`` or ``solvers/`` packages cannot shadow
the toolkit's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

#: Seconds a child gets after SIGINT to write what it has before it is killed.  A child
#: ``efce`` command stops within about 2 s (:mod:`efce.interrupts`); this is the safety net.
INTERRUPT_GRACE_SECONDS = 10.0

#: Seconds between two looks at the child and at the stop request while waiting.
POLL_SECONDS = 0.1


#: Largest address-space limit a child can be given, in GiB (2**63 bytes: the C type behind
#: ``setrlimit``); a larger ``--memory-limit`` is refused rather than overflowing.
MAX_MEMORY_LIMIT_GIB = 2.0**33


def efce_command(*args: str) -> list[str]:
    """The command line of ``efce ARGS`` in a child process, immune to the working folder."""
    return [sys.executable, "-P", "-m", "efce", *args]


@dataclass
class ChildResult:
    """What a child process left behind.

    Attributes
    ----------
    returncode : int
        Negative: killed by that signal.
    payload : dict or None
        The last JSON object the child printed on stdout.
    stderr_tail : str
        The last non-empty line of its stderr.
    wall_seconds : float
    timed_out : bool
        Killed by the harness at its wall-clock limit.
    peak_memory_mib : float or None
        The child's own report (``peak_memory_mib`` of its JSON), else its high-water mark as
        the operating system reports it for waited-for children.
    """

    returncode: int
    payload: dict | None
    stderr_tail: str
    wall_seconds: float
    timed_out: bool
    peak_memory_mib: float | None

    @property
    def error(self) -> str | None:
        """A one-line reason when the child produced no result, else None."""
        if self.timed_out:
            return f"killed after {self.wall_seconds:.0f} s"
        if self.payload is None:
            if self.returncode == -signal.SIGKILL:
                return "killed by the system (out of memory?)"
            return self.stderr_tail or "no output"
        return self.payload.get("error")


def _load_prctl():
    """``prctl`` of the C library on Linux (resolved here, in the parent: the child between fork
    and exec should only call it), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()
_PR_SET_PDEATHSIG = 1


def child_setup(limit_bytes: int | None, niceness: int = 0) -> Callable[[], None] | None:
    """What runs in a child process before exec: the address-space limit (POSIX), on Linux a
    SIGKILL when the parent dies — a killed sweep worker must not leave its run computing for
    nobody — and a lower priority (``os.nice``; a background process's).

    Parameters
    ----------
    limit_bytes : int, optional
        The child's address-space limit.
    niceness : int
        Added to the child's niceness (0: its parent's priority).

    Returns
    -------
    callable or None
        The ``preexec_fn`` of ``subprocess.Popen``; None when there is nothing to set.
    """
    resource: ModuleType | None
    try:
        import resource
    except ImportError:  # no RLIMIT_AS off POSIX: the child's own up-front budget check remains
        resource = None
    limit_memory = limit_bytes is not None and resource is not None
    if not limit_memory and _PRCTL is None and niceness == 0:
        return None

    def apply():  # runs in the child before exec
        if niceness:
            os.nice(niceness)
        if limit_memory:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
        if _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return apply


def run_child(
    command: list[str],
    *,
    timeout: float | None = None,
    memory_limit_bytes: int | None = None,
    env: dict[str, str] | None = None,
    stop_requested: Callable[[], bool] = lambda: False,
    on_stderr_line: Callable[[str], None] | None = None,
) -> ChildResult:
    """Run ``command`` to completion (or to ``timeout`` seconds, then SIGKILL).

    Parameters
    ----------
    command : list of str
        Usually :func:`efce_command` ``(...)``.
    timeout : float, optional
        Wall-clock seconds before the child is killed.
    memory_limit_bytes : int, optional
        Address-space limit of the child (POSIX).
    env : dict, optional
        Environment of the child (default: this process's).
    stop_requested : callable, optional
        Polled while waiting; once it returns True the child gets SIGINT (it then writes its
        result so far) and :data:`INTERRUPT_GRACE_SECONDS` to finish.  The child runs in its
        own process group, so a terminal's Ctrl-C reaches it only through this forwarding, and
        it is killed if this function is left by an exception (a second Ctrl-C).
    on_stderr_line : callable, optional
        Called with each line of the child's stderr as it is written (from a reader thread),
        e.g. to pass a long warm-up's progress line on to the user.

    Returns
    -------
    ChildResult
        Never raises for the child's own failures.
    """
    from efce.interrupts import acknowledge_stop

    started = time.perf_counter()
    # The child has its own process group: a Ctrl-C on the terminal reaches this process alone,
    # which forwards it once (a second SIGINT would abort the child without its result).
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # The child's text is UTF-8 whatever this process's locale (an ASCII one would fail on
        # the first "≥" of a message); bytes that are not are shown, not fatal.
        encoding="utf-8",
        errors="replace",
        preexec_fn=child_setup(memory_limit_bytes),
        env=env,
        process_group=0,
    )
    # Both pipes are drained by reader threads while this thread polls the child, so that a
    # stderr line can be passed on as it comes and neither pipe fills up and blocks the child.
    assert proc.stdout is not None and proc.stderr is not None  # both are pipes
    child_out, child_err = proc.stdout, proc.stderr
    out: list[str] = []
    err: list[str] = []

    def read_stdout() -> None:
        out.append(child_out.read())

    def read_stderr() -> None:
        for line in child_err:
            err.append(line)
            if on_stderr_line is not None:
                on_stderr_line(line.rstrip("\n"))

    readers = [threading.Thread(target=f, daemon=True) for f in (read_stdout, read_stderr)]
    for reader in readers:
        reader.start()
    deadline = None if timeout is None else started + timeout
    timed_out = False
    interrupted_at = None
    try:
        while True:
            wait = POLL_SECONDS
            if deadline is not None:
                wait = min(wait, max(deadline - time.perf_counter(), 0.01))
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.perf_counter()
            if interrupted_at is None and stop_requested():
                interrupted_at = now
                proc.send_signal(signal.SIGINT)
                acknowledge_stop()  # this process now waits for the child's result so far
            late = interrupted_at is not None and now - interrupted_at > INTERRUPT_GRACE_SECONDS
            if (deadline is not None and now >= deadline) or late:
                proc.kill()
                proc.wait()
                timed_out = not late
                break
    except BaseException:  # a second Ctrl-C here: the child must not go on computing for nobody
        proc.kill()
        proc.wait()
        raise
    for reader in readers:
        reader.join()
    for pipe in (child_out, child_err):  # read to the end: closed now, not by the collector
        pipe.close()
    stdout, stderr = "".join(out), "".join(err)
    wall = time.perf_counter() - started
    payload = last_json_object(stdout)
    peak = payload.get("peak_memory_mib") if payload else None
    if peak is None:
        peak = _children_peak_mib()
    tail = next((line for line in reversed(stderr.strip().splitlines()) if line.strip()), "")
    return ChildResult(proc.returncode, payload, tail, wall, timed_out, peak)


def run_solve(args: Sequence[str], **limits: Any) -> tuple[ChildResult, list[dict[str, Any]]]:
    """Run ``efce solve ARGS --trace FILE`` in a child process (:func:`run_child` with
    ``limits``) and read its trace back (:func:`efce.solvers.result.read_trace`).

    FILE lies in a new folder made for this run alone and removed after it (also when the
    process is ended by a second signal, :func:`efce.interrupts.remove_on_abort`): the rows
    read back are this run's, never those of a file an earlier, killed run left behind.

    Returns
    -------
    tuple
        The :class:`ChildResult` and the trace rows (empty when the child wrote no trace).

    Raises
    ------
    GameError
        The child's trace file is malformed (naming the file and the line).
    """
    import shutil
    import tempfile

    from efce.interrupts import forget_on_abort, remove_on_abort
    from efce.solvers.result import read_trace

    folder = tempfile.mkdtemp(prefix="efce-run-")
    remove_on_abort(folder)
    try:
        trace = os.path.join(folder, "trace.csv")
        child = run_child(efce_command("solve", *args, "--trace", trace), **limits)
        rows = read_trace(trace, "the run's trace file") if os.path.exists(trace) else []
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        forget_on_abort(folder)
    return child, rows


def _children_peak_mib() -> float | None:
    """High-water mark over the children waited for so far (an upper bound for the last one)."""
    try:
        import resource
    except ImportError:
        return None
    maxrss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return round((maxrss if sys.platform == "darwin" else maxrss * 1024) / 2**20, 1)


def last_json_object(stdout: str) -> dict | None:
    """The last line of ``stdout`` that parses as a JSON object."""
    from efce.errors import GameError
    from efce.games.formats.jsonfile import read_json

    for line in reversed(stdout.strip().splitlines()):
        if not line.lstrip().startswith("{"):
            continue
        try:
            value = read_json(line.encode("utf-8", "surrogatepass"), "the child's output")
        except GameError:
            continue
        if isinstance(value, dict):
            return value
    return None


def child_environment() -> dict[str, str]:
    """This process's environment for a child (a copy, so callers may add to it)."""
    return dict(os.environ)
