"""Helpers shared by the generator tests: sizes of a game and walking it by actions."""


def sizes(game):
    """(infosets per player, sequences per player, terminals) of a two-player game."""
    spaces = [game.sequences(p) for p in range(2)]
    return ([s.num_infosets for s in spaces], [s.num_sequences for s in spaces], game.num_terminals)


def play(game, actions):
    """The node reached from the root by ``actions`` (checking each step is legal)."""
    v = 0
    for a in actions:
        assert game.player[v] >= 0 and 0 <= a < game.num_children[v]
        v = int(game.first_child[v] + a)
        assert game.action[v] == a
    return v
