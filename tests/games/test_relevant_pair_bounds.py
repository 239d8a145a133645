"""Bounds on the relevant pairs from the tree's structure alone, and what they buy: a deep,
narrow ``.efg`` file with ~10^8 pairs is counted or refused in seconds, not built for a minute."""

import time

import pytest

from efce.errors import MemoryBudgetExceeded
from efce.games.formats.efg import load, loads
from efce.games.relevant import count_relevant_pairs, relevant_pair_bounds
from efce.games.spec import make_game
from tests.games.deep_chain import deep_chain
from tests.paths import GAME_DATA


@pytest.mark.parametrize(
    "spec",
    [
        "farina-fig1",
        "farina-fig2",
        "kuhn",
        "leduc",
        "goofspiel:ranks=3",
        "sheriff",
        "battleship:rows=2,cols=2,ship_sizes=[1],shots=2",
        "battleship:rows=3,cols=2,ship_sizes=[1],shots=3",
    ],
)
def test_the_bounds_hold_the_exact_count(spec):
    game = make_game(spec)
    low, high = relevant_pair_bounds(game)
    assert low <= count_relevant_pairs(game) <= high


def test_the_bounds_hold_on_files_with_chance_and_repeated_histories():
    for path in sorted(GAME_DATA.glob("*.efg")):
        game = load(path)
        if game.num_players == 2:
            low, high = relevant_pair_bounds(game)
            assert low <= count_relevant_pairs(game) <= high, path.name


def test_a_deep_narrow_file_is_counted_in_seconds():
    game = loads(deep_chain(10_000))  # 10^4 levels
    started = time.monotonic()
    assert count_relevant_pairs(game) == 100_020_001  # every pair of the two 10^4 sequences
    assert time.monotonic() - started < 15
    assert relevant_pair_bounds(game)[1] == 100_020_001  # exact on a chain


def test_a_file_whose_pairs_cannot_even_be_counted_is_refused_from_its_bounds():
    game = loads(deep_chain(10_000))
    started = time.monotonic()
    with pytest.raises(MemoryBudgetExceeded, match="at least 50,"):
        count_relevant_pairs(game, memory_budget=10**6)
    assert time.monotonic() - started < 5
    assert "connected_infosets" not in vars(game)  # refused without finding a single pair
