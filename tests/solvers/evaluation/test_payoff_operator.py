"""The lean payoff operator against a straightforward scipy.sparse construction of ``A``."""

import numpy as np
import pytest
import scipy.sparse as sp

from efce import games
from efce.games.arrays import concat_ranges
from efce.games.payoffs import terminal_map
from efce.games.relevant import relevant_pairs
from efce.polytopes.decompose import correlation_plan
from efce.polytopes.triggers import trigger_deviations
from efce.solvers.evaluation.payoff_operator import build_payoff_operator


def reference_payoff_matrix(game, pairs, triggers, tau, entry_of_pair) -> sp.csr_matrix:
    """``A`` entry by entry from the definition (solvers/methods/efce.py docstring), as COO → CSR."""
    tm = terminal_map(game)
    weighted = tm.weighted_payoffs()
    term_pair = pairs.index(tm.sequences[:, 0], tm.sequences[:, 1])
    rows, cols, vals = [], [], []
    for i in (0, 1):
        space = game.sequences(i)
        own = tm.sequences[:, i].astype(np.int64)
        other = tm.sequences[:, 1 - i].astype(np.int64)
        order = np.argsort(own, kind="stable")
        count = np.bincount(own, minlength=space.num_sequences)
        start = np.cumsum(count) - count
        trig_of_entry = triggers.entry_trigger.astype(np.int64)
        entries = np.flatnonzero(
            (trig_of_entry >= 0) & (triggers.trigger_player[np.maximum(trig_of_entry, 0)] == i)
        )
        seq = triggers.entry_sequence[entries].astype(np.int64)
        trig = trig_of_entry[entries]
        s_hat = triggers.trigger_sequence[trig].astype(np.int64)
        reps = count[seq]
        z = order[concat_ranges(start[seq], reps)]
        s_hat_rep = np.repeat(s_hat, reps)
        r1, r2 = (s_hat_rep, other[z]) if i == 0 else (other[z], s_hat_rep)
        rows.append(pairs.index(r1, r2))
        cols.append(np.repeat(entries, reps))
        vals.append(weighted[z, i])
        below = space.is_descendant(seq, s_hat)
        reps_b = np.where(below, reps, 0)
        z_b = order[concat_ranges(start[seq], reps_b)]
        rows.append(term_pair[z_b])
        cols.append(1 + np.repeat(trig, reps_b))
        vals.append(-weighted[z_b, i])
    if tau is not None:
        lam = triggers.num_triggers
        rows += [term_pair, np.array([0])]
        cols += [np.full(len(term_pair), lam), np.array([lam])]
        vals += [-weighted.sum(axis=1), np.array([float(tau)])]
    A = sp.csr_matrix(
        (np.concatenate(vals), (entry_of_pair[np.concatenate(rows)], np.concatenate(cols))),
        shape=(len(pairs), triggers.chain.num_entries),
    )
    A.sum_duplicates()
    return A


GAMES = [
    lambda: games.farina_fig1(),
    lambda: games.sheriff(max_bribe=1, max_items=2, rounds=2),
    lambda: games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2),
    lambda: games.goofspiel(players=2, ranks=3, prizes="sorted"),
]


@pytest.mark.parametrize("make", GAMES)
@pytest.mark.parametrize("tau", [None, 0.3])
def test_operator_equals_the_reference_matrix(make, tau):
    game = make()
    if game.has_chance:
        pytest.skip("Ξ needs a game without chance")
    pairs = relevant_pairs(game)
    chain = correlation_plan(game, pairs)
    triggers = trigger_deviations(game, welfare=tau is not None)
    entry_of_pair = np.empty(len(pairs), dtype=np.int32)
    entry_of_pair[chain.entry_index] = np.arange(len(pairs))
    A = reference_payoff_matrix(game, pairs, triggers, tau, entry_of_pair)
    op = build_payoff_operator(game, pairs, triggers, entry_of_pair, tau)
    rng = np.random.default_rng(0)
    for _ in range(3):
        y = rng.standard_normal(A.shape[1]) * (rng.random(A.shape[1]) < 0.7)
        x = rng.standard_normal(A.shape[0])
        out = np.full(A.shape[0], np.nan)
        np.testing.assert_allclose(op.matvec(y, out), A @ y, rtol=0, atol=1e-12)
        out_t = np.full(A.shape[1], np.nan)
        np.testing.assert_allclose(op.rmatvec(x, out_t, sign=-1.0), -(A.T @ x), rtol=0, atol=1e-12)
    if A.shape[1] <= 2000:
        np.testing.assert_array_equal(op.to_sparse().toarray(), A.toarray())


def _reference_iterates(game, iterations, tau=None):
    """The saddle-point loop with an explicit scipy ``A`` and ``Aᵀ`` (the pre-operator code)."""
    from efce.solvers.regret.engine import ChainEngine
    from efce.solvers.regret.local import RegretMatching

    pairs = relevant_pairs(game)
    chain = correlation_plan(game, pairs)
    triggers = trigger_deviations(game, welfare=tau is not None)
    entry_of_pair = np.empty(len(pairs), dtype=np.int64)
    entry_of_pair[chain.entry_index] = np.arange(len(pairs))
    A = reference_payoff_matrix(game, pairs, triggers, tau, entry_of_pair)
    At = A.T.tocsr()
    rule = RegretMatching(plus=True)
    xi_engine, y_engine = ChainEngine(chain, rule), ChainEngine(triggers.chain, rule)
    sum_x = np.zeros(chain.num_entries)
    weight = 0.0
    y = y_engine.recommend()
    for t in range(1, iterations + 1):
        xi_engine.observe(A @ y)
        x = xi_engine.recommend()
        y_engine.observe(-(At @ x))
        y = y_engine.recommend()
        sum_x += t * x
        weight += t
    return chain.to_natural(sum_x / weight, len(pairs)), x[entry_of_pair]


@pytest.mark.parametrize(
    "make",
    [
        lambda: games.sheriff(max_bribe=1, max_items=2, rounds=2),
        lambda: games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2),
    ],
)
def test_solver_iterates_equal_the_explicit_matrix_loop(make):
    from efce.solvers.methods.efce import solve_efce

    game = make()
    iterations = 300
    for tau in (None, -1.0):
        expected_avg, _ = _reference_iterates(game, iterations, tau)
        result = solve_efce(  # the reference loop's rule, RM+
            game, iterations=iterations, target_gap=None, welfare_threshold=tau, check_every=100, rule="rm+"
        )
        assert result.iterations == iterations
        # Sums run in the explicit matrix's order, so regret matching breaks every tie alike.
        np.testing.assert_array_equal(result.point, expected_avg)
        assert 0 < result.info["iteration_seconds"] <= result.seconds


@pytest.mark.parametrize("make", GAMES[:3])
def test_trigger_chain_levels_and_entry_labels(make):
    """The trigger chain's precomputed levels equal the generic fixed point; the on-demand
    entry labels match the block layout."""
    from efce.polytopes.chain import Chain

    game = make()
    for welfare in (False, True):
        space = trigger_deviations(game, welfare=welfare)
        c = space.chain
        fresh = Chain(c.kind, c.target_ptr, c.source_ptr, c.source, c.entry_index)
        np.testing.assert_array_equal(fresh.level, c.level)
        blocks = space.entry_trigger[space.block_start[0] :]
        assert np.all(np.diff(blocks) >= 0) and len(np.unique(blocks)) <= space.num_triggers
        # Every block starts at its trigger's own sequence... below the trigger infoset.
        for k in range(space.num_triggers - welfare):
            lo = space.block_start[k]
            seq = int(space.entry_sequence[lo])
            player = int(space.trigger_player[k])
            infoset = game.sequences(player).seq_infoset[int(space.trigger_sequence[k])]
            assert game.sequences(player).seq_infoset[seq] == infoset


@pytest.mark.parametrize("make", GAMES[:3])
def test_memory_estimate_counts_what_the_model_builds(make):
    from efce.solvers.methods.efce import build_efce_model, saddle_point_sizes

    game = make()
    sizes = saddle_point_sizes(game)
    model = build_efce_model(game)
    triggers = model.triggers
    assert sizes["relevant_pairs"] == len(model.pairs)
    assert sizes["trigger_entries"] == triggers.chain.num_entries - 1 - triggers.num_triggers
    assert sizes["nonzeros"] == sum(len(t.rows) for t in model.tables.players)
    assert sizes["trigger_terminals"] == sum(len(t.line_weight) for t in model.tables.players)
    assert sizes["nodes"] == game.num_nodes
