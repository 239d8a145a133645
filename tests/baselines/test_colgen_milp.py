"""The pricing MILP (efce.baselines.colgen_milp) against the enumeration of every joint plan."""

import numpy as np
import pytest

from efce import games
from efce.baselines.colgen_incentives import Incentives
from efce.baselines.colgen_milp import PricingMILP, milp_size_bounds
from efce.baselines.colgen_pricing import PolynomialBuilder, price_by_enumeration, reduced_plans
from efce.errors import MemoryBudgetExceeded
from efce.interrupts import clear_stop, request_stop
from tests.random_games import random_game

CONCEPTS = ("efce", "efcce", "nfcce")


def _polynomials(game, rng, concept):
    """Reduced costs of random duals: sparse (few triggers active) and dense (all)."""
    incentives = Incentives(game, concept)
    builder = PolynomialBuilder(incentives)
    for density in (0.05, 1.0):
        duals = rng.normal(size=incentives.num_rows) * (rng.random(incentives.num_rows) < density)
        yield builder(duals, rng.normal(size=game.num_players))


@pytest.mark.parametrize("kind", ["none", "public", "private"])
@pytest.mark.parametrize("players", [2, 3])
def test_the_milp_finds_the_enumerations_maximum(kind, players):
    rng = np.random.default_rng(players)
    for seed in range(2):
        game = random_game(seed, players=players, chance=kind)
        if len(game.players_without_decisions()) == players:
            continue
        milp = PricingMILP(game)
        plans = [reduced_plans(game.sequences(p)) for p in range(players)]
        for concept in CONCEPTS:
            for poly in _polynomials(game, rng, concept):
                best = price_by_enumeration(poly, plans).bound
                result = milp.solve(poly)
                assert result.status == "optimal"
                assert result.values.max() == pytest.approx(best, abs=1e-7)
                assert result.bound >= best - 1e-7
                np.testing.assert_allclose(poly(result.plans), result.values, atol=1e-12)


def test_a_start_and_a_relative_gap_keep_the_bound_valid():
    """Stopped at a 50 % relative gap from the enumeration's worst plan, the MILP's bound still
    bounds every joint plan and its incumbents are evaluated exactly."""
    game = random_game(3, players=3, chance="private")
    rng = np.random.default_rng(5)
    milp = PricingMILP(game)
    plans = [reduced_plans(game.sequences(p)) for p in range(3)]
    for poly in _polynomials(game, rng, "efce"):
        worst = price_by_enumeration(poly, plans, keep=10**9)
        start = [x[-1:] for x in worst.plans]
        result = milp.solve(poly, start=start, rel_gap=0.5)
        assert result.bound >= worst.values[0] - 1e-7
        assert result.values.max() >= poly(start)[0] - 1e-9


def test_the_model_sizes_lie_within_the_trees_bounds():
    game = games.kuhn(3, 3)
    rng = np.random.default_rng(6)
    milp = PricingMILP(game)
    for concept in CONCEPTS:
        least, most = milp_size_bounds(game, concept)
        for poly in _polynomials(game, rng, concept):
            lp, _, _ = milp.build(poly)
            size = (lp.num_col_, lp.num_row_, len(lp.a_matrix_.value_))
            assert all(lo <= s <= hi for lo, s, hi in zip(least, size, most, strict=True)), (
                size,
                least,
                most,
            )


def test_a_model_over_the_budget_is_refused_before_highs_gets_it():
    game = games.kuhn(3, 3)
    incentives = Incentives(game, "efce")
    poly = PolynomialBuilder(incentives)(np.ones(incentives.num_rows), np.ones(3))
    with pytest.raises(MemoryBudgetExceeded, match="pricing MILP of kuhn.*over the memory budget"):
        PricingMILP(game).solve(poly, memory_budget=1000)


def test_a_stop_request_ends_the_solve_at_once():
    game = games.kuhn(3, 4)
    rng = np.random.default_rng(7)
    incentives = Incentives(game, "efce")
    poly = PolynomialBuilder(incentives)(rng.normal(size=incentives.num_rows), np.ones(3))
    request_stop()
    try:
        result = PricingMILP(game).solve(poly)
    finally:
        clear_stop()
    assert result.status == "interrupted" and result.seconds < 2.0
