"""The one guarded reader of trace CSV files (:func:`efce.solvers.result.read_trace`): what
:meth:`~efce.solvers.result.SolveResult.write_trace` writes reads back exactly; a damaged file is
refused naming the line."""

import math

import numpy as np
import pytest

from efce.errors import GameError
from efce.solvers.result import SolveResult, TraceRow, read_trace


def test_a_written_trace_reads_back_exactly_with_empty_cells_as_none(tmp_path):
    trace = [
        TraceRow(1, 0.25, 1 / 3, 0.0, {"threshold": 2.5}),
        TraceRow(2, 0.5, np.float64(0.1), 1e-17, {"threshold": 2.5, "lower": -1.0}),
    ]
    path = tmp_path / "t.csv"
    SolveResult("rm", None, "converged", 2, 0.0, 0.5, trace).write_trace(str(path))
    rows = read_trace(path)
    assert rows == [
        {
            "method": "rm",
            "iteration": 1,
            "seconds": 0.25,
            "gap": 1 / 3,
            "infeasibility": 0.0,
            "lower": None,
            "threshold": 2.5,
        },
        {
            "method": "rm",
            "iteration": 2,
            "seconds": 0.5,
            "gap": 0.1,
            "infeasibility": 1e-17,
            "lower": -1.0,
            "threshold": 2.5,
        },
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("method,iteration,seconds,gap,infeasibility\nrm,1,0.1,0.5\n", "line 2: 4 fields"),
        ("method,iteration,seconds,gap,infeasibility\nrm,1,0.1,0.5,0,7\n", "line 2: 6 fields"),
        ("method,iteration,seconds,gap,infeasibility\nrm,1,-0.1,0.5,0\n", "line 2: seconds -0.1 is negative"),
        ("method,iteration,seconds,gap,infeasibility\nrm,1,0.1,inf,0\n", "line 2: gap is inf"),
        ("method,iteration,seconds,gap,infeasibility\nrm,-1,0.1,0.5,0\n", "line 2: iteration '-1'"),
        ("method,iteration,seconds,gap,infeasibility\n,1,0.1,0.5,0\n", "line 2: the method is empty"),
        ("method,iteration,seconds,gap,infeasibility,x\nrm,1,0.1,0.5,0,y\n", "line 2: x 'y' is not a number"),
        ("seconds,gap\n0.1,0.5\n", "not a trace"),
        ("", "not a trace"),
    ],
)
def test_a_damaged_trace_is_refused_naming_the_line(tmp_path, text, problem):
    path = tmp_path / "t.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(GameError, match="t.csv") as caught:
        read_trace(path)
    assert problem in str(caught.value)


def test_bytes_that_are_not_utf8_and_a_folder_are_refused(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"method,iteration,seconds,gap,infeasibility\n\xff,1,0,0,0\n")
    with pytest.raises(GameError, match="not UTF-8"):
        read_trace(path)
    with pytest.raises(GameError, match="is a folder"):
        read_trace(tmp_path)
    with pytest.raises(GameError, match="cannot read"):
        read_trace(tmp_path / "missing.csv")


def test_every_number_read_is_finite(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("method,iteration,seconds,gap,infeasibility,x\nrm,3,1.5,2e-3,0,\n", encoding="utf-8")
    (row,) = read_trace(path)
    assert all(math.isfinite(row[k]) for k in ("seconds", "gap", "infeasibility")) and row["x"] is None
