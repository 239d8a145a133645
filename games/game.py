"""The immutable, array-backed extensive-form game.

A game is a rooted tree stored as flat numpy arrays in breadth-first order: the children of a
node are contiguous and sorted by action index, so ``first_child[v] + a`` is the node reached by
action ``a`` at ``v``.  Every other part of the toolkit (sequence spaces, relevant sequence pairs,
payoff operators, polytopes, solvers) reads games through this module.

Conventions
-----------
* Players are ``0 .. num_players-1`` (player ``i`` is printed as "player i+1"); chance is
  :data:`CHANCE`; terminal nodes carry :data:`TERMINAL`.
* Infosets are numbered per player in *top-down order* (an infoset's parent sequence belongs to
  an infoset with a smaller index).  Sequences of a player are numbered ``0`` (the empty
  sequence) and then infoset by infoset: the sequences of infoset ``I`` are the contiguous range
  ``first_seq[I] .. first_seq[I] + num_actions[I] - 1``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike

from efce.errors import GameError  # re-exported: games.game.GameError is its old home
from efce.interrupts import check_stop

if TYPE_CHECKING:  # annotations only: infoset_tree imports this module
    from .infoset_tree import InfosetTree
    from .resources.memory import ParkedArrays

#: The ``player`` of a chance node.
CHANCE = -1
#: The ``player`` of a terminal node.
TERMINAL = -2

#: Tolerance for chance probabilities summing to one.
PROBABILITY_TOLERANCE = 1e-9

#: Largest payoff magnitude a game may have.  Solvers multiply payoffs by payoffs (squared
#: norms, PDLP's rescaling) and sum them over billions of terms and iterations; below 1e100
#: all of that stays far from the float64 overflow at 1.8e308.
MAX_ABS_PAYOFF = 1e100


def _constant_if_all_ones(values: np.ndarray) -> np.ndarray:
    """``values``, or a read-only broadcast of 1.0 with the same shape when every value is 1 (a
    game without chance moves): equal element for element, without 8 bytes per node."""
    if values.size and np.all(values == 1.0):
        return np.broadcast_to(np.float64(1.0), values.shape)
    return values


def _frozen(array: np.ndarray, dtype) -> np.ndarray:
    out = np.ascontiguousarray(array, dtype=dtype)
    if out is array:
        out = out.copy()
    out.setflags(write=False)
    return out


def _array_leaves(value, depth: int = 2) -> list[np.ndarray]:
    """The arrays of an attribute: an array holding its own bytes, or a tuple or list (up to
    ``depth`` levels) of nothing but such arrays; empty for anything else (numbers, names,
    objects, broadcast constants, views)."""
    if isinstance(value, np.ndarray):
        return [value] if value.base is None and value.size else []
    if depth and isinstance(value, (tuple, list)) and value:
        leaves = [_array_leaves(v, depth - 1) for v in value]
        if all(leaves):
            return [a for leaf in leaves for a in leaf]
    return []


def _with_leaves(value, leaves: Iterator[np.ndarray]):
    """``value``, whose arrays :func:`_array_leaves` found, with them replaced in order by
    ``leaves``'s."""
    if isinstance(value, np.ndarray):
        return next(leaves)
    rebuilt = [_with_leaves(v, leaves) for v in value]
    return rebuilt if isinstance(value, list) else tuple(rebuilt)


def _read_back(parked: ParkedArrays, slots: list[tuple[dict, str, list[str], list[bool]]]) -> None:
    """Put the parked arrays of :meth:`Game.arrays_on_disk`'s ``slots`` back in their owners,
    read-only where they were; the files stay for ``parked.close()``, once no map of them is
    left.  A function of its own, so that no frame a traceback keeps holds a reference to them
    (which would keep the next call from parking them)."""
    for owner, key, names, writeable in slots:
        leaves = [parked.read(n) for n in names]
        for leaf, write in zip(leaves, writeable, strict=True):
            leaf.setflags(write=write)
        owner[key] = _with_leaves(owner[key], iter(leaves))


def _leaf_references(owner: dict, key: str) -> list[int]:
    """CPython's reference count of each array of ``owner[key]``, read the same way for every
    owner (see :func:`_held_only_by_owner`)."""
    return [sys.getrefcount(a) for a in _array_leaves(owner[key])]


def _held_only_by_owner(owner: dict, key: str) -> bool:
    """Whether nothing but ``owner[key]`` holds the arrays of ``owner[key]`` (no view of them,
    no other object): their reference counts against those of fresh arrays in the same
    structure, which only a probe dictionary holds."""
    count = len(_array_leaves(owner[key]))
    probe = {key: _with_leaves(owner[key], iter([np.ones(1) for _ in range(count)]))}
    return _leaf_references(owner, key) == _leaf_references(probe, key)


@dataclass(frozen=True, eq=False)
class SequenceSpace:
    """The sequences (treeplex) of one player.

    Attributes
    ----------
    player : int
    infoset_parent_seq : int32[num_infosets]
        σ(I), the last sequence of this player on the path to any node of I (0 = empty).
    infoset_first_seq : int32[num_infosets]
        The sequences of I are ``first_seq[I] + a`` for ``a < num_actions[I]``.
    infoset_num_actions : int32[num_infosets]
    """

    player: int
    infoset_parent_seq: np.ndarray
    infoset_first_seq: np.ndarray
    infoset_num_actions: np.ndarray

    @property
    def num_infosets(self) -> int:
        return len(self.infoset_num_actions)

    @property
    def num_sequences(self) -> int:
        return 1 + int(self.infoset_num_actions.sum())

    @cached_property
    def tree(self) -> InfosetTree:
        """Children, depth-first preorder and subtree ranges (:mod:`games.infoset_tree`)."""
        from .infoset_tree import infoset_tree

        return infoset_tree(
            self.infoset_parent_seq, self.infoset_first_seq, self.infoset_num_actions, self.num_sequences
        )

    @cached_property
    def seq_infoset(self) -> np.ndarray:
        """Infoset in which the last action of each sequence is played (-1 for the empty one)."""
        out = np.repeat(np.arange(self.num_infosets, dtype=np.int32), self.infoset_num_actions)
        return np.concatenate([np.array([-1], dtype=np.int32), out])

    @cached_property
    def seq_action(self) -> np.ndarray:
        """Action index of the last action of each sequence (-1 for the empty one)."""
        infoset = self.seq_infoset
        out = np.arange(self.num_sequences, dtype=np.int32)
        out[1:] -= self.infoset_first_seq[infoset[1:]]
        out[0] = -1
        return out

    @cached_property
    def seq_parent(self) -> np.ndarray:
        """Parent sequence σ(I(σ)) of each sequence (-1 for the empty one)."""
        out = np.full(self.num_sequences, -1, dtype=np.int32)
        out[1:] = self.infoset_parent_seq[self.seq_infoset[1:]]
        return out

    @cached_property
    def infoset_depth(self) -> np.ndarray:
        """Number of this player's infosets strictly above I (0 for root infosets)."""
        depth = np.zeros(self.num_infosets, dtype=np.int32)
        parent_infoset = self.seq_infoset[self.infoset_parent_seq]
        # Top-down numbering makes one forward sweep per depth level enough; levels are few.
        has_parent = parent_infoset >= 0
        while True:
            new = np.where(has_parent, depth[np.maximum(parent_infoset, 0)] + 1, 0)
            if np.array_equal(new, depth):
                return depth
            depth = new

    @cached_property
    def seq_depth(self) -> np.ndarray:
        """Number of actions in each sequence (0 for the empty one)."""
        out = np.zeros(self.num_sequences, dtype=np.int32)
        out[1:] = self.infoset_depth[self.seq_infoset[1:]] + 1
        return out

    def is_descendant(self, seq: np.ndarray, ancestor: np.ndarray) -> np.ndarray:
        """Elementwise ``seq ⪰ ancestor`` (Farina et al. 2019, section 2)."""
        seq = np.asarray(seq, dtype=np.int64).copy()
        ancestor = np.asarray(ancestor, dtype=np.int64)
        result = seq == ancestor
        depth_anc = self.seq_depth[ancestor]
        while True:
            deeper = (self.seq_depth[seq] > depth_anc) & ~result
            if not deeper.any():
                return result
            seq = np.where(deeper, self.seq_parent[seq], seq)
            result |= seq == ancestor


class Labels:
    """Names of players, infosets and actions.  The base class derives plain names; games read
    from files or built by generators supply their own (possibly lazily computed) names."""

    def infoset(self, game: Game, player: int, infoset: int) -> str:
        return f"{player + 1}:{infoset}"

    def actions(self, game: Game, player: int, infoset: int) -> list[str]:
        return [str(a) for a in range(int(game.sequences(player).infoset_num_actions[infoset]))]

    def chance_actions(self, game: Game, node: int) -> list[str]:
        return [str(a) for a in range(int(game.num_children[node]))]


class ExplicitLabels(Labels):
    """Names stored explicitly, indexed by the game's canonical infoset numbers.

    Parameters
    ----------
    infoset_names : per player, a list with the name of each infoset (canonical order).
    action_names : per player, a list (one entry per infoset) of lists of action names.
    chance_action_names : optional mapping from a chance node (canonical index) to the names
        of its outcomes; chance nodes not listed get the default names ``"0", "1", ...``.
    """

    def __init__(
        self,
        infoset_names: Sequence[Sequence[str]],
        action_names: Sequence[Sequence[Sequence[str]]],
        chance_action_names: Mapping[int, Sequence[str]] | None = None,
    ):
        if len(infoset_names) != len(action_names):
            raise GameError(
                f"ExplicitLabels: {len(infoset_names)} players have infoset names "
                f"but {len(action_names)} have action names"
            )
        for p, (names, actions) in enumerate(zip(infoset_names, action_names, strict=True)):
            if len(names) != len(actions):
                raise GameError(
                    f"ExplicitLabels: player {p + 1} has {len(names)} infoset names "
                    f"but {len(actions)} action lists"
                )
        self.infoset_names = [[str(s) for s in names] for names in infoset_names]
        self.action_names = [[[str(a) for a in acts] for acts in per] for per in action_names]
        self.chance_action_names = {
            int(v): [str(a) for a in names] for v, names in (chance_action_names or {}).items()
        }

    @classmethod
    def from_game(cls, game: Game) -> ExplicitLabels:
        """Materialize every name of ``game`` (whatever its labels class)."""
        infosets, actions = [], []
        for p in range(game.num_players):
            count = game.sequences(p).num_infosets
            infosets.append([game.labels.infoset(game, p, i) for i in range(count)])
            actions.append([game.labels.actions(game, p, i) for i in range(count)])
        chance = {
            int(v): game.labels.chance_actions(game, int(v)) for v in np.flatnonzero(game.player == CHANCE)
        }
        return cls(infosets, actions, chance)

    def infoset(self, game: Game, player: int, infoset: int) -> str:
        return self.infoset_names[player][infoset]

    def actions(self, game: Game, player: int, infoset: int) -> list[str]:
        return list(self.action_names[player][infoset])

    def chance_actions(self, game: Game, node: int) -> list[str]:
        names = self.chance_action_names.get(int(node))
        return list(names) if names is not None else super().chance_actions(game, node)


class Game:
    """An immutable extensive-form game with perfect recall, stored as flat arrays.

    Build games with :meth:`Game.from_tree` (any topological node order) or through a
    generator; the constructor itself expects canonical (breadth-first) arrays.

    Node arrays (length ``num_nodes``, breadth-first order, root = 0)
        ``parent``, ``action`` (index of the edge from the parent), ``player``, ``infoset``
        (per-player index, -1 for chance/terminal), ``first_child``, ``num_children``,
        ``chance_prob`` (probability of the edge into the node when its parent is chance, else 1),
        ``terminal_index`` (row into ``payoffs``, -1 for internal nodes).

    ``payoffs`` : float64[num_terminals, num_players]
        One row per terminal.

    Everything a game holds is given at construction: after ``__init__`` no attribute can be
    set or deleted (:class:`AttributeError`).  Derived facts (``depth``, ``reach_chance``,
    ``connected_infosets``, ...) are lazily computed views (``functools.cached_property``):
    computed from the arrays on first use and kept, never assigned from outside.

    Descriptive attributes, given to the constructor (or through :meth:`from_tree`):
    ``original_order`` and ``infoset_keys`` (how :meth:`from_tree` renumbered its input, else
    None), ``comment`` (a ``.efg`` file's comment, else ""), ``outcome_names`` (per terminal,
    from a ``.efg`` file, else None), ``openspiel_actions`` (OpenSpiel's action ids per
    infoset, else None).  ``finish``, optional, is called once the game is built and checked:
    ``finish(game) -> dict`` gives final values of those attributes and of ``labels`` that
    depend on the canonical numbering (provisional ``labels`` name infosets in the construction
    errors).
    """

    #: Attributes ``finish`` may give (see the class docstring).
    FINISHED = ("labels", "comment", "outcome_names", "openspiel_actions")

    def __init__(
        self,
        *,
        num_players: int,
        parent,
        action,
        player,
        infoset,
        chance_prob,
        payoffs,
        terminal_index,
        labels: Labels | None = None,
        name: str = "game",
        player_names: Sequence[str] | None = None,
        original_order=None,
        infoset_keys=None,
        comment: str = "",
        outcome_names=None,
        openspiel_actions=None,
        finish: Callable[[Game], dict] | None = None,
    ):
        self.num_players = int(num_players)
        self.name = name
        self.parent = _frozen(parent, np.int32)
        self.action = _frozen(action, np.int32)
        self.player = _frozen(player, np.int8)
        self.infoset = _frozen(infoset, np.int32)
        self.chance_prob = _constant_if_all_ones(_frozen(chance_prob, np.float64))
        self.payoffs = _frozen(payoffs, np.float64)
        self.terminal_index = _frozen(terminal_index, np.int32)
        self.labels = labels or Labels()
        self.player_names = (
            list(player_names) if player_names else [f"Player {i + 1}" for i in range(self.num_players)]
        )
        n = len(self.parent)
        counts = np.bincount(self.parent[1:], minlength=n).astype(np.int32)
        self.num_children = _frozen(counts, np.int32)
        first = np.zeros(n, dtype=np.int64)
        first[0] = 1
        first[1:] = 1 + np.cumsum(counts[:-1], dtype=np.int64)
        first[counts == 0] = -1
        # Node positions fit int32 (``parent`` is int32): half the bytes of int64 per node.
        self.first_child = _frozen(first, np.int32)
        # Canonical position -> input position.
        self.original_order = None if original_order is None else _frozen(original_order, np.int32)
        self.infoset_keys = infoset_keys  # per player: the input key of each infoset
        self.comment = comment
        self.outcome_names = outcome_names
        self.openspiel_actions = openspiel_actions
        self._spaces = self._build_sequence_spaces()
        if finish is not None:
            for key, value in finish(self).items():
                if key not in self.FINISHED:
                    raise TypeError(f"finish may give {', '.join(self.FINISHED)}, not {key!r}")
                setattr(self, key, value)
        self._sealed = True

    def __setattr__(self, key, value):
        if "_sealed" in self.__dict__:
            raise AttributeError(f"a Game is immutable: cannot set {key!r} after construction")
        super().__setattr__(key, value)

    def __delattr__(self, key):
        raise AttributeError(f"a Game is immutable: cannot delete {key!r}")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_tree(
        cls,
        *,
        num_players: int,
        parent: ArrayLike,
        action: ArrayLike,
        player: ArrayLike,
        infoset_key: ArrayLike,
        terminal_payoffs: ArrayLike,
        chance_prob: ArrayLike | None = None,
        labels: Labels | None = None,
        name: str = "game",
        player_names: Sequence[str] | None = None,
        infoset_describer: Callable[[int, int], str] | None = None,
        finish: Callable[[Game], dict] | None = None,
        comment: str = "",
    ) -> Game:
        """Validate and canonicalize a tree given in any topological order.

        Parameters
        ----------
        parent : int[N]
            ``parent[0] = -1`` (the root) and ``parent[v] < v`` for every other node.
        action : int[N]
            Index of the edge from ``parent[v]`` to ``v``; the children of a node carry the
            actions ``0 .. k-1`` exactly once.
        player : int[N]
            Acting player, :data:`CHANCE`, or :data:`TERMINAL` (exactly the childless nodes).
        infoset_key : int[N]
            Nodes of the same player with equal keys form one information set.
        terminal_payoffs : float[T, num_players]
            Payoffs of the terminal nodes, in the order they appear in the node arrays.
        chance_prob : float[N], optional
            Probability of the edge into ``v`` when ``parent[v]`` is a chance node.
        infoset_describer : callable, optional
            ``(player, key) -> str`` used in error messages to name an infoset.
        finish : callable, optional
            ``finish(game) -> dict``: final ``labels`` (and other descriptive attributes, see
            :class:`Game`) that depend on the canonical numbering (``game.original_order``,
            ``game.infoset_keys``); ``labels`` then only serve the construction's errors.
        comment : str, optional
            Kept as ``game.comment``.
        """
        parent = np.asarray(parent, dtype=np.int64)
        action = np.asarray(action, dtype=np.int64)
        player = np.asarray(player, dtype=np.int64)
        infoset_key = np.asarray(infoset_key, dtype=np.int64)
        n = len(parent)
        describe = infoset_describer or (lambda p, key: f"with key {key}")
        if n == 0:
            raise GameError("the game tree has no nodes")
        for arr_name, arr in (("action", action), ("player", player), ("infoset_key", infoset_key)):
            if len(arr) != n:
                raise GameError(f"'{arr_name}' has {len(arr)} entries, expected {n} (one per node)")
        if parent[0] != -1:
            raise GameError("node 0 must be the root (parent -1)")
        if n > 1 and (np.any(parent[1:] < 0) or np.any(parent[1:] >= np.arange(1, n))):
            bad = int(np.flatnonzero((parent[1:] < 0) | (parent[1:] >= np.arange(1, n)))[0]) + 1
            raise GameError(f"node {bad} has parent {parent[bad]}; parents must precede children")
        if num_players < 1:
            raise GameError("a game needs at least one player")
        valid_player = (player == CHANCE) | (player == TERMINAL) | ((player >= 0) & (player < num_players))
        if not valid_player.all():
            bad = int(np.flatnonzero(~valid_player)[0])
            raise GameError(f"node {bad} has player {player[bad]}, outside 0..{num_players - 1}")
        counts = np.bincount(parent[1:], minlength=n)
        childless = counts == 0
        if np.any(childless != (player == TERMINAL)):
            bad = int(np.flatnonzero(childless != (player == TERMINAL))[0])
            kind = "has no children but is not terminal" if childless[bad] else "is terminal but has children"
            raise GameError(f"node {bad} {kind}")

        building = f"building {name}"  # a stop request is honoured between the phases below
        check_stop(building)
        order = _breadth_first_order(parent, action)
        check_stop(building)
        new_pos = np.empty(n, dtype=np.int64)
        new_pos[order] = np.arange(n)
        parent_c = np.where(order == 0, -1, new_pos[parent[order]])
        action_c = action[order]
        player_c = player[order]
        key_c = infoset_key[order]
        # The input arrays and the temporaries go as soon as they are read: a generator hands
        # its arrays over (nobody else holds them), and on Goofspiel 5 (8.5M nodes) each is
        # 68 MB, of which this method held some twenty at its peak.
        del parent, action, player, infoset_key, new_pos, valid_player, counts
        # Actions of each node's children must be exactly 0..k-1.
        if n > 1:
            first_of_group = np.r_[True, parent_c[2:] != parent_c[1:-1]]
            group_start = np.maximum.accumulate(np.where(first_of_group, np.arange(1, n), 0))
            rank = np.arange(1, n) - group_start
            if np.any(action_c[1:] != rank):
                bad = int(np.flatnonzero(action_c[1:] != rank)[0]) + 1
                raise GameError(
                    f"the children of node {order[parent_c[bad]]} do not carry the "
                    f"actions 0..k-1 exactly once"
                )
            del first_of_group, group_start, rank
        action_c[0] = -1

        probs = np.ones(n) if chance_prob is None else np.asarray(chance_prob, dtype=np.float64)[order]
        chance_child = np.zeros(n, dtype=bool)
        chance_child[1:] = player_c[parent_c[1:]] == CHANCE
        probs = np.where(chance_child, probs, 1.0)
        if np.any(chance_child & ~(probs >= 0)):
            bad = int(np.flatnonzero(chance_child & ~(probs >= 0))[0])
            raise GameError(f"chance probability {probs[bad]} of node {order[bad]} is negative or NaN")
        sums = np.bincount(parent_c[1:], weights=probs[1:] * chance_child[1:], minlength=n)
        chance_nodes = np.flatnonzero(player_c == CHANCE)
        off = np.abs(sums[chance_nodes] - 1.0) > PROBABILITY_TOLERANCE
        if off.any():
            bad = chance_nodes[np.flatnonzero(off)[0]]
            raise GameError(f"chance probabilities at node {order[bad]} sum to {sums[bad]:.12g}, not 1")
        del chance_child, sums, chance_nodes, off

        terminal_payoffs = np.asarray(terminal_payoffs, dtype=np.float64)
        num_terminals = int(childless.sum())
        if terminal_payoffs.shape != (num_terminals, num_players):
            raise GameError(
                f"terminal_payoffs has shape {terminal_payoffs.shape}, expected "
                f"({num_terminals}, {num_players})"
            )
        if not np.all(np.isfinite(terminal_payoffs)):
            raise GameError("terminal payoffs must be finite numbers")
        if terminal_payoffs.size and np.abs(terminal_payoffs).max() > MAX_ABS_PAYOFF:
            raise GameError(
                f"terminal payoff {np.abs(terminal_payoffs).max():g} is too large "
                f"(payoffs must be at most {MAX_ABS_PAYOFF:g} in absolute value)"
            )
        # Terminals keep the order they had in the input (their rows), re-indexed to BFS order.
        old_terminal_row = np.full(n, -1, dtype=np.int64)
        old_terminal_row[childless] = np.arange(num_terminals)
        term_rows_in_bfs = old_terminal_row[order]
        is_term = term_rows_in_bfs >= 0
        terminal_index = np.full(n, -1, dtype=np.int64)
        terminal_index[is_term] = np.arange(num_terminals)
        payoffs = terminal_payoffs[term_rows_in_bfs[is_term]]
        del old_terminal_row, term_rows_in_bfs, is_term, childless, terminal_payoffs

        # Infosets per player, numbered by first appearance in breadth-first order (top-down).
        infoset_c = np.full(n, -1, dtype=np.int64)
        infoset_keys: list[np.ndarray] = []
        num_children_c = np.bincount(parent_c[1:], minlength=n)
        for p in range(num_players):
            check_stop(building)
            nodes = np.flatnonzero(player_c == p)
            if len(nodes) == 0:
                infoset_keys.append(np.zeros(0, dtype=np.int64))
                continue
            keys, first_idx, inverse = np.unique(key_c[nodes], return_index=True, return_inverse=True)
            rank_of_key = np.empty(len(keys), dtype=np.int64)
            rank_of_key[np.argsort(first_idx, kind="stable")] = np.arange(len(keys))
            infoset_c[nodes] = rank_of_key[inverse]
            infoset_keys.append(keys[np.argsort(first_idx, kind="stable")])
            k = num_children_c[nodes]
            lo = np.full(len(keys), np.iinfo(np.int64).max)
            hi = np.full(len(keys), -1)
            np.minimum.at(lo, inverse, k)
            np.maximum.at(hi, inverse, k)
            if np.any(lo != hi):
                j = int(np.flatnonzero(lo != hi)[0])
                raise GameError(
                    f"infoset {describe(p, int(keys[j]))} of player {p + 1}: its nodes "
                    f"disagree on the number of actions ({lo[j]} vs {hi[j]})"
                )

        del key_c, num_children_c
        check_stop(building)
        game = cls(
            num_players=num_players,
            parent=parent_c,
            action=action_c,
            player=player_c,
            infoset=infoset_c,
            chance_prob=probs,
            payoffs=payoffs,
            terminal_index=terminal_index,
            labels=labels,
            name=name,
            player_names=player_names,
            original_order=order,
            infoset_keys=infoset_keys,
            comment=comment,
            finish=finish,
        )
        return game

    # ------------------------------------------------------------------ basic facts
    @property
    def num_nodes(self) -> int:
        return len(self.parent)

    @property
    def num_terminals(self) -> int:
        return len(self.payoffs)

    @cached_property
    def has_chance(self) -> bool:
        return bool(np.any(self.player == CHANCE))

    @cached_property
    def depth(self) -> np.ndarray:
        """Depth of each node (root 0)."""
        depth = np.zeros(self.num_nodes, dtype=np.int32)
        for lo, hi in self.levels:
            if lo > 0:
                depth[lo:hi] = depth[self.parent[lo]] + 1
        return depth

    @cached_property
    def levels(self) -> list[tuple[int, int]]:
        """Half-open node ranges ``[lo, hi)`` of each depth (breadth-first order)."""
        bounds = [0, 1]
        while bounds[-1] < self.num_nodes:
            lo, hi = bounds[-2], bounds[-1]
            kids = self.num_children[lo:hi]
            bounds.append(hi + int(kids.sum(dtype=np.int64)))
        return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]

    def sequences(self, player: int) -> SequenceSpace:
        """The sequence space (treeplex) of ``player``."""
        if not 0 <= player < self.num_players:
            raise GameError(f"player {player} does not exist (players are 0..{self.num_players - 1})")
        return self._spaces[player]

    def node_sequences(self, player: int) -> np.ndarray:
        """For each node, the last sequence of ``player`` on the path from the root to it
        (excluding the node's own action), i.e. σ_player(v).

        Computed on each call (one vectorized pass per tree level), not kept: only the builders
        of models read it, a few times each, and a game would otherwise hold an int32 per node and
        player for as long as it lives (through every solver's iterations)."""
        space = self.sequences(player)
        seq = self._sequence_of_nodes(player, space.infoset_first_seq)
        seq.setflags(write=False)
        return seq

    def _sequence_of_nodes(self, player: int, first_seq: np.ndarray) -> np.ndarray:
        """σ_player(v) for every node, top-down, from the first sequence of each infoset."""
        seq = np.zeros(self.num_nodes, dtype=np.int32)
        for lo, hi in self.levels[1:]:
            par = self.parent[lo:hi]
            own = self.player[par] == player
            own_infoset = np.where(own, self.infoset[par], 0)
            seq[lo:hi] = (
                np.where(own, first_seq[own_infoset] + self.action[lo:hi], seq[par])
                if len(first_seq)
                else seq[par]
            )
        return seq

    @cached_property
    def reach_chance(self) -> np.ndarray:
        """Product of chance probabilities on the path to each node."""
        reach = np.ones(self.num_nodes)
        for lo, hi in self.levels[1:]:
            reach[lo:hi] = reach[self.parent[lo:hi]] * self.chance_prob[lo:hi]
        return reach

    @cached_property
    def connected_infosets(self) -> tuple[np.ndarray, np.ndarray]:
        """All connected infoset pairs ``(I1, I2)`` of a two-player game (Definition 1), sorted
        by ``I1`` then ``I2`` (see :func:`games.relevant.connected_infosets`)."""
        from .relevant import find_connected_infosets

        return find_connected_infosets(self)

    @cached_property
    def terminal_nodes(self) -> np.ndarray:
        """The terminal nodes in node order (int32, as every node array)."""
        return np.flatnonzero(self.terminal_index >= 0).astype(np.int32)

    @cached_property
    def is_zero_sum(self) -> bool:
        return bool(np.allclose(self.payoffs.sum(axis=1), 0.0, atol=1e-12))

    def infoset_nodes(self, player: int) -> tuple[np.ndarray, np.ndarray]:
        """CSR ``(indptr, nodes)``: the nodes of each infoset of ``player``."""
        nodes = np.flatnonzero(self.player == player)
        order = np.argsort(self.infoset[nodes], kind="stable")
        nodes = nodes[order]
        indptr = np.zeros(self.sequences(player).num_infosets + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.infoset[nodes], minlength=len(indptr) - 1), out=indptr[1:])
        return indptr, nodes

    @contextmanager
    def arrays_on_disk(self) -> Iterator[bool]:
        """Inside the block, the game's own arrays (node arrays, cached ones such as
        ``connected_infosets``, its labels' tables) are read-only memory maps of files in a
        temporary folder instead of memory; on leaving the block, however it ends, they are read
        back and the files removed.  Every value stays the same, and reading the game inside the
        block still works (it brings the pages read in from disk): a solver's iterations, which
        read only their own tables, hold none of the game's bytes (about 3 bytes per relevant
        pair on the Battleship instances, :mod:`efce.solvers.methods.efce`).

        Arrays that something besides the game also holds (a model's tables may keep a node
        array) stay in memory: parking them would free nothing, and their copy read back would
        be a second one.  Nothing is parked when the arrays are small or the temporary folder
        cannot take them (:class:`~efce.games.resources.memory.ParkedArrays`).

        Yields
        ------
        bool
            Whether the arrays were put on disk.
        """
        from efce.games.resources.memory import ParkedArrays

        owners = [self.__dict__] + ([vars(self.labels)] if hasattr(self.labels, "__dict__") else [])
        slots: list[tuple[dict, str, list[str], list[bool]]] = []
        arrays: dict[str, np.ndarray] = {}
        for o, owner in enumerate(owners):
            for key in list(owner):
                if _array_leaves(owner[key]) and _held_only_by_owner(owner, key):
                    leaves = _array_leaves(owner[key])
                    names = [f"{o}.{key}.{k}" for k in range(len(leaves))]
                    arrays.update(zip(names, leaves, strict=True))
                    slots.append((owner, key, names, [a.flags.writeable for a in leaves]))
                    del leaves
        if not arrays:  # nothing that the game alone holds
            yield False
            return
        parked = ParkedArrays(**cast("dict[str, Any]", arrays))  # names such as "0.parent.0"
        del arrays  # the files hold them now: these were the last references besides the game's
        try:
            if not parked.on_disk:
                yield False
                return
            # Owners' dictionaries are written directly: the game is immutable to its users,
            # and the values it shows do not change.
            for owner, key, names, _ in slots:
                owner[key] = _with_leaves(owner[key], iter([parked.mapped(n) for n in names]))
            yield True
        finally:
            if parked.on_disk:
                _read_back(parked, slots)
            parked.close()

    def players_without_decisions(self) -> list[int]:
        """The players (0-based) with no infoset: they never move in this game."""
        return [p for p in range(self.num_players) if self.sequences(p).num_infosets == 0]

    def require_decisions(self, method: str) -> None:
        """Refuse, before anything is built, a game in which no player ever decides.

        Raises
        ------
        GameError
            Naming the players without a decision and ``method``, which needs at least one.
        """
        idle = self.players_without_decisions()
        if len(idle) == self.num_players:
            who = ", ".join(self.player_names[p] for p in idle)
            raise GameError(
                f"{method} needs a game with at least one decision; {self.name} has "
                f"none (no infoset for {who}: only chance and terminal nodes)"
            )

    def infoset_label(self, player: int, infoset: int) -> str:
        return self.labels.infoset(self, player, infoset)

    def action_labels(self, player: int, infoset: int) -> list[str]:
        return self.labels.actions(self, player, infoset)

    def sequence_labels(self, player: int) -> list[str]:
        """Readable names of ``player``'s sequences: ``∅``, then the action label where action
        labels are unique for the player, else ``infoset/action``."""
        space = self.sequences(player)
        names = [
            (self.infoset_label(player, i), a)
            for i in range(space.num_infosets)
            for a in self.action_labels(player, i)
        ]
        unique = len({a for _, a in names}) == len(names)
        return ["∅"] + [a if unique else f"{i}/{a}" for i, a in names]

    def __repr__(self) -> str:
        sizes = ", ".join(f"{s.num_infosets} infosets/{s.num_sequences} sequences" for s in self._spaces)
        chance = ", chance" if self.has_chance else ""
        return f"Game({self.name!r}: {self.num_players} players{chance}, {self.num_nodes} nodes, {sizes})"

    # ------------------------------------------------------------------ sequence spaces
    def _build_sequence_spaces(self) -> list[SequenceSpace]:
        """Number sequences and check perfect recall (from σ_p(v) for every node, not kept).

        Perfect recall holds iff all nodes of an infoset share the player's parent sequence
        (induction over the player's earlier infosets gives equality of full own histories)."""
        spaces: list[SequenceSpace] = []
        for p in range(self.num_players):
            check_stop(f"building {self.name}")
            mine = self.player == p
            num_infosets = int(self.infoset[mine].max()) + 1 if mine.any() else 0
            num_actions = np.zeros(num_infosets, dtype=np.int32)
            num_actions[self.infoset[mine]] = self.num_children[mine]
            first_seq = np.ones(num_infosets, dtype=np.int32)
            if num_infosets:
                first_seq[1:] += np.cumsum(num_actions[:-1], dtype=np.int64).astype(np.int32)
            seq = self._sequence_of_nodes(p, first_seq)
            nodes = np.flatnonzero(mine)
            parent_seq_hi = np.full(num_infosets, -1, dtype=np.int64)
            np.maximum.at(parent_seq_hi, self.infoset[nodes], seq[nodes])
            lo_seq = np.full(num_infosets, np.iinfo(np.int64).max)
            np.minimum.at(lo_seq, self.infoset[nodes], seq[nodes])
            parent_seq = lo_seq
            broken = lo_seq != parent_seq_hi
            if broken.any():
                j = int(np.flatnonzero(broken)[0])
                raise GameError(
                    f"imperfect recall: player {p + 1}'s infoset '{self._safe_label(p, j)}' is reached "
                    f"through different own histories (sequences {lo_seq[j]} and {parent_seq_hi[j]})"
                )
            space = SequenceSpace(
                p, _frozen(parent_seq, np.int32), _frozen(first_seq, np.int32), _frozen(num_actions, np.int32)
            )
            # Top-down numbering is what makes single forward sweeps valid everywhere else.
            parent_infoset = space.seq_infoset[space.infoset_parent_seq]
            if np.any(parent_infoset >= np.arange(num_infosets)):
                j = int(np.flatnonzero(parent_infoset >= np.arange(num_infosets))[0])
                raise GameError(
                    f"imperfect recall: player {p + 1}'s infoset "
                    f"'{self._safe_label(p, j)}' lies below one of its own descendants"
                )
            spaces.append(space)
        return spaces

    def _safe_label(self, player: int, infoset: int) -> str:
        try:
            return self.labels.infoset(self, player, infoset)
        except Exception:  # labels may need the spaces being built; fall back to a plain name
            return f"{player + 1}:{infoset}"


def _breadth_first_order(parent: np.ndarray, action: np.ndarray) -> np.ndarray:
    """Canonical order: by depth, then the parent's new position, then action.

    Input already sorted by (parent, action) is breadth-first as it stands (the builder and
    most readers emit it that way), so it is returned unchanged without sorting."""
    n = len(parent)
    if n == 1 or (
        np.all(parent[2:] >= parent[1:-1])
        and np.all((parent[2:] != parent[1:-1]) | (action[2:] > action[1:-1]))
    ):
        return np.arange(n, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    for v_chunk in _topological_chunks(parent):
        depth[v_chunk] = depth[parent[v_chunk]] + 1
    new_pos = np.empty(n, dtype=np.int64)
    order_parts = [np.array([0], dtype=np.int64)]
    new_pos[0] = 0
    next_pos = 1
    by_depth = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[by_depth], np.arange(int(depth.max()) + 2))
    for d in range(1, int(depth.max()) + 1):
        nodes = by_depth[bounds[d] : bounds[d + 1]]
        nodes = nodes[np.lexsort((action[nodes], new_pos[parent[nodes]]))]
        new_pos[nodes] = np.arange(next_pos, next_pos + len(nodes))
        next_pos += len(nodes)
        order_parts.append(nodes)
    return np.concatenate(order_parts)


def _topological_chunks(parent: np.ndarray):
    """Yield node index arrays in an order where every node's parent was yielded before.

    Nodes are processed in waves: a wave is every node whose parent is already done."""
    n = len(parent)
    done = np.zeros(n, dtype=bool)
    done[0] = True
    remaining = np.arange(1, n)
    while len(remaining):
        ready = done[parent[remaining]]
        if not ready.any():  # cannot happen when parent[v] < v
            raise GameError("the parent array contains a cycle")
        wave = remaining[ready]
        yield wave
        done[wave] = True
        remaining = remaining[~ready]
