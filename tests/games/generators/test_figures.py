"""The example games of Figures 1 and 2 of Farina, Ling, Fang, Sandholm (2019)."""

from __future__ import annotations

import numpy as np
import pytest

from efce.games.game import TERMINAL
from efce.games.generators.figures import farina_fig1, farina_fig2


def labelled_sequences(game, player):
    """Sequence index -> action label, checking labels equal sequence names where numeric."""
    space = game.sequences(player)
    names = {0: "∅"}
    for infoset in range(space.num_infosets):
        for a, label in enumerate(game.action_labels(player, infoset)):
            names[int(space.infoset_first_seq[infoset]) + a] = label
    return names


def test_fig1_player1_sequences_numbered_like_the_figure():
    game = farina_fig1()
    space = game.sequences(0)
    assert [game.infoset_label(0, i) for i in range(space.num_infosets)] == ["A", "B", "C", "D"]
    assert space.num_sequences == 10
    assert space.infoset_first_seq.tolist() == [1, 3, 5, 7]
    assert space.infoset_num_actions.tolist() == [2, 2, 2, 3]
    assert space.infoset_parent_seq.tolist() == [0, 1, 1, 2]  # B, C below 1; D below 2
    names = labelled_sequences(game, 0)
    assert all(names[s] == str(s) for s in range(1, 10))


def test_fig1_structure():
    game = farina_fig1()
    assert game.num_players == 2 and not game.has_chance
    # D has two nodes, A, B and C one each.
    indptr, _ = game.infoset_nodes(0)
    assert np.diff(indptr).tolist() == [1, 1, 1, 2]
    p2 = game.sequences(1)
    assert [game.infoset_label(1, i) for i in range(p2.num_infosets)] == ["X", "Y"]
    assert labelled_sequences(game, 1) == {0: "∅", 1: "x1", 2: "x2", 3: "y1", 4: "y2"}
    assert game.num_terminals == 10
    assert not game.is_zero_sum and np.any(game.payoffs != 0)
    assert np.array_equal(game.payoffs, np.round(game.payoffs))


def _play(game, actions):
    v = 0
    for a in actions:
        v = int(game.first_child[v] + a)
    return v


def test_fig1_paths():
    game = farina_fig1()
    # 1, x1 -> B; 1, x2 -> C; 2, y1/y2 -> D
    assert game.infoset_label(0, int(game.infoset[_play(game, [0, 0])])) == "B"
    assert game.infoset_label(0, int(game.infoset[_play(game, [0, 1])])) == "C"
    assert game.infoset_label(0, int(game.infoset[_play(game, [1, 0])])) == "D"
    assert game.infoset_label(0, int(game.infoset[_play(game, [1, 1])])) == "D"
    v = _play(game, [1, 1, 1])  # 2, y2, 8
    assert game.player[v] == TERMINAL
    assert game.payoffs[game.terminal_index[v]].tolist() == [2.0, 2.0]


def test_fig2_structure_and_numbering():
    game = farina_fig2()
    assert game.num_players == 2 and not game.has_chance
    s1, s2 = game.sequences(0), game.sequences(1)
    assert [game.infoset_label(0, i) for i in range(s1.num_infosets)] == ["A"]
    assert [game.infoset_label(1, i) for i in range(s2.num_infosets)] == ["B", "C"]
    assert labelled_sequences(game, 0) == {0: "∅", 1: "1", 2: "2"}
    assert labelled_sequences(game, 1) == {0: "∅", 1: "1", 2: "2", 3: "3", 4: "4"}
    assert s2.infoset_parent_seq.tolist() == [0, 0]
    # B is reached after Player 1's sequence 1, C after 2.
    assert game.infoset_label(1, int(game.infoset[_play(game, [0])])) == "B"
    assert game.infoset_label(1, int(game.infoset[_play(game, [1])])) == "C"
    assert not game.is_zero_sum and np.any(game.payoffs != 0)
    assert game.payoffs[game.terminal_index[_play(game, [1, 1])]].tolist() == [1.0, 2.0]


def test_fig2_all_sequence_pairs_relevant():
    relevant = pytest.importorskip("efce.games.relevant")
    assert relevant.count_relevant_pairs(farina_fig2()) == 3 * 5
