"""Helpers of the tests that stop a child ``efce`` process with a signal (Linux /proc)."""

import signal
import time


def handles_sigterm(pid: int) -> bool:
    """Python catches SIGINT from the start; SIGTERM only once efce installed its handlers."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            caught = next(int(line.split()[1], 16) for line in fh if line.startswith("SigCgt"))
    except (OSError, StopIteration):
        return False
    return bool(caught & (1 << (signal.SIGTERM - 1)))


def wait_until(predicate, timeout: float = 60.0) -> bool:
    """Poll ``predicate`` every 50 ms until it holds (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False
