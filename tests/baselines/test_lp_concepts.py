"""Optimal EFCE, EFCCE and NFCCE by the two-player LP (``lp-highs``) against the brute-force
oracle (tests/brute_force_equilibria.py), on random tiny general-sum games without chance moves
and with public ones — 30 of each kind, every concept and objective — and the mutants the
comparison catches."""

import contextlib
import io

import pytest

import efce
from efce.baselines import efce_lp
from efce.concepts import CONCEPTS
from tests.brute_force_equilibria import BruteForce
from tests.random_games import random_game

KINDS = ("none", "public")
SEEDS = range(30)
OBJECTIVES = ("welfare", "player1", "player2")


def _lp_value(game, concept: str, objective: str):
    with contextlib.redirect_stdout(io.StringIO()):  # HiGHS's banner
        result = efce.solve(game, "lp-highs", concept=concept, objective=objective)
    value = (
        result.info["welfare"] if objective == "welfare" else result.info["utilities"][int(objective[-1]) - 1]
    )
    return value, result


def _disagreements(kind: str, concept: str) -> int:
    """Games of the suite where the LP's optimal welfare for ``concept`` is not the oracle's."""
    wrong = 0
    for seed in SEEDS:
        game = random_game(seed, chance=kind)
        value, _ = _lp_value(game, concept, "welfare")
        wrong += abs(value - BruteForce(game).optimum(concept)) > 1e-7
    return wrong


@pytest.mark.parametrize("kind", KINDS)
def test_the_lp_optimum_of_every_concept_and_objective_is_the_brute_forces(kind):
    strict = {"efce<efcce": 0, "efcce<nfcce": 0}
    for seed in SEEDS:
        game = random_game(seed, chance=kind)
        oracle = BruteForce(game)
        welfare = {}
        for concept in CONCEPTS:
            for objective in OBJECTIVES:
                value, result = _lp_value(game, concept, objective)
                assert result.status == "converged"
                assert value == pytest.approx(oracle.optimum(concept, objective), abs=1e-7), (
                    seed,
                    concept,
                    objective,
                )
                assert result.info["concept"] == concept
                assert result.info[f"{concept}_gap"] <= 1e-9
                assert result.info["max_violation"] <= 1e-9
                if objective == "welfare":
                    welfare[concept] = value
        assert welfare["efce"] <= welfare["efcce"] + 1e-9 <= welfare["nfcce"] + 2e-9
        strict["efce<efcce"] += welfare["efcce"] - welfare["efce"] > 1e-6
        strict["efcce<nfcce"] += welfare["nfcce"] - welfare["efcce"] > 1e-6
    # The concepts differ on several of these games: the comparison tells them apart.
    assert min(strict.values()) >= 1, strict


def test_an_exact_equilibrium_of_a_concept_is_one_of_the_coarser_concepts():
    for seed in range(6):
        game = random_game(seed, chance="public")
        _, result = _lp_value(game, "efce", "welfare")
        assert result.info["efce_gap"] <= 1e-9
        assert result.info["efcce_gap"] <= 1e-9 and result.info["nfcce_gap"] <= 1e-9


@pytest.mark.parametrize(
    "asked, built",
    [("efcce", "efce"), ("nfcce", "efcce")],
    ids=["efcce with the efce triggers", "nfcce with per-infoset triggers"],
)
def test_the_comparison_catches_a_concept_built_with_the_wrong_triggers(asked, built, monkeypatch):
    """The mutants of the issue: an EFCCE LP whose incentive rows are EFCE's, an NFCCE LP whose
    rows are per infoset (EFCCE's).  Each gives some game of the suite another optimum than the
    oracle, so the comparison above fails on it."""
    right = efce_lp.incentive_block

    def mutant(game, pairs, i, tm_seq, weight, concept="efce"):
        return right(game, pairs, i, tm_seq, weight, built if concept == asked else concept)

    monkeypatch.setattr(efce_lp, "incentive_block", mutant)
    assert _disagreements("public", asked) >= 1


@pytest.mark.parametrize("kind", KINDS)
def test_the_interior_point_lp_finds_every_concepts_optimum_of_the_brute_force(kind):
    """The same LPs solved by Clarabel's interior-point method through cvxpy (``lp-cvxpy
    --lp-solver clarabel``, the exact method that solves full Sheriff's coarse LPs in minutes,
    docs/results/lp_baseline.md): its optimal welfare is the oracle's, and its plan is an exact
    equilibrium of the concept to the interior-point method's tolerance (its defaults, 1e-8
    relative: the welfare agrees to 1e-6, where HiGHS's vertices agree to 1e-7)."""
    for seed in range(10):
        game = random_game(seed, chance=kind)
        oracle = BruteForce(game)
        for concept in CONCEPTS:
            result = efce.solve(game, "lp-cvxpy", lp_solver="clarabel", concept=concept)
            assert result.status == "converged"
            assert result.info["welfare"] == pytest.approx(oracle.optimum(concept), abs=1e-6), (seed, concept)
            assert result.info[f"{concept}_gap"] <= 1e-7
            assert result.info["max_violation"] <= 1e-7
