"""Public and private chance moves (games.chance.chance_visibility): no information set may hold
nodes behind two outcomes of one chance move."""

import pytest

from efce import games
from efce.games.chance import chance_visibility
from efce.games.game import CHANCE, TERMINAL, Game
from tests.random_games import random_game


@pytest.mark.parametrize(
    "game, player",
    [(games.kuhn(2), "Player 1"), (games.leduc(2), "Player 1"), (games.kuhn(3), "Player 1")],
    ids=["kuhn2", "leduc2", "kuhn3"],
)
def test_poker_deals_are_private(game, player):
    seen = chance_visibility(game)
    assert seen.kind == "private" and not seen.public
    assert seen.reason.startswith(f"{player} does not observe the outcome of the chance move at node 0")


def test_goofspiel_prizes_are_public_and_sorted_prizes_have_no_chance():
    assert chance_visibility(games.goofspiel(2, 3, prizes="random")).kind == "public"
    assert chance_visibility(games.goofspiel(2, 3, prizes="sorted")).kind == "none"
    assert chance_visibility(games.sheriff(max_bribe=1, max_items=1, rounds=1)).kind == "none"


def _coin_then_move(same_infoset: bool, coin_after_hidden_move: bool = False) -> Game:
    """A coin (chance), then player 1 moves; the two nodes of player 1 share an infoset or not.
    With ``coin_after_hidden_move`` player 2 first moves unseen, then the coin is flipped below
    each of its actions, and player 1 sees the coin only: the two coin nodes are distinct nodes
    with the same outcomes, which player 1 tells apart (public)."""
    if not coin_after_hidden_move:
        return Game.from_tree(
            num_players=2,
            parent=[-1, 0, 0, 1, 1, 2, 2],
            action=[0, 0, 1, 0, 1, 0, 1],
            player=[CHANCE, 0, 0, TERMINAL, TERMINAL, TERMINAL, TERMINAL],
            infoset_key=[-1, 0, 0 if same_infoset else 1, -1, -1, -1, -1],
            terminal_payoffs=[[1, 0], [0, 1], [2, 0], [0, 2]],
            chance_prob=[1, 0.5, 0.5, 1, 1, 1, 1],
        )
    # root: player 2; below each action a coin; below each coin outcome player 1 (heads / tails)
    parent = [-1, 0, 0, 1, 1, 2, 2] + [v for v in (3, 3, 4, 4, 5, 5, 6, 6)]
    action = [0, 0, 1, 0, 1, 0, 1] + [0, 1] * 4
    player = [1, CHANCE, CHANCE, 0, 0, 0, 0] + [TERMINAL] * 8
    key = [0, -1, -1, 10, 11, 10, 11] + [-1] * 8
    probs = [1, 1, 1, 0.5, 0.5, 0.5, 0.5] + [1] * 8
    payoffs = [[k, -k] for k in range(8)]
    return Game.from_tree(
        num_players=2,
        parent=parent,
        action=action,
        player=player,
        infoset_key=key,
        terminal_payoffs=payoffs,
        chance_prob=probs,
    )


def test_an_infoset_across_a_coins_outcomes_is_private():
    seen = chance_visibility(_coin_then_move(same_infoset=True))
    assert seen.kind == "private"
    assert "'0' and '1'" in seen.reason


def test_separate_infosets_per_outcome_are_public():
    assert chance_visibility(_coin_then_move(same_infoset=False)).kind == "public"


def test_a_coin_repeated_below_a_hidden_move_is_public():
    """The coin's outcome is seen; that there are two coin nodes (one per hidden action of
    player 2) does not make it private."""
    assert chance_visibility(_coin_then_move(False, coin_after_hidden_move=True)).kind == "public"


@pytest.mark.parametrize("kind", ("none", "public", "private"))
def test_the_random_games_are_of_their_kind(kind):
    """The test generator's own (pairwise) classification agrees with the toolkit's."""
    for seed in range(15):
        assert chance_visibility(random_game(seed, chance=kind)).kind == kind
