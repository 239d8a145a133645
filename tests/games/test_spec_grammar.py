"""The spec grammar is ASCII-only and strict, and every refusal names the parameter and the
expected form (round 3 of the bad-input probe)."""

from __future__ import annotations

import pytest

from efce.games import GameError
from efce.games.spec import NUMBER_LIMIT, estimate_spec, parse_spec


@pytest.mark.parametrize(
    "spec, fragments",
    [
        # Python's int()/float() accept these; the spec grammar does not.
        ("kuhn:players=1_0", ["parameter 'players'", "digits 0-9", "got '1_0'"]),
        ("kuhn:players=\u0663", ["parameter 'players'", "digits 0-9"]),  # Arabic-Indic 3
        ("kuhn:players=\uff13", ["parameter 'players'", "digits 0-9"]),  # fullwidth 3
        ("sheriff:item_value=1_0", ["parameter 'item_value'", "decimal number"]),
        ("sheriff:item_value=\uff11", ["parameter 'item_value'", "decimal number"]),
        ("sheriff:item_value=infinity", ["parameter 'item_value'", "decimal number"]),
        ("battleship:ship_sizes=[1,\u0662]", ["parameter 'ship_sizes'", "digits 0-9", "in '[1,"]),
        ("battleship:ship_sizes=[1,,2]", ["parameter 'ship_sizes'", "an empty item in '[1,,2]'"]),
        ("battleship:ship_sizes=[[1]]", ["parameter 'ship_sizes'", "written [a,b,...]"]),
        ("battleship:ship_sizes=1]", ["parameter 'ship_sizes'", "written [a,b,...]"]),
        ("leduc:raise_sizes=[2,4", ["parameter 'raise_sizes'", "written [a,b,...]"]),
        # Values whose payoffs would overflow are refused naming the parameter, not a payoff.
        ("sheriff:item_value=1e300", ["parameter 'item_value'", "from 0 to 1e+12", "got '1e300'"]),
        ("battleship:loss_multiplier=-1e13", ["parameter 'loss_multiplier'", "from -1e+12 to 1e+12"]),
        ("goofspiel:limited_info=yes", ["parameter 'limited_info'", "true or false"]),
    ],
)
def test_lax_values_are_refused_naming_parameter_and_form(spec, fragments):
    with pytest.raises(GameError) as info:
        parse_spec(spec)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


@pytest.mark.parametrize(
    "spec, key, value",
    [
        ("kuhn:players=+3", "players", 3),
        ("kuhn:players= 3 ", "players", 3),
        ("sheriff:item_value=.5", "item_value", 0.5),
        ("sheriff:item_value=1e-3", "item_value", 1e-3),
        ("sheriff:item_value=2.", "item_value", 2.0),
        ("battleship:loss_multiplier=-2.5", "loss_multiplier", -2.5),
        ("leduc:raise_sizes=[ 2 , 4 ]", "raise_sizes", [2.0, 4.0]),
    ],
)
def test_plain_ascii_values_still_parse(spec, key, value):
    assert parse_spec(spec)[1][key] == value


def test_number_limit_keeps_payoffs_buildable():
    # The largest allowed values build a game (its payoffs stay under the 1e100 limit).
    from efce.games.spec import make_game

    limit = f"{NUMBER_LIMIT:g}"
    game = make_game(
        f"sheriff:max_bribe=1,max_items=1,rounds=1,item_value={limit},"
        f"item_penalty={limit},sheriff_penalty={limit}"
    )
    assert game.num_terminals > 0
    assert estimate_spec("kuhn:players=+3") is not None
