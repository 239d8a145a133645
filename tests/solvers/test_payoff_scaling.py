"""Payoffs of any magnitude (:mod:`efce.solvers.scaling`): every method reports, for a game
whose payoffs are multiplied by a power of two, exactly that power times its payoff-valued
numbers and the same plan; an LP on payoffs of magnitude 1e-300 finds the optimum its tolerances
would otherwise hide; options given in payoff units keep their meaning."""

import math

import numpy as np
import pytest

import efce
from efce import games
from efce.experiments.solve import METHODS
from efce.games.game import Game


def _times(game: Game, factor: float) -> Game:
    """``game`` with every payoff multiplied by ``factor`` (built here, independently of the
    toolkit's own scaling)."""
    return Game(
        num_players=game.num_players,
        parent=game.parent,
        action=game.action,
        player=game.player,
        infoset=game.infoset,
        chance_prob=game.chance_prob,
        payoffs=np.asarray(game.payoffs) * factor,
        terminal_index=game.terminal_index,
        labels=game.labels,
        name=game.name,
        infoset_keys=game.infoset_keys,
    )


def _unit(game: Game) -> Game:
    """``game`` scaled by a power of two to payoffs of largest magnitude in [1, 2): a game the
    toolkit runs unscaled, and the one it runs for every power-of-two multiple of it."""
    _, exponent = math.frexp(float(np.abs(game.payoffs).max()))
    return _times(game, 2.0 ** (1 - exponent))


TWO_PLAYERS = _unit(games.farina_fig2())
WITH_CHANCE = _unit(games.kuhn())


def _run_of(method: str) -> tuple[Game, dict]:
    """A deterministic run of ``method`` with a fixed budget, on a game of its kind: every method
    the toolkit declares is covered, so a new one that forgets to declare a payoff-valued fact
    (``Method.payoff_info``) fails here."""
    spec = METHODS[method]
    game = TWO_PLAYERS if spec.handles(2, "none") else WITH_CHANCE
    options: dict = {}
    for option in spec.options:
        if option.name == "iterations":
            options["iterations"] = 30
        elif option.name == "target_gap" and getattr(option, "unit", None) == "payoff":
            options["target_gap"] = 0.0  # the whole budget: no stop that depends on the units
        elif option.name == "step_size":
            options["step_size"] = 1e-2
        elif option.name == "start":
            options["start"] = "random"
    return game, options


RUNS = {method: _run_of(method) for method in METHODS}
#: Facts that are measured, not computed.
MEASURED = ("seconds", "bytes", "memory", "isolated")


def _leaves(value, path=""):
    """``{path: number}`` of every number in ``value`` (nested dicts and lists)."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _leaves(item, f"{path}.{key}").items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return {k: v for i, item in enumerate(value) for k, v in _leaves(item, f"{path}[{i}]").items()}
    if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        return {path: float(value)}
    return {}


def _facts(result) -> dict[str, float]:
    facts = _leaves(result.info)
    for i, row in enumerate(result.trace):
        facts.update(
            _leaves({"gap": row.gap, "infeasibility": row.infeasibility, **row.extra}, f"trace[{i}]")
        )
    return {k: v for k, v in facts.items() if not any(word in k for word in MEASURED)}


@pytest.mark.parametrize("method", list(RUNS))
@pytest.mark.parametrize("power", [-700, 400])
def test_a_game_times_a_power_of_two_reports_that_power_times_each_payoff_number(method, power):
    game, options = RUNS[method]

    def in_units(factor: float) -> dict:  # a step size is in inverse payoff units
        return {k: v / factor if k == "step_size" else v for k, v in options.items()}

    base = efce.solve(game, method, **options)
    doubled = efce.solve(_times(game, 2.0), method, **in_units(2.0))  # which numbers are payoffs
    far = efce.solve(_times(game, 2.0**power), method, **in_units(2.0**power))
    assert far.status == base.status and far.iterations == base.iterations
    if isinstance(base.point, np.ndarray):
        np.testing.assert_array_equal(far.point, base.point)  # the plan has no payoff unit
    one, two, scaled = _facts(base), _facts(doubled), _facts(far)
    assert set(scaled) == set(one)
    payoff_valued = 0
    for key, value in one.items():
        if key in two and value != 0 and math.isclose(two[key], 2 * value, rel_tol=1e-6):
            assert scaled[key] == value * 2.0**power, key  # exact: a power of two
            payoff_valued += 1
        elif key in two and math.isclose(two[key], value, rel_tol=1e-6, abs_tol=1e-12):
            assert scaled[key] == value, key
    assert payoff_valued >= 2  # the gap and the welfare at least


@pytest.mark.parametrize("method", ["lp-pdlp", "lp-highs", "lp-cvxpy"])
@pytest.mark.parametrize("magnitude", [1e-300, 1e100])
def test_an_lp_on_payoffs_far_from_one_reaches_the_optimal_welfare(method, magnitude):
    # The optimal EFCE welfare of the Figure-2 game is 3 (its largest terminal welfare); PDLP
    # on payoffs of 1e-300 used to stop "optimal" at half of it, within its tolerances.
    game = _times(games.farina_fig2(), magnitude)
    result = efce.solve(game, method)
    assert result.status == "converged"
    assert math.isclose(result.info["welfare"], 3 * magnitude, rel_tol=1e-5)
    assert result.info["efce_gap"] <= 1e-6 * magnitude


def test_options_in_payoff_units_keep_their_meaning_on_scaled_payoffs():
    # A target gap and a welfare threshold are in the game's own units: the run on the game
    # times 2^-800 with both times 2^-800 is the run on the game, reported in its units.
    factor = 2.0**-800
    base = efce.solve(TWO_PLAYERS, "rm", target_gap=1e-3, welfare_threshold=1.0)
    far = efce.solve(_times(TWO_PLAYERS, factor), "rm", target_gap=1e-3 * factor, welfare_threshold=factor)
    assert far.iterations == base.iterations and far.status == base.status
    assert far.info["welfare_threshold"] == factor
    assert far.info["welfare"] == base.info["welfare"] * factor


def test_a_message_quotes_payoffs_in_the_games_own_units():
    # Above the optimal EFCE welfare of this Sheriff (0.25 once its payoffs are in [1, 2)), below
    # its largest terminal welfare (0.5): the certificate's message names the threshold as
    # given, not as the scaled run saw it.
    from efce.games.spec import make_game

    factor = 2.0**-900
    game = _times(_unit(make_game("sheriff:max_bribe=1,max_items=1,rounds=1")), factor)
    result = efce.solve(game, "rm", welfare_threshold=0.4 * factor, iterations=3000)
    assert result.status == "infeasible", result.info
    assert f"welfare ≥ {0.4 * factor:g}" in result.info["message"]


def test_progress_sees_the_rows_in_the_games_own_units():
    factor = 2.0**-600
    rows = []
    result = efce.solve(
        _times(TWO_PLAYERS, factor), "rm", iterations=20, target_gap=0.0, progress=rows.append
    )
    assert [r.gap for r in rows] == [r.gap for r in result.trace]
    assert all(r.gap <= 4 * factor for r in rows)


def test_the_welfare_bisection_reports_its_interval_steps_and_trace_in_the_games_units():
    from efce.games.spec import make_game

    factor = 2.0**-500
    game = _unit(make_game("sheriff:max_bribe=1,max_items=1,rounds=1"))
    base = efce.solve(game, "rm", objective="welfare", iterations=300)
    far = efce.solve(_times(game, factor), "rm", objective="welfare", iterations=300)
    assert far.info["welfare_interval"] == [v * factor for v in base.info["welfare_interval"]]
    assert [s["threshold"] for s in far.info["steps"]] == [
        s["threshold"] * factor for s in base.info["steps"]
    ]
    assert [r.extra["threshold"] for r in far.trace] == [r.extra["threshold"] * factor for r in base.trace]
    assert far.info["tolerance"] == base.info["tolerance"] * factor
    assert f"{base.info['gap_tolerance'] * factor:g}" in far.info["lower_end"]
