"""The EFCE, EFCCE and NFCCE gaps of a two-player correlation plan (the gap evaluator and the
saddle point's reading of it) against the brute-force oracle's trigger agents, on random tiny
games without chance moves and with public ones."""

import numpy as np
import pytest

from efce.concepts import CONCEPTS
from efce.games.relevant import relevant_pairs
from efce.solvers.backends.cpu import CPUBackend
from efce.solvers.evaluation.gaps import EFCEGapEvaluator, concept_gap
from efce.solvers.methods.efce import build_efce_model, saddle_point_gap
from tests.brute_force_equilibria import BruteForce, plan_at_pairs
from tests.random_games import random_game

CASES = [(kind, seed) for kind in ("none", "public") for seed in range(12)]


@pytest.mark.parametrize("kind, seed", CASES)
def test_gaps_equal_the_oracles_on_random_distributions(kind, seed):
    """For a random distribution over joint plans, each concept's gap of the plan it induces is
    the oracle's largest trigger-agent gain: the two-player gap of ξ equals the n-player gap of
    any distribution inducing ξ."""
    game = random_game(seed, chance=kind)
    oracle = BruteForce(game)
    pairs = relevant_pairs(game)
    mu = np.random.default_rng(seed).dirichlet(np.ones(len(oracle.joint)))
    xi = plan_at_pairs(game, oracle, mu, pairs.sigma1, pairs.sigma2)
    for concept in CONCEPTS:
        expected = oracle.gains(concept, mu)
        assert EFCEGapEvaluator(game, pairs, concept=concept)(xi).gap == pytest.approx(expected, abs=1e-12)
        model = build_efce_model(game, concept=concept)
        values = np.empty(len(pairs))
        values[model.entry_of_pair] = xi
        work = np.empty(model.triggers.chain.num_entries)
        assert saddle_point_gap(model, values, 1.0, work) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("kind, seed", CASES[::3])
def test_an_optimal_equilibrium_has_no_gap_in_its_concept_and_the_coarser_ones(kind, seed):
    """The oracle's optimal distribution of each concept induces a plan whose gap is 0 for the
    concept and for every coarser one (EFCE ⊆ EFCCE ⊆ NFCCE)."""
    game = random_game(seed, chance=kind)
    oracle = BruteForce(game)
    pairs = relevant_pairs(game)
    for k, concept in enumerate(CONCEPTS):
        _, mu = oracle.solve(concept)
        xi = plan_at_pairs(game, oracle, mu, pairs.sigma1, pairs.sigma2)
        for coarser in list(CONCEPTS)[k:]:
            assert concept_gap(game, xi, coarser, pairs) <= 1e-9


def test_the_concepts_gaps_differ():
    """On some game a plan is an EFCCE but not an EFCE, or an NFCCE but not an EFCCE: the
    evaluator tells the concepts apart (a wrong trigger rule would give equal gaps)."""
    seen = set()
    for seed in range(12):
        game = random_game(seed, chance="public")
        oracle = BruteForce(game)
        pairs = relevant_pairs(game)
        for coarse, fine in (("efcce", "efce"), ("nfcce", "efcce")):
            _, mu = oracle.solve(coarse)
            xi = plan_at_pairs(game, oracle, mu, pairs.sigma1, pairs.sigma2)
            if concept_gap(game, xi, fine, pairs) > 1e-6:
                seen.add((coarse, fine))
    assert seen == {("efcce", "efce"), ("nfcce", "efcce")}


@pytest.mark.parametrize("concept", CONCEPTS)
def test_parallel_products_equal_the_serial_ones(concept):
    """The operator's parallel kernels give the serial ones' products bit for bit for every
    concept (the coarse concepts name no trigger at some sequences: the following pass once
    lost the rows of every thread but the first there)."""
    game = random_game(4, chance="public")
    model = build_efce_model(game, concept=concept)
    op = model.operator
    serial = CPUBackend(threads=1).payoff_products(op)
    parallel = CPUBackend(threads=2, parallel_min_size=1).payoff_products(op)
    rng = np.random.default_rng(0)
    y, x = rng.random(op.shape[1]), rng.random(op.shape[0])
    np.testing.assert_array_equal(
        serial.matvec(y, np.empty(op.shape[0])), parallel.matvec(y, np.empty(op.shape[0]))
    )
    np.testing.assert_array_equal(
        serial.rmatvec(x, np.empty(op.shape[1])), parallel.rmatvec(x, np.empty(op.shape[1]))
    )
