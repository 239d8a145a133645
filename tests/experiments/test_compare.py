"""``efce compare`` on a tiny game: every file, every method, the story the table tells."""

import csv
import json

import pytest

from efce.experiments.cli import main

GAME = "sheriff:max_bribe=1,max_items=2,rounds=2"


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare")
    code = main(["compare", GAME, "--methods", "rm,lp-highs,lp-cvxpy,subgradient", "--time-limit", "10",
                 "--out", str(out), "--json"])
    assert code == 0
    return out


def test_files_and_methods(compared):
    summary = json.loads((compared / "summary.json").read_text())
    assert summary["game"] == GAME
    assert set(summary["methods"]) == {"rm", "lp-highs", "lp-cvxpy", "subgradient"}
    for name, run in summary["methods"].items():
        assert run["status"] in ("converged", "iteration_limit", "time_limit"), (name, run)
        assert run["final_gap"] is not None and run["peak_memory_mib"] > 0
    assert (compared / "convergence.png").stat().st_size > 10_000
    with open(compared / "traces.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["method"] for r in rows} == {"rm", "lp-highs", "lp-cvxpy", "subgradient"}


def test_regret_minimization_decreases_and_stays_feasible(compared):
    with open(compared / "traces.csv") as fh:
        rows = [r for r in csv.DictReader(fh) if r["method"] == "rm"]
    gaps = [float(r["gap"]) for r in rows]
    assert len(gaps) > 3 and gaps[-1] < gaps[0] and gaps[-1] <= 1e-3
    assert max(float(r["infeasibility"]) for r in rows) <= 1e-9
    summary = json.loads((compared / "summary.json").read_text())
    assert summary["methods"]["rm"]["feasible_iterates"] is True
    assert summary["methods"]["rm"]["time_to_gap"]["0.001"] is not None


def test_lp_solves_tiny_games_exactly_and_subgradient_is_infeasible(compared):
    summary = json.loads((compared / "summary.json").read_text())
    assert summary["methods"]["lp-highs"]["final_gap"] <= 1e-6
    with open(compared / "traces.csv") as fh:
        sub = [r for r in csv.DictReader(fh) if r["method"] == "subgradient"]
    assert max(float(r["infeasibility"]) for r in sub) > 0


def test_table_and_unknown_method(capsys, tmp_path):
    assert main(["compare", GAME, "--methods", "rm,warp-drive", "--out", str(tmp_path)]) == 2
    assert "unknown method" in capsys.readouterr().err


def test_out_of_memory_is_recorded_and_others_go_on(tmp_path):
    code = main(["compare", GAME, "--methods", "lp-highs,rm", "--time-limit", "5", "--memory-limit", "0.05",
                 "--out", str(tmp_path), "--json"])
    assert code == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    for run in summary["methods"].values():
        assert run["status"] in ("out_of_memory", "error") and run["error"]


@pytest.mark.parametrize("argv, message", [
    (["/no/such/game.efg"], "no such file"),
    (["warp:speed=9"], "unknown game 'warp'"),
    (["kuhn:players=100"], "too large"),
    ([GAME, "--methods", ""], "no method to compare"),
    ([GAME, "--methods", ","], "no method to compare"),
    ([GAME, "--methods", "rm,warp-drive"], "unknown method 'warp-drive'"),
    ([GAME, "--time-limit", "0"], "--time-limit must be a positive number"),
    ([GAME, "--time-limit", "nan"], "--time-limit must be a positive number"),
    ([GAME, "--memory-limit", "-1"], "--memory-limit must be a positive number"),
    ([GAME, "--methods", "rm", "--step-size", "1e-3"], "subgradient is not among the methods"),
    ([GAME, "--methods", "subgradient", "--step-size", "-1"], "--step-size must be a positive number"),
])
def test_bad_compare_arguments_are_refused_before_anything_runs(capsys, tmp_path, argv, message):
    out = tmp_path / "out"
    code = main(["compare", *argv, "--out", str(out), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code != 0 and message in payload["error"], payload
    assert not out.exists()  # nothing spawned, nothing written


def test_unwritable_output_folder_is_refused_before_anything_runs(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code = main(["compare", GAME, "--out", str(blocker / "out"), "--json"])
    assert code != 0 and "cannot write to the output folder" in json.loads(capsys.readouterr().out)["error"]
