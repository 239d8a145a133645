"""The one result type every solver and baseline returns.

A run produces a final point and a trace of ``(iteration, seconds, gap[, infeasibility])`` rows,
so the benchmark runner can plot any method against any other.  ``gap`` is in raw payoff units
(the papers' "max deviation"); ``infeasibility`` is the largest violation of Definition 3 (or of
the method's own constraints) of the iterate the gap was measured on, 0 for feasible methods.
"""

from __future__ import annotations

import csv
import json
import math
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
    "device_limit",  # trigger with a device: the next iteration would take its file past the limit
)


@dataclass(frozen=True)
class TraceRow:
    """One measurement of a run: at ``iteration``, ``seconds`` into it, the ``gap`` (raw payoff
    units) and the ``infeasibility`` of the iterate measured, with method-specific ``extra``
    columns.  Immutable, as the trace it belongs to."""

    iteration: int
    seconds: float
    gap: float
    infeasibility: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SolveResult:
    """Outcome of one solver run; immutable: a change after the run (a status, a setup time) is a
    new result, ``dataclasses.replace(result, status="error")``, and ``info`` is never mutated
    after construction either (a new dict is built).

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
        out.update(finite_json(self.info))
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


def finite_json(value: Any, nonfinite: list[str] | None = None, path: str = "") -> Any:
    """``value`` as plain JSON data, with every NaN or infinite number replaced by None: JSON has
    neither, and a NaN gap must never be read as a number.  The one sanitizer of results, command
    outputs and sweep records.

    Parameters
    ----------
    value : object
        Nested dicts, lists and tuples of numbers (Python or NumPy scalars, NumPy arrays), strings,
        bools and None.
    nonfinite : list of str, optional
        Collects the path of every value replaced (``"utilities"``, ``"steps.welfare"``: dict
        keys joined by dots, list items under their list's path).
    path : str
        The path of ``value`` itself.

    Returns
    -------
    object
        A new value of dicts, lists, ``int``, ``float``, ``str``, ``bool`` and None (arrays and
        tuples become lists, NumPy scalars Python ones); other objects are returned as they are.

    >>> found = []
    >>> finite_json({"gap": np.float64("nan"), "u": np.array([1.0, np.inf])}, found)
    {'gap': None, 'u': [1.0, None]}
    >>> found
    ['gap', 'u']
    """
    if isinstance(value, np.ndarray):
        value = value.tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        if nonfinite is not None:
            nonfinite.append(path)
        return None
    if isinstance(value, dict):
        return {k: finite_json(v, nonfinite, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v, nonfinite, path) for v in value]
    return value


def dumps(result: SolveResult) -> str:
    return json.dumps(result.to_json())
