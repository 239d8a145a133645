"""Games from OpenSpiel (optional extra: ``pip install open_spiel``).

:func:`from_openspiel` walks the whole game tree of a turn-based OpenSpiel game with explicit
chance outcomes and returns a :class:`~games.game.Game`.  Information sets are the distinct
``information_state_string(player)`` values of the acting player; actions are the legal actions
in OpenSpiel's order, named by ``action_to_string``; terminal payoffs are ``returns()``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from efce.errors import GameError
from efce.games.formats.efg import bfs_infoset_keys
from efce.games.game import CHANCE, TERMINAL, ExplicitLabels, Game

__all__ = ["from_openspiel"]

_MISSING = "from_openspiel needs the optional 'open_spiel' package: pip install open_spiel"


def _import_pyspiel():
    try:
        import pyspiel  # noqa: PLC0415 (optional dependency)
    except ImportError:
        raise GameError(_MISSING) from None
    return pyspiel


def from_openspiel(game_or_name: Any, **params: Any) -> Game:
    """Convert an OpenSpiel game to a :class:`~efce.games.game.Game`.

    Parameters
    ----------
    game_or_name : pyspiel.Game or str
        A loaded game, or a name for ``pyspiel.load_game`` (e.g. ``"kuhn_poker"`` or
        ``"leduc_poker(players=3)"``).
    **params
        Game parameters passed to ``pyspiel.load_game`` with a name (e.g. ``players=3``).

    The whole tree is enumerated, so this is meant for games of up to a few million histories.
    Simultaneous-move games must be converted first (``pyspiel.convert_to_turn_based``);
    games with sampled chance are not supported.
    """
    pyspiel = _import_pyspiel()
    if isinstance(game_or_name, str):
        try:
            game = pyspiel.load_game(game_or_name, params) if params else pyspiel.load_game(game_or_name)
        except Exception as exc:  # pyspiel raises its own SpielError / RuntimeError
            raise GameError(f"OpenSpiel could not load {game_or_name!r}: {exc}") from None
    else:
        if params:
            raise GameError(
                "from_openspiel: parameters can only be given with a game name, "
                "not with an already loaded game"
            )
        game = game_or_name
    gtype = game.get_type()
    label = str(game)
    if gtype.dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL:
        raise GameError(
            f"{label}: only turn-based games are supported; convert simultaneous-move "
            f"games with pyspiel.convert_to_turn_based"
        )
    if gtype.chance_mode == pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC:
        raise GameError(f"{label}: games with sampled chance cannot be enumerated")
    if not gtype.provides_information_state_string:
        raise GameError(f"{label}: the game does not provide information_state_string")
    n = game.num_players()

    parent: list[int] = []
    action: list[int] = []
    player: list[int] = []
    key: list[int] = []
    prob: list[float] = []
    payoffs: list[list[float]] = []
    chance_names: dict[int, list[str]] = {}
    infoset_ids: list[dict[str, int]] = [{} for _ in range(n)]
    infoset_names: list[list[str]] = [[] for _ in range(n)]
    infoset_actions: list[list[list[int]]] = [[] for _ in range(n)]
    infoset_action_names: list[list[list[str]]] = [[] for _ in range(n)]

    # Depth-first with an explicit stack: (state, parent node, action index, probability).
    stack = [(game.new_initial_state(), -1, -1, 1.0)]
    while stack:
        state, par, a, p_edge = stack.pop()
        node = len(parent)
        parent.append(par)
        action.append(a)
        prob.append(p_edge)
        if state.is_terminal():
            player.append(TERMINAL)
            key.append(-1)
            payoffs.append([float(r) for r in state.returns()])
            continue
        if state.is_simultaneous_node():
            raise GameError(
                f"{label}: simultaneous-move node reached; convert the game with "
                f"pyspiel.convert_to_turn_based"
            )
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            if not outcomes:
                raise GameError(f"{label}: chance node without outcomes at history {state.history()}")
            player.append(CHANCE)
            key.append(-1)
            chance_names[node] = [
                state.action_to_string(pyspiel.PlayerId.CHANCE, int(o)) for o, _ in outcomes
            ]
            children = [(state.child(int(o)), node, i, float(q)) for i, (o, q) in enumerate(outcomes)]
        else:
            p = int(state.current_player())
            legal = [int(x) for x in state.legal_actions(p)]
            if not legal:
                raise GameError(f"{label}: player {p + 1} has no legal action at history {state.history()}")
            info = state.information_state_string(p)
            ids = infoset_ids[p]
            k = ids.get(info)
            if k is None:
                k = ids[info] = len(ids)
                infoset_names[p].append(info)
                infoset_actions[p].append(legal)
                infoset_action_names[p].append([state.action_to_string(p, x) for x in legal])
            elif infoset_actions[p][k] != legal:
                raise GameError(
                    f"{label}: player {p + 1}'s information state {info!r} has legal "
                    f"actions {infoset_actions[p][k]} at one history and {legal} at "
                    f"history {state.history()}"
                )
            player.append(p)
            key.append(k)
            children = [(state.child(x), node, i, 1.0) for i, x in enumerate(legal)]
        stack.extend(reversed(children))

    parent_a = np.array(parent, dtype=np.int64)
    player_a = np.array(player, dtype=np.int64)
    key_a = np.array(key, dtype=np.int64)
    # Provisional labels in the order from_tree numbers infosets, for its error messages.
    order = bfs_infoset_keys(parent_a, player_a, key_a, n)
    provisional = ExplicitLabels(
        [[infoset_names[p][k] for k in order[p]] for p in range(n)],
        [[infoset_action_names[p][k] for k in order[p]] for p in range(n)],
    )

    def finish(result: Game) -> dict:
        new_position = np.empty(result.num_nodes, dtype=np.int64)
        new_position[result.original_order] = np.arange(result.num_nodes)
        labels = ExplicitLabels(
            [[infoset_names[p][int(k)] for k in result.infoset_keys[p]] for p in range(n)],
            [[infoset_action_names[p][int(k)] for k in result.infoset_keys[p]] for p in range(n)],
            {int(new_position[v]): names for v, names in chance_names.items()},
        )
        # OpenSpiel's action ids of each infoset (canonical order), to map strategies back.
        actions = [[list(infoset_actions[p][int(k)]) for k in result.infoset_keys[p]] for p in range(n)]
        return {"labels": labels, "openspiel_actions": actions}

    try:
        result = Game.from_tree(
            num_players=n,
            parent=parent_a,
            action=np.array(action, dtype=np.int64),
            player=player_a,
            infoset_key=key_a,
            terminal_payoffs=np.array(payoffs, dtype=np.float64).reshape(-1, n),
            chance_prob=np.array(prob, dtype=np.float64),
            labels=provisional,
            name=f"openspiel:{label}",
            infoset_describer=lambda p, k: repr(infoset_names[p][k]),
            finish=finish,
        )
    except GameError as exc:
        raise GameError(f"{label}: {exc}") from None
    return result
