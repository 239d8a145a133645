"""The brute-force oracle of optimal correlated equilibria (tests/brute_force_equilibria.py)
checked against a second formulation and against the concepts' known order."""

import numpy as np
import pytest

from efce import games
from efce.games.game import CHANCE, TERMINAL, Game
from tests.baselines.normal_form import normal_form_efce_welfare
from tests.brute_force_equilibria import BruteForce
from tests.random_games import KINDS, random_game


@pytest.mark.parametrize("seed", range(8))
def test_efce_optimum_equals_the_sequence_form_brute_force(seed):
    """The oracle's EFCE welfare equals the older normal-form LP written over sequence-form
    payoff matrices (tests/baselines/normal_form.py), on games without chance moves."""
    game = random_game(seed, chance="none")
    assert BruteForce(game).optimum("efce") == pytest.approx(normal_form_efce_welfare(game), abs=1e-7)


def test_efce_optimum_of_the_paper_figures():
    for game in (games.farina_fig1(), games.farina_fig2()):
        assert BruteForce(game).optimum("efce") == pytest.approx(normal_form_efce_welfare(game), abs=1e-7)


@pytest.mark.parametrize("kind", KINDS)
def test_concepts_nest_and_differ(kind):
    """EFCE ⊆ EFCCE ⊆ NFCCE, so the optimal welfares are ordered; among 12 random games of each
    kind some order is strict (the three concepts are not one)."""
    strict = 0
    for seed in range(12):
        bf = BruteForce(random_game(seed, chance=kind))
        efce, efcce, nfcce = (bf.optimum(c) for c in ("efce", "efcce", "nfcce"))
        assert efce <= efcce + 1e-7 and efcce <= nfcce + 1e-7
        strict += nfcce - efce > 1e-6
    assert strict >= 2


def _simultaneous(payoffs):
    """A 2×2 game: player 1 moves, player 2 moves without seeing it."""
    return Game.from_tree(
        num_players=2,
        parent=[-1, 0, 0, 1, 1, 2, 2],
        action=[0, 0, 1, 0, 1, 0, 1],
        player=[0, 1, 1, TERMINAL, TERMINAL, TERMINAL, TERMINAL],
        infoset_key=[0, 0, 0, -1, -1, -1, -1],
        terminal_payoffs=payoffs,
    )


def test_prisoners_dilemma_has_only_mutual_defection():
    """Defection strictly dominates, so every concept's only equilibrium is (D, D): welfare 2."""
    # actions: 0 = cooperate, 1 = defect; rows (C,C), (C,D), (D,C), (D,D)
    bf = BruteForce(_simultaneous([[3, 3], [0, 5], [5, 0], [1, 1]]))
    for concept in ("efce", "efcce", "nfcce"):
        assert bf.optimum(concept) == pytest.approx(2.0)


def test_chicken_correlated_optimum():
    """Chicken's best correlated equilibrium (Aumann's traffic light): (C,C) 1/2, (C,D) 1/4,
    (D,C) 1/4, welfare 10.5; with one move each, the EFCE is the normal-form CE."""
    bf = BruteForce(_simultaneous([[6, 6], [2, 7], [7, 2], [0, 0]]))
    value, mu = bf.solve("efce")
    assert value == pytest.approx(10.5)
    assert bf.gains("efce", mu) <= 1e-9


def test_a_wrong_trigger_rule_changes_the_optimum():
    """The EFCE rows must fire on the recommended action: with the rows of every action merged
    into one (the EFCCE trigger), some game's optimum moves — the oracle tells them apart."""
    moved = 0
    for seed in range(12):
        bf = BruteForce(random_game(seed, chance="private"))
        moved += abs(bf.optimum("efce") - bf.optimum("efcce")) > 1e-6
    assert moved >= 1


def test_chance_reach_weights_the_payoffs():
    """A chance node at the root, no decisions: the welfare is the expected payoff."""
    game = Game.from_tree(
        num_players=2,
        parent=[-1, 0, 0],
        action=[0, 0, 1],
        player=[CHANCE, TERMINAL, TERMINAL],
        infoset_key=[-1, -1, -1],
        terminal_payoffs=[[4, 0], [0, 8]],
        chance_prob=[1.0, 0.25, 0.75],
    )
    assert BruteForce(game).optimum("nfcce") == pytest.approx(0.25 * 4 + 0.75 * 8)


def test_pair_probabilities_are_a_correlation_plan():
    bf = BruteForce(random_game(3, chance="public"))
    _, mu = bf.solve("efce")
    xi = bf.sequence_pair_probabilities(mu)
    assert xi[0, 0] == pytest.approx(1.0)
    assert np.all(xi >= -1e-12) and np.all(xi <= 1 + 1e-9)
