"""Helpers of the tests that stop a child ``efce`` process with a signal (Linux /proc).

A test sends its signal only once the child has reached the point it means to interrupt, told by
an explicit readiness marker, never after a sleep: the child writes a line to a marker file when
it installs its signal handlers, when an iteration loop honours stops (iteration 2 on) and when
a build enters a phase (``tests/experiments/markers/sitecustomize.py``, loaded through
:func:`marker_environment`).  The waits are generous (a cold numba cache on a loaded 2-core
machine compiles for minutes); the time from the signal to the exit is what the tests assert."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tests.paths import ROOT

#: The folder whose ``sitecustomize`` writes the markers.
MARKERS = ROOT / "tests" / "experiments" / "markers"
#: Seconds a child may take to reach a marker (compiling kernels on a cold cache included).
READY_SECONDS = 300.0


def handles_sigterm(pid: int) -> bool:
    """Python catches SIGINT from the start; SIGTERM only once efce installed its handlers."""
    return _signal_bit(pid, "SigCgt", signal.SIGTERM)


def ignores_sigterm(pid: int) -> bool:
    """Whether process ``pid`` ignores SIGTERM (an LP worker, once it serves calls)."""
    return _signal_bit(pid, "SigIgn", signal.SIGTERM)


def _signal_bit(pid: int, field: str, signum: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as fh:
            bits = next(int(line.split()[1], 16) for line in fh if line.startswith(field))
    except (OSError, StopIteration):
        return False
    return bool(bits & (1 << (signum - 1)))


def wait_until(predicate, timeout: float = READY_SECONDS, proc=None) -> bool:
    """Poll ``predicate`` every 20 ms until it holds (True) or ``timeout`` seconds pass, or the
    process ``proc`` (a :class:`subprocess.Popen`) has exited (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        if proc is not None and proc.poll() is not None:
            return bool(predicate())
        time.sleep(0.02)
    return False


def signal_and_wait(
    proc, *signals: int, group: bool = False, timeout: float = 60.0
) -> tuple[str, str, float]:
    """Send ``signals`` in order to the child ``proc`` (a :class:`subprocess.Popen` with piped,
    text stdout and stderr) — ``group``: to its process group, as ``kill -SIG -PGID`` does — and
    wait at most ``timeout`` seconds for its exit: ``(stdout, stderr, seconds from the first
    signal to the exit)``.  The caller kills a child that outlives the wait (its ``finally``)."""
    sent = time.monotonic()
    for sig in signals:
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
    out, err = proc.communicate(timeout=timeout)
    return out, err, time.monotonic() - sent


def marker_environment(marker_file: Path) -> dict[str, str]:
    """The environment of an ``efce`` child that writes readiness markers to ``marker_file``
    (and so do its own children), running this source tree."""
    path = os.pathsep.join(p for p in (str(MARKERS), str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "EFCE_TEST_MARKERS": str(marker_file)}


def markers(marker_file: Path) -> list[tuple[int, str, str]]:
    """The markers written so far: ``(pid, event, detail)`` per line."""
    try:
        text = Path(marker_file).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        pid, event, *detail = line.split(" ", 2)
        out.append((int(pid), event, detail[0] if detail else ""))
    return out


def reached(marker_file: Path, event: str, detail: str = "", pid: int | None = None) -> bool:
    """Whether a process (``pid``, else any) wrote marker ``event`` whose detail starts with
    ``detail``."""
    return any(
        e == event and d.startswith(detail) and (pid is None or p == pid) for p, e, d in markers(marker_file)
    )


def wait_for_marker(marker_file: Path, event: str, detail: str = "", *, proc, pid: int | None = None) -> None:
    """Wait until :func:`reached` (at most :data:`READY_SECONDS`); fail with the child's output
    if it exits first or never gets there."""
    if not wait_until(lambda: reached(marker_file, event, detail, pid), proc=proc):
        if proc.poll() is None:
            proc.kill()
        out, err = proc.communicate()
        raise AssertionError(
            f"the child never reached '{event} {detail}' (markers: {markers(marker_file)}); "
            f"exit {proc.returncode}, stdout {out[-500:]!r}, stderr {err[-2000:]!r}"
        )
