"""Internal-regret minimizers on simplexes, vectorized over segments (Blum & Mansour 2007).

:class:`BlumMansour` is a :class:`solvers.local.LocalRule`: for a segment (simplex) with ``m``
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

from dataclasses import dataclass, field

import numpy as np

from .local import LocalRule, RegretMatching, Segments


class _Layout:
    """Index arrays shared by every call on one :class:`Segments`."""

    def __init__(self, seg: Segments):
        sizes = seg.sizes.astype(np.int64)
        self.rows = Segments.from_sizes(np.repeat(sizes, sizes))  # one row segment per (seg, a)
        sq = sizes * sizes
        self.block_ptr = np.zeros(seg.count + 1, dtype=np.int64)
        np.cumsum(sq, out=self.block_ptr[1:])
        # element (segment s, row a, col b) → flat position; grouped by segment size m
        self.groups = []
        for m in np.unique(sizes):
            S = np.flatnonzero(sizes == m)
            flat = self.block_ptr[S][:, None] + np.arange(m * m)[None, :]  # [n, m*m]
            out = seg.ptr[S][:, None] + np.arange(m)[None, :]  # positions of p in the seg array
            self.groups.append((int(m), flat, out))
        # p(a) of every row element: index of the row's action in the segment array
        row_owner_action = np.repeat(np.arange(seg.total, dtype=np.int64), sizes[seg.owner])
        self.row_action = row_owner_action  # per element of the row array


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
            q = lambda a, b: Q[:, a, b]
            w = np.stack([q(1, 0) * q(2, 0) + q(1, 2) * q(2, 0) + q(1, 0) * q(2, 1),
                          q(0, 1) * q(2, 1) + q(0, 2) * q(2, 1) + q(0, 1) * q(2, 0),
                          q(0, 2) * q(1, 2) + q(0, 1) * q(1, 2) + q(0, 2) * q(1, 0)], axis=1)
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
    regret matching).  Same interface as :class:`LocalRule` (losses, not utilities)."""

    base: LocalRule = field(default_factory=RegretMatching)

    def __post_init__(self):
        self._layouts: dict[int, tuple[Segments, _Layout]] = {}

    @property
    def name(self) -> str:
        return f"bm({self.base.name})"

    def _layout(self, seg: Segments) -> _Layout:
        hit = self._layouts.get(id(seg))
        if hit is None or hit[0] is not seg:
            hit = (seg, _Layout(seg))
            self._layouts[id(seg)] = hit
        return hit[1]

    def init(self, seg):
        lay = self._layout(seg)
        state = {f"base_{k}": v for k, v in self.base.init(lay.rows).items()}
        state["p"] = seg.normalize_or_uniform(np.ones(seg.total))
        state["fresh"] = np.zeros(1)
        return state

    def _base_state(self, state):
        bs = state.get("_base_view")
        if bs is None:  # views share the arrays, so the base rule updates them in place
            bs = {k[5:]: v for k, v in state.items() if k.startswith("base_")}
            state["_base_view"] = bs
        return bs

    def recommend(self, state, seg):
        lay = self._layout(seg)
        rows = self.base.recommend(self._base_state(state), lay.rows)  # flat Q rows
        p = np.empty(seg.total)
        for m, flat, out in lay.groups:
            Q = rows[flat].reshape(-1, m, m)
            p[out] = stationary_distributions(Q)
        state["p"][:] = p
        state["fresh"][0] = 1.0
        return p

    def observe(self, state, loss, seg):
        lay = self._layout(seg)
        if state["fresh"][0] != 1.0:
            self.recommend(state, seg)
        p = state["p"]
        # row (s, a) observes p(a) · ℓ_s
        loss = np.asarray(loss, dtype=np.float64)
        col = lay.rows.owner  # row-segment index == position of (s, a) in the seg array
        row_loss = p[col] * loss[_row_cols(lay, seg)]
        self.base.observe(self._base_state(state), row_loss, lay.rows)
        state["fresh"][0] = 0.0

    def internal_regret(self, history_p, history_loss, seg) -> np.ndarray:
        """Largest swap regret per segment of a played sequence (for tests/diagnostics):
        ``max_{a,b} Σ_t p_t(a) (ℓ_t(a) − ℓ_t(b))``."""
        out = np.full(seg.count, -np.inf)
        P = np.asarray(history_p)
        Lo = np.asarray(history_loss)
        for s in range(seg.count):
            lo, hi = seg.ptr[s], seg.ptr[s + 1]
            p, l = P[:, lo:hi], Lo[:, lo:hi]
            R = np.einsum("ta,ta->a", p, l)[:, None] - np.einsum("ta,tb->ab", p, l)
            out[s] = R.max()
        return out


def _row_cols(lay: _Layout, seg: Segments) -> np.ndarray:
    """For every element (s, a, b) of the row array, the position of (s, b) in the seg array."""
    cached = getattr(lay, "_cols", None)
    if cached is None:
        row_seg = lay.rows.owner  # (s, a) index
        s = seg.owner[row_seg]
        within = np.arange(lay.rows.total) - lay.rows.ptr[row_seg]
        cached = seg.ptr[s] + within
        lay._cols = cached
    return cached
