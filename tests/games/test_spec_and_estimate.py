"""Spec strings parsed by declared type and range; size estimates checked before building."""

from __future__ import annotations

import time

import pytest

from efce import games
from efce.games import GameError
from efce.games.resources.estimate import format_count
from efce.games.resources.memory import MemoryBudgetExceeded
from efce.games.spec import PARAMETERS, estimate_size, estimate_spec, make_game, parse_spec


def test_values_are_parsed_by_declared_type():
    assert parse_spec("kuhn:players=3,ranks=none") == ("kuhn", {"players": 3, "ranks": None})
    assert parse_spec("goofspiel:prizes=sorted,limited_info=FALSE")[1] == {
        "prizes": "sorted",
        "limited_info": False,
    }
    assert parse_spec("leduc:raise_sizes=[1, 2.5]")[1] == {"raise_sizes": [1.0, 2.5]}
    assert parse_spec("battleship:ship_values=3")[1] == {"ship_values": [3.0]}
    assert parse_spec("sheriff:item_value=2")[1] == {"item_value": 2.0}


@pytest.mark.parametrize(
    "spec, fragments",
    [
        ("kuhn:ranks=2.5", ["game 'kuhn'", "parameter 'ranks'", "must be an integer", "got '2.5'"]),
        ("kuhn:players=2.0", ["parameter 'players'", "an integer, from 2 to 1000"]),
        ("kuhn:players=1", ["parameter 'players'", "from 2 to 1000", "got '1'"]),
        ("kuhn:ranks=true", ["parameter 'ranks'", "an integer"]),
        ("goofspiel:ranks=63", ["game 'goofspiel'", "from 1 to 62"]),
        ("goofspiel:prizes=3", ["parameter 'prizes'", "one of random, sorted"]),
        ("goofspiel:limited_info=1", ["parameter 'limited_info'", "true or false"]),
        ("leduc:raise_sizes=[1]", ["parameter 'raise_sizes'", "a list of 2 numbers", "got 1 value"]),
        ("leduc:raise_sizes=[1,nan]", ["parameter 'raise_sizes'", "got 'nan'"]),
        ("leduc:raise_sizes=[1,-2]", ["each from 0 to 1e+12", "got '-2' in '[1,-2]'"]),
        ("battleship:ship_sizes=[1.5]", ["game 'battleship'", "a list of integers", "got '1.5'"]),
        ("battleship:ship_sizes=[]", ["parameter 'ship_sizes'", "empty list"]),
        ("battleship:rows=[2]", ["parameter 'rows'", "got the list '[2]'"]),
        ("battleship:loss_multiplier=inf", ["parameter 'loss_multiplier'", "a number", "got 'inf'"]),
        ("sheriff:rounds=0", ["game 'sheriff'", "parameter 'rounds'", "from 1 to 1000"]),
        ("sheriff:item_value=-1", ["parameter 'item_value'", "a number, from 0 to 1e+12"]),
        ("farina-fig1:players=2", ["unknown parameter players", "valid parameters: none"]),
    ],
)
def test_bad_values_name_game_parameter_and_expected_type(spec, fragments):
    with pytest.raises(GameError) as info:
        make_game(spec)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_every_declared_parameter_exists_in_its_generator():
    import inspect

    from efce.games.spec import _generator

    for name, declared in PARAMETERS.items():
        assert list(declared) == list(inspect.signature(_generator(name)).parameters), name


def test_kuhn_generator_refuses_non_integers():
    with pytest.raises(GameError, match="ranks must be an integer"):
        games.kuhn(2, 2.5)


# (spec, generator call): estimates equal the built sizes exactly.
EXACT = [
    ("kuhn", lambda: games.kuhn()),
    ("kuhn:players=3,ranks=5", lambda: games.kuhn(3, 5)),
    ("kuhn:players=4", lambda: games.kuhn(4)),
    ("goofspiel:ranks=4", lambda: games.goofspiel(ranks=4)),
    ("goofspiel:players=3,ranks=3,prizes=sorted", lambda: games.goofspiel(3, 3, "sorted")),
    ("leduc", lambda: games.leduc()),
    ("leduc:players=3,ranks=4,max_raises=1", lambda: games.leduc(3, 4, max_raises=1)),
    (
        "leduc:ranks=4,suits=1,max_raises=3,raises_per_player=none",
        lambda: games.leduc(2, 4, 1, max_raises=3, raises_per_player=None),
    ),
    ("sheriff:max_bribe=2,max_items=2,rounds=2", lambda: games.sheriff(2, 2, 2)),
    ("battleship:rows=2,cols=3,ship_sizes=1,shots=3", lambda: games.battleship(2, 3, [1], shots=3)),
    ("battleship:rows=2,cols=2,ship_sizes=2,shots=2", lambda: games.battleship(2, 2, [2], shots=2)),
    ("farina-fig1", lambda: games.farina_fig1()),
    ("farina-fig2", lambda: games.farina_fig2()),
]


@pytest.mark.parametrize("spec, build", EXACT, ids=[s for s, _ in EXACT])
def test_estimates_are_exact_where_claimed(spec, build):
    estimate = estimate_spec(spec)
    game = build()
    assert estimate.exact
    assert estimate.nodes == game.num_nodes
    assert estimate.terminals == game.num_terminals


def test_battleship_with_several_ships_is_counted_exactly():
    # The legal placement prefixes are counted by a DP (tests/games/test_estimate_round3.py).
    estimate = estimate_spec("battleship:rows=3,cols=2,ship_sizes=[2,1],shots=2")
    game = games.battleship(3, 2, [2, 1], shots=2)
    assert estimate.exact and not estimate.lower_bound
    assert game.num_nodes == estimate.nodes
    assert estimate.describe().startswith("about")


@pytest.mark.parametrize(
    "spec",
    [
        "kuhn:players=100",
        "goofspiel:ranks=13",
        "leduc:players=12",
        "sheriff:rounds=1000",
        "kuhn:players=1000",
        "battleship:rows=7,cols=9,ship_sizes=[2,3,3,4,5],shots=63",
    ],
)
def test_oversized_games_are_refused_quickly_with_the_estimate(spec):
    started = time.perf_counter()
    with pytest.raises(MemoryBudgetExceeded) as info:
        make_game(spec)
    assert time.perf_counter() - started < 5
    message = str(info.value)
    assert spec in message and "nodes" in message and "GiB" in message and "Not building" in message


def test_budget_argument_refuses_a_small_game_with_its_exact_size():
    with pytest.raises(MemoryBudgetExceeded, match=r"about 55 nodes"):
        make_game("kuhn", memory_budget=1000)
    assert make_game("kuhn", memory_budget=10**9).num_nodes == 55


def test_format_count_handles_integers_beyond_float_range():
    assert format_count(1_234_567) == "1,234,567"
    assert format_count(10**400 * 3) == "3.00e+400"
    assert format_count(2**10**6) == "10^301029"  # 2^1e6 = 9.9e301029
    assert estimate_size("kuhn", {"players": 300, "ranks": None}).nodes > 10**308


@pytest.mark.parametrize(
    "build",
    [
        lambda: games.kuhn(100),
        lambda: games.kuhn(10**6),
        lambda: games.goofspiel(ranks=13),
        lambda: games.leduc(players=12),
        lambda: games.leduc(players=100, ranks=1, suits=101),
        lambda: games.sheriff(rounds=10**6),
        lambda: games.battleship(7, 9, [2, 3, 3, 4, 5], shots=63),
    ],
)
def test_generators_called_directly_check_their_size_first(build):
    started = time.perf_counter()
    with pytest.raises(MemoryBudgetExceeded, match="nodes.*too large"):
        build()
    assert time.perf_counter() - started < 5


def test_make_game_budget_replaces_the_generators_own_check(monkeypatch):

    monkeypatch.setattr(games.resources.memory, "default_memory_budget", lambda: 1000)
    with pytest.raises(MemoryBudgetExceeded, match=r"game kuhn:players=2,ranks=3 \(about 55 nodes\)"):
        games.kuhn()
    assert make_game("kuhn", memory_budget=10**9).num_nodes == 55
    with pytest.raises(MemoryBudgetExceeded):
        make_game("kuhn")


def test_leduc_without_raises_for_many_players_is_small_and_built():
    game = games.leduc(players=70, ranks=1, suits=71, max_raises=0)
    assert game.num_players == 70 and game.num_terminals == 1


def test_files_have_no_estimate(tmp_path):
    path = tmp_path / "k.efg"
    games.save(games.kuhn(), path)
    assert estimate_spec(str(path)) is None
