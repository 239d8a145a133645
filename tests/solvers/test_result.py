"""The result type and its one JSON sanitizer (:func:`efce.solvers.result.finite_json`): every
NaN or infinity becomes null, wherever it sits and whatever its type."""

from __future__ import annotations

import json
import math

import numpy as np

from efce.solvers.result import SolveResult, TraceRow, finite_json


def test_every_non_finite_number_becomes_null_and_is_named():
    found: list[str] = []
    value = {
        "gap": math.nan,
        "utilities": np.array([1.0, -np.inf], dtype=np.float32),
        "steps": [{"welfare": np.float64(np.inf), "iterations": np.int64(3)}, (0.5, math.inf)],
        "ok": np.bool_(True),
        "name": "rm",
    }
    clean = finite_json(value, found)
    assert clean == {
        "gap": None,
        "utilities": [1.0, None],
        "steps": [{"welfare": None, "iterations": 3}, [0.5, None]],
        "ok": True,
        "name": "rm",
    }
    assert found == ["gap", "utilities", "steps.welfare", "steps"]
    assert type(clean["steps"][0]["iterations"]) is int and type(clean["ok"]) is bool
    json.dumps(clean, allow_nan=False)
    assert value["gap"] is not None and isinstance(value["utilities"], np.ndarray)  # input untouched


def test_to_json_keeps_the_contract_keys_and_no_nan():
    result = SolveResult(
        "rm",
        np.zeros(2),
        "converged",
        3,
        0.1234567891,
        1.0,
        [TraceRow(1, 0.0, 0.5)],
        {"efce_gap": np.float64(np.nan), "utilities": np.array([0.25, 0.75])},
    )
    out = result.to_json()
    assert out == {
        "method": "rm",
        "iterations": 3,
        "setup_seconds": 0.123457,
        "seconds": 1.0,
        "status": "converged",
        "compile_seconds": None,
        "efce_gap": None,
        "utilities": [0.25, 0.75],
    }
    json.dumps(out, allow_nan=False)
