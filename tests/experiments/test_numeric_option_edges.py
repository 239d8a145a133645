"""Class 7 of the round-3 probe: numeric edges of the solve/compare options."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import efce
from efce.experiments.cli import main
from efce.experiments.solve import finite_or_error
from efce.solvers.result import SolveResult, TraceRow


def run(args, capsys):
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    assert out.count("\n") == 1, out
    return code, json.loads(out)


def test_a_diverged_run_is_an_error_never_a_perfect_plan(capsys):
    code, out = run(
        ["solve", "farina-fig2", "--method", "subgradient", "--step-size", "1e308", "--iterations", "20"],
        capsys,
    )
    assert code == 2
    assert "subgradient diverged: non-finite values" in out["error"]
    assert "step size too large" in out["error"]
    # From Python: status error, no NaN anywhere in the JSON; the run stops at the iteration
    # that overflowed, without numpy's overflow warnings.
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        result = efce.solve("farina-fig2", "subgradient", step_size=1e308, iterations=20)
    assert result.status == "error" and result.point is None
    assert result.iterations == 1 and result.info["efce_gap"] is None
    json.dumps(result.to_json(), allow_nan=False)


def test_finite_or_error_checks_info_trace_and_point():
    ok = SolveResult(
        "m",
        np.zeros(3),
        "converged",
        1,
        0.0,
        0.0,
        [TraceRow(1, 0.0, 0.0)],
        {"efce_gap": 0.0, "utilities": [1.0, 2.0]},
    )
    assert finite_or_error(ok).status == "converged"
    bad = SolveResult(
        "m",
        (np.zeros(2), np.array([np.nan])),
        "converged",
        1,
        0.0,
        0.0,
        [TraceRow(1, 0.0, float("nan"))],
        {"efce_gap": 0.0, "utilities": [1.0, math.inf]},
    )
    out = finite_or_error(bad)
    assert out.status == "error" and out.point is None and out.trace == []
    assert out.info["utilities"] == [1.0, None]
    assert out.info["non_finite"] == ["utilities", "trace gap", "the final point"]


@pytest.mark.parametrize("method", ["rm", "lp-highs", "lp-cvxpy"])
def test_a_threshold_above_every_terminal_is_infeasible_for_every_method(method, capsys):
    code, out = run(["solve", "farina-fig2", "--method", method, "--welfare-threshold", "1e50"], capsys)
    assert code == 0 and out["status"] == "infeasible", out
    assert out["max_terminal_welfare"] == 3.0
    assert "largest social welfare of any terminal is 3" in out["message"]


def test_a_reachable_threshold_is_still_solved():
    result = efce.solve("farina-fig2", "lp-highs", welfare_threshold=3.0)
    assert result.status == "converged"


def test_negative_numbers_are_values(capsys):
    code, out = run(
        ["solve", "farina-fig2", "--method", "rm", "--welfare-threshold", "-1e3", "--iterations", "5"], capsys
    )
    assert code == 0 and out["welfare_threshold"] == -1000.0, out
    code, out = run(
        ["solve", "farina-fig2", "--method", "rm", "--welfare-threshold", "-.5e-1", "--iterations", "5"],
        capsys,
    )
    assert code == 0 and out["welfare_threshold"] == -0.05, out


@pytest.mark.parametrize(
    "args, fragment",
    [
        (
            ["--method", "lp-pdlp", "--target-gap", "0"],
            "lp-pdlp reads --target-gap as its relative tolerance",
        ),
        (
            ["--method", "lp-cvxpy", "--lp-solver", "NOPE"],
            "--lp-solver: cvxpy solver 'NOPE' is not installed; installed: ",
        ),
        (["--method", "rm", "--objective", "player1"], "--objective must be one of feasibility, welfare;"),
        (["--method", "cfr", "--trace", ""], "--trace needs a file name"),
        (["--method", "cfr", "--target-gap", "-1"], "--target-gap must be a number ≥ 0"),
    ],
)
def test_options_are_refused_before_the_game_is_built(args, fragment, capsys, monkeypatch):
    from efce.games import spec

    def no_build(*a, **k):
        raise AssertionError("the game was built before the options were checked")

    monkeypatch.setattr(spec, "make_game", no_build)
    code, out = run(["solve", "farina-fig2", *args], capsys)
    assert code == 2 and fragment in out["error"], out


def test_target_gap_zero_runs_the_whole_budget():
    result = efce.solve("farina-fig1", "icfr", iterations=30, target_gap=0)
    assert result.iterations == 30


@pytest.mark.parametrize(
    "args, fragment",
    [
        (
            ["compare", "farina-fig2", "--methods", "cfr", "--memory-limit", "1e300"],
            "--memory-limit must be at most 8589934592 GiB",
        ),
        (
            ["compare", "farina-fig2", "--preset", "paper", "--methods", "cfr"],
            "--preset paper chooses the games itself; give either a GAME or --preset",
        ),
    ],
)
def test_compare_limits_and_presets(args, fragment, capsys, tmp_path):
    code, out = run([*args, "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and fragment in out["error"], out
    assert not (tmp_path / "out").exists()


def test_result_json_never_holds_nan():
    result = SolveResult(
        "m",
        None,
        "error",
        1,
        0.0,
        0.0,
        info={"gap": np.float64("nan"), "u": np.array([1.0, np.inf]), "k": np.int64(3)},
    )
    out = result.to_json()
    assert out["gap"] is None and out["u"] == [1.0, None] and out["k"] == 3
    json.dumps(out, allow_nan=False)
