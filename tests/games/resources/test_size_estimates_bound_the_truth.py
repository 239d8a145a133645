"""Class 6 of the round-3 probe: size estimates that bound the truth, checked before building."""

from __future__ import annotations

import json

import pytest

from efce.experiments.cli import main
from efce.games import GameError
from efce.games.spec import estimate_size, estimate_spec, make_game
from tests.paths import TWINS

# Multi-ship fleets, where the old product-of-placements bound was off by up to 100x (and
# called fleets that cannot fit "too large").  Each builds in well under a second.
BUILT = [
    "battleship:rows=2,cols=2,ship_sizes=[1,1],shots=2",
    "battleship:rows=2,cols=2,ship_sizes=[2,2],shots=2",
    "battleship:rows=3,cols=3,ship_sizes=[2,1],shots=1",
    "battleship:rows=3,cols=3,ship_sizes=[3,3,3],shots=1",
    "battleship:rows=2,cols=3,ship_sizes=[1,1,1],shots=1",
    "battleship:rows=3,cols=2,ship_sizes=[2,1],shots=2",
    "battleship:rows=2,cols=2,ship_sizes=[1],shots=2",
]


@pytest.mark.parametrize("spec", BUILT)
def test_battleship_estimate_is_the_exact_size(spec):
    estimate = estimate_spec(spec)
    game = make_game(spec)
    # Stated bound: estimate >= truth and within a factor 1 (exact) for these fleets.
    assert estimate.exact
    assert (estimate.nodes, estimate.terminals) == (game.num_nodes, game.num_terminals)


def test_the_many_ships_case_that_was_refused_is_now_sized_right():
    # The old estimate: 2.6 billion nodes, 1 TiB; the truth: 22.7 million nodes.
    estimate = estimate_spec("battleship:rows=2,cols=3,ship_sizes=[1,1,1,1,1],shots=1")
    assert estimate.exact and estimate.nodes == 22_742_323


@pytest.mark.parametrize(
    "spec",
    [
        "battleship:rows=2,cols=2,ship_sizes=[1,1,1,1,1],shots=2",
        "battleship:rows=2,cols=2,ship_sizes=[2,2,2],shots=1",
        "battleship:rows=1,cols=3,ship_sizes=[2,2],shots=1",
    ],
)
def test_a_fleet_that_cannot_fit_is_refused_as_such_before_building(spec, capsys):
    with pytest.raises(GameError, match=r"cannot all fit on a \dx\d board"):
        estimate_spec(spec)
    assert main(["info", spec, "--estimate", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert "cannot all fit" in error and "too large" not in error


def test_huge_fleets_fall_back_to_an_upper_bound_quickly():
    import time

    started = time.perf_counter()
    estimate = estimate_size(
        "battleship",
        {
            "rows": 9,
            "cols": 7,
            "ship_sizes": [2, 3, 4, 5],
            "shots": 2,
            "ship_values": None,
            "loss_multiplier": 2.0,
        },
    )
    assert time.perf_counter() - started < 5
    assert not estimate.exact and not estimate.lower_bound and estimate.nodes > 10**20


def test_efg_relevant_pairs_are_checked_before_they_are_built(monkeypatch, capsys):
    import efce.games.relevant  # noqa: F401
    import efce.games.resources.memory  # noqa: F401 (binds games.resources.memory)
    from efce import games

    path = str(TWINS)
    built = []
    monkeypatch.setattr(games.relevant, "_fill_rows", lambda *a: built.append(1))
    monkeypatch.setattr(games.resources.memory, "default_memory_budget", lambda: 100)
    assert main(["decompose", path, "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert "correlation plan of twins (17 relevant pairs) is too large" in error, error
    from efce.games.formats import efg

    with pytest.raises(games.resources.memory.MemoryBudgetExceeded, match="the 17 relevant pairs of twins"):
        games.relevant.relevant_pairs(efg.load(path))
    assert not built


def test_leduc_with_six_players_is_counted_not_guessed():
    # With 20,000 betting states the count gave up and answered "at least 1,000,000 nodes",
    # under the budget, for a game of 1.6e11 nodes.
    estimate = estimate_spec("leduc:players=6,ranks=2,suits=4")
    assert estimate.exact and estimate.nodes == 164_735_094_001


@pytest.mark.parametrize(
    "spec",
    [
        "leduc:players=3,max_raises=6,raises_per_player=none,ranks=2,suits=2",
        "leduc:players=3,ranks=2,suits=2",
    ],
)
def test_leduc_estimates_are_exact_on_built_games(spec):
    estimate = estimate_spec(spec)
    game = make_game(spec)
    assert estimate.exact and estimate.nodes == game.num_nodes


def test_a_lower_bound_under_the_budget_is_refused(monkeypatch):
    from efce.games.generators import leduc as leduc_module
    from efce.games.resources.memory import MemoryBudgetExceeded

    monkeypatch.setattr(leduc_module, "_LEDUC_STATE_WORK", 150)  # 50 states of 3 players
    estimate = estimate_spec("leduc:players=3")
    assert estimate.lower_bound and estimate.bytes < 2**30
    with pytest.raises(MemoryBudgetExceeded, match="too large to size from its parameters quickly"):
        make_game("leduc:players=3")
