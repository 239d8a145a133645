"""Sheriff (Farina et al. 2019c / OpenSpiel ``sheriff``): published sizes, payoffs on
hand-picked paths and on every terminal, and an independent plain-Python count."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from efce.games.game import CHANCE, TERMINAL, GameError
from efce.games.generators.sheriff import sheriff
from tests.games.generators.treewalk import play, sizes


def payoff(game, actions):
    v = play(game, actions)
    assert game.player[v] == TERMINAL
    return game.payoffs[game.terminal_index[v]].tolist()


def test_published_size_default():
    game = sheriff()
    assert sizes(game) == ([2341, 2340], [9365, 4681], 16384)
    assert game.name.startswith("sheriff:max_bribe=3,max_items=3,rounds=4")


@pytest.mark.parametrize(
    "bribe,items,rounds,expected",
    [
        # OpenSpiel sheriff.h size table (its "3 3 1" row misprints Player 2's 9 sequences as 0)
        (3, 5, 2, ([55, 36], [223, 73], 384)),
        (3, 3, 3, ([293, 292], [1173, 585], 2048)),
        (3, 5, 4, ([3511, 2340], [14047, 4681], 24576)),
        (5, 3, 1, ([5, 6], [29, 13], 48)),
        (5, 5, 3, ([943, 942], [5659, 1885], 10368)),
    ],
)
def test_openspiel_size_table(bribe, items, rounds, expected):
    assert sizes(sheriff(max_bribe=bribe, max_items=items, rounds=rounds)) == expected


def test_relevant_pairs_default():
    relevant = pytest.importorskip("efce.games.relevant")
    assert relevant.count_relevant_pairs(sheriff()) == 375_165


def test_two_players_no_chance_general_sum_perfect_recall():
    game = sheriff()
    assert game.num_players == 2 and not game.has_chance and not np.any(game.player == CHANCE)
    assert not game.is_zero_sum
    assert game.player_names == ["Smuggler", "Sheriff"]
    # The Smuggler's root infoset loads 0..3 items; the Sheriff answers no/yes.
    assert game.action_labels(0, 0) == ["load 0", "load 1", "load 2", "load 3"]
    v = play(game, [2, 1])
    assert game.player[v] == 1
    assert game.action_labels(1, int(game.infoset[v])) == ["no inspection", "inspect"]


def test_hand_picked_payoffs_default():
    game = sheriff()
    # items, then (bribe, answer) for 4 rounds; only the last round counts.
    assert payoff(game, [2, 0, 1, 0, 1, 0, 1, 3, 0]) == [2 * 1.0 - 3, 3.0]  # not inspected, bribe 3
    assert payoff(game, [2, 3, 0, 3, 0, 3, 0, 0, 0]) == [2.0, 0.0]  # last bribe 0 is paid
    assert payoff(game, [2, 0, 0, 0, 0, 0, 0, 1, 1]) == [-2 * 2.0, 2 * 2.0]  # caught with 2 items
    assert payoff(game, [0, 0, 0, 0, 0, 0, 0, 2, 1]) == [3.0, -3.0]  # legal cargo inspected
    assert payoff(game, [0, 0, 1, 0, 1, 0, 1, 1, 0]) == [-1.0, 1.0]  # threats, then no
    assert payoff(game, [3, 3, 0, 3, 0, 3, 0, 3, 1]) == [-6.0, 6.0]


def _reference(max_bribe, max_items, rounds, item_value, item_penalty, sheriff_penalty):
    """Plain recursion over OpenSpiel's rules and information-state strings."""
    infosets, seqs, payoffs = set(), [1, 1], {}

    def recurse(items, bribes, answers):
        if items is None:
            player, actions = 0, list(range(max_items + 1))
        elif len(answers) == rounds:
            b, inspect = bribes[-1], answers[-1]
            if inspect and items > 0:
                pay = (-items * item_penalty, items * item_penalty)
            elif inspect:
                pay = (sheriff_penalty, -sheriff_penalty)
            else:
                pay = (items * item_value - b, float(b))
            payoffs[(items, tuple(bribes), tuple(answers))] = pay
            return
        elif len(bribes) == len(answers):
            player, actions = 0, list(range(max_bribe + 1))
        else:
            player, actions = 1, [False, True]
        key = (player, items if player == 0 else "?", tuple(bribes), tuple(answers))
        if key not in infosets:
            infosets.add(key)
            seqs[player] += len(actions)
        for a in actions:
            if items is None:
                recurse(a, bribes, answers)
            elif player == 0:
                recurse(items, bribes + [a], answers)
            else:
                recurse(items, bribes, answers + [a])

    recurse(None, [], [])
    return [sum(1 for k in infosets if k[0] == p) for p in range(2)], seqs, payoffs


def test_independent_enumeration_sizes_and_every_payoff():
    params = dict(max_bribe=2, max_items=2, rounds=2, item_value=1.5, item_penalty=2.5, sheriff_penalty=4.0)
    ref_infosets, ref_seqs, ref_payoffs = _reference(**params)
    game = sheriff(**params)
    assert sizes(game) == (ref_infosets, ref_seqs, len(ref_payoffs))
    checked = 0
    for items in range(3):
        for rounds_play in itertools.product(range(3), range(2), range(3), range(2)):
            b1, a1, b2, a2 = rounds_play
            expected = ref_payoffs[(items, (b1, b2), (bool(a1), bool(a2)))]
            assert payoff(game, [items, b1, a1, b2, a2]) == list(expected)
            checked += 1
    assert checked == game.num_terminals


@pytest.mark.parametrize(
    "kwargs,word",
    [
        (dict(max_bribe=-1), "max_bribe"),
        (dict(max_items=0), "max_items"),
        (dict(rounds=0), "rounds"),
        (dict(rounds=1.5), "rounds"),
        (dict(item_value=-1.0), "item_value"),
        (dict(item_penalty=float("inf")), "item_penalty"),
        (dict(sheriff_penalty=-2), "sheriff_penalty"),
    ],
)
def test_invalid_parameters_raise_game_error(kwargs, word):
    with pytest.raises(GameError, match=word) as err:
        sheriff(**kwargs)
    assert "\n" not in str(err.value)
