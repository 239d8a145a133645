"""Internal-regret minimizers on simplexes, vectorized over segments (Blum & Mansour 2007).

:class:`BlumMansour` is a :class:`solvers.regret.local.LocalRule`: for a segment (simplex) with ``m``
actions it runs ``m`` external-regret minimizers of a base rule (regret matching by default), one
per "recommended" action ``a``; minimizer ``a`` proposes a row ``Q[a, :]``.  The played point is a
stationary distribution ``p = p Q`` of the row-stochastic matrix ``Q`` and, after observing the
loss ``ℓ``, minimizer ``a`` observes the scaled loss ``p(a) ℓ``.  The internal (swap ``a → b``)
regret of the played sequence is then bounded by the sum of the base minimizers' external
regrets (Blum & Mansour 2007, Theorem 5; Cesa-Bianchi & Lugosi 2006, section 4.4).

All ``m`` rows of every segment live in one flat array partitioned by a "row" :class:`Segments`
(``Σ m²`` entries), so the base rule updates every row of every simplex in one vectorized call;
stationary distributions are computed in batches grouped by segment size.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from efce.solvers.regret.local import LocalRule, RegretMatching, Segments


class _Layout:
    """Index arrays shared by every call on one :class:`Segments`."""

    def __init__(self, seg: Segments):
        sizes = seg.sizes.astype(np.int64)
        self.rows = Segments.from_sizes(np.repeat(sizes, sizes))  # one row segment per (s, a)
        block_ptr = np.zeros(seg.count + 1, dtype=np.int64)
        np.cumsum(sizes * sizes, out=block_ptr[1:])
        # Element (segment s, row a, col b) → flat position; grouped by segment size m.
        self.groups = []
        for m in np.unique(sizes):
            S = np.flatnonzero(sizes == m)
            flat = block_ptr[S][:, None] + np.arange(m * m)[None, :]  # [n, m*m]
            out = seg.ptr[S][:, None] + np.arange(m)[None, :]  # positions of p in the seg array
            self.groups.append((int(m), flat, out))
        # Every element (s, a, b) of the row array: its row (s, a) — which is also the position
        # of (s, a) in the segment array — and the position of (s, b) in the segment array.
        self.row_action = self.rows.owner
        within = np.arange(self.rows.total) - self.rows.ptr[self.row_action]
        self.column = seg.ptr[seg.owner[self.row_action]] + within


def stationary_distributions(Q: np.ndarray) -> np.ndarray:
    """Batch ``p = p Q`` for row-stochastic ``Q[n, m, m]`` (``p ≥ 0``, ``Σ p = 1``).

    Solves ``(Qᵀ − I) p = 0`` with the normalization replacing one equation; chains with several
    recurrent classes (singular systems) fall back to the Cesàro limit of the lazy chain from
    the uniform start (repeated squaring), which is a stationary distribution too."""
    n, m, _ = Q.shape
    if m == 1:
        return np.ones((n, 1))
    if m in (2, 3):  # Markov chain tree theorem: π_j ∝ Σ of arborescences rooted at j
        if m == 2:
            w = np.stack([Q[:, 1, 0], Q[:, 0, 1]], axis=1)
        else:

            def q(a: int, b: int) -> np.ndarray:
                return Q[:, a, b]

            w = np.stack(
                [
                    q(1, 0) * q(2, 0) + q(1, 2) * q(2, 0) + q(1, 0) * q(2, 1),
                    q(0, 1) * q(2, 1) + q(0, 2) * q(2, 1) + q(0, 1) * q(2, 0),
                    q(0, 2) * q(1, 2) + q(0, 1) * q(1, 2) + q(0, 2) * q(1, 0),
                ],
                axis=1,
            )
        tot = w.sum(axis=1)
        ok = tot > 1e-12
        if ok.all():
            return w / tot[:, None]
        out = np.empty((n, m))
        out[ok] = w[ok] / tot[ok, None]
        out[~ok] = _stationary_general(Q[~ok])
        return out
    return _stationary_general(Q)


def _stationary_general(Q: np.ndarray) -> np.ndarray:
    n, m, _ = Q.shape
    M = np.transpose(Q, (0, 2, 1)) - np.eye(m)[None]
    M[:, -1, :] = 1.0
    rhs = np.zeros((n, m))
    rhs[:, -1] = 1.0
    p = np.empty((n, m))
    det = np.linalg.det(M)
    good = np.abs(det) > 1e-10
    if good.any():
        p[good] = np.linalg.solve(M[good], rhs[good][..., None])[..., 0]
    bad = ~good
    if bad.any():
        P = 0.5 * (Q[bad] + np.eye(m)[None])
        for _ in range(60):
            P = P @ P
        p[bad] = P.mean(axis=1)
    p = np.maximum(p, 0.0)
    p /= p.sum(axis=1, keepdims=True)
    return p


@dataclass
class BlumMansour(LocalRule):
    """Internal-regret minimizer per segment: Blum–Mansour reduction over ``base`` (default
    regret matching).  Same interface as :class:`LocalRule` (losses, not utilities).

    State: the base rule's arrays over all rows (keys prefixed ``base_``) and ``p``, the
    stationary distribution of the current rows — the point :meth:`recommend` returns, kept so
    that it is computed once per observation and :meth:`recommend` does not write to the state.
    No compiled kernel: chain minimizers run it on their numpy path."""

    base: LocalRule = field(default_factory=RegretMatching)

    def __post_init__(self) -> None:
        self._layouts: weakref.WeakKeyDictionary[Segments, _Layout] = weakref.WeakKeyDictionary()

    @property
    def name(self) -> str:
        """``bm(<base rule's name>)``."""
        return f"bm({self.base.name})"

    def _layout(self, seg: Segments) -> _Layout:
        layout = self._layouts.get(seg)
        if layout is None:
            layout = self._layouts[seg] = _Layout(seg)
        return layout

    def init(self, seg: Segments) -> dict[str, np.ndarray]:
        """The base rule's state over every row ``(s, a)`` of every segment ``s`` (keys
        ``base_*``) and ``p``, the stationary distributions of the initial rows."""
        lay = self._layout(seg)
        base_state = self.base.init(lay.rows)
        state = {f"base_{k}": v for k, v in base_state.items()}
        state["p"] = self._stationary(base_state, seg, lay)
        return state

    def _stationary(self, base_state, seg: Segments, lay: _Layout) -> np.ndarray:
        rows = self.base.recommend(base_state, lay.rows)  # flat rows Q[s, a, :]
        p = np.empty(seg.total)
        for m, flat, out in lay.groups:
            p[out] = stationary_distributions(rows[flat].reshape(-1, m, m))
        return p

    def recommend(self, state: dict[str, np.ndarray], seg: Segments) -> np.ndarray:
        """A copy of ``p``: per segment, the stationary distribution ``p = p Q`` of the rows
        ``Q[a, :]`` the base rule recommends (Blum & Mansour 2007, Theorem 5)."""
        return state["p"].copy()

    def observe(self, state: dict[str, np.ndarray], loss: np.ndarray, seg: Segments) -> None:
        """Row ``(s, a)`` of the base rule observes ``p(a) · ℓ_s``; ``p`` becomes the stationary
        distribution of the new rows (in place)."""
        lay = self._layout(seg)
        base_state = {k[5:]: v for k, v in state.items() if k.startswith("base_")}  # views
        p = state["p"]
        # Row (s, a) observes p(a) · ℓ_s.
        row_loss = p[lay.row_action] * np.asarray(loss, dtype=np.float64)[lay.column]
        self.base.observe(base_state, row_loss, lay.rows)
        p[:] = self._stationary(base_state, seg, lay)


def internal_regret(history_p: ArrayLike, history_loss: ArrayLike, seg: Segments) -> np.ndarray:
    """Largest internal (swap ``a → b``) regret per segment of a played sequence,
    ``max_{a,b} Σ_t p_t(a) (ℓ_t(a) − ℓ_t(b))`` (Blum & Mansour 2007, section 2), for any
    learner's points ``history_p[t]`` and losses ``history_loss[t]`` (segment order)."""
    out = np.full(seg.count, -np.inf)
    P = np.asarray(history_p, dtype=np.float64)
    L = np.asarray(history_loss, dtype=np.float64)
    for s in range(seg.count):
        lo, hi = seg.ptr[s], seg.ptr[s + 1]
        p, loss = P[:, lo:hi], L[:, lo:hi]
        R = np.einsum("ta,ta->a", p, loss)[:, None] - np.einsum("ta,tb->ab", p, loss)
        out[s] = R.max()
    return out
