"""Game.arrays_on_disk: a game's own arrays as read-only maps of files during a block, the same
values, read back afterwards however the block ends, and arrays others hold left alone."""

import os
import tempfile

import numpy as np
import pytest

from efce import games
from efce.games.resources import memory


@pytest.fixture
def park_everything(monkeypatch, tmp_path):
    """Park even a tiny game's arrays, in ``tmp_path``."""
    monkeypatch.setattr(memory, "PARK_MIN_BYTES", 0)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _on_disk(array: np.ndarray) -> bool:
    return isinstance(array.base, np.memmap)


def _snapshot(game):
    """Copies of the game's node arrays, a cached array tuple and its labels' tables."""
    return {
        "node arrays": [getattr(game, k).copy() for k in ("parent", "action", "infoset", "payoffs")],
        "connected_infosets": [a.copy() for a in game.connected_infosets],
        "labels": [a.copy() for a in vars(game.labels).values() if isinstance(a, np.ndarray)],
    }


def _current(game):
    return {
        "node arrays": [getattr(game, k) for k in ("parent", "action", "infoset", "payoffs")],
        "connected_infosets": list(game.connected_infosets),
        "labels": [a for a in vars(game.labels).values() if isinstance(a, np.ndarray)],
    }


def _equal(a, b):
    return all(len(a[k]) == len(b[k]) and all(map(np.array_equal, a[k], b[k])) for k in a)


def test_inside_the_block_the_arrays_are_maps_with_the_same_values(park_everything):
    game = games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2)
    before = _snapshot(game)
    assert before["labels"], "Battleship's labels hold tables: the test covers them"
    with game.arrays_on_disk() as on_disk:
        assert on_disk and len(os.listdir(park_everything)) == 1
        inside = _current(game)
        assert all(_on_disk(a) for arrays in inside.values() for a in arrays)
        assert _equal(inside, before)
        assert not game.parent.flags.writeable
        assert isinstance(game.connected_infosets, tuple)
    after = _current(game)
    assert not any(_on_disk(a) for arrays in after.values() for a in arrays)
    assert _equal(after, before)
    assert not game.parent.flags.writeable and not game.payoffs.flags.writeable  # still frozen
    assert not os.listdir(park_everything)


def test_the_arrays_come_back_when_the_block_raises(park_everything):
    game = games.sheriff(max_bribe=1, max_items=1, rounds=1)
    before = _snapshot(game)
    with pytest.raises(KeyboardInterrupt), game.arrays_on_disk():
        raise KeyboardInterrupt
    assert _equal(_current(game), before) and not _on_disk(game.parent)
    assert not os.listdir(park_everything)


def test_an_array_something_else_holds_stays_in_memory(park_everything):
    game = games.kuhn()
    payoffs, view_of_action = game.payoffs, game.action[1:]
    with game.arrays_on_disk():
        assert game.payoffs is payoffs  # parking it would free nothing
        assert np.shares_memory(game.action, view_of_action)
        assert _on_disk(game.parent)
    assert game.payoffs is payoffs and np.shares_memory(game.action, view_of_action)


def test_small_arrays_stay_where_they_are(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    game = games.kuhn()  # far below PARK_MIN_BYTES
    parent = game.parent
    with game.arrays_on_disk() as on_disk:
        assert not on_disk and game.parent is parent and not os.listdir(tmp_path)
    assert game.parent is parent


def test_a_game_parks_again_after_its_arrays_came_back(park_everything):
    # The welfare bisection solves the same game many times: every solve parks it.
    game = games.sheriff(max_bribe=1, max_items=1, rounds=1)
    before = _snapshot(game)
    for _ in range(3):
        with game.arrays_on_disk() as on_disk:
            assert on_disk and _on_disk(game.parent) and _on_disk(game.connected_infosets[0])
        assert game.parent.base is None and _equal(_current(game), before)
