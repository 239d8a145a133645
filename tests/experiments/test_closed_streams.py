"""Commands with a closed stdout or stderr (``>&-``, ``2>&-``): the files asked for are written,
the exit code is the command's, and no stream that is gone fails the run (:mod:`efce.streams`).
A closed descriptor is reopened on the null device before any file is opened, so no result file
takes its number and receives what was printed."""

import csv
import json
import os
import subprocess
import sys

from tests.paths import ROOT

ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _efce(argv: list[str], closed: int) -> subprocess.CompletedProcess:
    """``efce ARGV`` with descriptor ``closed`` (1 or 2) closed before it starts; the other one
    is captured."""
    return subprocess.run(
        [sys.executable, "-P", "-m", "efce", *argv],
        stdout=subprocess.PIPE if closed != 1 else None,
        stderr=subprocess.PIPE if closed != 2 else None,
        preexec_fn=lambda: os.close(closed),
        env=ENV,
        timeout=600,
    )


def test_a_closed_stdout_still_writes_the_trace_and_exits_zero(tmp_path):
    trace = tmp_path / "trace.csv"
    done = _efce(["solve", "farina-fig2", "--method", "rm", "--trace", str(trace), "--json"], closed=1)
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    with trace.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))  # the trace, and nothing printed into it
    assert rows and rows[0]["method"] == "rm" and float(rows[-1]["gap"]) == 0.0


def test_a_closed_stdout_without_json_still_writes_the_device_file(tmp_path):
    device = tmp_path / "device.json"
    argv = ["solve", "kuhn", "--method", "icfr", "--iterations", "20", "--device-out", str(device)]
    done = _efce(argv, closed=1)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert json.loads(device.read_text(encoding="utf-8"))["device"]


def test_a_closed_stderr_still_prints_the_json_result(tmp_path):
    done = _efce(["solve", "farina-fig2", "--method", "rm", "--json"], closed=2)
    assert done.returncode == 0
    out = json.loads(done.stdout)
    assert out["status"] == "converged" and out["efce_gap"] == 0.0


def test_an_error_with_a_closed_stderr_exits_two_and_prints_nothing_on_stdout():
    done = _efce(["solve", "no-such-game", "--method", "rm"], closed=2)
    assert done.returncode == 2 and done.stdout == b""


def test_an_error_with_a_closed_stderr_under_json_is_one_json_error_on_stdout():
    done = _efce(["solve", "no-such-game", "--method", "rm", "--json"], closed=2)
    assert done.returncode == 2
    assert "unknown game" in json.loads(done.stdout)["error"]
