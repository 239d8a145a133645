"""Battleship (Farina et al. 2019c / OpenSpiel ``battleship``): published sizes, rules on
hand-picked paths, and an independent plain-Python enumeration on tiny boards."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from efce.games.game import CHANCE, TERMINAL, GameError
from efce.games.generators.battleship import battleship
from tests.games.generators.treewalk import play, sizes


# --------------------------------------------------------------------------- published sizes
def test_published_size_3x2_one_ship_3_shots():
    game = battleship(rows=3, cols=2, ship_sizes=(1,), shots=3)
    assert sizes(game) == ([3787, 11551], [15343, 46987], 191916)


def test_transposed_board_has_the_same_size():
    game = battleship(rows=2, cols=3, ship_sizes=[1], shots=3)
    assert sizes(game)[:2] == ([3787, 11551], [15343, 46987])


def test_published_size_2x2_ship_of_length_2_3_shots():
    game = battleship(rows=2, cols=2, ship_sizes=[2], shots=3)
    assert sizes(game)[:2] == ([1413, 1873], [2965, 4101])


@pytest.mark.parametrize(
    "rows,cols,ships,shots,expected",
    [
        # OpenSpiel battleship_test.cc, TestGameSizes (sequences, infosets, terminals)
        (2, 2, [1], 2, ([53, 109], [165, 341], 1072)),
        (2, 2, [1], 3, ([341, 397], [741, 917], 2224)),
        (2, 2, [1, 2], 2, ([397, 1189], [1197, 3597], 9216)),
        (2, 2, [1, 2], 3, ([6541, 10405], [13485, 22029], 32256)),
        (2, 3, [1], 2, ([187, 751], [943, 3787], 19116)),
    ],
)
def test_openspiel_size_table(rows, cols, ships, shots, expected):
    assert sizes(battleship(rows=rows, cols=cols, ship_sizes=ships, shots=shots)) == expected


@pytest.mark.slow
def test_published_size_3x2_one_ship_4_shots():
    game = battleship(rows=3, cols=2, ship_sizes=[1], shots=4)
    assert sizes(game) == ([46987, 97951], [144943, 306187], 969516)


@pytest.mark.slow
def test_published_size_3x2_ship_of_length_2_4_shots():
    game = battleship(rows=3, cols=2, ship_sizes=[2], shots=4)
    assert sizes(game)[:2] == ([316520, 734203], [968234, 2267924])


def test_relevant_pairs_3x2_one_ship_3_shots():
    relevant = pytest.importorskip("efce.games.relevant")
    game = battleship(rows=3, cols=2, ship_sizes=[1], shots=3)
    assert relevant.count_relevant_pairs(game) == 3_893_341


# --------------------------------------------------------------------------- structure
def test_two_players_no_chance_general_sum():
    game = battleship(rows=2, cols=2, ship_sizes=[1], shots=2)
    assert game.num_players == 2
    assert not game.has_chance and not np.any(game.player == CHANCE)
    assert not game.is_zero_sum
    assert battleship(rows=2, cols=2, ship_sizes=[1], shots=2, loss_multiplier=1.0).is_zero_sum


def test_perfect_recall_every_infoset_has_one_own_history():
    game = battleship(rows=2, cols=2, ship_sizes=[1, 2], shots=2)
    for p in range(2):
        indptr, nodes = game.infoset_nodes(p)
        seq = game.node_sequences(p)[nodes]
        infoset = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        lo = np.full(len(indptr) - 1, np.iinfo(np.int64).max)
        hi = np.full(len(indptr) - 1, -1)
        np.minimum.at(lo, infoset, seq)
        np.maximum.at(hi, infoset, seq)
        assert np.array_equal(lo, hi)
        assert np.array_equal(lo, game.sequences(p).infoset_parent_seq)


def test_payoffs_are_value_sunk_minus_multiplier_times_value_lost():
    values, lm = [1.0, 2.5], 3.0
    game = battleship(rows=2, cols=2, ship_sizes=[1, 2], ship_values=values, shots=3, loss_multiplier=lm)
    subset_values = {sum(c) for r in range(3) for c in itertools.combinations(values, r)}
    allowed = {(won - lm * lost, lost - lm * won) for won in subset_values for lost in subset_values}
    got = {tuple(row) for row in game.payoffs.tolist()}
    assert got <= allowed
    # 3 shots on 4 cells holding 3 ship cells always sink something, and Player 1 fires her 3
    # shots before Player 2's third: (0, 0) and a Player 2 whitewash (-10.5, 3.5) cannot happen.
    assert (0.0, 0.0) not in got and (-10.5, 3.5) not in got
    assert {(3.5, -10.5), (-2.0, -2.0), (-5.0, -5.0), (0.5, -9.5)} <= got


def test_uniform_play_on_1x3_matches_openspiel():
    # OpenSpiel TestNashEquilibriumInSmallBoard: 1x3 board, one ship, 2 shots, loss multiplier 2;
    # uniform play gives expected utilities -1/9 and -7/9.
    game = battleship(rows=1, cols=3, ship_sizes=[1], shots=2, loss_multiplier=2.0)
    reach = np.ones(game.num_nodes)
    for lo, hi in game.levels[1:]:
        par = game.parent[lo:hi]
        reach[lo:hi] = reach[par] / game.num_children[par]
    expected = reach[game.terminal_nodes] @ game.payoffs[game.terminal_index[game.terminal_nodes]]
    assert np.allclose(expected, [-1 / 9, -7 / 9])


def test_hand_picked_paths_1x3():
    game = battleship(rows=1, cols=3, ship_sizes=[1], shots=2, loss_multiplier=2.0)
    assert game.action_labels(0, 0) == ["place (0,0)", "place (0,1)", "place (0,2)"]
    # P1 ship at (0,0), P2 ship at (0,2); P1 shoots (0,2) and sinks it: game over at once.
    v = play(game, [0, 2, 2])
    assert game.player[v] == TERMINAL
    assert game.payoffs[game.terminal_index[v]].tolist() == [1.0, -2.0]
    # P1 misses at (0,0); P2 shoots (0,0) and sinks P1's ship.
    v = play(game, [0, 2, 0, 0])
    assert game.player[v] == TERMINAL
    assert game.payoffs[game.terminal_index[v]].tolist() == [-2.0, 1.0]
    # Nobody hits: P1 shoots (0,0), (0,1); P2 shoots (0,1), (0,2) -> 0, 0 after 2 shots each.
    v = play(game, [0, 2, 0, 1, 0, 1])
    assert game.player[v] == TERMINAL
    assert game.payoffs[game.terminal_index[v]].tolist() == [0.0, 0.0]
    # Repeated shots are not offered: P1's second shot has 2 choices.
    v = play(game, [0, 2, 0, 1])
    assert game.player[v] == 0 and game.num_children[v] == 2
    assert game.action_labels(0, int(game.infoset[v])) == ["shoot (0,1)", "shoot (0,2)"]


def test_placement_needs_room_for_remaining_ships():
    # OpenSpiel TestTightLayout1: 1x4 board, two ships of length 2: the first ship may not be
    # placed in the middle.
    game = battleship(rows=1, cols=4, ship_sizes=[2, 2], shots=1)
    assert game.action_labels(0, 0) == ["place (0,0) h", "place (0,2) h"]
    v = play(game, [0, 1])  # P1 left, P2 right
    assert game.action_labels(0, int(game.infoset[v])) == ["place (0,2) h"]
    v = play(game, [0, 1, 0])
    assert game.action_labels(1, int(game.infoset[v])) == ["place (0,0) h"]


def test_length_one_ships_have_no_orientation_longer_ships_do():
    assert battleship(rows=2, cols=2, ship_sizes=[1], shots=1).num_children[0] == 4
    game = battleship(rows=2, cols=2, ship_sizes=[2], shots=1)
    assert game.action_labels(0, 0) == ["place (0,0) h", "place (1,0) h", "place (0,0) v", "place (0,1) v"]


def test_infoset_labels_spell_observations():
    game = battleship(rows=1, cols=3, ship_sizes=[1], shots=2)
    v = play(game, [0, 2, 0])  # P1 missed at (0,0): P2 to shoot
    label = game.infoset_label(1, int(game.infoset[v]))
    assert label == "place (0,2)/opp shoot (0,0) miss"


# --------------------------------------------------------------------------- independent count
def _reference_battleship(rows, cols, sizes_, values, shots, lm):
    """Plain recursive implementation of OpenSpiel's rules and information-state strings."""

    def placements(length):
        out = []
        if length <= cols:
            out += [("h", r, c) for r in range(rows) for c in range(cols - length + 1)]
        if 1 < length <= rows:
            out += [("v", r, c) for r in range(rows - length + 1) for c in range(cols)]
        return out

    def cells_of(pl, length):
        d, r, c = pl
        return frozenset((r + i, c) if d == "v" else (r, c + i) for i in range(length))

    def feasible(occupied, k):
        if k == len(sizes_):
            return True
        return any(
            not (cells_of(pl, sizes_[k]) & occupied) and feasible(occupied | cells_of(pl, sizes_[k]), k + 1)
            for pl in placements(sizes_[k])
        )

    infosets, seqs, payoffs = set(), [1, 1], []
    num_ships = len(sizes_)

    def recurse(moves):
        placed = [[m for m in moves if m[0] == "place" and m[1] == p] for p in range(2)]
        shots_by = [[m[2] for m in moves if m[0] == "shot" and m[1] == p] for p in range(2)]

        def sunk(p, s):  # ship s of player p
            return cells_of(placed[p][s][2], sizes_[s]) <= set(shots_by[1 - p])

        if len(moves) < 2 * num_ships:
            player = len(moves) % 2
            k = len(placed[player])
            occupied = frozenset().union(*[cells_of(m[2], sizes_[i]) for i, m in enumerate(placed[player])])
            actions = [
                ("place", player, pl)
                for pl in placements(sizes_[k])
                if not (cells_of(pl, sizes_[k]) & occupied)
                and feasible(occupied | cells_of(pl, sizes_[k]), k + 1)
            ]
        else:
            over = len(moves) == 2 * num_ships + 2 * shots or any(
                all(sunk(p, s) for s in range(num_ships)) for p in range(2)
            )
            if over:
                lost = [sum(values[s] for s in range(num_ships) if sunk(p, s)) for p in range(2)]
                payoffs.append((lost[1] - lm * lost[0], lost[0] - lm * lost[1]))
                return
            player = len(moves) % 2
            actions = [
                ("shot", player, (r, c))
                for r in range(rows)
                for c in range(cols)
                if (r, c) not in shots_by[player]
            ]
        # OpenSpiel InformationStateString(player)
        info = [len(moves)]
        damage_cells = set()
        for m in moves:
            if m[0] == "place":
                if m[1] == player:
                    info.append(m[2])
            elif m[1] != player:
                info.append(("opp", m[2]))
            else:
                outcome = "W"
                damage_cells.add(m[2])
                for s in range(num_ships):
                    ship_cells = cells_of(placed[1 - player][s][2], sizes_[s])
                    if m[2] in ship_cells:
                        outcome = "S" if ship_cells <= damage_cells else "H"
                info.append(("own", m[2], outcome))
        key = (player, tuple(info))
        if key not in infosets:
            infosets.add(key)
            seqs[player] += len(actions)
        for a in actions:
            recurse(moves + [a])

    recurse([])
    num_infosets = [sum(1 for k in infosets if k[0] == p) for p in range(2)]
    return num_infosets, seqs, sorted(payoffs)


@pytest.mark.parametrize(
    "rows,cols,ships,shots",
    [
        (2, 2, [1], 2),
        (1, 3, [1], 2),
        (2, 2, [2], 2),
        (3, 1, [1, 2], 1),
        (1, 4, [2, 2], 2),
    ],
)
def test_independent_recursive_enumeration_agrees(rows, cols, ships, shots):
    values = [1.0 + i for i in range(len(ships))]
    ref_infosets, ref_seqs, ref_payoffs = _reference_battleship(rows, cols, ships, values, shots, 2.0)
    game = battleship(rows=rows, cols=cols, ship_sizes=ships, ship_values=values, shots=shots)
    got_infosets, got_seqs, _ = sizes(game)
    assert (got_infosets, got_seqs) == (ref_infosets, ref_seqs)
    assert sorted(map(tuple, game.payoffs.tolist())) == ref_payoffs


# --------------------------------------------------------------------------- invalid parameters
@pytest.mark.parametrize(
    "kwargs,word",
    [
        (dict(rows=0), "rows"),
        (dict(cols=0), "cols"),
        (dict(shots=0), "shots"),
        (dict(rows=2, cols=2, shots=5), "shots"),
        (dict(ship_sizes=[4]), "ship_sizes"),
        (dict(ship_sizes=[0]), "ship_sizes"),
        (dict(ship_sizes=[]), "ship_sizes"),
        (dict(rows=2, cols=2, ship_sizes=[2, 2, 1]), "ship_sizes"),
        (dict(ship_values=[-1.0]), "ship_values"),
        (dict(ship_values=[1.0, 2.0]), "ship_values"),
        (dict(loss_multiplier=float("nan")), "loss_multiplier"),
        (dict(rows=8, cols=8), "rows*cols"),
    ],
)
def test_invalid_parameters_raise_game_error(kwargs, word):
    with pytest.raises(GameError, match=word.replace("*", r"\*")) as err:
        battleship(**kwargs)
    assert "\n" not in str(err.value)
