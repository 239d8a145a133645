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

JSON format (read by :func:`device_from_json`, written by :func:`device_to_json`)::

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
object.  Every plan must name an action at every infoset of its player.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from efce.errors import GameError
from efce.games.game import Game

#: Tolerance on the probabilities of a device summing to one.
DEVICE_TOLERANCE = 1e-9
#: Largest number of joint plans a solver writes as a device (``efce solve --device-out``): the
#: JSON file takes a few hundred bytes per joint plan, and the trigger methods' exact expansion
#: costs (iterations × joint plans) operations.
DEVICE_PLAN_LIMIT = 10**6


def check_device_size(count: int, what: str = "joint plans") -> None:
    """Refuse (one line) a device of more than :data:`DEVICE_PLAN_LIMIT` joint plans.

    Raises
    ------
    GameError
        ``count`` exceeds the limit.
    """
    if count > DEVICE_PLAN_LIMIT:
        raise GameError(
            f"the device would have {count:,} {what}, over the limit of "
            f"{DEVICE_PLAN_LIMIT:,} (solvers.evaluation.device.DEVICE_PLAN_LIMIT)"
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
    def from_counts(cls, plans, counts, merge: bool = True) -> Device:
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
    def from_player_plans(cls, game: Game, player_plans, probs) -> Device:
        """``player_plans[i]`` : int[K, num_infosets(i)] → one joint-plan matrix."""
        return cls(np.concatenate([np.asarray(p, dtype=np.int64) for p in player_plans], axis=1), probs)

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
                    f"'{game.infoset_label(p, j)}' but names no action there"
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
            return f"'{label}' at {position} (no unambiguous name: relabel it in the game file)"
        return f"'{name}'" if name == label else f"'{name}' (labelled '{label}')"

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
                f"{where}: infoset name '{key}' of player {player + 1} is ambiguous: it "
                f"could mean {len(found)} infosets; name the one you mean by: "
                f"{meanings} (see efce info GAME --infosets)"
            )
        labels = list(self.labels[player])
        listed = ", ".join(f"'{label}'" for label in labels[:8]) + (", ..." if len(labels) > 8 else "")
        raise GameError(
            f"{where}: player {player + 1} has no infoset labelled '{key}' (valid: "
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
                f"'{self.action_name(player, infoset, a)}' (action {a + 1}, labelled '{labels[a]}')"
                for a in found
            )
            raise GameError(
                f"{where}: action name '{text}' at {where_infoset} is ambiguous; name "
                f"the one you mean by: {meanings}"
            )
        valid = ", ".join(f"'{a}'" for a in labels)
        shown = f"'{action}'" if isinstance(action, str) else json.dumps(action)
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
    plans = np.zeros((len(entries), int(off[-1])), dtype=np.int64)
    probs = np.zeros(len(entries))
    n = game.num_players
    for k, entry in enumerate(entries):
        if not isinstance(entry, dict) or "p" not in entry or "plans" not in entry:
            raise GameError(f"device entry {k}: expected an object with keys 'p' and 'plans'")
        p = entry["p"]
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not np.isfinite(p):
            raise GameError(f"device entry {k}: probability {p!r} is not a number")
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
                        f"{names.describe_infoset(player, j)} twice ('{label}' is "
                        f"another name for it); name every infoset once"
                    )
                plans[k, off[player] + j] = names.find_action(player, j, action, where)
                seen[j] = True
            if not seen.all():
                missing = int(np.flatnonzero(~seen)[0])
                raise GameError(
                    f"device entry {k}: the plan of player {player + 1} names no "
                    f"action at infoset {names.describe_infoset(player, missing)} "
                    f"({int((~seen).sum())} infosets missing)"
                )
    if abs(probs.sum() - 1.0) > DEVICE_TOLERANCE:
        raise GameError(f"device: probabilities sum to {probs.sum():.12g}, not 1")
    return Device(plans, probs).validate(game)


def device_from_json(game: Game, path_or_text: str) -> Device:
    """Read a device from a JSON file path (or a JSON string starting with ``{``)."""
    text = path_or_text
    if not path_or_text.lstrip().startswith("{"):
        try:
            with open(path_or_text) as fh:
                text = fh.read()
        except OSError as exc:
            raise GameError(f"cannot read device file '{path_or_text}': {exc.strerror}") from None
    try:
        data = json.loads(text, object_pairs_hook=_refuse_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise GameError(f"device file is not valid JSON: {exc}") from None
    return device_from_dict(game, data)


def _refuse_duplicate_keys(pairs):
    """``object_pairs_hook`` for :func:`json.loads`: a key given twice in one object would
    otherwise silently keep the last value."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise GameError(
                f"device file: key '{key}' appears twice in one JSON object; give "
                f"each infoset (and each of 'p', 'plans') once"
            )
        out[key] = value
    return out


def device_to_dict(game: Game, device: Device) -> dict:
    """Inverse of :func:`device_from_dict`; ``-1`` entries are written with the first action.

    Infosets and actions are written by their unambiguous names (:func:`infoset_names`).

    Raises
    ------
    GameError
        When an infoset or action of the game has no unambiguous name.
    """
    off = infoset_offsets(game)
    out = []
    listing = infoset_names(game)
    for p, rows in enumerate(listing):
        for row in rows:
            if row["name"] is None or None in row["actions"]:
                raise GameError(
                    f"cannot write a device: player {p + 1}'s infoset at position "
                    f"{row['position']} or one of its actions has no unambiguous "
                    f"name; relabel the game's infosets and actions"
                )
    labels = [[(row["name"], row["actions"]) for row in rows] for rows in listing]
    for k in range(device.size):
        plans = []
        for p in range(game.num_players):
            row = device.plans[k, off[p] : off[p + 1]]
            plans.append({lab: acts[max(int(a), 0)] for (lab, acts), a in zip(labels[p], row, strict=True)})
        out.append({"p": float(device.probs[k]), "plans": plans})
    return {"device": out}
