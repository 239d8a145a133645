"""The one result type every solver and baseline returns.

A run produces a final point and a trace of ``(iteration, seconds, gap[, infeasibility])`` rows,
so the benchmark runner can plot any method against any other.  ``gap`` is in raw payoff units
(the papers' "max deviation"); ``infeasibility`` is the largest violation of Definition 3 (or of
the method's own constraints) of the iterate the gap was measured on, 0 for feasible methods.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
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
        """CSV with columns method, iteration, seconds, gap, infeasibility (+ extra columns, sorted
        by name; an empty cell where a row has no value), read back by :func:`read_trace`."""
        extras = sorted({k for row in self.trace for k in row.extra})
        from efce.games.resources.atomic import atomic_open

        with atomic_open(path, "w", newline="") as fh:  # a failed write leaves no partial file
            writer = csv.writer(fh)
            writer.writerow(["method", "iteration", "seconds", "gap", "infeasibility", *extras])
            for row in self.trace:
                # Numbers as Python writes floats (exact round trip; a NumPy scalar too); a column
                # a row has no value for is an empty cell (read_trace: None).
                writer.writerow(
                    [
                        self.method,
                        row.iteration,
                        f"{row.seconds:.6f}",
                        repr(float(row.gap)),
                        repr(float(row.infeasibility)),
                        *(repr(float(row.extra[k])) if k in row.extra else "" for k in extras),
                    ]
                )


#: The columns every trace CSV begins with (:meth:`SolveResult.write_trace`; ``efce compare``'s
#: ``traces.csv`` has these alone).
TRACE_COLUMNS = ("method", "iteration", "seconds", "gap", "infeasibility")


def read_trace(path: str | os.PathLike, what: str | None = None) -> list[dict[str, Any]]:
    """The rows of a trace CSV file (:meth:`SolveResult.write_trace`, ``efce compare``'s
    ``traces.csv``), each checked: the one guarded reader of trace files, as
    :func:`efce.games.formats.jsonfile.read_json` is of JSON files.

    Parameters
    ----------
    path : str or os.PathLike
    what : str, optional
        The file in messages (default ``trace file '<path>'``).

    Returns
    -------
    list of dict
        Per row: ``method`` (str), ``iteration`` (int ≥ 0), ``seconds`` (finite, ≥ 0),
        ``gap`` and ``infeasibility`` (finite), and every further column of the file: a finite
        float, or None for an empty cell.

    Raises
    ------
    GameError
        ``<what>, line N: <problem>`` for a row cut short or with extra fields, a number that
        is not one or not finite, a negative time or iteration, an empty method; a file that
        is not a trace (its header lacks :data:`TRACE_COLUMNS`), not UTF-8 text, larger than
        :data:`efce.games.formats.jsonfile.MAX_BYTES`, or cannot be read.
    """
    from efce.errors import GameError
    from efce.games.formats.jsonfile import MAX_BYTES, shorten

    path = os.fspath(path)
    what = what or f"trace file '{path}'"
    try:
        if os.path.isdir(path):
            raise GameError(f"cannot read {what}: it is a folder, not a file")
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise GameError(f"cannot read {what}: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise GameError(f"{what}: more than the {MAX_BYTES:,} bytes read")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise GameError(f"{what}: not UTF-8 text (byte at offset {exc.start:,})") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None or tuple(header[: len(TRACE_COLUMNS)]) != TRACE_COLUMNS:
            shown = shorten(",".join(header or []))
            raise GameError(
                f"{what}: not a trace (its first line must name the columns "
                f"{', '.join(TRACE_COLUMNS)}; it is '{shown}')"
            )
        rows = []
        for fields in reader:
            if not fields:
                continue  # a blank line (a trailing one)
            rows.append(_trace_row(dict(zip(header, fields, strict=False)), fields, header, what, reader))
    except csv.Error as exc:
        raise GameError(f"{what}, line {reader.line_num}: not CSV ({exc})") from None
    return rows


def _trace_row(cells: dict[str, str], fields: list[str], header: list[str], what: str, reader) -> dict:
    from efce.errors import GameError
    from efce.games.formats.jsonfile import shorten

    where = f"{what}, line {reader.line_num}"
    if len(fields) != len(header):
        raise GameError(
            f"{where}: {len(fields)} fields where the header names {len(header)} "
            "(the row is cut short or has extra fields)"
        )

    def number(column: str, text: str, empty_ok: bool = False) -> float | None:
        if text == "" and empty_ok:
            return None
        try:
            value = float(text)
        except ValueError:
            raise GameError(f"{where}: {column} '{shorten(text)}' is not a number") from None
        if not math.isfinite(value):
            raise GameError(f"{where}: {column} is {text}, not a finite number")
        return value

    method = cells["method"].strip()
    if not method:
        raise GameError(f"{where}: the method is empty")
    text = cells["iteration"].strip()
    if not text.isdigit():
        raise GameError(f"{where}: iteration '{shorten(text)}' is not an integer ≥ 0")
    row: dict[str, Any] = {"method": method, "iteration": int(text)}
    for column in TRACE_COLUMNS[2:]:
        row[column] = number(column, cells[column].strip())
    if row["seconds"] < 0:
        raise GameError(f"{where}: seconds {cells['seconds']} is negative")
    for column in header[len(TRACE_COLUMNS) :]:
        row[column] = number(column, cells[column].strip(), empty_ok=True)
    return row


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
