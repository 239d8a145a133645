"""Commands under ``PYTHONWARNINGS=error``: nothing the toolkit does raises a warning (pipes and
files are closed, notes to the user are no warnings), so every command works as without it."""

import json
import os
import subprocess
import sys

import pytest

from tests.paths import ROOT

ENV = {
    **os.environ,
    "PYTHONWARNINGS": "error",
    "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
}


def _efce(*argv: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-P", "-m", "efce", *argv, "--json"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=600,
    )
    assert "Traceback" not in done.stderr and "Warning" not in done.stderr, done.stderr
    return {"code": done.returncode, **json.loads(done.stdout)}


@pytest.mark.parametrize("method", ["lp-highs", "lp-pdlp", "lp-cvxpy", "rm", "subgradient"])
def test_solve_runs_cleanly_with_warnings_as_errors(method):
    out = _efce(
        "solve",
        "farina-fig2",
        "--method",
        method,
        "--iterations" if method in ("rm", "subgradient") else "--time-limit",
        "50",
    )
    assert out["code"] == 0 and out["status"] in ("converged", "iteration_limit"), out


def test_compare_runs_cleanly_with_warnings_as_errors(tmp_path):
    out = _efce("compare", "farina-fig2", "--methods", "rm,lp-highs", "--out", str(tmp_path / "cmp"))
    assert out["code"] == 0 and set(out["methods"]) == {"rm", "lp-highs"}
    assert all(run["status"] == "converged" for run in out["methods"].values())


def test_sweep_resume_with_a_damaged_record_sets_it_aside_with_warnings_as_errors(tmp_path):
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text('games = ["farina-fig2"]\nmethods = ["rm"]\n[limits]\niterations = 5\n')
    out = tmp_path / "out"
    first = _efce("sweep", str(sweep_file), "--out", str(out), "--workers", "1")
    assert first["code"] == 0 and first["executed"] == 1
    (record,) = (out / "runs").iterdir()
    record.write_text('{"key": "cut in the mid')
    again = _efce("sweep", str(sweep_file), "--out", str(out), "--workers", "1", "--resume")
    assert again["code"] == 0 and again["executed"] == 1 and again["skipped"] == 0
    assert len(again["damaged_records"]) == 1 and record.name in again["damaged_records"][0]
    assert (out / "runs" / (record.name + ".damaged")).exists()
