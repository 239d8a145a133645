"""``rm --objective welfare`` for EFCE, EFCCE and NFCCE against the brute-force oracle, on 30
random tiny games without chance moves and 30 with public ones.

What the interval promises (:mod:`efce.solvers.methods.welfare`): the upper end is certified —
no exact equilibrium of the concept has welfare above it; the lower end is the welfare of the
returned plan, an ε-equilibrium, so it is at most the optimum over ε-equilibria (which can
exceed the exact optimum by the LP's sensitivity times ε, never more)."""

import pytest

from efce.concepts import CONCEPTS
from efce.solvers.methods.welfare import WELFARE_INTERVAL_WIDTH, solve_optimal_welfare
from tests.brute_force_equilibria import BruteForce
from tests.random_games import random_game

SEEDS = range(30)


@pytest.mark.parametrize("kind", ("none", "public"))
def test_the_interval_brackets_the_optimum_of_every_concept(kind):
    for seed in SEEDS:
        game = random_game(seed, chance=kind)
        oracle = BruteForce(game)
        for concept in CONCEPTS:
            r = solve_optimal_welfare(game, concept=concept)
            lower, upper = r.info["welfare_interval"]
            eps = r.info["gap_tolerance"]
            assert r.status == "converged" and upper - lower <= WELFARE_INTERVAL_WIDTH, (seed, concept)
            assert upper >= oracle.optimum(concept) - 1e-9, (seed, concept)  # certified
            assert r.info[f"{concept}_gap"] <= eps and r.info["welfare"] == pytest.approx(lower)
            assert lower <= oracle.optimum(concept, epsilon=eps) + 1e-9, (seed, concept)


def test_the_concepts_intervals_follow_their_optima():
    """Where the optimal welfares of the concepts are far apart, so are the intervals: one
    concept's interval does not hold another's optimum (a wrong deviator polytope would)."""
    game = random_game(21, chance="public")  # EFCE < EFCCE < NFCCE by more than 0.05 here
    oracle = BruteForce(game)
    optima = {c: oracle.optimum(c) for c in CONCEPTS}
    assert optima["efce"] + 0.05 < optima["efcce"] and optima["efcce"] + 0.05 < optima["nfcce"]
    for concept in CONCEPTS:
        lower, upper = solve_optimal_welfare(game, concept=concept).info["welfare_interval"]
        for other, value in optima.items():
            if other != concept:
                assert not lower - 1e-9 <= value <= upper + 1e-9
