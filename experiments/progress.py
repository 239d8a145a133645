"""A progress line for long runs: shown on a terminal, silent in ``--json`` mode or when stderr
is not a terminal."""

from __future__ import annotations

import sys
import time


class Progress:
    """Call as ``progress(iteration, gap, elapsed_seconds=None)``; at most five updates a second."""

    def __init__(self, label: str, enabled: bool | None = None):
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.started = time.perf_counter()
        self._last = 0.0

    def __call__(self, iteration: int, gap: float, elapsed: float | None = None) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < 0.2:
            return
        self._last = now
        elapsed = now - self.started if elapsed is None else elapsed
        sys.stderr.write(f"\r{self.label}: iteration {iteration:,}  gap {gap:.3e}  {elapsed:7.1f} s ")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()
