"""Compiled (numba) arithmetic of the local rules and of the chain passes — one definition each.

A local rule with a compiled form (:meth:`solvers.local.LocalRule.kernel`) names a *family*
below and its parameters; its strategy (:func:`local_strategy`) and its update formula
(:func:`rm_regret`, :func:`prm_plus_regret`; Hedge adds the loss) run

* the rule on its own, over every segment of a :class:`~solvers.local.Segments` partition
  (:func:`recommend_segments`, :func:`observe_segments`: what ``LocalRule.recommend`` /
  ``observe`` call), and
* the rule fused into the two passes of Algorithm 1 unrolled over a chain (Farina, Ling, Fang,
  Sandholm 2019, section 3.2; :func:`chain_recommend`, :func:`chain_observe`): RECOMMEND
  top-down ``x[targets_k] = h_k(x) · y_k``; OBSERVELOSS bottom-up, step ``k`` reads the
  accumulated loss ``ℓ̃[targets_k]``, updates its local state and adds ``⟨ℓ̃[targets_k], y_k⟩``
  (pre-update ``y_k``) to ``ℓ̃`` of every source of ``h_k``.

All numba code of the package lives in this one file on purpose: numba's on-disk cache is
invalidated per source file, so a kernel inlined into a function of another file could run stale.

Local state arrays are indexed by *state position*: the simplex steps' entries, steps in the
passes' level order (``order``), so each pass finds a step's state with a running counter.
"""

from __future__ import annotations

import numba
import numpy as np

from efce.games.arrays import U
from efce.polytopes.chain import SINGLETON

#: Kernel families (see :class:`solvers.local.Kernel`).
RM, HEDGE, PRM_PLUS = 0, 1, 2

# The hot kernels index through games.arrays.U (unsigned); every index here is non-negative.


@numba.njit(cache=True)
def discounts(alpha, beta, t):
    """DCFR factors ``t^α/(t^α+1)`` and ``t^β/(t^β+1)`` after iteration ``t`` (NaN: no discount,
    factor 1)."""
    pos = 1.0 if np.isnan(alpha) else t ** alpha / (t ** alpha + 1.0)
    neg = 1.0 if np.isnan(beta) else t ** beta / (t ** beta + 1.0)
    return pos, neg


@numba.njit(inline="always")
def local_strategy(family, eta, a, b, lo, n, out, out_lo):
    """The strategy of the segment ``a[lo:lo+n]`` (and ``b``) into ``out[out_lo:out_lo+n]``.

    RM / RM+ / DCFR: ``[R]^+`` normalized; PRM+: ``[R + m]^+`` normalized (``m = b``, the
    prediction); both uniform when the positive part is 0.  Hedge: ``exp(-η L)`` normalized with
    ``L = a`` the cumulative loss (shifted by its maximum for stability)."""
    total = 0.0
    if family == HEDGE:
        m = -np.inf
        for e in range(lo, lo + n):
            z = -eta * a[U(e)]
            if z > m:
                m = z
        for e in range(lo, lo + n):
            w = np.exp(-eta * a[U(e)] - m)
            out[U(out_lo + e - lo)] = w
            total += w
    else:
        for e in range(lo, lo + n):
            w = a[U(e)] + b[U(e)] if family == PRM_PLUS else a[U(e)]
            w = w if w > 0.0 else 0.0
            out[U(out_lo + e - lo)] = w
            total += w
    if total > 0.0:
        scale = 1.0 / total
        for i in range(n):
            out[U(out_lo + i)] = out[U(out_lo + i)] * scale
    else:
        for i in range(n):
            out[U(out_lo + i)] = 1.0 / n


@numba.njit
def rm_regret(r, instantaneous, plus, pos, neg):
    """RM / RM+ / DCFR (Hart & Mas-Colell 2000; Tammelin et al. 2015; Brown & Sandholm 2019):
    ``R ← (R + r)·(pos if > 0 else neg)``, clipped at 0 for RM+."""
    r = r + instantaneous
    r = r * (pos if r > 0.0 else neg)
    return 0.0 if plus and r < 0.0 else r


@numba.njit
def prm_plus_regret(r, instantaneous):
    """PRM+ (Farina, Kroer, Sandholm 2021): ``R ← [R + r]^+`` (the prediction becomes ``r``)."""
    r = r + instantaneous
    return r if r > 0.0 else 0.0


@numba.njit(inline="always")
def local_update(family, plus, pos, neg, a, b, lo, n, loss, loss_lo, v):
    """Observe ``loss[loss_lo:loss_lo+n]`` on the segment ``a[lo:lo+n]`` (and ``b``); ``v =
    ⟨loss, y⟩`` with ``y`` the strategy before the update, so ``v − ℓ_e`` is the instantaneous
    regret of ``e``.  Hedge: ``L ← L + ℓ``; PRM+: :func:`prm_plus_regret` and ``m ← v − ℓ``;
    RM family: :func:`rm_regret`.

    :func:`chain_observe` writes these three loops out in its body rather than calling this
    function: on the Sheriff Ξ chain a pass calling it ran ~50% slower (numba's inlining of a
    function holding loops); the formulas stay single definitions in both."""
    if family == HEDGE:
        for i in range(n):
            a[lo + i] += loss[loss_lo + i]
    elif family == PRM_PLUS:
        for i in range(n):
            inst = v - loss[loss_lo + i]
            a[lo + i] = prm_plus_regret(a[lo + i], inst)
            b[lo + i] = inst
    else:
        for i in range(n):
            a[lo + i] = rm_regret(a[lo + i], v - loss[loss_lo + i], plus, pos, neg)


@numba.njit(inline="always")
def _dot(loss, loss_lo, y, n):
    v = 0.0
    for i in range(n):
        v += loss[U(loss_lo + i)] * y[U(i)]
    return v


# ---------------------------------------------------------------------- one rule on segments
@numba.njit(cache=True)
def recommend_segments(family, eta, a, b, ptr, out):
    """The strategy of every segment ``ptr[s]:ptr[s+1]`` into ``out``."""
    for s in range(len(ptr) - 1):
        local_strategy(family, eta, a, b, ptr[s], ptr[s + 1] - ptr[s], out, ptr[s])


@numba.njit(cache=True)
def observe_segments(family, plus, alpha, beta, eta, a, b, t, ptr, loss):
    """Every segment observes its part of ``loss`` (``t[0]`` counts the observations)."""
    t[0] += 1.0
    pos, neg = discounts(alpha, beta, t[0])
    widest = 1
    for s in range(len(ptr) - 1):
        widest = max(widest, ptr[s + 1] - ptr[s])
    y = np.empty(widest)
    for s in range(len(ptr) - 1):
        lo, n = ptr[s], ptr[s + 1] - ptr[s]
        local_strategy(family, eta, a, b, lo, n, y, 0)
        local_update(family, plus, pos, neg, a, b, lo, n, loss, lo, _dot(loss, lo, y, n))


# ---------------------------------------------------------------------- chain passes
@numba.njit(cache=True)
def chain_recommend(kind, tptr, sptr, source, order, family, eta, a, b, x):
    """RECOMMEND: ``x[targets_k] = h_k(x) · y_k`` for the steps in ``order`` (level order)."""
    x[0] = 1.0
    pos = 0
    for k in order:
        h = 0.0
        for j in range(sptr[U(k)], sptr[U(k + 1)]):
            h += x[U(source[U(j)])]
        lo, hi = tptr[U(k)], tptr[U(k + 1)]
        if kind[U(k)] == SINGLETON:
            x[U(lo)] = h
        else:
            local_strategy(family, eta, a, b, pos, hi - lo, x, lo)
            pos += hi - lo
            for e in range(lo, hi):
                x[U(e)] = h * x[U(e)]


@numba.njit(cache=True)
def chain_observe(kind, tptr, sptr, source, order, family, plus, alpha, beta, eta, a, b, t, loss, y):
    """OBSERVELOSS: ``loss`` (entry order) is overwritten with the accumulated ``ℓ̃``; ``y`` is a
    work buffer as long as the widest step."""
    t[0] += 1.0
    pos, neg = discounts(alpha, beta, t[0])
    s = len(a)  # state position just past the step, running backwards
    for idx in range(len(order) - 1, -1, -1):
        k = order[U(idx)]
        lo, hi = tptr[U(k)], tptr[U(k + 1)]
        if kind[U(k)] == SINGLETON:
            v = loss[U(lo)]
        else:
            n = hi - lo
            s -= n
            local_strategy(family, eta, a, b, s, n, y, 0)
            v = _dot(loss, lo, y, n)
            if family == HEDGE:  # the loops of local_update (see there why not a call)
                for i in range(n):
                    a[U(s + i)] += loss[U(lo + i)]
            elif family == PRM_PLUS:
                for i in range(n):
                    inst = v - loss[U(lo + i)]
                    a[U(s + i)] = prm_plus_regret(a[U(s + i)], inst)
                    b[U(s + i)] = inst
            else:
                for i in range(n):
                    a[U(s + i)] = rm_regret(a[U(s + i)], v - loss[U(lo + i)], plus, pos, neg)
        for j in range(sptr[U(k)], sptr[U(k + 1)]):
            loss[U(source[U(j)])] += v


@numba.njit(cache=True)
def chain_best_vertex(tptr, sptr, source, order, loss, choice):
    """``min_{x ∈ chain} ⟨loss, x⟩`` by the split of section 3.2 applied bottom-up: a simplex
    step adds its smallest accumulated loss to its sources and records that entry (the first
    smallest) in ``choice[k]``.  ``loss`` is overwritten; returns the minimum."""
    for idx in range(len(order) - 1, -1, -1):
        k = order[idx]
        lo, hi = tptr[k], tptr[k + 1]
        best = lo
        for e in range(lo + 1, hi):
            if loss[e] < loss[best]:
                best = e
        choice[k] = best
        v = loss[best]
        for j in range(sptr[k], sptr[k + 1]):
            loss[source[j]] += v
    return loss[0]


@numba.njit(cache=True)
def chain_vertex(tptr, sptr, source, order, choice, x):
    """The vertex with entry ``choice[k]`` picked at every simplex step (top-down)."""
    x[0] = 1.0
    for k in order:
        h = 0.0
        for j in range(sptr[k], sptr[k + 1]):
            h += x[source[j]]
        for e in range(tptr[k], tptr[k + 1]):
            x[e] = h if e == choice[k] else 0.0
