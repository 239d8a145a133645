"""Long runs stop without loss on SIGINT, and child processes cannot be shadowed by the
working folder's own packages."""

import csv
import json
import os
import signal
import subprocess
import sys

import pytest

from tests.experiments.signals import marker_environment, wait_for_marker, wait_until

EFCE = [sys.executable, "-P", "-m", "efce"]
pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")


def test_sigint_keeps_the_trace_and_the_result_of_solve(tmp_path):
    # Compile (and cache on disk) the kernels first: on a cold numba cache the 2 s below pass
    # inside the compiler, and a stop during setup ends the run after its first iteration.
    import efce

    efce.solve("sheriff:max_bribe=2,max_items=2,rounds=2", "rm", iterations=2)
    trace = tmp_path / "trace.csv"
    proc = subprocess.Popen(
        [
            *EFCE,
            "solve",
            "sheriff:max_bribe=2,max_items=2,rounds=2",
            "--method",
            "rm",
            "--iterations",
            "100000000",
            "--target-gap",
            "0",
            "--trace",
            str(trace),
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=marker_environment(tmp_path / "markers.txt"),
    )
    # Its loop honours stops from iteration 2 on: a stop there keeps a result of > 1 iteration.
    wait_for_marker(tmp_path / "markers.txt", "honouring", proc=proc, pid=proc.pid)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert result["status"] == "interrupted" and result["iterations"] > 1
    with open(trace) as fh:
        rows = list(csv.DictReader(fh))
    assert rows and int(rows[-1]["iteration"]) == result["iterations"]
    assert float(rows[-1]["gap"]) == pytest.approx(result["efce_gap"], rel=1e-12)


def test_sigint_keeps_what_compare_computed(tmp_path):
    import psutil

    out_dir = tmp_path / "out"
    proc = subprocess.Popen(
        [
            *EFCE,
            "compare",
            "leduc:players=3,ranks=3",
            "--methods",
            "icfr",
            "--time-limit",
            "300",
            "--out",
            str(out_dir),
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=marker_environment(tmp_path / "markers.txt"),
    )
    parent = psutil.Process(proc.pid)
    # The child's loop honours stops: it has a gap to keep.
    assert wait_until(lambda: bool(parent.children()), proc=proc), proc.communicate()
    child = parent.children()[0].pid
    wait_for_marker(tmp_path / "markers.txt", "honouring", proc=proc, pid=child)
    proc.send_signal(signal.SIGINT)  # to the parent alone: it forwards the stop to its child
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    summary = json.loads(out)
    assert summary["interrupted"] is True
    run = summary["methods"]["icfr"]
    assert run["status"] == "interrupted" and run["final_gap"] is not None
    assert json.loads((out_dir / "summary.json").read_text())["methods"]["icfr"]["status"] == "interrupted"
    assert (out_dir / "traces.csv").read_text().count("icfr") >= 1


def _shadowing_folder(root):
    """A research folder with packages named like the toolkit's, each broken on import."""
    for name in ("experiments", "games", "solvers", "polytopes", "baselines", "efce"):
        package = root / name
        package.mkdir()
        (package / "__init__.py").write_text(f"raise ImportError('the user folder {name} was imported')\n")
    return root


def test_compare_from_a_folder_with_its_own_packages_gives_the_same_results(tmp_path):
    script = os.path.join(os.path.dirname(sys.executable), "efce")
    results = {}
    for label, folder in (("empty", tmp_path / "empty"), ("shadowing", tmp_path / "research")):
        folder.mkdir()
        if label == "shadowing":
            _shadowing_folder(folder)
        proc = subprocess.run(
            [
                script,
                "compare",
                "farina-fig2",
                "--methods",
                "rm,lp-highs",
                "--time-limit",
                "20",
                "--out",
                "out",
                "--json",
            ],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        summary = json.loads(proc.stdout)
        results[label] = {
            m: (r["status"], r["final_gap"], r["result"]["welfare"]) for m, r in summary["methods"].items()
        }
    assert results["shadowing"] == results["empty"]
    assert all(status == "converged" for status, _, _ in results["empty"].values())
