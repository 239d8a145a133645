"""Equilibrium gaps of a correlation device (a distribution over joint pure plans), any number of
players, chance included.

All gaps are in raw payoff units: the largest expected gain of a deviation over all players and
trigger agents, clipped below at 0 (Celli, Marchesi, Farina, Gatti 2020):

* **EFCE** (Definition 1-2, equations (6)-(7)): for player ``i`` and sequence ``σ = (I, a)``, the
  trigger agent follows recommendations until it reaches ``I`` *and* is recommended ``a``, then
  plays the best plan from ``I`` on.  Gain
  ``max_π̂ Σ_{z∈Z(I)} p1(z) u_i(z) − Σ_{z∈Z(I,a)} q(z) u_i(z)``.
* **EFCCE** (Definition 3-4, equations (8)-(10)): the agent deviates on reaching ``I`` (before
  seeing the recommendation).  Gain ``max_π̂ Σ_{z∈Z(I)} p(z) u_i(z) − Σ_{z∈Z(I)} q(z) u_i(z)``.
* **NFCCE**: the best pure plan against the marginal of the others, minus the utility of
  following.

Algorithm (per player ``i``).  For a terminal ``z`` with ``τ = σ_i(z)`` let ``I_0, …, I_{d-1}`` be
player ``i``'s infosets on the path to ``z`` and ``a_j`` the action taken at ``I_j``.  A joint plan
``π`` with ``ρ^{π_{-i}}_z = 1`` reaches ``I_j`` iff ``π_i(I_m) = a_m`` for all ``m < j``; in that
case it triggers the EFCE agent ``(I_j, π_i(I_j))`` and the EFCCE agent ``I_j``.  A compiled
depth-first walk per joint plan (opponents follow their plan, chance and player ``i`` branch;
:func:`efce.solvers.backends.cpu.device.device_deviation_sums`) accumulates
``L[τ, j+1, b] += p(π) p_c(z) u_i(z)`` for the trigger at depth ``j`` with recommended action ``b``
(slot ``0`` is the always-active "trigger" at the root, for the NFCCE), and the following
values.  A single bottom-up pass of best responses over player ``i``'s infosets, vectorized over
all ``(slot, b)`` channels at once, then gives every trigger's deviation value at
its own infoset.  Cost: ``O(Σ_π |nodes consistent with π_{-i}| · depth)`` plus
``O(|Σ_i| · depth · |A|)`` for the induction; pure plans of a player are never enumerated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from efce.games.game import Game
from efce.solvers.backends.protocol import cpu_backend
from efce.solvers.evaluation.device import Device, infoset_offsets, plays_sequences

if TYPE_CHECKING:  # annotations only
    from efce.games.relevant import RelevantPairs


@dataclass
class DeviceGaps:
    """Gaps (raw payoff units, clipped at 0), per-player best gains (unclipped), utilities."""

    efce: float
    efcce: float
    nfcce: float
    utilities: np.ndarray
    efce_gains: list  # per player: gain per sequence (index 0 unused, -inf)
    efcce_gains: list  # per player: gain per infoset
    nfcce_gains: np.ndarray  # per player

    @property
    def welfare(self) -> float:
        return float(self.utilities.sum())

    def to_dict(self) -> dict:
        return {
            "efce": self.efce,
            "efcce": self.efcce,
            "nfcce": self.nfcce,
            "welfare": self.welfare,
            "utilities": [float(u) for u in self.utilities],
        }


@dataclass(eq=False)
class FactoredDevice:
    """A device stored as per-player tables of distinct plans plus joint rows of indices:
    joint plan ``k`` = ``(tables[0][ids[k, 0]], …, tables[n-1][ids[k, n-1]])`` with probability
    ``probs[k]``.  Tables are small-int arrays (``-1`` where the player's plan does not reach)."""

    tables: list
    ids: np.ndarray
    probs: np.ndarray

    @classmethod
    def from_device(cls, game: Game, device: Device) -> FactoredDevice:
        off = infoset_offsets(game)
        tables, ids = [], []
        for p in range(game.num_players):
            block = device.plans[:, off[p] : off[p + 1]]
            uniq, inv = np.unique(block, axis=0, return_inverse=True)
            tables.append(uniq)
            ids.append(inv.ravel())
        return cls(tables, np.stack(ids, axis=1), np.asarray(device.probs, dtype=np.float64))

    def to_device(self) -> Device:
        return Device(
            np.concatenate([t[self.ids[:, p]] for p, t in enumerate(self.tables)], axis=1), self.probs
        )

    def stacked(self) -> tuple[np.ndarray, np.ndarray]:
        """Every player's plan table stacked into one (int8 when the actions fit, -1 padded) and
        each joint plan's row in it per player."""
        width = max(max((t.shape[1] for t in self.tables), default=1), 1)
        big = max((int(t.max()) for t in self.tables if t.size), default=0) > 126
        dtype = np.int32 if big else np.int8
        total = sum(len(t) for t in self.tables)
        tab = np.full((max(total, 1), width), -1, dtype=dtype)
        rowoff = np.zeros(len(self.tables), dtype=np.int64)
        r = 0
        for p, t in enumerate(self.tables):
            rowoff[p] = r
            tab[r : r + len(t), : t.shape[1]] = t
            r += len(t)
        rows = np.ascontiguousarray(self.ids.astype(np.int64) + rowoff[None, :])
        return tab, rows


class _PlayerTables:
    def __init__(self, game: Game, i: int):
        space = game.sequences(i)
        self.space = space
        S = space.num_sequences
        self.seq_depth = space.seq_depth.astype(np.int64)
        D = int(self.seq_depth.max()) if S > 1 else 0
        self.D = D
        chain_inf = np.zeros((S, max(D, 1)), dtype=np.int64)
        chain_act = np.zeros((S, max(D, 1)), dtype=np.int64)
        s = np.arange(S, dtype=np.int64)
        depth = self.seq_depth.copy()
        for _ in range(D):
            live = depth > 0
            idx = np.flatnonzero(live)
            chain_inf[idx, depth[idx] - 1] = space.seq_infoset[s[idx]]
            chain_act[idx, depth[idx] - 1] = space.seq_action[s[idx]]
            s[idx] = space.seq_parent[s[idx]]
            depth[idx] -= 1
        self.chain_inf, self.chain_act = chain_inf, chain_act
        self.A = int(space.infoset_num_actions.max()) if space.num_infosets else 1
        self.first_seq = space.infoset_first_seq.astype(np.int64)
        idepth = space.infoset_depth
        self.levels = []
        for d in range(int(idepth.max()) + 1 if space.num_infosets else 0):
            J = np.flatnonzero(idepth == d)
            sizes = space.infoset_num_actions[J].astype(np.int64)
            seqs = np.repeat(self.first_seq[J], sizes) + (
                np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
            )
            ptr = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            self.levels.append((J, seqs, ptr))
        self.node_seq = game.node_sequences(i).astype(np.int64)


class DeviceGapEvaluator:
    """Precomputes per-game tables; ``evaluator(device)`` returns :class:`DeviceGaps` (the walk
    runs on the CPU backend)."""

    def __init__(self, game: Game):
        self.game = game
        self._backend = cpu_backend("cpu")
        self.off = infoset_offsets(game)
        self.first_child = np.asarray(game.first_child, dtype=np.int64)
        self.num_children = np.asarray(game.num_children, dtype=np.int64)
        self.player = np.asarray(game.player, dtype=np.int64)
        self.infoset = np.asarray(game.infoset, dtype=np.int64)
        self.chance_prob = np.asarray(game.chance_prob, dtype=np.float64)
        self.term_index = np.asarray(game.terminal_index, dtype=np.int64)
        self.tables = [_PlayerTables(game, i) for i in range(game.num_players)]

    def __call__(self, device) -> DeviceGaps:
        """``device``: a :class:`Device` or a :class:`FactoredDevice`."""
        game = self.game
        if not isinstance(device, FactoredDevice):
            device = FactoredDevice.from_device(game, device)
        tab, rows = device.stacked()
        probs = np.ascontiguousarray(device.probs, dtype=np.float64)
        n = game.num_players
        utilities = np.zeros(n)
        efce_g, efcce_g, nf_g = [], [], np.zeros(n)
        for i in range(n):
            t = self.tables[i]
            S, D, A = t.space.num_sequences, t.D, t.A
            L = np.zeros((S, D + 1, A))
            F = np.zeros(S)
            self._backend.device_deviation_sums(
                i,
                tab,
                rows,
                probs,
                self.first_child,
                self.num_children,
                self.player,
                self.infoset,
                self.chance_prob,
                self.term_index,
                np.ascontiguousarray(game.payoffs[:, i]),
                t.node_seq,
                t.chain_inf,
                t.chain_act,
                t.seq_depth,
                t.first_seq,
                L,
                F,
            )
            utilities[i] = F[0]
            ef, ecc, nf = _induction(t, L, F)
            efce_g.append(ef)
            efcce_g.append(ecc)
            nf_g[i] = nf
        return DeviceGaps(
            efce=max(0.0, _largest(efce_g)),
            efcce=max(0.0, _largest(efcce_g)),
            nfcce=max(0.0, float(nf_g.max())),
            utilities=utilities,
            efce_gains=efce_g,
            efcce_gains=efcce_g,
            nfcce_gains=nf_g,
        )


def _largest(arrays: list[np.ndarray]) -> float:
    """The largest entry of any of ``arrays`` (−inf when all are empty)."""
    return max((float(a.max()) if a.size else -np.inf) for a in arrays)


def _induction(t: _PlayerTables, L: np.ndarray, F: np.ndarray):
    """Bottom-up best responses over all (slot, b) channels; returns the per-trigger gains."""
    space = t.space
    S = space.num_sequences
    # Channel A = sum over recommended actions (EFCCE triggers).
    LL = np.concatenate([L, L.sum(axis=2, keepdims=True)], axis=2)
    childsum = np.zeros_like(LL)
    V = np.zeros((space.num_infosets,) + LL.shape[1:])
    for J, seqs, ptr in reversed(t.levels):
        val = LL[seqs] + childsum[seqs]
        VJ = np.maximum.reduceat(val, ptr, axis=0)
        V[J] = VJ
        np.add.at(childsum, space.infoset_parent_seq[J], VJ)
    efce = np.full(S, -np.inf)
    efcce = np.zeros(space.num_infosets)
    if space.num_infosets:
        seqs = np.arange(1, S)
        infoset = space.seq_infoset[1:]
        slot = space.infoset_depth[infoset] + 1
        efce[1:] = V[infoset, slot, space.seq_action[1:]] - F[1:]
        follow_cc = np.add.reduceat(F[1:], space.infoset_first_seq - 1)
        Js = np.arange(space.num_infosets)
        efcce = V[Js, space.infoset_depth + 1, t.A] - follow_cc
        del seqs
    # The terminals where player i never moves (τ = ∅) count on both sides: deviating leaves them.
    nf = childsum[0, 0, 0] + L[0, 0, 0] - F[0]
    return efce, efcce, nf


_CACHE: dict[int, tuple[Game, DeviceGapEvaluator]] = {}


def evaluator(game: Game) -> DeviceGapEvaluator:
    hit = _CACHE.get(id(game))
    if hit is None or hit[0] is not game:
        if len(_CACHE) >= 8:
            _CACHE.clear()
        hit = (game, DeviceGapEvaluator(game))
        _CACHE[id(game)] = hit
    return hit[1]


def device_gaps(game: Game, device: Device) -> DeviceGaps:
    """EFCE, EFCCE and NFCCE gaps, utilities and welfare of ``device``."""
    return evaluator(game)(device)


def efce_gap(game: Game, device: Device) -> float:
    return device_gaps(game, device).efce


def efcce_gap(game: Game, device: Device) -> float:
    return device_gaps(game, device).efcce


def nfcce_gap(game: Game, device: Device) -> float:
    return device_gaps(game, device).nfcce


def device_utilities(game: Game, device: Device) -> np.ndarray:
    return device_gaps(game, device).utilities


def social_welfare(game: Game, device: Device) -> float:
    return float(device_utilities(game, device).sum())


def induced_correlation_plan(game: Game, device: Device, pairs: RelevantPairs | None = None) -> np.ndarray:
    """Two players: ``ξ[σ1, σ2] = Σ_π p(π) [π1 plays to σ1] [π2 plays to σ2]`` in the order of
    ``games.relevant.relevant_pairs(game)``."""
    from efce.games.relevant import relevant_pairs, require_two_players

    require_two_players(game, "a correlation plan")
    pairs = relevant_pairs(game) if pairs is None else pairs
    off = infoset_offsets(game)
    P1 = plays_sequences(game, 0, device.plans[:, off[0] : off[1]]).astype(np.float64)
    P2 = plays_sequences(game, 1, device.plans[:, off[1] : off[2]]).astype(np.float64)
    s1 = pairs.sigma1.astype(np.int64)
    s2 = pairs.sigma2.astype(np.int64)
    return np.einsum("k,kp,kp->p", device.probs, P1[:, s1], P2[:, s2])
