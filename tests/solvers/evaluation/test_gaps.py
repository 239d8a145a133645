"""The two-player EFCE gap of a correlation plan against brute force over pure deviations."""

import itertools

import numpy as np
import pytest

from efce import games
from efce.games.payoffs import terminal_map
from efce.games.relevant import relevant_pairs
from efce.polytopes import correlation_plan
from efce.solvers.evaluation.gaps import EFCEGapEvaluator


def _subtree_infosets(space, root):
    out, frontier = [root], [root]
    while frontier:
        inf = frontier.pop()
        seqs = range(
            space.infoset_first_seq[inf], space.infoset_first_seq[inf] + space.infoset_num_actions[inf]
        )
        kids = [j for j in range(space.num_infosets) if space.infoset_parent_seq[j] in seqs]
        out += kids
        frontier += kids
    return out


def _brute_force_gains(game, xi):
    """Every trigger (i, σ̂) against every pure plan of the subtree of Î, summed over terminals."""
    pairs = relevant_pairs(game)
    tm = terminal_map(game)
    weighted = tm.weighted_payoffs()
    lookup = {(int(a), int(b)): k for k, (a, b) in enumerate(zip(pairs.sigma1, pairs.sigma2, strict=True))}
    gains = []
    for i in (0, 1):
        space = game.sequences(i)
        g = np.full(space.num_sequences, np.nan)
        for trig in range(space.num_infosets):
            sub = _subtree_infosets(space, trig)
            choices = [range(space.infoset_num_actions[j]) for j in sub]
            for a_hat in range(space.infoset_num_actions[trig]):
                s_hat = space.infoset_first_seq[trig] + a_hat
                follow = 0.0
                for z in range(game.num_terminals):
                    if space.is_descendant([tm.sequences[z, i]], [s_hat])[0]:
                        follow += weighted[z, i] * xi[lookup[(tm.sequences[z, 0], tm.sequences[z, 1])]]
                best = -np.inf
                for plan in itertools.product(*choices):
                    chosen = {space.infoset_first_seq[j] + a for j, a in zip(sub, plan, strict=True)}
                    dev = 0.0
                    for z in range(game.num_terminals):
                        s = tm.sequences[z, i]
                        # z in Z(Î) and consistent with the plan: every own sequence from Î down chosen.
                        chain, ok, below = int(s), True, False
                        while chain != 0:
                            inf = space.seq_infoset[chain]
                            if inf in sub:
                                ok &= chain in chosen
                            if inf == trig:
                                below = True
                            chain = int(space.seq_parent[chain])
                        if below and ok:
                            other = tm.sequences[z, 1 - i]
                            key = (s_hat, other) if i == 0 else (other, s_hat)
                            dev += weighted[z, i] * xi[lookup[key]]
                    best = max(best, dev)
                g[s_hat] = best - follow
        gains.append(g)
    return gains


GAMES = [
    games.farina_fig1,
    games.farina_fig2,
    lambda: games.sheriff(max_bribe=1, max_items=1, rounds=1),
    lambda: games.goofspiel(2, 2, prizes="sorted"),
    lambda: games.battleship(rows=1, cols=2, ship_sizes=[1], shots=1),
]


@pytest.mark.parametrize("make", GAMES)
def test_trigger_gains_match_brute_force(make):
    game = make()
    chain = correlation_plan(game)
    evaluator = EFCEGapEvaluator(game)
    rng = np.random.default_rng(7)
    for vertex in (False, True, False):
        xi = chain.to_natural(chain.random_point(rng, vertex=vertex), len(evaluator.pairs))
        report = evaluator(xi)
        expected = _brute_force_gains(game, xi)
        for i in (0, 1):
            np.testing.assert_allclose(report.gains[i], expected[i], atol=1e-12)
        best = max(np.nanmax(g) for g in expected)
        assert report.gap == pytest.approx(max(0.0, best), abs=1e-12)


def test_utilities_of_a_product_plan_match_sequence_form():
    game = games.sheriff(max_bribe=1, max_items=2, rounds=2)
    pairs = relevant_pairs(game)
    rng = np.random.default_rng(3)
    from efce.games.payoffs import sequence_form_payoffs
    from efce.polytopes import sequence_form

    x = [sequence_form(game.sequences(p)).random_point(rng) for p in (0, 1)]
    xi = x[0][pairs.sigma1] * x[1][pairs.sigma2]  # independent play is a correlation plan
    a1, a2 = sequence_form_payoffs(game)
    util = EFCEGapEvaluator(game, pairs).utilities(xi)
    np.testing.assert_allclose(util, [x[0] @ a1 @ x[1], x[0] @ a2 @ x[1]], atol=1e-12)


def test_rejects_wrong_shape():
    game = games.farina_fig2()
    with pytest.raises(ValueError, match="relevant pairs"):
        EFCEGapEvaluator(game)(np.zeros(3))


def test_an_evaluator_built_from_entry_order_tables_alone_reads_only_entry_order():
    from efce.solvers.methods.efce import build_efce_model

    game = games.farina_fig2()
    model = build_efce_model(game)
    evaluator = EFCEGapEvaluator(game, tables=model.tables)  # the solver loop's evaluator
    chain = model.xi_chain
    point = chain.random_point(np.random.default_rng(5))
    xi = chain.to_natural(point, len(model.pairs))
    assert evaluator.evaluate(point).gap == pytest.approx(EFCEGapEvaluator(game)(xi).gap, abs=1e-12)
    with pytest.raises(ValueError, match="reads ξ in Ξ's chain-entry order only"):
        evaluator(xi)
