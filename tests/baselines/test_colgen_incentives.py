"""The incentive rows of column generation (efce.baselines.colgen_incentives): the master LP
over *every* joint plan of a tiny game is the brute-force oracle's LP, for every concept."""

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp

from efce import games
from efce.baselines.colgen_incentives import Incentives, count_incentive_rows, player_incentives
from efce.solvers.evaluation.device import plays_sequences
from tests.brute_force_equilibria import BruteForce
from tests.random_games import random_game

CONCEPTS = ("efce", "efcce", "nfcce")


def oracle_plans(game, bf: BruteForce) -> list[np.ndarray]:
    """Every joint plan of the oracle as per-player sequence-form vectors (its column order)."""
    vectors = []
    for p in range(game.num_players):
        table = np.full((len(bf.plans[p]), game.sequences(p).num_infosets), -1)
        for k, plan in enumerate(bf.plans[p]):
            for infoset, action in plan.items():
                table[k, infoset] = action
        vectors.append(plays_sequences(game, p, table))
    joint = np.array(bf.joint)
    return [vectors[p][joint[:, p]] for p in range(game.num_players)]


def full_master_optimum(game, concept: str, weights: np.ndarray) -> float:
    """The master LP with every joint plan as a column, solved by scipy's HiGHS."""
    bf = BruteForce(game)
    incentives = Incentives(game, concept)
    utilities, columns = incentives.columns(oracle_plans(game, bf))
    values = incentives.fixed_columns()[:, :-1]  # the value variables (no phase-1 slack)
    A = sp.hstack([values, columns]).tocsr()
    cost = np.concatenate([np.zeros(incentives.num_values), utilities @ weights])
    bounds = [(None, None)] * incentives.num_values + [(0, None)] * columns.shape[1]
    result = scipy.optimize.linprog(
        -cost,
        A_ub=-A[1:],
        b_ub=np.zeros(A.shape[0] - 1),
        A_eq=A[:1],
        b_eq=[1.0],
        bounds=bounds,
        method="highs",
    )
    assert result.status == 0, result.message
    return -result.fun


@pytest.mark.parametrize("kind", ["none", "public", "private"])
@pytest.mark.parametrize("players", [2, 3])
def test_the_master_over_every_joint_plan_is_the_oracles_lp(kind, players):
    """Dualized best deviations (value variables, one row per trigger, infoset and action) give
    the optimum of the oracle, which writes every pure deviation out: welfare and one player."""
    for seed in range(3):
        game = random_game(seed, players=players, chance=kind)
        bf = BruteForce(game)
        for concept in CONCEPTS:
            for objective, weights in (("welfare", np.ones(players)), (0, np.eye(players)[0])):
                assert full_master_optimum(game, concept, weights) == pytest.approx(
                    bf.optimum(concept, objective), abs=1e-7
                ), (seed, concept, objective)


def test_a_wrong_concepts_rows_change_the_optimum():
    """The concepts' rows are not interchangeable: on random games with private chance, the
    EFCE rows built for EFCCE (and the EFCCE rows for NFCCE) give another optimum on some."""
    moved = {"efcce": 0, "nfcce": 0}
    for seed in range(6):
        game = random_game(seed, players=2 + seed % 2, chance="private")
        bf = BruteForce(game)
        weights = np.ones(game.num_players)
        moved["efcce"] += abs(full_master_optimum(game, "efce", weights) - bf.optimum("efcce")) > 1e-6
        moved["nfcce"] += abs(full_master_optimum(game, "efcce", weights) - bf.optimum("nfcce")) > 1e-6
    assert moved["efcce"] >= 1 and moved["nfcce"] >= 1


@pytest.mark.parametrize("concept", CONCEPTS)
def test_rows_are_counted_from_the_tree(concept):
    for game in (games.kuhn(3, 3), games.goofspiel(players=3, ranks=2, prizes="random"), games.farina_fig2()):
        incentives = Incentives(game, concept)
        assert count_incentive_rows(game, concept) == (
            incentives.num_triggers,
            incentives.num_values,
            incentives.num_deviation_rows,
        )


def test_the_triggers_of_each_concept():
    """Kuhn, player 1 (two cards' worth of infosets): EFCE has a trigger per sequence, firing on
    it; EFCCE one per infoset, firing on its parent sequence; NFCCE one, always firing, whose
    value variables cover every infoset."""
    game = games.kuhn(2, 3)
    space = game.sequences(0)
    efce = player_incentives(game, 0, "efce")
    assert list(efce.trigger_fire) == list(range(1, space.num_sequences))
    assert list(efce.trigger_root) == list(space.seq_infoset[1:])
    efcce = player_incentives(game, 0, "efcce")
    assert list(efcce.trigger_fire) == list(space.infoset_parent_seq)
    nfcce = player_incentives(game, 0, "nfcce")
    assert list(nfcce.trigger_fire) == [0] and list(nfcce.trigger_root) == [-1]
    assert sorted(nfcce.value_infoset) == list(range(space.num_infosets))
    # each value variable's rows are its infoset's actions, and the following rows of an EFCE
    # trigger are the sequences at or below it
    for pl in (efce, efcce, nfcce):
        k = space.infoset_num_actions[pl.value_infoset[pl.row_value]]
        assert np.all(space.seq_infoset[pl.row_sequence] == pl.value_infoset[pl.row_value])
        assert pl.num_rows == int(space.infoset_num_actions[pl.value_infoset].sum()) and k.min() >= 1
    below = space.is_descendant(efce.row_sequence, efce.trigger_fire[efce.row_trigger])
    assert np.array_equal(efce.row_follows, below)
