"""Pricing for column generation (efce.baselines.colgen_pricing): the reduced-cost polynomial,
the treeplex best responses, the heuristic and the enumeration."""

import itertools

import numpy as np
import pytest

from efce import games
from efce.baselines.colgen_incentives import Incentives
from efce.baselines.colgen_pricing import (
    PolynomialBuilder,
    Treeplex,
    improve_by_best_responses,
    merge_monomials,
    price_by_enumeration,
    reduced_plans,
)
from efce.solvers.methods.trigger import reduced_plan_count
from tests.random_games import random_game

CONCEPTS = ("efce", "efcce", "nfcce")


def every_joint_plan(plans: list[np.ndarray]) -> list[np.ndarray]:
    index = np.array(list(itertools.product(*[range(len(x)) for x in plans])))
    return [x[index[:, j]] for j, x in enumerate(plans)]


def _cases():
    for kind in ("none", "public", "private"):
        for players in (2, 3):
            for seed in range(2):
                yield kind, players, seed


@pytest.mark.parametrize("kind, players, seed", list(_cases()))
def test_the_polynomial_is_the_reduced_cost_of_every_column(kind, players, seed):
    """``c(π) − yᵀ a_π`` for random duals ``y`` (sparse and dense) and objective weights, at every
    joint plan: the polynomial the pricing maximizes is the master's reduced cost."""
    game = random_game(seed, players=players, chance=kind)
    rng = np.random.default_rng(seed)
    plans = every_joint_plan([reduced_plans(game.sequences(p)) for p in range(players)])
    for concept in CONCEPTS:
        incentives = Incentives(game, concept)
        utilities, columns = incentives.columns(plans)
        builder = PolynomialBuilder(incentives)
        for density in (0.1, 1.0):
            duals = rng.normal(size=incentives.num_rows) * (rng.random(incentives.num_rows) < density)
            weights = rng.normal(size=players)
            poly = builder(duals, weights)
            np.testing.assert_allclose(poly(plans), utilities @ weights - columns.T @ duals, atol=1e-12)
            assert len(poly.triggers) == len(np.unique(poly.triggers, axis=0))


def test_reduced_plans_are_every_plan_once():
    for game in (games.kuhn(2, 3), games.farina_fig2(), random_game(4, players=3, chance="private")):
        for p in range(game.num_players):
            space = game.sequences(p)
            plans = reduced_plans(space)
            assert len(plans) == reduced_plan_count(space) == len(np.unique(plans, axis=0))
            # sequence form: the empty sequence, and at every infoset one action where reached
            assert plans[:, 0].all()
            for J in range(space.num_infosets):
                chosen = plans[
                    :, space.infoset_first_seq[J] : space.infoset_first_seq[J] + space.infoset_num_actions[J]
                ]
                assert np.array_equal(chosen.sum(axis=1), plans[:, space.infoset_parent_seq[J]])


def test_treeplex_best_responses_are_the_best_plans():
    rng = np.random.default_rng(1)
    for game in (games.kuhn(2, 3), games.goofspiel(players=2, ranks=3, prizes="sorted")):
        for p in range(game.num_players):
            space = game.sequences(p)
            plans = reduced_plans(space)
            values = rng.normal(size=(20, space.num_sequences))
            best = Treeplex(space).best_responses(values)
            assert all((best[b] == plans).all(axis=1).any() for b in range(20))  # reduced plans
            np.testing.assert_allclose(
                (best * values).sum(axis=1), (values @ plans.T).max(axis=1), atol=1e-12
            )


def test_best_response_ascent_never_falls_and_stays_below_the_maximum():
    game = random_game(5, players=3, chance="private")
    rng = np.random.default_rng(2)
    incentives = Incentives(game, "efce")
    poly = PolynomialBuilder(incentives)(rng.normal(size=incentives.num_rows), np.ones(3))
    plans = [reduced_plans(game.sequences(p)) for p in range(3)]
    starts = [x[rng.integers(len(x), size=30)] for x in plans]
    found, values = improve_by_best_responses(poly, [Treeplex(game.sequences(p)) for p in range(3)], starts)
    # equal starts are run once, in the order they first occur
    first = np.sort(np.unique(np.hstack(starts), axis=0, return_index=True)[1])
    assert len(first) < 30 and len(values) == len(first)
    assert np.all(values >= poly([x[first] for x in starts]) - 1e-12)
    np.testing.assert_allclose(values, poly(found), atol=1e-12)
    top = price_by_enumeration(poly, plans).bound
    assert values.max() <= top + 1e-12
    # a local maximum: no player alone improves
    for i, tp in enumerate([Treeplex(game.sequences(p)) for p in range(3)]):
        better = [x.copy() for x in found]
        better[i] = tp.best_responses(poly.linear_in(i, found))
        assert np.all(poly(better) <= values + 1e-12)


def test_enumeration_is_the_maximum_over_every_joint_plan():
    game = random_game(6, players=3, chance="public")
    rng = np.random.default_rng(3)
    incentives = Incentives(game, "efcce")
    poly = PolynomialBuilder(incentives)(rng.normal(size=incentives.num_rows), np.ones(3))
    plans = [reduced_plans(game.sequences(p)) for p in range(3)]
    every = poly(every_joint_plan(plans))
    result = price_by_enumeration(poly, plans, keep=3)
    assert result.bound == pytest.approx(every.max(), abs=1e-12)
    np.testing.assert_allclose(result.values, np.sort(every)[::-1][:3], atol=1e-12)
    np.testing.assert_allclose(poly(result.plans), result.values, atol=1e-12)


def test_merging_sums_equal_keys_and_moves_the_empty_key_to_the_constant():
    keys = np.array([[1, 2], [0, 0], [1, 2], [0, 3], [2, 0]])
    poly = merge_monomials(keys, np.array([1.0, 5.0, 2.0, -1.0, 1e-20]), 0.5, (3, 4), drop=1e-15)
    assert poly.constant == 5.5
    assert {tuple(k): c for k, c in zip(poly.keys.tolist(), poly.coef, strict=True)} == {
        (1, 2): 3.0,
        (0, 3): -1.0,
    }
