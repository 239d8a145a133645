"""``efce.solve(..., progress=f)`` calls ``f`` with every row of the result's trace, in order, for
every method: as each row is recorded, or at the end for a method whose one row is its solver's
answer (an LP's)."""

import pytest

from efce import games
from efce.experiments.solve import METHODS, solve

#: A game of each method's kind, and a short budget.
KIND = {
    "icfr": "chance",
    "cfr-s": "chance",
    "trigger": "chance",
    "coarse-trigger": "chance",
    "cfr": "chance",
    "cfr+": "chance",
}
BUDGET = {"iterations": 30}


@pytest.mark.parametrize("method", list(METHODS))
def test_progress_is_called_with_every_trace_row_in_order(method):
    game = games.kuhn() if KIND.get(method) == "chance" else games.farina_fig2()
    options = {k: v for k, v in BUDGET.items() if k in METHODS[method].defaults}
    seen = []
    result = solve(game, method, progress=seen.append, **options)
    assert result.trace, result.status
    assert seen == result.trace


def test_the_welfare_bisection_reports_every_checkpoint_of_every_step():
    seen = []
    game = "sheriff:max_bribe=1,max_items=1,rounds=1"
    result = solve(game, "rm", objective="welfare", iterations=200, progress=seen.append)
    assert seen == result.trace and len(seen) > result.info["bisection_steps"] > 1
