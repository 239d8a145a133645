"""CFR / CFR+ (solvers/methods/cfr.py) on its own: Kuhn poker's value, exploitability that
shrinks, the variants, and the refusals."""

import numpy as np
import pytest

from efce import games
from efce.errors import GameError
from efce.solvers.methods.cfr import exploitability, solve_cfr


@pytest.mark.parametrize("variant", ["cfr", "cfr+"])
def test_kuhn_value_and_exploitability(variant):
    result = solve_cfr(games.kuhn(), iterations=2000, variant=variant)
    assert result.method == variant
    assert result.info["exploitability"] < 0.02
    assert result.info["value"] == pytest.approx(-1 / 18, abs=0.02)  # the game's value
    gap, utilities = exploitability(games.kuhn(), result.point)
    assert gap == pytest.approx(result.info["exploitability"])
    assert utilities.sum() == pytest.approx(0.0, abs=1e-12)  # zero-sum


def test_exploitability_shrinks_and_target_gap_stops():
    trace = solve_cfr(games.kuhn(), iterations=500, check_every=50).trace
    assert trace[-1].gap < trace[0].gap
    result = solve_cfr(games.kuhn(), iterations=100_000, target_gap=0.05)
    assert result.status == "converged" and result.info["exploitability"] <= 0.05


def test_points_are_sequence_form_strategies():
    game = games.kuhn()
    x1, x2 = solve_cfr(game, iterations=50).point
    for player, x in enumerate((x1, x2)):
        space = game.sequences(player)
        assert x[0] == pytest.approx(1.0) and np.all(x >= -1e-12)
        for infoset in range(space.num_infosets):
            first = space.infoset_first_seq[infoset]
            children = x[first : first + space.infoset_num_actions[infoset]].sum()
            assert children == pytest.approx(x[space.infoset_parent_seq[infoset]])


def test_refusals():
    with pytest.raises(GameError, match="two-player"):
        solve_cfr(games.kuhn(players=3), iterations=1)
    with pytest.raises(GameError, match="unknown CFR variant"):
        solve_cfr(games.kuhn(), iterations=1, variant="dcfr")
