"""One spelling per game (:func:`efce.games.spec.canonical_spec`): specs of one game written in
other cases, orders, with defaults spelled out or left out, have one canonical spec, which
builds the same game; specs of different games do not share one."""

import pytest

from efce.games.spec import canonical_spec, make_game

#: Groups of specs naming one game each (small enough to build).
SAME_GAME = [
    ["farina-fig2", "FARINA-FIG2", " Farina-Fig2"],
    ["kuhn", "kuhn:players=2,ranks=3", "kuhn:ranks=3,players=2", "KUHN:players=2", "kuhn:ranks=none"],
    ["kuhn:players=3", "kuhn:players=3,ranks=4"],
    [
        "leduc:ranks=2",
        "leduc:ranks=2,suits=2,players=2",
        "leduc:ranks=2,raise_sizes=[2,4.0],raises_per_player=1",
    ],
    [
        "battleship:rows=2,cols=2,shots=2",
        "battleship:rows=2,cols=2,shots=2,ship_sizes=1,ship_values=[1.0]",
        "battleship:shots=2,cols=2,rows=2,loss_multiplier=2,ship_sizes=[1]",
    ],
    [
        "sheriff:max_bribe=1,max_items=1,rounds=1",
        "sheriff:rounds=1,max_items=1,max_bribe=1,item_value=1,item_penalty=2e0,sheriff_penalty=3.0",
    ],
    ["goofspiel:ranks=2", "goofspiel:ranks=2,limited_info=TRUE,prizes=random,players=2"],
]


@pytest.mark.parametrize("group", SAME_GAME, ids=[g[0] for g in SAME_GAME])
def test_specs_of_one_game_have_one_canonical_spec_which_builds_that_game(group):
    canonical = {canonical_spec(spec) for spec in group}
    assert len(canonical) == 1
    (spelled,) = canonical
    assert canonical_spec(spelled) == spelled  # a fixed point
    # Cross-check by building: every spec and the canonical one build games of one name.
    names = {make_game(spec).name for spec in [*group, spelled]}
    assert len(names) == 1


def test_specs_of_different_games_have_different_canonical_specs():
    firsts = [canonical_spec(group[0]) for group in SAME_GAME]
    assert len(set(firsts)) == len(firsts)
    assert canonical_spec("sheriff:item_value=1.0000001") != canonical_spec("sheriff:item_value=1.0000002")
    assert canonical_spec("kuhn:players=2,ranks=4") != canonical_spec("kuhn")


def test_a_file_path_is_normalized_not_read():
    assert canonical_spec("./games/../g.efg") == canonical_spec("g.efg") == "g.efg"
