"""The long-run benchmark scripts still run end to end (on a tiny game, for a second)."""

import csv
import json
import os
import subprocess
import sys

from tests.paths import ROOT


def test_large_battleship_script_writes_every_checkpoint_and_its_feasibility(tmp_path):
    out = tmp_path / "run"
    subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "benchmarks", "run_large_battleship.py"),
            # 10 s: on a cold numba cache the first iteration and gap check compile for ~4 s
            "--seconds",
            "10",
            "--out",
            str(out),
            "--game",
            "battleship:rows=2,cols=2,ship_sizes=[1],shots=2",
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    summary = json.loads((out / "summary.json").read_text())
    with open(out / "trace.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert summary["status"] == "time_limit" and summary["iterations"] == int(rows[-1]["iteration"])
    assert summary["feasible_iterates"] and summary["relevant_pairs"] > 0
    from efce.experiments.solve import METHODS

    assert summary["configuration"]["local"] == METHODS["rm"].defaults["local"]  # efce solve's rm
    assert set(summary["setup"]) >= {"game", "relevant pairs", "DECOMPOSE", "trigger chain + payoff operator"}
    # Checkpoints follow the solver's geometric schedule, and the average plan improves.
    iterations = [int(r["iteration"]) for r in rows]
    assert iterations[:3] == [1, 2, 3] and iterations == sorted(iterations)
    assert float(rows[-1]["max_deviation"]) < 0.1 * float(rows[0]["max_deviation"])
    for r in rows:
        assert 0 <= float(r["iteration_seconds"]) <= float(r["seconds"]) + 1e-2
        assert max(float(r["max_violation_iterate"]), float(r["max_violation_average"])) <= 1e-9


def test_phases_script_times_every_pass_of_an_rm_iteration_on_each_thread_count():
    child = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "benchmarks", "phases.py"),
            "sheriff:max_bribe=1,max_items=1,rounds=1",
            "--threads",
            "1,1",
            "--iterations",
            "2",
            "--warmup",
            "3",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    first, *lines = [json.loads(line) for line in child.stdout.splitlines()]
    assert (
        first["evaluator_gap"] == first["saddle_point_gap"]
        or abs(first["evaluator_gap"] - first["saddle_point_gap"]) <= 1e-12
    )
    assert [line["threads"] for line in lines] == [1, 1]
    for line in lines:
        assert list(line["passes_ms"]) == [
            "A y",
            "Xi observe",
            "Xi recommend",
            "A^T x",
            "Y observe",
            "Y recommend",
        ]
        assert line["iteration_ms"] == round(sum(line["passes_ms"].values()), 3)
        assert set(line["checkpoint_ms"]) == {
            "saddle_point_gap",
            "transpose_product",
            "evaluator_gap",
            "welfare",
            "violations",
        }
