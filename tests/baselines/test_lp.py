"""The von Stengel–Forges EFCE LP baselines (HiGHS direct and cvxpy)."""

import numpy as np
import pytest

from efce import games
from efce.baselines import ModelTooLarge, build_efce_lp, estimate_efce_lp, solve_lp_cvxpy, solve_lp_highs
from efce.baselines.efce_lp import CVXPY_FACTOR
from efce.games.game import Game, GameError
from efce.solvers.evaluation.gaps import efce_gap, plan_utilities

from .normal_form import normal_form_efce_welfare

GAMES = {
    "fig1": lambda: games.farina_fig1(),
    "fig2": lambda: games.farina_fig2(),
    "sheriff111": lambda: games.sheriff(max_bribe=1, max_items=1, rounds=1),
    "sheriff222": lambda: games.sheriff(max_bribe=2, max_items=2, rounds=2),
    "battleship22": lambda: games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2),
    "goofspiel3": lambda: games.goofspiel(2, 3, prizes="sorted"),
}
# Simplex is slow on the degenerate Battleship LP; the interior-point method takes a few seconds.
HIGHS_SOLVER = {"battleship22": "ipm"}
BRUTE_FORCE = ["fig1", "fig2", "sheriff111", "goofspiel3"]

_cache = {}


def _game(name):
    if name not in _cache:
        _cache[name] = GAMES[name]()
    return _cache[name]


def _random_payoffs(game: Game, seed: int) -> Game:
    rng = np.random.default_rng(seed)
    return Game(
        num_players=2,
        parent=game.parent,
        action=game.action,
        player=game.player,
        infoset=game.infoset,
        chance_prob=game.chance_prob,
        payoffs=rng.integers(-5, 6, size=game.payoffs.shape).astype(float),
        terminal_index=game.terminal_index,
        name=f"{game.name}-random{seed}",
    )


@pytest.mark.parametrize("name", list(GAMES))
def test_highs_and_cvxpy_agree_and_optimum_is_an_efce(name):
    game = _game(name)
    model = build_efce_lp(game)
    assert model.num_variables == model.size.variables and model.num_rows == model.size.rows
    assert model.nonzeros <= model.size.nonzeros
    solver = HIGHS_SOLVER.get(name, "choose")
    r1 = solve_lp_highs(game, model=model, solver=solver)
    r2 = solve_lp_cvxpy(
        game, model=model, solver="HIGHS", highs_options={"solver": solver} if solver != "choose" else {}
    )
    assert r1.status == r2.status == "converged"
    assert abs(r1.info["welfare"] - r2.info["welfare"]) <= 1e-6
    assert abs(r1.info["objective_value"] - r1.info["welfare"]) <= 1e-6
    for r in (r1, r2):
        xi = r.point
        assert model.vsf.max_violation(xi) <= 1e-9
        assert r.info["max_violation"] <= 1e-9
        assert efce_gap(game, xi) <= 1e-6
        assert r.info["efce_gap"] <= 1e-6
        np.testing.assert_allclose(plan_utilities(game, xi), r.info["utilities"], atol=1e-9)
    assert r1.setup_seconds >= model.build_seconds and r1.seconds > 0
    assert r1.info["peak_memory_bytes"] > 0 and r1.info["nonzeros"] == model.nonzeros
    assert len(r1.trace) == 1 and r1.trace[0].gap == r1.info["efce_gap"]


@pytest.mark.parametrize("name", ["fig1", "sheriff222"])
def test_clarabel_and_highs_solver_choices(name):
    game = _game(name)
    model = build_efce_lp(game)
    ref = solve_lp_highs(game, model=model, solver="simplex").info["welfare"]
    assert abs(solve_lp_highs(game, model=model, solver="ipm").info["welfare"] - ref) <= 1e-6
    r = solve_lp_cvxpy(game, model=model, solver="CLARABEL")
    assert r.status == "converged" and abs(r.info["welfare"] - ref) <= 1e-6


@pytest.mark.parametrize("name", BRUTE_FORCE)
def test_lp_matches_normal_form_lp(name):
    game = _game(name)
    r = solve_lp_highs(game)
    assert abs(r.info["welfare"] - normal_form_efce_welfare(game)) <= 1e-6


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name", ["fig1", "sheriff111", "goofspiel3"])
def test_lp_matches_normal_form_lp_random_payoffs(name, seed):
    game = _random_payoffs(_game(name), seed)
    for objective in ("welfare", 0, 1):
        r = solve_lp_highs(game, objective=objective)
        ref = normal_form_efce_welfare(game, objective)
        value = r.info["welfare"] if objective == "welfare" else r.info["utilities"][objective]
        assert abs(value - ref) <= 1e-6, (objective, value, ref)
        assert r.info["efce_gap"] <= 1e-6


def test_feasibility_and_welfare_bound():
    game = _game("sheriff222")
    best = solve_lp_highs(game).info["welfare"]
    feas = solve_lp_highs(game, objective="feasibility")
    assert feas.status == "converged" and feas.info["efce_gap"] <= 1e-6
    tight = solve_lp_highs(game, objective="feasibility", welfare_threshold=best - 1e-7)
    assert tight.status == "converged" and tight.info["welfare"] >= best - 1e-6
    assert solve_lp_highs(game, objective="feasibility", welfare_threshold=best + 0.1).status == "infeasible"
    r = solve_lp_cvxpy(game, objective="feasibility", welfare_threshold=best + 0.1)
    assert r.status == "infeasible"


def test_time_limit_status():
    game = _game("battleship22")
    r = solve_lp_highs(game, solver="simplex", time_limit=0.05)
    assert r.status == "time_limit"


@pytest.mark.parametrize(
    "game", [games.kuhn(), games.goofspiel(3, 3, prizes="sorted")], ids=["chance", "three-players"]
)
def test_games_outside_scope_are_rejected(game):
    for call in (
        lambda: build_efce_lp(game),
        lambda: solve_lp_highs(game),
        lambda: solve_lp_cvxpy(game),
        lambda: estimate_efce_lp(game),
    ):
        with pytest.raises(GameError, match="chance|two-player"):
            call()


def test_model_over_budget_is_refused_with_its_size():
    game = _game("sheriff222")
    size = estimate_efce_lp(game)
    with pytest.raises(ModelTooLarge) as info:
        solve_lp_highs(game, memory_budget=10_000)
    err = info.value
    assert isinstance(err, GameError)
    assert err.estimate == size and err.budget == 10_000
    assert f"{size.variables:,} variables" in str(err) and f"{size.nonzeros:,} nonzeros" in str(err)
    assert "memory budget" in str(err)
    with pytest.raises(ModelTooLarge):
        solve_lp_cvxpy(game, memory_budget=size.bytes)  # cvxpy needs a multiple of the estimate
    solve_lp_highs(game, memory_budget=size.bytes)  # exactly at the budget: builds
    # Clarabel's factorization needs more than cvxpy's copies (BUDGET_FACTORS): a budget HiGHS
    # through cvxpy fits in refuses it, with the factor named.
    solve_lp_cvxpy(game, memory_budget=int(size.bytes * CVXPY_FACTOR) + 1)
    with pytest.raises(ModelTooLarge, match="×8 for this front end"):
        solve_lp_cvxpy(game, memory_budget=int(size.bytes * CVXPY_FACTOR) + 1, solver="CLARABEL")


def test_estimate_is_exact_for_rows_and_variables():
    for name in GAMES:
        game = _game(name)
        model = build_efce_lp(game, welfare_threshold=-100.0)
        assert (model.num_variables, model.num_rows) == (model.size.variables, model.size.rows)
        assert model.num_xi == len(model.pairs)
