"""The one solve entry: options validated once, in the library, before anything is built; the
command line reports every refusal as one line (one JSON object with ``--json``)."""

import json
import math
import re

import pytest

import efce
from efce.experiments.cli import main
from efce.experiments.solve import METHODS, OPTIONS, OptionError, validate_options

GAME = "farina-fig2"


def run_json(capsys, *argv):
    code = main([*argv, "--json"])
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1, out
    return code, json.loads(out[0])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--method", "rm", "--iterations", "-5"], "--iterations must be an integer ≥ 1"),
        (["--method", "rm", "--iterations", "0"], "--iterations must be an integer ≥ 1"),
        (["--method", "icfr", "--iterations", "-3"], "--iterations must be an integer ≥ 1"),
        (["--method", "rm", "--iterations", "2.5"], "expected an integer"),
        (["--method", "rm", "--time-limit", "0"], "--time-limit must be a positive number"),
        (["--method", "rm", "--time-limit", "-1"], "--time-limit must be a positive number"),
        (["--method", "rm", "--time-limit", "inf"], "--time-limit must be a finite number"),
        (["--method", "rm", "--target-gap", "nan"], "--target-gap must be a finite number"),
        (["--method", "rm", "--target-gap", "-1"], "--target-gap must be a number ≥ 0"),
        (["--method", "rm", "--welfare-threshold", "nan"], "--welfare-threshold must be a finite number"),
        (["--method", "lp-highs", "--welfare-threshold", "nan"], "--welfare-threshold must be a finite"),
        (["--method", "subgradient", "--step-size", "-1"], "--step-size must be a positive number"),
        (["--method", "icfr", "--seed", "-1"], "--seed must be a number ≥ 0"),
        (["--method", "cfr+", "--welfare-threshold", "0.5"], "cfr+ does not use --welfare-threshold"),
        (["--method", "lp-highs", "--iterations", "10"], "lp-highs does not use --iterations"),
        (["--method", "rm", "--seed", "3"], "rm does not use --seed"),
        (["--method", "icfr", "--local", "hedge"], "icfr does not use --local"),
        (["--method", "warp"], "invalid choice"),
    ],
)
def test_bad_options_are_one_line_errors(capsys, argv, message):
    code, payload = run_json(capsys, "solve", GAME, *argv)
    assert code != 0
    assert set(payload) == {"error", "peak_memory_mib"}
    assert message in payload["error"], payload
    assert "internal error" not in payload["error"]


def test_option_errors_name_the_methods_that_use_the_option():
    with pytest.raises(OptionError, match="it is an option of rm, lp-highs, lp-pdlp, lp-cvxpy"):
        validate_options("cfr", {"welfare_threshold": 1.0})


def test_every_option_is_used_by_some_method_and_defaults_are_valid():
    used = {name for m in METHODS.values() for name in m.defaults}
    assert set(OPTIONS) - {"time_limit"} <= used
    for method in METHODS.values():
        given = {k: v for k, v in method.defaults.items() if v is not None}
        assert validate_options(method.name, given) == method.defaults


def test_library_entry_takes_a_spec_and_matches_the_command_line(capsys):
    sheriff = "sheriff:max_bribe=1,max_items=2,rounds=2"
    result = efce.solve(sheriff, "rm", iterations=50, target_gap=0.0)
    code, payload = run_json(
        capsys, "solve", sheriff, "--method", "rm", "--iterations", "50", "--target-gap", "0"
    )
    assert code == 0 and payload["iterations"] == result.iterations == 50
    assert payload["efce_gap"] == pytest.approx(result.info["efce_gap"], abs=1e-15)
    assert payload["status"] == "iteration_limit"
    assert 0 < payload["iteration_seconds"] <= payload["seconds"]


def test_json_never_contains_nan(capsys):
    # farina-fig2 converges at once: every number reported must still be finite or null.
    code, payload = run_json(capsys, "solve", GAME, "--method", "cfr+", "--iterations", "1")
    assert code == 0
    for value in payload.values():
        if isinstance(value, float):
            assert math.isfinite(value)


def test_unwritable_trace_is_refused_before_solving(capsys, tmp_path):
    code, payload = run_json(
        capsys, "solve", GAME, "--method", "rm", "--trace", str(tmp_path / "missing" / "trace.csv")
    )
    assert code != 0 and "does not exist" in payload["error"]


@pytest.mark.parametrize(
    "method, game, able",
    [
        ("rm", "kuhn:players=3", "icfr, cfr-s, trigger, coarse-trigger, lp-colgen"),
        ("cfr+", "kuhn:players=3", "icfr, cfr-s, trigger, coarse-trigger, lp-colgen"),
        ("lp-highs", "kuhn", "cfr, cfr+, icfr, cfr-s, trigger, coarse-trigger, lp-colgen"),
        ("subgradient", "kuhn", "cfr, cfr+, icfr, cfr-s, trigger, coarse-trigger, lp-colgen"),
        ("rm", "kuhn", "cfr, cfr+, icfr, cfr-s, trigger, coarse-trigger, lp-colgen"),
    ],
)
def test_a_game_outside_the_declared_capability_is_refused_before_any_model(method, game, able, monkeypatch):
    import dataclasses

    from efce.experiments import solve as solve_module

    def no_run(*args, **kwargs):
        raise AssertionError("the method ran on a game it does not solve")

    monkeypatch.setitem(METHODS, method, dataclasses.replace(METHODS[method], run=no_run))
    with pytest.raises(efce.GameError, match=f"{re.escape(method)} solves two-player games") as refused:
        solve_module.solve(game, method)
    assert str(refused.value).endswith(f"(methods that solve it: {able})")


def test_every_method_declares_what_it_solves():
    capabilities = {name: (m.players, m.chance) for name, m in METHODS.items()}
    assert capabilities == {
        "rm": (2, "public"),
        "cfr": (2, "any"),
        "cfr+": (2, "any"),
        "icfr": (None, "any"),
        "cfr-s": (None, "any"),
        "trigger": (None, "any"),
        "coarse-trigger": (None, "any"),
        "lp-highs": (2, "public"),
        "lp-pdlp": (2, "public"),
        "lp-cvxpy": (2, "public"),
        "subgradient": (2, "none"),
        "lp-colgen": (None, "any"),
    }
