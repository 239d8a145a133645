"""Correlation devices: probability distributions over joint pure (normal-form) plans.

A pure plan of player ``i`` picks one action at every infoset of ``i``.  A :class:`Device` stores
``K`` joint plans as one integer matrix ``plans[K, total_infosets]`` (the columns of player ``i``
are ``offsets[i] .. offsets[i+1]-1``, one per infoset in the game's numbering, the entry being an
action index) and their probabilities ``probs[K]``.

Entries may be ``-1`` at infosets the player's *own* plan does not reach: such actions never
influence play or any trigger agent (triggers fire only at infosets the plan reaches), so the
*reduced* plans (Celli et al. 2020, and the reduced normal form in general) carry the same
information.  :meth:`Device.reduced` maps plans to this canonical form and merges duplicates,
which is how the empirical frequency of ICFR stays small.

JSON format (read by :func:`device_from_json`, written by :func:`write_device`)::

    {"device": [{"p": 0.25, "plans": [{"<infoset label>": "<action label>", ...},   # player 1
                                       {...}, ...]},                                   # player 2..
                ...]}

with the names printed by ``efce info GAME --infosets`` (:func:`infoset_names`).  One numbering
is used everywhere: player P's infosets are at positions ``P:1``, ``P:2``, ... in the game's
order (the order of that listing, and the numbers ``efce`` writes to ``.efg`` files); unnamed
infosets of a ``.efg`` file are labelled by that position.  An infoset is named by its label or
by its position ``"P:N"``; actions by their label or their position ``"#N"`` (from 1), and a
JSON number matches the action label that reads the same (``3`` for ``"3"``).  A name that
could mean two infosets (a repeated label, or a label reading as another infoset's position) or
two actions is refused with the unambiguous names of both, as is a JSON key given twice in one
object.  Every plan must name an action at every infoset of its player that it reaches; it may
leave out the others (they cannot matter), and the writer does: each plan it writes is reduced
to the infosets it reaches, so a file costs what its plans hold.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from efce.errors import GameError
from efce.games.formats.jsonfile import read_json, shorten
from efce.games.game import Game

if TYPE_CHECKING:  # annotations only: device_gaps imports this module
    from efce.solvers.evaluation.device_gaps import FactoredDevice

#: Tolerance on the probabilities of a device summing to one.
DEVICE_TOLERANCE = 1e-9
#: Largest device file a solver writes (``efce solve --device-out``) and ``efce gap`` reads, in
#: bytes.  A file names, for every joint plan, an action at each infoset the plan reaches; its
#: size is bounded before the run (:func:`device_bytes_bound`).
DEVICE_BYTES_LIMIT = 256 * 2**20


def check_device_size(game: Game, count: int, what: str = "joint plans") -> None:
    """Refuse (one line) a device of ``count`` joint plans whose file could exceed
    :data:`DEVICE_BYTES_LIMIT`, before any of it is computed (:func:`device_bytes_bound`).

    Raises
    ------
    GameError
        Naming both sizes and the limit.
    """
    size = device_bytes_bound(game, count)
    if size > DEVICE_BYTES_LIMIT:
        raise GameError(
            f"the device file could take {_mib(size)} ({count:,} {what} of up to "
            f"{_mib(size // max(count, 1))} each), over the limit of {_mib(DEVICE_BYTES_LIMIT)} "
            f"(solvers.evaluation.device.DEVICE_BYTES_LIMIT); run fewer iterations"
        )


def _mib(size: int) -> str:
    return f"{size / 2**20:,.1f} MiB" if size >= 2**20 else f"{size:,} bytes"


#: Bytes of a joint plan's entry around its plans: ``{"p": <float>, "plans": [...]}, ``.
_ENTRY_BYTES = len('{"p": , "plans": []}, ') + 24


def device_bytes_bound(game: Game, count: int) -> int:
    """Most bytes :func:`write_device` takes for ``count`` joint plans: each player's largest
    *reduced* plan (the infosets it reaches, each with its name and an action's), found by a
    pass over the treeplex from the leaves (the largest choice at every infoset), plus each
    entry's frame.

    Raises
    ------
    GameError
        An infoset or action without an unambiguous name (:func:`check_device_names`).
    """
    check_device_names(game)
    listing = infoset_names(game)
    per_plan = _ENTRY_BYTES
    for p, rows in enumerate(listing):
        space = game.sequences(p)
        below = [0] * space.num_sequences  # largest text of the infosets below each sequence
        first = space.infoset_first_seq
        for j in range(space.num_infosets - 1, -1, -1):  # children before parents
            key = len(_json_text(rows[j]["name"])) + 2  # '"name": '
            best = max(
                len(_json_text(action)) + 2 + below[int(first[j]) + a]  # '"action", '
                for a, action in enumerate(rows[j]["actions"])
            )
            below[int(space.infoset_parent_seq[j])] += key + best
        per_plan += 2 + below[0] + 2  # '{', '}', ', '
    return count * per_plan


#: Bytes of a device file around its entries: ``{"device": [`` and ``]}``.
DEVICE_FRAME_BYTES = len('{"device": [') + len("]}")


def reduced_plan_texts(
    game: Game, player: int, plans: np.ndarray, listing: list[list[dict]] | None = None
) -> list[str]:
    """The JSON text a device file gives each of ``player``'s ``plans`` (rows: an action index per
    infoset, ``-1`` where unset): the infosets the plan reaches, each with its chosen action.

    ``listing``: :func:`infoset_names` of ``game``, when the caller has it already."""
    listing = infoset_names(game) if listing is None else listing
    table = np.asarray(plans)
    reached = plans_reach_infosets(game, player, table) & (table >= 0)
    keys = [_json_text(row["name"]) for row in listing[player]]
    actions = [[_json_text(a) for a in row["actions"]] for row in listing[player]]
    return [
        "{" + ", ".join(f"{keys[j]}: {actions[j][int(plan[j])]}" for j in np.flatnonzero(live)) + "}"
        for plan, live in zip(table, reached, strict=True)
    ]


def joint_entry_bytes(plan_bytes: int, num_players: int) -> int:
    """Most bytes of a device file's entry for one joint plan whose players' plan texts
    (:func:`reduced_plan_texts`) take ``plan_bytes`` in all: its frame, the probability's text
    (at most 24 characters) and the separators."""
    return _ENTRY_BYTES + plan_bytes + 2 * max(num_players - 1, 0)


def _json_text(value: str) -> str:
    return json.dumps(value)


def check_device_names(game: Game) -> None:
    """Refuse, before a run whose distribution is to be written, a game with an infoset or
    action that has no unambiguous name in device files (:func:`infoset_names`).

    Raises
    ------
    GameError
        Naming the first such infoset by its position.
    """
    for p, rows in enumerate(infoset_names(game)):
        for row in rows:
            if row["name"] is None or None in row["actions"]:
                raise GameError(
                    f"cannot write a device of {shorten(game.name)}: player {p + 1}'s infoset at "
                    f"position {row['position']} or one of its actions has no unambiguous name; "
                    f"relabel the game's infosets and actions"
                )


def infoset_offsets(game: Game) -> np.ndarray:
    """``offsets[i]`` = first column of player ``i`` in a joint-plan row; ``offsets[-1]`` = width."""
    sizes = [game.sequences(p).num_infosets for p in range(game.num_players)]
    out = np.zeros(game.num_players + 1, dtype=np.int64)
    np.cumsum(sizes, out=out[1:])
    return out


def plays_sequences(game: Game, player: int, plans: np.ndarray) -> np.ndarray:
    """``plays[k, σ]``: does pure plan ``plans[k]`` (int[K, num_infosets] of ``player``, ``-1``
    allowed where unreached) play every action of sequence ``σ``?  bool[K, num_sequences]."""
    space = game.sequences(player)
    plans = np.asarray(plans)
    K = plans.shape[0]
    plays = np.zeros((K, space.num_sequences), dtype=bool)
    plays[:, 0] = True
    depth = space.infoset_depth
    for d in range(int(depth.max()) + 1 if space.num_infosets else 0):
        J = np.flatnonzero(depth == d)
        reached = plays[:, space.infoset_parent_seq[J]]  # [K, |J|]
        act = plans[:, J]
        ok = reached & (act >= 0)
        rows, cols = np.nonzero(ok)
        plays[rows, space.infoset_first_seq[J][cols] + act[rows, cols]] = True
    return plays


def plans_reach_infosets(game: Game, player: int, plans: np.ndarray) -> np.ndarray:
    """bool[K, num_infosets]: does each plan reach each infoset of ``player``?"""
    plays = plays_sequences(game, player, plans)
    return plays[:, game.sequences(player).infoset_parent_seq]


@dataclass(eq=False)
class Device:
    """A distribution over joint pure plans.

    ``plans`` : int[K, total_infosets] (see module doc), ``probs`` : float[K] (nonnegative,
    summing to one).  Build with :meth:`from_counts`, :meth:`from_player_plans` or
    :func:`device_from_json`; :meth:`validate` checks a device against its game.
    """

    plans: np.ndarray
    probs: np.ndarray

    def __post_init__(self):
        self.plans = np.ascontiguousarray(self.plans, dtype=np.int64)
        self.probs = np.ascontiguousarray(self.probs, dtype=np.float64)
        if self.plans.ndim != 2 or self.probs.shape != (self.plans.shape[0],):
            raise GameError(
                f"device: plans {self.plans.shape} and probabilities {self.probs.shape} do not match"
            )

    @property
    def size(self) -> int:
        return len(self.probs)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_counts(cls, plans: ArrayLike, counts: ArrayLike, merge: bool = True) -> Device:
        """Empirical distribution: ``counts[k]`` occurrences of joint plan ``plans[k]``."""
        plans = np.asarray(plans, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.float64)
        if plans.ndim != 2 or counts.shape != (plans.shape[0],):
            raise GameError("device: one count per joint plan is needed")
        if np.any(counts < 0):
            raise GameError("device: negative count")
        total = counts.sum()
        if total <= 0:
            raise GameError("device: counts sum to 0")
        dev = cls(plans, counts / total)
        return dev.merged() if merge else dev

    @classmethod
    def from_player_plans(cls, game: Game, player_plans: Sequence[ArrayLike], probs: ArrayLike) -> Device:
        """``player_plans[i]`` : int[K, num_infosets(i)] → one joint-plan matrix."""
        return cls(
            np.concatenate([np.asarray(p, dtype=np.int64) for p in player_plans], axis=1),
            np.ascontiguousarray(probs, dtype=np.float64),
        )

    # ------------------------------------------------------------------ views
    def player_plans(self, game: Game, player: int) -> np.ndarray:
        off = infoset_offsets(game)
        return self.plans[:, off[player] : off[player + 1]]

    def merged(self) -> Device:
        """Merge identical rows (summing probabilities); drops zero-probability rows."""
        keep = self.probs > 0
        plans, probs = self.plans[keep], self.probs[keep]
        if len(plans) == 0:
            return Device(self.plans[:0], self.probs[:0])
        uniq, inverse = np.unique(plans, axis=0, return_inverse=True)
        merged = np.bincount(inverse.ravel(), weights=probs, minlength=len(uniq))
        return Device(uniq, merged)

    def reduced(self, game: Game) -> Device:
        """Set actions at infosets a player's own plan does not reach to ``-1`` and merge."""
        plans = self.plans.copy()
        off = infoset_offsets(game)
        for p in range(game.num_players):
            block = plans[:, off[p] : off[p + 1]]
            reached = plans_reach_infosets(game, p, block)
            block[~reached] = -1
        return Device(plans, self.probs).merged()

    # ------------------------------------------------------------------ checks
    def validate(self, game: Game) -> Device:
        """This device, checked against ``game``: one entry per infoset of every player,
        probabilities finite, nonnegative and summing to one, every action index in range, and
        an action at every infoset that a plan reaches.

        Raises
        ------
        GameError
            The device does not fit the game.
        """
        off = infoset_offsets(game)
        if self.plans.shape[1] != off[-1]:
            raise GameError(
                f"device: joint plans have {self.plans.shape[1]} entries, the game has "
                f"{int(off[-1])} infosets"
            )
        if np.any(~np.isfinite(self.probs)) or np.any(self.probs < 0):
            raise GameError("device: probabilities must be finite and nonnegative")
        if abs(self.probs.sum() - 1.0) > DEVICE_TOLERANCE:
            raise GameError(f"device: probabilities sum to {self.probs.sum():.12g}, not 1")
        for p in range(game.num_players):
            block = self.plans[:, off[p] : off[p + 1]]
            num_actions = game.sequences(p).infoset_num_actions
            if np.any(block >= num_actions[None, :]) or np.any(block < -1):
                raise GameError(f"device: an action index of player {p + 1} is out of range")
            reached = plans_reach_infosets(game, p, block)
            if np.any(reached & (block < 0)):
                k, j = map(int, np.argwhere(reached & (block < 0))[0])
                raise GameError(
                    f"device: plan {k} of player {p + 1} reaches infoset "
                    f"'{shorten(game.infoset_label(p, j))}' but names no action there"
                )
        return self


# ---------------------------------------------------------------------- JSON
_POSITIONAL = re.compile(r"([1-9][0-9]*):([1-9][0-9]*)", re.ASCII)
_ACTION_POSITION = re.compile(r"#([1-9][0-9]*)", re.ASCII)


class _Names:
    """How device files name the infosets and actions of one game (see the module doc).

    A name resolves to the set of infosets (actions) it could mean: those carrying it as their
    label, plus the one at that position when it reads as a positional name (``P:N`` for
    infosets, ``#N`` for actions, both counted from 1).  A name is accepted only when that set
    has exactly one member, so a label can never silently shadow a position or the reverse.
    """

    def __init__(self, game: Game):
        self.game = game
        self.labels = []  # per player: label -> infosets carrying it
        for p in range(game.num_players):
            infosets: dict[str, list[int]] = {}
            for i in range(game.sequences(p).num_infosets):
                infosets.setdefault(game.infoset_label(p, i), []).append(i)
            self.labels.append(infosets)
        self._actions: dict[tuple[int, int], dict[str, list[int]]] = {}
        self._names: dict[int, list[str | None]] = {}

    # ---------------------------------------------------------------- infosets
    def infoset_candidates(self, player: int, text: str) -> list[int]:
        found = set(self.labels[player].get(text, ()))
        m = _POSITIONAL.fullmatch(text)
        if m and int(m.group(1)) == player + 1 and int(m.group(2)) <= self.count(player):
            found.add(int(m.group(2)) - 1)
        return sorted(found)

    def count(self, player: int) -> int:
        return self.game.sequences(player).num_infosets

    def infoset_name(self, player: int, infoset: int) -> str | None:
        """The name that means exactly this infoset: its label when that is unambiguous, else
        its position ``P:N``; None when both are ambiguous (labels that read as positions of
        other infosets and repeat — the file's labels must then be changed)."""
        names = self._names.get(player)
        if names is None:
            names = []
            for i in range(self.count(player)):
                label = self.game.infoset_label(player, i)
                positional = f"{player + 1}:{i + 1}"
                names.append(
                    label
                    if self.infoset_candidates(player, label) == [i]
                    else positional
                    if self.infoset_candidates(player, positional) == [i]
                    else None
                )
            self._names[player] = names
        return names[infoset]

    def describe_infoset(self, player: int, infoset: int) -> str:
        name = self.infoset_name(player, infoset)
        label = self.game.infoset_label(player, infoset)
        position = f"position {player + 1}:{infoset + 1}"
        if name is None:
            return f"'{shorten(label)}' at {position} (no unambiguous name: relabel it in the game file)"
        if name == label:
            return f"'{shorten(name)}'"
        return f"'{shorten(name)}' (labelled '{shorten(label)}')"

    def find_infoset(self, player: int, key: str, where: str) -> int:
        """The infoset of ``player`` that ``key`` names; refuses unknown and ambiguous names."""
        found = self.infoset_candidates(player, key)
        if len(found) == 1:
            return found[0]
        count = self.count(player)
        positional = (
            f"{player + 1}:N with N from 1 to {count}"
            if count > 1
            else f"{player + 1}:1"
            if count
            else "none"
        )
        if found:
            meanings = "; ".join(self.describe_infoset(player, i) for i in found)
            raise GameError(
                f"{where}: infoset name '{shorten(key)}' of player {player + 1} is ambiguous: it "
                f"could mean {len(found)} infosets; name the one you mean by: "
                f"{meanings} (see efce info GAME --infosets)"
            )
        labels = list(self.labels[player])
        listed = ", ".join(f"'{shorten(label)}'" for label in labels[:8]) + (
            ", ..." if len(labels) > 8 else ""
        )
        raise GameError(
            f"{where}: player {player + 1} has no infoset labelled '{shorten(key)}' (valid: "
            f"{listed + ' (see efce info GAME --infosets)' if labels else 'none'}, "
            f"or by position {positional})"
        )

    # ---------------------------------------------------------------- actions
    def action_labels(self, player: int, infoset: int) -> dict[str, list[int]]:
        amap = self._actions.get((player, infoset))
        if amap is None:
            amap = {}
            for i, a in enumerate(self.game.action_labels(player, infoset)):
                amap.setdefault(a, []).append(i)
            self._actions[(player, infoset)] = amap
        return amap

    def action_candidates(self, player: int, infoset: int, text: str) -> list[int]:
        found = set(self.action_labels(player, infoset).get(text, ()))
        m = _ACTION_POSITION.fullmatch(text)
        if m and int(m.group(1)) <= self.game.sequences(player).infoset_num_actions[infoset]:
            found.add(int(m.group(1)) - 1)
        return sorted(found)

    def action_name(self, player: int, infoset: int, action: int) -> str | None:
        """The action's label when unambiguous, else its position ``#N``, else None."""
        label = self.game.action_labels(player, infoset)[action]
        if self.action_candidates(player, infoset, label) == [action]:
            return label
        positional = f"#{action + 1}"
        return positional if self.action_candidates(player, infoset, positional) == [action] else None

    def _shown_action(self, player: int, infoset: int, action: int) -> str:
        """An action in a message: its unambiguous name, or its position when it has none."""
        name = self.action_name(player, infoset, action)
        if name is None:
            return f"the action at position {action + 1} (no unambiguous name: relabel it in the game file)"
        return f"'{shorten(name)}'"

    def find_action(self, player: int, infoset: int, action, where: str) -> int:
        """The index of the action ``action`` names: its label or its position ``#N`` (from 1);
        a JSON number matches the label that reads the same (``3`` for ``"3"``)."""
        text = action
        if isinstance(action, (int, float)) and not isinstance(action, bool):
            text = str(int(action)) if float(action).is_integer() else str(action)
        where_infoset = f"infoset {self.describe_infoset(player, infoset)} of player {player + 1}"
        found = self.action_candidates(player, infoset, text) if isinstance(text, str) else []
        if len(found) == 1:
            return found[0]
        labels = self.game.action_labels(player, infoset)
        if found:
            meanings = "; ".join(
                f"{self._shown_action(player, infoset, a)} (action {a + 1}, labelled '{shorten(labels[a])}')"
                for a in found
            )
            raise GameError(
                f"{where}: action name '{shorten(text)}' at {where_infoset} is ambiguous; name "
                f"the one you mean by: {meanings}"
            )
        valid = ", ".join(f"'{shorten(a)}'" for a in labels[:20]) + (", ..." if len(labels) > 20 else "")
        shown = f"'{shorten(action)}'" if isinstance(action, str) else shorten(json.dumps(action))
        raise GameError(
            f"{where}: {where_infoset} has no action {shown} (valid actions: {valid}, "
            f"or by position #1 to #{len(labels)})"
        )


def infoset_names(game: Game) -> list[list[dict]]:
    """The exact names device files use for every infoset and action of ``game``.

    Returns
    -------
    list of list of dict
        Per player, in the game's infoset order (positions ``P:1``, ``P:2``, ...), one
        ``{"name", "label", "position", "actions", "action_labels"}`` per infoset: ``name`` is
        the infoset's label when that names it unambiguously, else its position ``P:N``;
        ``actions`` are the action names (label, else ``#N``).  A name is None only when
        neither form is unambiguous (labels that repeat and read as other infosets' positions).
    """
    names = _Names(game)
    out = []
    for p in range(game.num_players):
        rows = []
        for i in range(names.count(p)):
            labels = game.action_labels(p, i)
            rows.append(
                {
                    "name": names.infoset_name(p, i),
                    "label": game.infoset_label(p, i),
                    "position": f"{p + 1}:{i + 1}",
                    "actions": [names.action_name(p, i, a) for a in range(len(labels))],
                    "action_labels": list(labels),
                }
            )
        out.append(rows)
    return out


def device_from_dict(game: Game, data: Any) -> Device:
    """Parse the JSON structure described in the module doc (see :func:`device_from_json`)."""
    if not isinstance(data, dict) or "device" not in data:
        raise GameError("device file: expected an object with key 'device'")
    entries = data["device"]
    if not isinstance(entries, list) or not entries:
        raise GameError("device file: 'device' must be a nonempty list")
    names = _Names(game)
    off = infoset_offsets(game)
    plans = np.full((len(entries), int(off[-1])), -1, dtype=np.int64)  # -1: not named
    probs = np.zeros(len(entries))
    n = game.num_players
    for k, entry in enumerate(entries):
        if not isinstance(entry, dict) or "p" not in entry or "plans" not in entry:
            raise GameError(f"device entry {k}: expected an object with keys 'p' and 'plans'")
        p = entry["p"]
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not np.isfinite(p):
            raise GameError(f"device entry {k}: probability {shorten(repr(p))} is not a number")
        if p < 0:
            raise GameError(f"device entry {k}: negative probability {p}")
        probs[k] = p
        pl = entry["plans"]
        if not isinstance(pl, list) or len(pl) != n:
            got = len(pl) if isinstance(pl, list) else type(pl).__name__
            raise GameError(f"device entry {k}: expected {n} plans (one per player), got {got}")
        for player, plan in enumerate(pl):
            if not isinstance(plan, dict):
                raise GameError(
                    f"device entry {k}: the plan of player {player + 1} must be an "
                    f"object mapping infoset labels to action labels"
                )
            seen = np.zeros(off[player + 1] - off[player], dtype=bool)
            where = f"device entry {k}"
            for label, action in plan.items():
                j = names.find_infoset(player, label, where)
                if seen[j]:
                    raise GameError(
                        f"{where}: the plan of player {player + 1} names infoset "
                        f"{names.describe_infoset(player, j)} twice ('{shorten(label)}' is "
                        f"another name for it); name every infoset once"
                    )
                plans[k, off[player] + j] = names.find_action(player, j, action, where)
                seen[j] = True
    for player in range(n):  # a plan names an action at least at every infoset it reaches
        block = plans[:, off[player] : off[player + 1]]
        missing = plans_reach_infosets(game, player, block) & (block < 0)
        if missing.any():
            k, j = map(int, np.argwhere(missing)[0])
            raise GameError(
                f"device entry {k}: the plan of player {player + 1} names no action at infoset "
                f"{names.describe_infoset(player, j)}, which it reaches "
                f"({int(missing[k].sum())} reached infosets missing)"
            )
    if abs(probs.sum() - 1.0) > DEVICE_TOLERANCE:
        raise GameError(f"device: probabilities sum to {probs.sum():.12g}, not 1")
    return Device(plans, probs).validate(game)


def device_from_json(game: Game, path_or_text: str) -> Device:
    """Read a device from a JSON file path (or a JSON string starting with ``{``), through the
    guarded reader (:func:`games.formats.jsonfile.read_json`: size at most
    :data:`DEVICE_BYTES_LIMIT`, UTF-8, nesting, numbers in range, no key twice).

    Raises
    ------
    GameError
        A file that cannot be read or is not such JSON, or a device that does not fit the game.
    """
    source: str | bytes
    if path_or_text.lstrip().startswith("{"):
        source, what = path_or_text.encode("utf-8", "surrogatepass"), "device file"
    else:
        source, what = path_or_text, f"device file '{shorten(path_or_text)}'"
    data = read_json(source, what, max_bytes=DEVICE_BYTES_LIMIT, object_pairs_hook=_refuse_duplicate_keys)
    return device_from_dict(game, data)


def _refuse_duplicate_keys(pairs):
    """``object_pairs_hook`` for :func:`json.loads`: a key given twice in one object would
    otherwise silently keep the last value."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise GameError(
                f"device file: key '{shorten(key)}' appears twice in one JSON object; give "
                f"each infoset (and each of 'p', 'plans') once"
            )
        out[key] = value
    return out


def device_to_dict(game: Game, device: Device) -> dict:
    """Inverse of :func:`device_from_dict`: each plan names the infosets it reaches (its
    *reduced* form; entries at infosets it does not reach are left out).

    Infosets and actions are written by their unambiguous names (:func:`infoset_names`).

    Raises
    ------
    GameError
        When an infoset or action of the game has no unambiguous name.
    """
    return json.loads("".join(_device_json(game, device)))


def write_device(game: Game, device: Device | FactoredDevice, fh: IO[str]) -> int:
    """Write ``device`` (a :class:`Device`, or any object with per-player ``tables`` of plans,
    joint ``ids`` and ``probs``, as :class:`~solvers.evaluation.device_gaps.FactoredDevice`) as
    device JSON to the text file ``fh``, one joint plan at a time, each plan reduced to the
    infosets it reaches; the file is at most :func:`device_bytes_bound` bytes.

    Returns
    -------
    int
        The number of joint plans written.

    Raises
    ------
    GameError
        When an infoset or action of the game has no unambiguous name.
    """
    for piece in _device_json(game, device):
        fh.write(piece)
    return len(device.probs)


def _device_json(game: Game, device):
    """The device's JSON text in pieces: the JSON text of each distinct reduced plan is made
    once, and each joint plan's entry joins the texts of its players' plans."""
    check_device_names(game)
    if isinstance(device, Device):
        off = infoset_offsets(game)
        tables, player_ids = [], []
        for p in range(game.num_players):
            uniq, inverse = np.unique(device.plans[:, off[p] : off[p + 1]], axis=0, return_inverse=True)
            tables.append(uniq)
            player_ids.append(inverse.ravel())
        ids = np.stack(player_ids, axis=1) if player_ids else np.zeros((device.size, 0), np.int64)
        probs = device.probs
    else:
        tables, ids, probs = device.tables, device.ids, device.probs
    listing = infoset_names(game)
    texts = [reduced_plan_texts(game, p, table, listing) for p, table in enumerate(tables)]
    yield '{"device": ['
    for k in range(len(probs)):
        plans = ", ".join(texts[p][int(ids[k, p])] for p in range(len(texts)))
        yield f'{", " if k else ""}{{"p": {float(probs[k])!r}, "plans": [{plans}]}}'
    yield "]}"
