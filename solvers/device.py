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

with labels as printed by ``efce info GAME --infosets`` (``game.infoset_label`` and
``game.action_labels``).  An infoset may also be named by position, ``"P:N"`` for player P's
N-th infoset counting from 0 in that listing; this is the only way to name infosets that share
a label (a unique label takes precedence over a positional reading of the same text).  Actions
given as JSON numbers match the label that reads the same (``3`` for ``"3"``).  Every plan must
name an action at every infoset of its player.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from efce.games.game import Game, GameError

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
        raise GameError(f"the device would have {count:,} {what}, over the limit of "
                        f"{DEVICE_PLAN_LIMIT:,} (solvers.device.DEVICE_PLAN_LIMIT)")


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
            raise GameError(f"device: plans {self.plans.shape} and probabilities "
                            f"{self.probs.shape} do not match")

    @property
    def size(self) -> int:
        return len(self.probs)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_counts(cls, plans, counts, merge: bool = True) -> "Device":
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
    def from_player_plans(cls, game: Game, player_plans, probs) -> "Device":
        """``player_plans[i]`` : int[K, num_infosets(i)] → one joint-plan matrix."""
        return cls(np.concatenate([np.asarray(p, dtype=np.int64) for p in player_plans], axis=1),
                   probs)

    # ------------------------------------------------------------------ views
    def player_plans(self, game: Game, player: int) -> np.ndarray:
        off = infoset_offsets(game)
        return self.plans[:, off[player]:off[player + 1]]

    def merged(self) -> "Device":
        """Merge identical rows (summing probabilities); drops zero-probability rows."""
        keep = self.probs > 0
        plans, probs = self.plans[keep], self.probs[keep]
        if len(plans) == 0:
            return Device(self.plans[:0], self.probs[:0])
        uniq, inverse = np.unique(plans, axis=0, return_inverse=True)
        merged = np.bincount(inverse.ravel(), weights=probs, minlength=len(uniq))
        return Device(uniq, merged)

    def reduced(self, game: Game) -> "Device":
        """Set actions at infosets a player's own plan does not reach to ``-1`` and merge."""
        plans = self.plans.copy()
        off = infoset_offsets(game)
        for p in range(game.num_players):
            block = plans[:, off[p]:off[p + 1]]
            reached = plans_reach_infosets(game, p, block)
            block[~reached] = -1
        return Device(plans, self.probs).merged()

    # ------------------------------------------------------------------ checks
    def validate(self, game: Game) -> "Device":
        off = infoset_offsets(game)
        if self.plans.shape[1] != off[-1]:
            raise GameError(f"device: joint plans have {self.plans.shape[1]} entries, the game has "
                            f"{int(off[-1])} infosets")
        if np.any(~np.isfinite(self.probs)) or np.any(self.probs < 0):
            raise GameError("device: probabilities must be finite and nonnegative")
        if abs(self.probs.sum() - 1.0) > DEVICE_TOLERANCE:
            raise GameError(f"device: probabilities sum to {self.probs.sum():.12g}, not 1")
        for p in range(game.num_players):
            block = self.plans[:, off[p]:off[p + 1]]
            num_actions = game.sequences(p).infoset_num_actions
            if np.any(block >= num_actions[None, :]) or np.any(block < -1):
                raise GameError(f"device: an action index of player {p + 1} is out of range")
            reached = plans_reach_infosets(game, p, block)
            if np.any(reached & (block < 0)):
                k, j = map(int, np.argwhere(reached & (block < 0))[0])
                raise GameError(f"device: plan {k} of player {p + 1} reaches infoset "
                                f"'{game.infoset_label(p, j)}' but names no action there")
        return self


# ---------------------------------------------------------------------- JSON
def _label_maps(game: Game) -> list[dict[str, list[int]]]:
    """Per player: infoset label -> the infosets carrying it (several when labels repeat)."""
    maps = []
    for p in range(game.num_players):
        infosets: dict[str, list[int]] = {}
        for i in range(game.sequences(p).num_infosets):
            infosets.setdefault(game.infoset_label(p, i), []).append(i)
        maps.append(infosets)
    return maps


_POSITIONAL = re.compile(r"(\d+):(\d+)", re.ASCII)


def _find_infoset(game: Game, maps, player: int, key, where: str) -> int:
    """The infoset of ``player`` that ``key`` names: its label when that label is unique, else
    the positional name ``P:N`` (player P = player + 1, N-th infoset from 0 in the game's order,
    the order of ``efce info GAME --infosets``)."""
    count = game.sequences(player).num_infosets
    positional = (f"{player + 1}:N with N from 0 to {count - 1}" if count > 1 else
                  f"{player + 1}:0" if count else "none")
    text = key if isinstance(key, str) else str(key)
    found = maps[player].get(text)
    if found is not None and len(found) == 1:
        return found[0]
    m = _POSITIONAL.fullmatch(text)
    if m and int(m.group(1)) == player + 1 and int(m.group(2)) < count:
        return int(m.group(2))
    if found is not None:
        names = ", ".join(f"{player + 1}:{i}" for i in found)
        raise GameError(f"{where}: player {player + 1} has {len(found)} infosets labelled "
                        f"'{text}' ({names}); name one by position ({positional})")
    labels = list(maps[player])
    listed = ", ".join(f"'{label}'" for label in labels[:8]) + (", ..." if len(labels) > 8 else "")
    raise GameError(f"{where}: player {player + 1} has no infoset labelled '{text}' (valid: "
                    f"{listed + ' (see efce info GAME --infosets)' if labels else 'none'}, "
                    f"or by position {positional})")


def _find_action(game: Game, action_maps, player: int, infoset: int, action, where: str) -> int:
    """The index of the action ``action`` names: its label; a JSON number matches the label
    that reads the same (``3`` for ``"3"``)."""
    amap = action_maps.get((player, infoset))
    if amap is None:
        amap = {a: i for i, a in enumerate(game.action_labels(player, infoset))}
        action_maps[(player, infoset)] = amap
    text = action
    if isinstance(action, (int, float)) and not isinstance(action, bool):
        text = str(int(action)) if float(action).is_integer() else str(action)
    if isinstance(text, str) and text in amap:
        return amap[text]
    valid = ", ".join(f"'{a}'" for a in amap)
    shown = f"'{action}'" if isinstance(action, str) else json.dumps(action)
    raise GameError(f"{where}: infoset '{game.infoset_label(player, infoset)}' of player "
                    f"{player + 1} has no action {shown} (valid actions: {valid})")


def device_from_dict(game: Game, data: Any) -> Device:
    """Parse the JSON structure described in the module doc (see :func:`device_from_json`)."""
    if not isinstance(data, dict) or "device" not in data:
        raise GameError("device file: expected an object with key 'device'")
    entries = data["device"]
    if not isinstance(entries, list) or not entries:
        raise GameError("device file: 'device' must be a nonempty list")
    maps = _label_maps(game)
    off = infoset_offsets(game)
    action_maps: dict[tuple[int, int], dict[str, int]] = {}
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
                raise GameError(f"device entry {k}: the plan of player {player + 1} must be an "
                                f"object mapping infoset labels to action labels")
            seen = np.zeros(off[player + 1] - off[player], dtype=bool)
            where = f"device entry {k}"
            for label, action in plan.items():
                j = _find_infoset(game, maps, player, label, where)
                if seen[j]:
                    raise GameError(f"{where}: the plan of player {player + 1} names infoset "
                                    f"'{label}' ({player + 1}:{j}) twice")
                plans[k, off[player] + j] = _find_action(game, action_maps, player, j, action, where)
                seen[j] = True
            if not seen.all():
                missing = int(np.flatnonzero(~seen)[0])
                raise GameError(f"device entry {k}: the plan of player {player + 1} names no "
                                f"action at infoset '{game.infoset_label(player, missing)}' "
                                f"({int((~seen).sum())} infosets missing)")
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
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GameError(f"device file is not valid JSON: {exc}") from None
    return device_from_dict(game, data)


def device_to_dict(game: Game, device: Device) -> dict:
    """Inverse of :func:`device_from_dict`; ``-1`` entries are written with the first action."""
    off = infoset_offsets(game)
    out = []
    maps = _label_maps(game)

    def name(p: int, j: int) -> str:  # repeated labels are written by position
        label = game.infoset_label(p, j)
        return label if len(maps[p][label]) == 1 else f"{p + 1}:{j}"

    labels = [[(name(p, j), game.action_labels(p, j))
               for j in range(off[p + 1] - off[p])] for p in range(game.num_players)]
    for k in range(device.size):
        plans = []
        for p in range(game.num_players):
            row = device.plans[k, off[p]:off[p + 1]]
            plans.append({lab: acts[max(int(a), 0)] for (lab, acts), a in zip(labels[p], row)})
        out.append({"p": float(device.probs[k]), "plans": plans})
    return {"device": out}
