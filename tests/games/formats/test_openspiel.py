"""Conversion of OpenSpiel games (optional dependency: skipped when pyspiel is missing)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from efce import games
from efce.games import CHANCE, GameError
from efce.games.formats import efg
from efce.games.formats.openspiel import from_openspiel


def test_missing_pyspiel_gives_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspiel", None)  # makes `import pyspiel` raise ImportError
    with pytest.raises(GameError) as info:
        from_openspiel("kuhn_poker")
    assert str(info.value) == (
        "from_openspiel needs the optional 'open_spiel' package: pip install open_spiel"
    )


def uniform_play_value(game) -> np.ndarray:
    """Expected payoffs when every player picks uniformly at random."""
    reach = np.ones(game.num_nodes)
    for lo, hi in game.levels[1:]:
        par = game.parent[lo:hi]
        step = np.where(game.player[par] == CHANCE, game.chance_prob[lo:hi], 1.0 / game.num_children[par])
        reach[lo:hi] = reach[par] * step
    t = game.terminal_nodes
    return reach[t] @ game.payoffs[game.terminal_index[t]]


@pytest.mark.parametrize("players", [2, 3])
def test_kuhn_matches_our_generator(players):
    pytest.importorskip("pyspiel")
    g = from_openspiel("kuhn_poker", players=players)
    ours = games.kuhn(players)
    assert g.num_players == players
    for p in range(players):
        assert g.sequences(p).num_infosets == ours.sequences(p).num_infosets
        assert g.sequences(p).num_sequences == ours.sequences(p).num_sequences
    assert g.is_zero_sum
    assert np.allclose(uniform_play_value(g), uniform_play_value(ours))


def test_labels_come_from_openspiel():
    pyspiel = pytest.importorskip("pyspiel")
    g = from_openspiel(pyspiel.load_game("kuhn_poker"))
    assert g.name == "openspiel:kuhn_poker()"
    # The deal of player 1's card is the root chance node.
    assert g.player[0] == CHANCE
    assert g.labels.chance_actions(g, 0) == ["Deal:0", "Deal:1", "Deal:2"]
    assert g.chance_prob[1:4].tolist() == [1 / 3] * 3
    # Player 1's first infosets are her card (information_state_string), actions Pass/Bet.
    assert [g.infoset_label(0, i) for i in range(3)] == ["0", "1", "2"]
    assert g.action_labels(0, 0) == ["Pass", "Bet"]
    assert g.openspiel_actions[0][0] == [0, 1]


def test_leduc_size():
    pytest.importorskip("pyspiel")
    g = from_openspiel("leduc_poker")
    assert [g.sequences(p).num_infosets for p in range(2)] == [468, 468]
    assert g.is_zero_sum


def test_efg_round_trip_of_converted_game():
    pytest.importorskip("pyspiel")
    g = from_openspiel("kuhn_poker")
    h = efg.loads(efg.dumps(g))
    for name in ("parent", "action", "player", "infoset", "chance_prob", "payoffs"):
        assert np.array_equal(getattr(g, name), getattr(h, name)), name
    assert [h.infoset_label(1, i) for i in range(6)] == [g.infoset_label(1, i) for i in range(6)]


def test_unsupported_games_and_arguments():
    pyspiel = pytest.importorskip("pyspiel")
    with pytest.raises(GameError, match="convert_to_turn_based"):
        from_openspiel("matrix_rps")
    turn_based = pyspiel.convert_to_turn_based(pyspiel.load_game("matrix_rps"))
    g = from_openspiel(turn_based)
    assert [g.sequences(p).num_infosets for p in range(2)] == [1, 1]
    with pytest.raises(GameError, match="only be given with a game name"):
        from_openspiel(pyspiel.load_game("kuhn_poker"), players=3)
    with pytest.raises(GameError, match="could not load 'no_such_game'"):
        from_openspiel("no_such_game")
