"""Leduc hold'em: classic sizes and value, the 3-player sizes of Celli et al. 2020, structure,
and an independent plain-Python reference that deals real (suited) cards."""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from efce.games import GameError
from efce.games.generators.leduc import leduc

from .test_goofspiel import check_chance_and_recall, uniform_value


def _sizes(game):
    return [
        (game.sequences(p).num_infosets, game.sequences(p).num_sequences) for p in range(game.num_players)
    ]


def zero_sum_value(game) -> float:
    """Value for player 1 of a two-player zero-sum game (sequence-form LP)."""
    term = game.terminal_nodes
    s1, s2 = game.node_sequences(0)[term], game.node_sequences(1)[term]
    w = game.reach_chance[term] * game.payoffs[game.terminal_index[term], 0]
    S1, S2 = game.sequences(0), game.sequences(1)
    A = sp.coo_matrix((w, (s1, s2)), shape=(S1.num_sequences, S2.num_sequences)).tocsr()

    def constraints(S):
        rows, cols, vals = [0], [0], [1.0]
        for i in range(S.num_infosets):
            k, first = int(S.infoset_num_actions[i]), int(S.infoset_first_seq[i])
            rows += [i + 1] * (k + 1)
            cols += list(range(first, first + k)) + [int(S.infoset_parent_seq[i])]
            vals += [1.0] * k + [-1.0]
        M = sp.coo_matrix((vals, (rows, cols)), shape=(S.num_infosets + 1, S.num_sequences))
        rhs = np.zeros(S.num_infosets + 1)
        rhs[0] = 1
        return M.tocsr(), rhs

    E, e = constraints(S1)
    F, f = constraints(S2)
    n1, nv = S1.num_sequences, F.shape[0]
    res = linprog(
        np.concatenate([np.zeros(n1), -f]),
        A_ub=sp.hstack([-A.T, F.T]).tocsr(),
        b_ub=np.zeros(S2.num_sequences),
        A_eq=sp.hstack([E, sp.csr_matrix((E.shape[0], nv))]).tocsr(),
        b_eq=e,
        bounds=[(0, None)] * n1 + [(None, None)] * nv,
        method="highs",
    )
    assert res.status == 0
    return -res.fun


# ---------------------------------------------------------------------- sizes and values
def test_classic_two_player_leduc():
    game = leduc()
    assert _sizes(game) == [(144, 337)] * 2  # 288 infosets in total (suit-isomorphic Leduc)
    assert game.is_zero_sum
    assert zero_sum_value(game) == pytest.approx(-0.0856064, abs=1e-6)


def test_two_player_caps_agree():
    """With two players "each player raises at most once" is the classic cap of two raises."""
    a = leduc(raises_per_player=1, max_raises=None)
    b = leduc(raises_per_player=None, max_raises=2)
    assert _sizes(a) == _sizes(b)
    assert np.allclose(uniform_value(a), uniform_value(b))


def test_paper_three_player_sizes_and_build_time():
    start = time.perf_counter()
    game = leduc(players=3, ranks=3)
    elapsed = time.perf_counter() - start
    assert _sizes(game) == [(3294, 7687)] * 3
    assert game.is_zero_sum
    assert elapsed < 5.0


def test_other_readings_give_other_sizes():
    assert _sizes(leduc(players=3, ranks=3, max_raises=2)) == [(1401, 3208)] * 3
    # Celli et al. 2019's one-raise three-player instance: 1,200 infosets in total.
    assert _sizes(leduc(players=3, ranks=4, max_raises=1)) == [(400, 801)] * 3


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(),
        dict(players=3, ranks=2),
        dict(players=3, ranks=3, max_raises=1),
        dict(players=4, ranks=2, max_raises=1),
    ],
)
def test_zero_sum_chance_and_perfect_recall(kwargs):
    game = leduc(**kwargs)
    assert game.is_zero_sum
    check_chance_and_recall(game)


def test_raise_sizes_matter_for_payoffs_only():
    a, b = leduc(), leduc(raise_sizes=(1, 3))
    assert _sizes(a) == _sizes(b)
    assert np.abs(a.payoffs).max() == 13  # ante 1 + 2 + 2 + 4 + 4
    assert np.abs(b.payoffs).max() == 9


def test_labels_are_readable():
    game = leduc()
    assert game.infoset_label(0, 0).startswith("card ")
    assert game.action_labels(0, 0) == ["check", "bet"]
    names = {game.infoset_label(p, i) for p in range(2) for i in range(game.sequences(p).num_infosets)}
    assert "card K/bet/raise/call/board Q/check/bet" in names
    i = next(
        i for i in range(game.sequences(0).num_infosets) if game.infoset_label(0, i) == "card J/check/bet"
    )
    assert game.action_labels(0, i) == ["fold", "call", "raise"]


# ---------------------------------------------------------------------- reference
def reference(players, ranks, suits, sizes=(2, 4), max_raises=None, per_player=1):
    """Plain recursive Leduc with a real suited deck: (number of (player, observation history)
    infosets, expected payoffs under uniform random play)."""
    n = players
    total_cap = 10**9 if max_raises is None else max_raises
    deck = [(rank, suit) for rank in range(ranks) for suit in range(suits)]
    infosets = set()

    def showdown(cards, board, folded, contrib):
        def strength(c):
            return ranks + c if c == board else c

        live = [j for j in range(n) if not folded[j]]
        best = max(strength(cards[j]) for j in live)
        winners = [j for j in live if strength(cards[j]) == best]
        pot = sum(contrib)
        return np.array([(pot / len(winners) if j in winners else 0) - contrib[j] for j in range(n)])

    def betting(rnd, cur, cards, board, left, hist, folded, contrib, stake, raises, calls, mine):
        live = [j for j in range(n) if not folded[j]]
        if len(live) == 1:
            pay = -np.array(contrib, float)
            pay[live[0]] += sum(contrib)
            return pay
        if (raises == 0 and calls == len(live)) or (raises > 0 and calls == len(live) - 1):
            if rnd == 2:
                return showdown(cards, board, folded, contrib)
            total = np.zeros(n)
            for k, card in enumerate(left):  # board card
                h = [hh + (("board", card[0]),) for hh in hist]
                rest = left[:k] + left[k + 1 :]
                first = min(live)
                total += betting(
                    2, first, cards, card[0], rest, h, folded, contrib, stake, 0, 0, [0] * n
                ) / len(left)
            return total
        while folded[cur]:
            cur = (cur + 1) % n
        infosets.add((cur, hist[cur]))
        actions = []
        facing = stake > contrib[cur]
        if facing:
            actions.append("fold")
        actions.append("call" if facing else "check")
        if raises < total_cap and mine[cur] < per_player:
            actions.append("raise" if raises else "bet")
        total = np.zeros(n)
        for act in actions:
            h = [hh + (act,) for hh in hist]
            f, c, m = list(folded), list(contrib), list(mine)
            st, rs, cl = stake, raises, calls
            if act == "fold":
                f[cur] = True
            elif act in ("call", "check"):
                c[cur] = stake
                cl += 1
            else:
                st = stake + sizes[rnd - 1]
                c[cur] = st
                rs, cl = raises + 1, 0
                m[cur] += 1
            total += betting(rnd, (cur + 1) % n, cards, board, left, h, f, c, st, rs, cl, m)
        return total / len(actions)

    total = np.zeros(n)
    count = 0

    def deal(k, cards, left):
        nonlocal total, count
        if k == n:
            hist = [(("card", cards[j][0]),) for j in range(n)]
            total += betting(
                1, 0, [c[0] for c in cards], None, left, hist, [False] * n, [1] * n, 1, 0, 0, [0] * n
            )
            count += 1
            return
        for i, card in enumerate(left):
            deal(k + 1, cards + [card], left[:i] + left[i + 1 :])

    deal(0, [], deck)
    return len(infosets), total / count


@pytest.mark.parametrize(
    "players,ranks,suits,max_raises",
    [
        (2, 2, 2, None),
        (2, 3, 2, None),
        (3, 2, 2, None),
        (3, 2, 3, 1),
        (2, 1, 3, None),
    ],
)
def test_matches_reference(players, ranks, suits, max_raises):
    game = leduc(players, ranks, suits=suits, max_raises=max_raises)
    count, value = reference(players, ranks, suits, max_raises=max_raises)
    assert sum(game.sequences(p).num_infosets for p in range(players)) == count
    assert np.allclose(uniform_value(game), value)


# ---------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "kwargs,word",
    [
        (dict(players=1), "players"),
        (dict(ranks=0), "ranks"),
        (dict(suits=0), "suits"),
        (dict(players=3, ranks=1, suits=3), "deck"),
        (dict(raise_sizes=(2, -4)), "raise_sizes"),
        (dict(raise_sizes=(2,)), "raise_sizes"),
        (dict(max_raises=-1), "max_raises"),
        (dict(raises_per_player=-1), "raises_per_player"),
        (dict(max_raises=None, raises_per_player=None), "max_raises"),
    ],
)
def test_invalid_parameters(kwargs, word):
    with pytest.raises(GameError, match=word):
        leduc(**kwargs)
