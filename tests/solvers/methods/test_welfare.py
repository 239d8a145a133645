"""Optimal-welfare EFCE by bisection on the welfare threshold of the saddle point."""

import numpy as np
import pytest

from efce import games
from efce.baselines import solve_lp_highs
from efce.solvers.methods.efce import build_efce_model, set_welfare_threshold
from efce.solvers.methods.welfare import solve_optimal_welfare, welfare_bounds

GAMES = {
    "fig1": lambda: games.farina_fig1(),
    "sheriff111": lambda: games.sheriff(max_bribe=1, max_items=1, rounds=1),
    "sheriff222": lambda: games.sheriff(max_bribe=2, max_items=2, rounds=2),
    "battleship22": lambda: games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2),
}


def test_moving_the_threshold_equals_a_fresh_build():
    game = GAMES["sheriff111"]()
    model = build_efce_model(game, welfare_threshold=0.3)
    set_welfare_threshold(model, -1.25)
    fresh = build_efce_model(game, welfare_threshold=-1.25)
    assert model.welfare_threshold == -1.25
    rng = np.random.default_rng(0)
    y = rng.random(model.triggers.chain.num_entries)
    x = rng.random(model.xi_chain.num_entries)
    assert np.array_equal(model.operator @ y, fresh.operator @ y)
    assert np.array_equal(model.operator.transpose_matmul(x), fresh.operator.transpose_matmul(x))
    assert not np.array_equal(model.operator @ y, build_efce_model(game, welfare_threshold=0.3).operator @ y)
    with pytest.raises(ValueError, match="without a welfare threshold"):
        set_welfare_threshold(build_efce_model(game), 0.5)


def test_welfare_bounds_hold_every_plan():
    game = GAMES["sheriff222"]()
    lo, hi = welfare_bounds(game)
    w = solve_lp_highs(game).info["welfare"]
    assert lo <= w <= hi and lo < hi


def _relaxed_optimum(game, epsilon: float) -> float:
    """The optimal welfare of the EFCE LP with every incentive row relaxed by ``epsilon``: an
    upper bound on the welfare of any plan whose max deviation is at most ``epsilon``."""
    from efce.baselines import build_efce_lp

    model = build_efce_lp(game)
    model.row_lower[model.num_eq :] -= epsilon
    return solve_lp_highs(game, model=model, solver="ipm").info["welfare"]


@pytest.mark.parametrize("name", list(GAMES))
def test_interval_brackets_the_lp_optimum(name):
    game = GAMES[name]()
    optimum = solve_lp_highs(game, solver="ipm").info["welfare"]
    r = solve_optimal_welfare(game, tolerance=1e-2, gap_tolerance=1e-4, step_iterations=5000, time_limit=60)
    lower, upper = r.info["welfare_interval"]
    assert r.status == "converged" and upper - lower <= 1e-2
    # The upper end is certified (no EFCE has welfare ≥ upper): never below the LP optimum.
    assert upper >= optimum - 1e-12
    # The lower end is the welfare of the returned plan, an ε-EFCE (ε = 1e-4).
    assert r.info["efce_gap"] <= 1e-4 and r.info["welfare"] == pytest.approx(lower)
    # ε-EFCE can beat the exact optimum (relaxing the incentives raises the optimal welfare), but
    # never the LP whose incentive rows are all relaxed by ε: a plan of max deviation ≤ ε meets
    # them with v its exact best-response values (by how much it beats the optimum depends on the
    # game and on the dynamics: Battleship 4e-3 here with PRM+, 4e-4 with RM+).
    assert lower <= _relaxed_optimum(game, 1e-4) + 1e-9
    outcomes = {s["outcome"] for s in r.info["steps"]}
    assert "infeasible" in outcomes
    assert all(s["threshold"] >= upper - 1e-12 for s in r.info["steps"] if s["outcome"] == "infeasible")


def test_time_limit_keeps_the_interval_so_far():
    game = GAMES["sheriff222"]()
    r = solve_optimal_welfare(game, tolerance=1e-9, gap_tolerance=1e-3, time_limit=1.0)
    assert r.status == "time_limit"
    lower, upper = r.info["welfare_interval"]
    assert lower < upper and r.point is not None
    with pytest.raises(ValueError, match="tolerance"):
        solve_optimal_welfare(game, tolerance=float("nan"))
