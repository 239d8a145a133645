"""The subgradient baseline (Farina et al. 2019c with Wang–Bertsekas incremental projection)."""

import numpy as np
import pytest

from efce import games
from efce.baselines import solve_subgradient
from efce.baselines.subgradient import MaxDeviation, _uniform_plan
from efce.games.game import GameError
from efce.solvers.evaluation.gaps import EFCEGapEvaluator


@pytest.mark.parametrize(
    "game",
    [
        games.farina_fig1(),
        games.sheriff(max_bribe=2, max_items=2, rounds=2),
        games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2),
    ],
    ids=["fig1", "sheriff", "battleship"],
)
def test_max_deviation_matches_project_evaluator_off_the_polytope(game):
    f_eval = MaxDeviation(game)
    ev = EFCEGapEvaluator(game, f_eval.pairs)
    rng = np.random.default_rng(0)
    for trial in range(4):
        xi = _uniform_plan(game, f_eval.pairs, rng) * (1 + 0.5 * rng.random(len(f_eval.pairs)) * (trial > 1))
        f, player, trig, _ = f_eval(xi)
        rep = ev(xi)
        assert max(f, 0.0) == pytest.approx(rep.gap, abs=1e-12)
        assert rep.gains[player][trig] == pytest.approx(f, abs=1e-12)


def test_subgradient_is_the_directional_derivative():
    game = games.sheriff(max_bribe=2, max_items=2, rounds=2)
    f_eval = MaxDeviation(game)
    rng = np.random.default_rng(3)
    xi = _uniform_plan(game, f_eval.pairs, rng)
    f, p, t, rowval = f_eval(xi)
    g = f_eval.subgradient(p, t, rowval)
    for _ in range(5):
        d = rng.standard_normal(len(xi))
        # f is convex and piecewise linear: f(ξ + εd) ≥ f(ξ) + ε gᵀd, with equality for small ε
        # in directions where the maximizer stays the same; the inequality always holds.
        eps = 1e-7
        assert f_eval(xi + eps * d)[0] >= f + eps * g @ d - 1e-12


@pytest.mark.parametrize(
    "game,step",
    [
        (games.sheriff(max_bribe=1, max_items=1, rounds=1), 1e-2),
        (games.sheriff(max_bribe=2, max_items=2, rounds=2), 1e-2),
        (games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2), 1e-4),
    ],
    ids=["sheriff111", "sheriff222", "battleship22"],
)
def test_subgradient_reduces_max_deviation(game, step):
    r = solve_subgradient(game, step_size=step, iterations=600, trace_every=20, start="random", seed=1)
    first, last = r.trace[0], r.trace[-1]
    assert first.iteration == 0 and first.infeasibility <= 1e-12 and first.gap > 0.01
    assert r.iterations == 600 and last.iteration == 600
    best = min(row.gap for row in r.trace[1:])
    assert best < 0.5 * first.gap
    # Infeasible iterates: the trace reports infeasibility next to the gap.
    assert any(row.infeasibility > 1e-6 for row in r.trace[1:])
    assert all(np.isfinite(row.gap) and row.gap >= 0 for row in r.trace)
    assert r.info["max_violation"] == pytest.approx(last.infeasibility)
    assert np.all(r.point >= 0)


def test_time_limit_and_step_rule():
    game = games.sheriff(max_bribe=2, max_items=2, rounds=2)
    r = solve_subgradient(game, step_size=1e-2, iterations=10**9, time_limit=0.3, step_rule="sqrt")
    assert r.status == "time_limit" and r.trace[-1].iteration == r.iterations
    with pytest.raises(ValueError):
        solve_subgradient(game, step_rule="bogus")


@pytest.mark.parametrize(
    "game", [games.kuhn(), games.goofspiel(3, 3, prizes="sorted")], ids=["chance", "three-players"]
)
def test_out_of_scope_games(game):
    with pytest.raises(GameError, match="chance|two-player"):
        solve_subgradient(game, iterations=1)


def test_step_rules():
    from efce.baselines.subgradient import STEP_RULES, _step

    g = np.array([1.0, 1.0])
    assert STEP_RULES == ("constant", "sqrt", "polyak")
    assert _step("constant", 0.1, 99, 2.0, g) == 0.1
    assert _step("sqrt", 0.1, 99, 2.0, g) == pytest.approx(0.01)
    assert _step("polyak", 10.0, 0, 2.0, g) == pytest.approx(1.0)  # f / ‖g‖²
    assert _step("polyak", 0.5, 0, 2.0, g) == 0.5  # capped at α
    assert _step("polyak", 0.5, 0, 2.0, np.zeros(2)) == 0.0
    game = games.sheriff(max_bribe=2, max_items=2, rounds=2)
    r = solve_subgradient(
        game, step_size=1.0, step_rule="polyak", iterations=600, trace_every=20, start="random", seed=1
    )
    assert min(row.gap for row in r.trace[1:]) < 0.5 * r.trace[0].gap
    assert r.info["step_rule"] == "polyak"
    with pytest.raises(ValueError, match="step_size"):
        solve_subgradient(game, step_size=float("nan"))
