"""The array-backed Game: canonical form, validation errors, sequence spaces, relevant pairs."""

import json

import numpy as np
import pytest

from efce import games
from efce.games import CHANCE, TERMINAL, Game, GameError
from efce.games.relevant import connected_infosets, count_relevant_pairs, relevant_pairs
from efce.games.spec import make_game, parse_spec


def tiny_tree(**overrides):
    """Chance deals a bit to player 1 (who sees it), player 2 then guesses blindly.

    node: 0 chance -> 1, 2 (player 1) -> 3,4 / 5,6 (player 2) -> terminals 7..14"""
    parent = [-1, 0, 0, 1, 1, 2, 2] + [3, 3, 4, 4, 5, 5, 6, 6]
    action = [-1, 0, 1, 0, 1, 0, 1] + [0, 1] * 4
    player = [CHANCE, 0, 0, 1, 1, 1, 1] + [TERMINAL] * 8
    key = [0, 10, 11, 20, 20, 20, 20] + [0] * 8
    pay = np.array([[1, -1], [-1, 1], [2, -2], [0, 0], [-1, 1], [1, -1], [0, 0], [3, -3]], float)
    args = dict(
        num_players=2,
        parent=parent,
        action=action,
        player=player,
        infoset_key=key,
        terminal_payoffs=pay,
        chance_prob=[1, 0.5, 0.5] + [1] * 12,
    )
    args.update(overrides)
    return args


def test_tiny_tree_facts():
    g = Game.from_tree(**tiny_tree())
    assert g.has_chance and g.num_terminals == 8 and g.is_zero_sum
    s1, s2 = g.sequences(0), g.sequences(1)
    assert (s1.num_infosets, s1.num_sequences) == (2, 5)
    assert (s2.num_infosets, s2.num_sequences) == (1, 3)
    assert list(s1.infoset_parent_seq) == [0, 0]
    # first_child + action walks the tree
    assert g.first_child[0] == 1 and g.num_children[0] == 2
    np.testing.assert_allclose(g.reach_chance[g.terminal_nodes].sum(), 4.0)


def test_canonical_form_is_independent_of_input_order():
    base = Game.from_tree(**tiny_tree())
    args = tiny_tree()
    rng = np.random.default_rng(1)
    # Shuffle nodes while keeping parents before children: reverse the sibling order of leaves.
    n = len(args["parent"])
    perm = np.concatenate([[0], 1 + rng.permutation(2), 3 + rng.permutation(4), 7 + rng.permutation(8)])
    inv = np.empty(n, int)
    inv[perm] = np.arange(n)
    parent = [-1 if args["parent"][perm[v]] < 0 else inv[args["parent"][perm[v]]] for v in range(n)]
    pay_rows = np.array(args["terminal_payoffs"])[perm[7:] - 7]
    shuffled = Game.from_tree(
        num_players=2,
        parent=parent,
        action=np.array(args["action"])[perm],
        player=np.array(args["player"])[perm],
        infoset_key=np.array(args["infoset_key"])[perm],
        terminal_payoffs=pay_rows,
        chance_prob=np.array(args["chance_prob"])[perm],
    )
    for name in ("parent", "action", "player", "infoset", "chance_prob", "payoffs"):
        np.testing.assert_array_equal(getattr(base, name), getattr(shuffled, name))


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(chance_prob=[1, 0.5, 0.6] + [1] * 12), "sum to 1.1"),
        (dict(chance_prob=[1, 1.5, -0.5] + [1] * 12), "negative"),
        (
            dict(player=[CHANCE, 0, 0, 1, 1, 1, 1] + [TERMINAL] * 7 + [1]),
            "has no children but is not terminal",
        ),
        (dict(player=[CHANCE, 0, 0, 1, 1, 1, TERMINAL] + [TERMINAL] * 8), "is terminal but has children"),
        (dict(player=[CHANCE, 0, 0, 1, 1, 5, 1] + [TERMINAL] * 8), "outside 0..1"),
        (dict(action=[-1, 0, 1, 0, 1, 0, 1] + [0, 0] + [0, 1] * 3), "actions 0..k-1"),
        (dict(parent=[-1, 0, 0, 1, 1, 2, 2] + [3, 3, 4, 4, 5, 5, 6, 15]), "parents must precede"),
        (dict(terminal_payoffs=np.zeros((7, 2))), "shape"),
        (dict(terminal_payoffs=np.full((8, 2), np.nan)), "finite"),
    ],
)
def test_malformed_trees_are_rejected_with_a_clear_message(overrides, message):
    with pytest.raises(GameError, match=message):
        Game.from_tree(**tiny_tree(**overrides))


def test_infoset_disagreeing_on_actions():
    # Merge player 1's two infosets although one node gets three children.
    args = tiny_tree()
    args["parent"] = args["parent"] + [2]
    args["action"] = args["action"] + [2]
    args["player"] = args["player"] + [TERMINAL]
    args["infoset_key"] = [0, 10, 10, 20, 20, 20, 20] + [0] * 9
    args["chance_prob"] = args["chance_prob"] + [1]
    args["terminal_payoffs"] = np.zeros((9, 2))
    with pytest.raises(GameError, match="disagree on the number of actions"):
        Game.from_tree(**args)


def test_imperfect_recall_names_the_infoset():
    # Player 2 acts twice on a path; her second decision merges histories she has distinguished.
    parent = [-1, 0, 0, 1, 1, 2, 2]
    action = [-1, 0, 1, 0, 1, 0, 1]
    player = [1, 1, 1] + [TERMINAL] * 4
    key = [0, 5, 5, 0, 0, 0, 0]
    with pytest.raises(GameError, match="imperfect recall.*player 2"):
        Game.from_tree(
            num_players=2,
            parent=parent,
            action=action,
            player=player,
            infoset_key=key,
            terminal_payoffs=np.zeros((4, 2)),
        )


def test_sequence_descendants():
    g = games.sheriff(max_bribe=1, max_items=1, rounds=2)
    s = g.sequences(0)
    for seq in range(1, s.num_sequences):
        assert s.is_descendant([seq], [0])[0]
        assert s.is_descendant([seq], [s.seq_parent[seq]])[0]
        assert not s.is_descendant([s.seq_parent[seq]], [seq])[0]


def _brute_relevant(game):
    conn = set()
    for v in range(game.num_nodes):
        if game.player[v] < 0:
            continue
        u = game.parent[v]
        while u >= 0:
            if game.player[u] >= 0 and game.player[u] != game.player[v]:
                pair = (
                    (game.infoset[u], game.infoset[v])
                    if game.player[u] == 0
                    else (game.infoset[v], game.infoset[u])
                )
                conn.add(pair)
            u = game.parent[u]
    s1, s2 = game.sequences(0), game.sequences(1)
    pairs = {(0, b) for b in range(s2.num_sequences)} | {(a, 0) for a in range(s1.num_sequences)}
    for i1, i2 in conn:
        for a in range(s1.infoset_num_actions[i1]):
            for b in range(s2.infoset_num_actions[i2]):
                pairs.add((s1.infoset_first_seq[i1] + a, s2.infoset_first_seq[i2] + b))
    return sorted(conn), sorted(pairs)


@pytest.mark.parametrize(
    "make",
    [
        lambda: games.kuhn(2),
        games.farina_fig1,
        games.farina_fig2,
        lambda: games.sheriff(max_bribe=2, max_items=1, rounds=2),
        lambda: games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2),
        lambda: games.goofspiel(2, 3, prizes="sorted"),
    ],
)
def test_relevant_pairs_match_an_ancestor_walk(make):
    game = make()
    conn, pairs = _brute_relevant(game)
    c1, c2 = connected_infosets(game)
    assert list(zip(c1.tolist(), c2.tolist(), strict=True)) == conn
    rp = relevant_pairs(game)
    assert list(zip(rp.sigma1.tolist(), rp.sigma2.tolist(), strict=True)) == pairs
    assert count_relevant_pairs(game) == len(pairs)
    k = len(pairs) // 2
    assert rp.index([pairs[k][0]], [pairs[k][1]])[0] == k


def test_relevant_pairs_published_sizes():
    assert count_relevant_pairs(games.battleship(rows=3, cols=2, ship_sizes=[1], shots=3)) == 3_893_341
    assert count_relevant_pairs(games.sheriff()) == 375_165


def test_relevant_pairs_need_two_players():
    with pytest.raises(GameError, match="two-player"):
        relevant_pairs(games.kuhn(3))


def test_spec_strings():
    assert parse_spec("battleship:rows=2,cols=3,ship_sizes=1,shots=3") == (
        "battleship",
        {"rows": 2, "cols": 3, "ship_sizes": [1], "shots": 3},
    )
    assert parse_spec("battleship:ship_sizes=[1,2],loss_multiplier=2.5")[1] == {
        "ship_sizes": [1, 2],
        "loss_multiplier": 2.5,
    }
    with pytest.raises(GameError, match="unknown game 'poker'.*valid names"):
        make_game("poker:players=2")
    with pytest.raises(GameError, match="unknown parameter colour; valid parameters: players, ranks"):
        make_game("kuhn:colour=red")
    with pytest.raises(GameError, match="key=value"):
        make_game("kuhn:players")
    with pytest.raises(GameError, match="given twice"):
        make_game("kuhn:players=2,players=3")


def test_cli_info_json(capsys):
    from efce.experiments.cli import main

    assert main(["info", "sheriff", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["players"] == 2 and out["chance"] is False
    assert out["infosets"] == [2341, 2340] and out["sequences"] == [9365, 4681]
    assert out["relevant_pairs"] == 375_165 and out["terminals"] > 0 and out["seconds"] >= 0
    assert main(["info", "kuhn:players=3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["relevant_pairs"] is None and out["chance"] is True


def test_cli_errors_are_one_line(capsys):
    from efce.experiments.cli import main

    assert main(["info", "kuhn:players=1", "--json"]) == 2
    assert "error" in json.loads(capsys.readouterr().out)
    assert main(["info", "kuhn:players=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("efce: error:") and err.count("\n") == 1
