"""The matrix-free Definition-3 check agrees with the explicit constraint matrix."""

import numpy as np
import pytest

from efce import games
from efce.games.relevant import relevant_pairs
from efce.polytopes import correlation_plan, vsf_constraints
from efce.polytopes.feasibility import FeasibilityCheck
from efce.solvers.backends import available_threads
from efce.solvers.backends.cpu import CPUBackend


@pytest.mark.parametrize(
    "make",
    [
        games.farina_fig1,
        games.farina_fig2,
        lambda: games.sheriff(max_bribe=1, max_items=2, rounds=2),
        lambda: games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2),
    ],
)
def test_matrix_free_check_equals_the_explicit_system(make):
    game = make()
    pairs = relevant_pairs(game)
    chain = correlation_plan(game, pairs)
    explicit = vsf_constraints(game, pairs)
    check = FeasibilityCheck(game, pairs)
    rng = np.random.default_rng(1)
    entry_of_pair = np.empty(len(pairs), dtype=np.int32)
    entry_of_pair[chain.entry_index] = np.arange(len(pairs))
    for trial in range(6):
        x = chain.random_point(rng, vertex=trial % 2 == 1)
        xi = chain.to_natural(x, len(pairs))
        assert check(xi) == pytest.approx(explicit.max_violation(xi), abs=1e-15) and check(xi) <= 1e-12
        # Perturb one pair: the violation is seen, with the same size, through the entry map too.
        bad = xi.copy()
        q = int(rng.integers(len(pairs)))
        bad[q] += 0.01 * (1 + trial) * (-1) ** trial
        expected = explicit.max_violation(bad)
        assert expected > 1e-3
        assert check(bad) == pytest.approx(expected, abs=1e-15)
        # The infosets are split among threads: any count sees the same violation.
        for threads in range(1, available_threads() + 1):
            on_threads = FeasibilityCheck(game, pairs, CPUBackend(threads=threads))
            assert on_threads(bad) == pytest.approx(expected, abs=1e-15)
        x_bad = bad[chain.entry_index]
        assert check(2.0 * x_bad, entry_of_pair, 0.5) == pytest.approx(expected, abs=1e-15)
        # Several plans in one pass: each gets its own violation.
        good = xi[chain.entry_index]
        both = check.violations((good, 2.0 * x_bad), entry_of_pair, (1.0, 0.5))
        assert both == (check(good, entry_of_pair), check(2.0 * x_bad, entry_of_pair, 0.5))
