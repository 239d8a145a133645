"""Goofspiel: sizes of Celli et al. 2020 (Figure 4), structure, and an independent reference."""

from __future__ import annotations

import numpy as np
import pytest

from efce.games import CHANCE, TERMINAL, GameError
from efce.games.generators.goofspiel import goofspiel


def _sizes(game):
    return [
        (game.sequences(p).num_infosets, game.sequences(p).num_sequences) for p in range(game.num_players)
    ]


def uniform_value(game) -> np.ndarray:
    """Expected payoffs when every player mixes uniformly at every node (bottom-up pass)."""
    val = np.zeros((game.num_nodes, game.num_players))
    term = game.terminal_nodes
    val[term] = game.payoffs[game.terminal_index[term]]
    par = game.parent[1:]
    w = np.ones(game.num_nodes)
    w[1:] = np.where(game.player[par] == CHANCE, game.chance_prob[1:], 1.0 / game.num_children[par])
    for lo, hi in reversed(game.levels[1:]):
        np.add.at(val, game.parent[lo:hi], w[lo:hi, None] * val[lo:hi])
    return val[0]


def check_chance_and_recall(game):
    chance = np.flatnonzero(game.player == CHANCE)
    sums = np.bincount(game.parent[1:], weights=game.chance_prob[1:], minlength=game.num_nodes)
    assert np.allclose(sums[chance], 1.0)
    for p in range(game.num_players):
        indptr, nodes = game.infoset_nodes(p)
        seqs = game.node_sequences(p)[nodes]
        for i in range(len(indptr) - 1):
            block = seqs[indptr[i] : indptr[i + 1]]
            assert len(block) and np.all(block == block[0])
            kids = game.num_children[nodes[indptr[i] : indptr[i + 1]]]
            assert np.all(kids == kids[0])


# ---------------------------------------------------------------------- paper sizes
@pytest.mark.parametrize(
    "players,ranks,expected",
    [
        (2, 3, (213, 262)),
        (2, 4, (8716, 10649)),
        (3, 3, (837, 934)),
    ],
)
def test_paper_sizes(players, ranks, expected):
    game = goofspiel(players, ranks)
    assert _sizes(game) == [expected] * players
    assert game.has_chance


def test_sorted_prizes_has_no_chance():
    game = goofspiel(2, 3, prizes="sorted")
    assert game.num_players == 2
    assert not game.has_chance
    assert _sizes(game) == [(36, 46)] * 2
    # Prizes come in order 1, 2, 3 (announced along player 1's bid, so player 2 sees it).
    assert game.infoset_label(0, 0) == "root"
    assert game.infoset_label(1, 0) == "prize 1"


def test_general_sum_because_of_ties():
    game = goofspiel(2, 3)
    totals = game.payoffs.sum(axis=1)
    assert not game.is_zero_sum
    assert totals.min() < totals.max()  # not even constant-sum: tied prizes are discarded
    assert totals.max() == 6 and totals.min() == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(players=2, ranks=3),
        dict(players=3, ranks=3),
        dict(players=2, ranks=3, prizes="sorted"),
        dict(players=2, ranks=2, limited_info=False),
    ],
)
def test_chance_probabilities_and_perfect_recall(kwargs):
    check_chance_and_recall(goofspiel(**kwargs))


def test_forced_last_round_is_kept():
    game = goofspiel(2, 3)
    for p in range(2):
        k = game.sequences(p).infoset_num_actions
        assert (k == 1).sum() > 0 and set(np.unique(k)) == {1, 2, 3}
    assert np.all(game.player[game.terminal_nodes] == TERMINAL)


def test_labels_are_readable():
    game = goofspiel(2, 3)
    assert game.action_labels(0, 0) == ["bid 1", "bid 2", "bid 3"]
    label = game.infoset_label(1, game.sequences(1).num_infosets - 1)
    assert "prize" in label and "bid" in label and ("wins" in label or "tie" in label)


# ---------------------------------------------------------------------- reference
def reference(players, ranks, prizes="random", limited=True):
    """Plain recursive Goofspiel: (number of (player, observation history) infosets,
    expected payoffs under uniform random play)."""
    infosets = set()

    def turn(hands, prizes_left, hist, score):
        if not prizes_left:
            return np.array(score, float)
        if prizes == "random":
            options = sorted(prizes_left)
            prob = 1.0 / len(options)
        else:
            options, prob = [min(prizes_left)], 1.0
        total = np.zeros(players)
        for prize in options:
            h = [hh + (("prize", prize),) for hh in hist]
            total += prob * bid(hands, prizes_left - {prize}, h, score, prize, [])
        return total

    def bid(hands, prizes_left, hist, score, prize, bids):
        i = len(bids)
        if i == players:
            top = max(bids)
            winners = [j for j in range(players) if bids[j] == top]
            seen = tuple(winners) if limited else tuple(bids)
            h = [hh + (("seen", seen),) for hh in hist]
            new_score = list(score)
            if len(winners) == 1:
                new_score[winners[0]] += prize
            return turn([hands[j] - {bids[j]} for j in range(players)], prizes_left, h, new_score)
        infosets.add((i, hist[i]))
        total = np.zeros(players)
        options = sorted(hands[i])
        for b in options:
            h = list(hist)
            h[i] = hist[i] + (("bid", b),)
            total += bid(hands, prizes_left, h, score, prize, bids + [b]) / len(options)
        return total

    cards = frozenset(range(1, ranks + 1))
    value = turn([cards] * players, cards, [()] * players, [0] * players)
    return len(infosets), value


@pytest.mark.parametrize(
    "players,ranks,prizes,limited",
    [
        (2, 2, "random", True),
        (2, 3, "random", True),
        (3, 3, "random", True),
        (2, 3, "sorted", True),
        (3, 2, "sorted", True),
        (2, 3, "random", False),
        (2, 1, "random", True),
    ],
)
def test_matches_reference(players, ranks, prizes, limited):
    game = goofspiel(players, ranks, prizes=prizes, limited_info=limited)
    count, value = reference(players, ranks, prizes, limited)
    assert sum(game.sequences(p).num_infosets for p in range(players)) == count
    assert np.allclose(uniform_value(game), value)


# ---------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "kwargs,word",
    [
        (dict(players=1), "players"),
        (dict(players=2.5), "players"),
        (dict(ranks=0), "ranks"),
        (dict(prizes="shuffled"), "prizes"),
        (dict(players=True), "players"),
    ],
)
def test_invalid_parameters(kwargs, word):
    with pytest.raises(GameError, match=word):
        goofspiel(**kwargs)
