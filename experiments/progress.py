"""Progress bars for long runs (tqdm), on stderr when it is a terminal; silent in ``--json``
mode, in child processes and in tests."""

from __future__ import annotations

import sys

from tqdm import tqdm

from efce.solvers.result import TraceRow


class Progress:
    """A progress callback for :class:`solvers.driver.IterationDriver`: one bar per run, advanced
    to each recorded trace row, with the row's gap beside it.

    Parameters
    ----------
    label : str
    total : int, optional
        The iteration budget (the bar's length).
    enabled : bool, optional
        Default: whether stderr is a terminal.
    """

    def __init__(self, label: str, total: int | None = None, enabled: bool | None = None):
        enabled = sys.stderr.isatty() if enabled is None else enabled
        self._bar = tqdm(
            total=total, desc=label, unit="it", file=sys.stderr, disable=not enabled, dynamic_ncols=True
        )

    def __call__(self, row: TraceRow) -> None:
        self._bar.update(row.iteration - self._bar.n)
        self._bar.set_postfix_str(f"gap {row.gap:.3e}", refresh=True)

    def close(self) -> None:
        self._bar.close()
