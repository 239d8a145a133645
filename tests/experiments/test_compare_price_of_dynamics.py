"""The price of dynamics in ``efce compare``: the certified optimum of column generation beside
the value of the objective each dynamic's equilibrium reaches (efce.experiments.compare)."""

import pytest

from efce.experiments.cmd_compare import DYNAMICS_METHODS, PRESETS
from efce.experiments.compare import objective_comparison, price_of_dynamics_note, run_outcome, summary_table
from efce.experiments.solve import validate_options


def _run(method, result, status="converged"):
    return {
        "method": method,
        "status": status,
        "wall_seconds": 1.0,
        "peak_memory_mib": 100.0,
        "final_gap": 0.0,
        "time_to_gap": {"0.1": 0.1, "0.01": 0.2, "0.001": None},
        "result": result,
        "error": None,
        "compile_seconds": 0.5,
    }


RUNS = {
    "lp-colgen[objective=player1]": _run(
        "lp-colgen[objective=player1]",
        {
            "objective": "player1",
            "objective_interval": [-0.0208, -0.0207],
            "utilities": [-0.0208, 0.0, 0.0208],
        },
    ),
    "trigger": _run("trigger", {"utilities": [-0.05, 0.01, 0.04]}, "iteration_limit"),
    "icfr": _run("icfr", {"utilities": [-0.03, 0.0, 0.03]}, "iteration_limit"),
    "lp-highs": _run("lp-highs", None, "error"),
}


def test_each_run_gets_the_value_of_the_certified_objective():
    optimum = objective_comparison(RUNS)
    assert optimum["objective"] == "player1" and optimum["run"] == "lp-colgen[objective=player1]"
    assert optimum["interval"] == [-0.0208, -0.0207]
    assert optimum["values"] == {"lp-colgen[objective=player1]": -0.0208, "trigger": -0.05, "icfr": -0.03}
    welfare = {
        "lp-colgen": _run(
            "lp-colgen", {"objective": "welfare", "objective_interval": [3.0, 3.0], "utilities": [1.0, 2.0]}
        )
    }
    assert objective_comparison(welfare)["values"] == {"lp-colgen": 3.0}
    assert objective_comparison({"trigger": RUNS["trigger"]}) is None


def test_the_table_and_the_figure_say_the_price_of_dynamics():
    table = summary_table({"game": "kuhn:players=3,ranks=4", "methods": RUNS})
    lines = table.splitlines()
    assert "player1" in lines[1] and "price" in lines[1]
    trigger = next(line for line in lines if line.startswith("trigger"))
    assert "-0.05" in trigger and "0.0292" in trigger  # −0.0208 − (−0.05)
    assert "certified optimal: player1 in [-0.0208, -0.0207]" in table
    assert next(line for line in lines if line.startswith("lp-highs")).count("—") >= 2
    note = price_of_dynamics_note(RUNS)
    assert note.startswith("player1: certified optimum -0.0208 (lp-colgen[objective=player1])")
    assert "trigger -0.05 (price 0.0292)" in note and "icfr -0.03 (price 0.0092)" in note


def test_an_interval_that_is_not_certified_is_said_so():
    run = _run("lp-colgen", {"objective": "welfare", "objective_interval": [1.5, 2.25]}, "time_limit")
    assert run_outcome(run) == ("time_limit", "time limit: welfare in [1.5, 2.25]")
    run = _run("lp-colgen", {"objective": "welfare", "objective_interval": [1.5, None]}, "interrupted")
    assert run_outcome(run) == ("interrupted", "interrupted: welfare in [1.5, ?]")


@pytest.mark.parametrize("entry", DYNAMICS_METHODS)
def test_the_dynamics_preset_runs_valid_configurations(entry):
    from efce.experiments.compare import method_variant

    method, options = method_variant(entry)
    validate_options(method, options)
    assert PRESETS["dynamics"] and all("players=3" in game for game in PRESETS["dynamics"])
