"""DECOMPOSE on two-player games with public chance moves: the chain is the von Stengel–Forges
polytope (the four checks of polytopes.verification, the LP-vertex round trip included), on
Goofspiel with random prizes and on random tiny games, where the component path of DECOMPOSE
(no global critical player) runs."""

import numpy as np
import pytest

from efce import games
from efce.games.relevant import relevant_pairs
from efce.polytopes import correlation_plan, verify
from efce.polytopes.decompose import pairs_without_critical_player
from tests.random_games import random_game


@pytest.mark.parametrize("ranks", (2, 3))
def test_goofspiel_with_random_prizes_decomposes_into_the_vsf_polytope(ranks):
    game = games.goofspiel(players=2, ranks=ranks, prizes="random")
    pairs = relevant_pairs(game)
    chain = correlation_plan(game, pairs)
    assert chain.num_entries == len(pairs)
    report = verify(chain, game, samples=3, lp_vertices=3)
    assert report.passed, str(report)


def test_goofspiel_needs_the_component_path():
    """Below some pairs neither player is critical: one connected infoset pair per prize drawn
    (Proposition 2 holds only without chance)."""
    assert pairs_without_critical_player(games.goofspiel(players=2, ranks=3, prizes="random")) > 0
    assert pairs_without_critical_player(games.sheriff(max_bribe=2, max_items=2, rounds=2)) == 0


@pytest.mark.parametrize("seed", range(20))
def test_random_public_chance_games_decompose_into_the_vsf_polytope(seed):
    game = random_game(seed, chance="public")
    chain = correlation_plan(game)
    report = verify(chain, game, samples=3, lp_vertices=3, seed=seed)
    assert report.passed, str(report)


def test_random_points_of_the_chain_are_correlation_plans_of_public_chance():
    """Every vertex of the chain is a 0/1 plan: a product of two pure plans at the relevant
    pairs (what the triangle-free theorem makes of the polytope's vertices)."""
    game = games.goofspiel(players=2, ranks=2, prizes="random")
    pairs = relevant_pairs(game)
    chain = correlation_plan(game, pairs)
    rng = np.random.default_rng(1)
    for _ in range(20):
        xi = chain.to_natural(chain.random_point(rng, vertex=True), len(pairs))
        x1 = np.zeros(game.sequences(0).num_sequences)
        x2 = np.zeros(game.sequences(1).num_sequences)
        row0 = pairs.index(np.arange(len(x1)), 0)
        x1[:] = xi[row0]
        x2[:] = xi[pairs.index(0, np.arange(len(x2)))]
        np.testing.assert_array_equal(xi, x1[pairs.sigma1] * x2[pairs.sigma2])
