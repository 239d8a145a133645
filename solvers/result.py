"""The one result type every solver and baseline returns.

A run produces a final point and a trace of ``(iteration, seconds, gap[, infeasibility])`` rows,
so the benchmark runner can plot any method against any other.  ``gap`` is in raw payoff units
(the papers' "max deviation"); ``infeasibility`` is the largest violation of Definition 3 (or of
the method's own constraints) of the iterate the gap was measured on, 0 for feasible methods.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Statuses a run can end with (the ``efce solve --json`` contract of docs/guide.md).
STATUSES = (
    "converged",
    "time_limit",
    "iteration_limit",
    "infeasible",
    "out_of_memory",
    "interrupted",
    "error",
)


@dataclass
class TraceRow:
    iteration: int
    seconds: float
    gap: float
    infeasibility: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)


@dataclass
class SolveResult:
    """Outcome of one solver run.

    Attributes
    ----------
    method : str
    point : ndarray or None
        The final iterate (for EFCE methods: ξ in relevant-pair order; for CFR: a tuple of
        sequence-form strategies; for ICFR: see the method).
    status : str
        One of :data:`STATUSES`.
    iterations : int
    setup_seconds, seconds : float
        Building game/polytopes/model versus the iterations (or the solver call) alone.
    trace : list of TraceRow
    info : dict
        Method-specific facts (welfare, utilities, max_violation, exploitability, ...), JSON-able.
    compile_seconds : float or None
        Compiling or loading compiled code (numba kernels, a solver library's first call) before
        the clock of ``seconds`` and of the trace started; None when the method does not warm
        up apart (its first-use compilation then falls inside ``seconds``).
    """

    method: str
    point: Any
    status: str
    iterations: int
    setup_seconds: float
    seconds: float
    trace: list[TraceRow] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    compile_seconds: float | None = None

    @property
    def final_gap(self) -> float | None:
        return self.trace[-1].gap if self.trace else None

    def to_json(self) -> dict[str, Any]:
        """The keys of the ``efce solve --json`` contract (docs/guide.md)."""
        out = {
            "method": self.method,
            "iterations": self.iterations,
            "setup_seconds": round(self.setup_seconds, 6),
            "seconds": round(self.seconds, 6),
            "compile_seconds": None if self.compile_seconds is None else round(self.compile_seconds, 6),
            "status": self.status,
        }
        out.update({k: _jsonable(v) for k, v in self.info.items()})
        return out

    def write_trace(self, path: str) -> None:
        """CSV with columns iteration, seconds, gap, infeasibility (+ extra columns)."""
        extras = sorted({k for row in self.trace for k in row.extra})
        from efce.games.resources.atomic import atomic_open

        with atomic_open(path, "w", newline="") as fh:  # a failed write leaves no partial file
            writer = csv.writer(fh)
            writer.writerow(["method", "iteration", "seconds", "gap", "infeasibility", *extras])
            for row in self.trace:
                writer.writerow(
                    [
                        self.method,
                        row.iteration,
                        f"{row.seconds:.6f}",
                        repr(row.gap),
                        repr(row.infeasibility),
                        *(repr(row.extra.get(k, "")) for k in extras),
                    ]
                )


def _jsonable(value):
    """JSON-ready ``value``; a NaN or infinite number becomes None (JSON has neither, and a NaN
    gap must never be read as a number)."""
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, (np.floating, np.integer)):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def dumps(result: SolveResult) -> str:
    return json.dumps(result.to_json())
