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
passes' level order (``order``), so each pass finds a step's state with a running counter.  They
are float64 or float32 (:func:`solvers.regret.local.state_dtype`), PRM+'s prediction bfloat16 bits
where the state is float32 (:func:`solvers.regret.local.prediction_dtype`): every kernel reads the
state, computes in float64 and rounds only what it stores.
"""

from __future__ import annotations

import os

# The parallel passes meet at a barrier a few dozen times per iteration.  libgomp's default
# (spin, then sleep) lets a waiting thread burn a core that another process needs; on a shared
# 2-core machine under load that made a 2-thread pass 4x slower than a 1-thread one, while a
# passive wait costs microseconds per barrier.  Read by libgomp when numba first starts its
# threads (after this import); a value set by the user wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic, overload

from efce.games.arrays import U
from efce.polytopes.chain import SINGLETON

#: Kernel families (see :class:`solvers.local.Kernel`).
RM, HEDGE, PRM_PLUS = 0, 1, 2

# The hot kernels index through games.arrays.U (unsigned); every index here is non-negative.


# ---------------------------------------------------------------------- bfloat16 predictions
# On big chains PRM+ keeps its prediction as bfloat16 (the upper half of a float32, stored as
# uint16; see solvers.regret.local.prediction_dtype): the kernels read it through widened()
# and write it through narrowed().  numba has no 16-bit float, so the two
# conversions are written on the float32's bits.


@intrinsic
def _float32_bits(typingctx, value):
    """The bits of a float32 as a uint32 (a bit cast, no conversion)."""
    if value != types.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return types.uint32(types.float32), codegen


@intrinsic
def _bits_float32(typingctx, bits):
    """The float32 whose bits are the low 32 bits of the unsigned integer ``bits`` (numba
    widens unsigned shifts to 64 bits)."""
    if not isinstance(bits, types.Integer) or bits.signed or bits.bitwidth < 32:
        return None

    def codegen(context, builder, signature, args):
        low = args[0] if bits.bitwidth == 32 else builder.trunc(args[0], ir.IntType(32))
        return builder.bitcast(low, ir.FloatType())

    return types.float32(bits), codegen


@numba.njit(inline="always")
def bfloat16_bits(value):
    """``value`` rounded to bfloat16 (8 significant bits, float32's range), to nearest with
    ties to even, as the uint16 of its bits."""
    bits = _float32_bits(np.float32(value))
    bits += np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return np.uint16(bits >> np.uint32(16))


@numba.njit(inline="always")
def bfloat16_value(bits):
    """The float64 value of the bfloat16 with uint16 ``bits``."""
    return np.float64(_bits_float32(np.uint32(bits) << np.uint32(16)))


def widened(value):
    """A stored state value as float64: float32/float64 as it is, uint16 as bfloat16 bits."""


def narrowed(value, like):
    """``value`` rounded to the type of the stored value ``like`` (uint16: bfloat16 bits)."""


# Both dispatch at compile time on the stored scalar's type, so a kernel compiled for float
# state holds no conversion at all; ``narrowed`` is handed the stored value only for its type
# (the load it reads is dead and removed by the compiler).
@overload(widened, inline="always")
def _widened(value):
    if value == types.uint16:
        return lambda value: bfloat16_value(value)
    return lambda value: np.float64(value)


@overload(narrowed, inline="always")
def _narrowed(value, like):
    if like == types.uint16:
        return lambda value, like: bfloat16_bits(value)
    return lambda value, like: value


@numba.njit(cache=True)
def discounts(alpha, beta, t):
    """DCFR factors ``t^α/(t^α+1)`` and ``t^β/(t^β+1)`` after iteration ``t`` (NaN: no discount,
    factor 1)."""
    pos = 1.0 if np.isnan(alpha) else t**alpha / (t**alpha + 1.0)
    neg = 1.0 if np.isnan(beta) else t**beta / (t**beta + 1.0)
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
            # float64 arithmetic whatever the state's dtype (float32 on big chains)
            w = np.float64(a[U(e)]) + widened(b[U(e)]) if family == PRM_PLUS else np.float64(a[U(e)])
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
            b[lo + i] = narrowed(inst, b[lo + i])
    else:
        for i in range(n):
            a[lo + i] = rm_regret(a[lo + i], v - loss[loss_lo + i], plus, pos, neg)


@numba.njit(inline="always")
def _dot(loss, loss_lo, y, n):
    v = 0.0
    for i in range(n):
        v += loss[U(loss_lo + i)] * y[U(i)]
    return v


@numba.njit(inline="always")
def _step(order, idx):
    """Step number ``idx`` of the passes' level order: ``order[idx]``, or ``idx`` itself when
    ``order`` is empty (a chain numbered in level order already, e.g. DECOMPOSE's: no int per
    step is kept for the identity)."""
    return np.int64(idx) if len(order) == 0 else np.int64(order[U(idx)])


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
@numba.njit(inline="always")
def _recommend_step(k, pos, kind, tptr, sptr, source, family, eta, a, b, x, total, w, accumulate):
    """Step ``k`` of RECOMMEND (its local state at ``pos``): ``x[targets_k] = h_k(x) · y_k``, and
    ``total[targets_k] += w · x[targets_k]`` when ``accumulate``.  Returns the next state
    position.  The one step body of the serial and the parallel pass."""
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
    if accumulate:
        for e in range(lo, hi):
            total[U(e)] += w * x[U(e)]
    return pos


@numba.njit(cache=True)
def chain_recommend(kind, tptr, sptr, source, order, family, eta, a, b, x, total, w):
    """RECOMMEND: ``x[targets_k] = h_k(x) · y_k`` for the steps in ``order`` (level order); with a
    non-empty ``total``, also ``total += w · x`` entry by entry as ``x`` is written (a running
    average without a second pass over ``x``)."""
    x[0] = 1.0
    accumulate = len(total) > 0
    if accumulate:
        total[0] += w * x[0]
    pos = 0
    for idx in range(len(kind)):
        pos = _recommend_step(
            _step(order, idx), pos, kind, tptr, sptr, source, family, eta, a, b, x, total, w, accumulate
        )


@numba.njit(cache=True)
def chain_observe(kind, tptr, sptr, source, order, family, plus, alpha, beta, eta, a, b, t, loss, y):
    """OBSERVELOSS: ``loss`` (entry order) is overwritten with the accumulated ``ℓ̃``; ``y`` is a
    work buffer as long as the widest step."""
    t[0] += 1.0
    pos, neg = discounts(alpha, beta, t[0])
    s = len(a)  # state position just past the step, running backwards
    for idx in range(len(kind) - 1, -1, -1):
        k = _step(order, idx)
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
                    b[U(s + i)] = narrowed(inst, b[U(s + i)])
            else:
                for i in range(n):
                    a[U(s + i)] = rm_regret(a[U(s + i)], v - loss[U(lo + i)], plus, pos, neg)
        for j in range(sptr[U(k)], sptr[U(k + 1)]):
            loss[U(source[U(j)])] += v


@numba.njit(cache=True)
def chain_best_vertex(tptr, sptr, source, order, loss, choice):
    """``min_{x ∈ chain} ⟨loss, x⟩`` by the split of section 3.2 applied bottom-up: a simplex
    step adds its smallest accumulated loss to its sources and records that entry (the first
    smallest) in ``choice[k]`` (nothing is recorded when ``choice`` is empty: the value alone
    needs no array per step).  ``loss`` is overwritten; returns the minimum."""
    for idx in range(len(tptr) - 2, -1, -1):
        k = _step(order, idx)
        lo, hi = tptr[k], tptr[k + 1]
        best = lo
        for e in range(lo + 1, hi):
            if loss[e] < loss[best]:
                best = e
        if len(choice) > 0:
            choice[k] = best
        v = loss[best]
        for j in range(sptr[k], sptr[k + 1]):
            loss[source[j]] += v
    return loss[0]


@numba.njit(cache=True)
def chain_vertex(tptr, sptr, source, order, choice, x):
    """The vertex with entry ``choice[k]`` picked at every simplex step (top-down)."""
    x[0] = 1.0
    for idx in range(len(tptr) - 1):
        k = _step(order, idx)
        h = 0.0
        for j in range(sptr[k], sptr[k + 1]):
            h += x[source[j]]
        for e in range(tptr[k], tptr[k + 1]):
            x[e] = h if e == choice[k] else 0.0


# ---------------------------------------------------------------------- parallel chain passes
# The same arithmetic as chain_recommend / chain_observe, run on numba's threads.  Both are
# bit-identical to the serial passes for any thread count:
#
# * down pass: the steps of one level read only entries of earlier levels and write disjoint
#   targets, so the chunks of a level (fixed at build time, independent of the thread count) run
#   in any order;
# * up pass, per level from the last: (1) every step, in parallel, reads its accumulated loss
#   (complete: only later levels add to it), updates its local state and stores its value
#   ``v_k = <ℓ̃[targets_k], y_k>`` in ``ℓ̃[first target of k]``, an entry nothing reads again;
#   (2) the values are added to the sources, each thread owning a range of destination entries
#   and scanning the level's steps in the serial pass's order (reverse level order), so every
#   entry receives its additions in exactly the serial order — no races, no reordered sums.
#
# Work is split by an explicit part index ``p in prange(parts)`` (one part per thread), which
# also names the row of the per-part scratch.


@numba.njit(cache=True)
def chain_chunks(kind, tptr, sptr, order, level_ptr, target_work):
    """Chunks of the level order for the parallel passes: each chunk is a run of consecutive
    steps of one level holding about ``target_work`` entries plus sources.  Returns
    ``(chunk_ptr, chunk_state, level_chunk)``: chunk ``c`` is ``order[chunk_ptr[c]:chunk_ptr[c+1]]``
    and its first simplex step's state starts at ``chunk_state[c]``; level ``L``'s chunks are
    ``level_chunk[L]:level_chunk[L+1]``.  Independent of the thread count (so are the iterates)."""
    n_levels = len(level_ptr) - 1
    cap = len(kind) + n_levels + 1
    chunk_ptr = np.empty(cap, np.int64)
    chunk_state = np.empty(cap, np.int64)
    level_chunk = np.empty(n_levels + 1, np.int64)
    c = 0
    state = 0
    for L in range(n_levels):
        level_chunk[L] = c
        work = target_work  # forces a new chunk at the level's first step
        for idx in range(level_ptr[L], level_ptr[L + 1]):
            k = _step(order, idx)
            if work >= target_work:
                chunk_ptr[c] = idx
                chunk_state[c] = state
                c += 1
                work = 0
            size = tptr[k + 1] - tptr[k]
            work += size + sptr[k + 1] - sptr[k]
            if kind[k] != SINGLETON:
                state += size
    level_chunk[n_levels] = c
    chunk_ptr[c] = len(kind)
    return chunk_ptr[: c + 1].copy(), chunk_state[:c].copy(), level_chunk


@numba.njit(cache=True)
def level_source_histograms(sptr, source, order, level_ptr, buckets):
    """Where each level's additions land: ``(lo, hi, cum)`` with ``[lo[L], hi[L])`` the range of
    its steps' source entries (the destinations of the up pass's scatter) cut into ``buckets``
    equal buckets, and ``cum[L, b]`` the number of source references in buckets ``< b``."""
    n_levels = len(level_ptr) - 1
    lo = np.zeros(n_levels, np.int64)
    hi = np.zeros(n_levels, np.int64)
    cum = np.zeros((n_levels, buckets + 1), np.int64)
    for L in range(n_levels):
        a, b = np.int64(1) << 62, np.int64(0)
        for idx in range(level_ptr[L], level_ptr[L + 1]):
            k = _step(order, idx)
            for j in range(sptr[k], sptr[k + 1]):
                s = np.int64(source[j])
                a = min(a, s)
                b = max(b, s + 1)
        if b == 0:
            continue
        lo[L], hi[L] = a, b
        width = b - a
        for idx in range(level_ptr[L], level_ptr[L + 1]):
            k = _step(order, idx)
            for j in range(sptr[k], sptr[k + 1]):
                cum[L, 1 + ((np.int64(source[j]) - a) * buckets) // width] += 1
        for q in range(buckets):
            cum[L, q + 1] += cum[L, q]
    return lo, hi, cum


@numba.njit(cache=True)
def scatter_bounds(lo, hi, cum, parts):
    """Destination bounds of the up pass's scatter: ``bounds[L, p] .. bounds[L, p+1]`` is part
    ``p``'s range of level ``L``, cut at bucket edges so that each part receives about the same
    number of additions (an even cut of the entry range can leave one part with most of them)."""
    n_levels, buckets = cum.shape[0], cum.shape[1] - 1
    bounds = np.empty((n_levels, parts + 1), np.int64)
    for L in range(n_levels):
        width = hi[L] - lo[L]
        total = cum[L, buckets]
        bounds[L, 0] = lo[L]
        q = 0
        for p in range(1, parts):
            while q < buckets and cum[L, q] * parts < total * p:
                q += 1
            bounds[L, p] = lo[L] + (q * width) // buckets
        bounds[L, parts] = hi[L]
    return bounds


@numba.njit(cache=True)
def chunk_source_ranges(sptr, source, order, chunk_ptr):
    """``(lo, hi)`` per chunk: its smallest source entry and one past its largest, so the up
    pass's scatter skips the chunks that add nothing into a thread's destination range (sources
    of neighbouring steps are close in DECOMPOSE's and the trigger chain's numbering)."""
    n = len(chunk_ptr) - 1
    lo = np.zeros(n, np.int64)
    hi = np.zeros(n, np.int64)
    for c in range(n):
        a, b = np.int64(1) << 62, np.int64(0)
        for idx in range(chunk_ptr[c], chunk_ptr[c + 1]):
            k = _step(order, idx)
            for j in range(sptr[k], sptr[k + 1]):
                e = np.int64(source[j])
                a = min(a, e)
                b = max(b, e + 1)
        lo[c], hi[c] = (a, b) if b > 0 else (0, 0)
    return lo, hi


@numba.njit(inline="always")
def _part(lo, hi, p, parts):
    """Bounds of part ``p`` of ``parts`` equal parts of ``range(lo, hi)``."""
    n = hi - lo
    return lo + (n * p) // parts, lo + (n * (p + 1)) // parts


@numba.njit(inline="always")
def _chunks_of_part(lo, hi, p, parts, dealt):
    """``(start, stop, step)`` of part ``p``'s chunks among a level's chunks ``lo .. hi-1``.

    A chain numbered in level order (``order`` empty: Ξ's) gives each part a contiguous share,
    which keeps its passes' reads and writes in one stretch of memory per thread.  A chain that
    reads its steps through ``order`` (Y's) deals its chunks in turn: there the chunks' costs
    vary with where their steps lie, and contiguous shares left one thread waiting (large
    Battleship, 2 threads: Y OBSERVELOSS 274 → 257–262 ms, RECOMMEND 181 → 175 ms; dealt, Ξ's
    passes lose their locality: RECOMMEND 276 → 316–320 ms)."""
    if dealt:
        return lo + p, hi, parts
    first, stop = _part(lo, hi, p, parts)
    return first, stop, 1


@numba.njit(parallel=True, cache=True)
def chain_recommend_parallel(
    kind,
    tptr,
    sptr,
    source,
    order,
    chunk_ptr,
    chunk_state,
    level_chunk,
    family,
    eta,
    a,
    b,
    x,
    total,
    w,
    parts,
):
    """:func:`chain_recommend` over the chunks of each level in parallel, split into ``parts``
    (the thread count; bit-identical for any)."""
    x[0] = 1.0
    accumulate = len(total) > 0
    if accumulate:
        total[0] += w * x[0]
    dealt = len(order) > 0
    for L in range(len(level_chunk) - 1):
        for p in numba.prange(parts):
            c_lo, c_hi, c_step = _chunks_of_part(level_chunk[L], level_chunk[L + 1], p, parts, dealt)
            for c in range(c_lo, c_hi, c_step):
                pos = chunk_state[c]
                for idx in range(chunk_ptr[c], chunk_ptr[c + 1]):
                    pos = _recommend_step(
                        _step(order, idx),
                        pos,
                        kind,
                        tptr,
                        sptr,
                        source,
                        family,
                        eta,
                        a,
                        b,
                        x,
                        total,
                        w,
                        accumulate,
                    )


@numba.njit(parallel=True, cache=True)
def chain_observe_parallel(
    kind,
    tptr,
    sptr,
    source,
    order,
    chunk_ptr,
    chunk_state,
    level_chunk,
    bounds,
    chunk_src_lo,
    chunk_src_hi,
    family,
    plus,
    alpha,
    beta,
    eta,
    a,
    b,
    t,
    loss,
    scratch,
    parts,
):
    """:func:`chain_observe` level by level on numba's threads in ``parts`` parts (the thread
    count), bit-identical to it for any (see the comment above).  ``bounds`` is
    :func:`scatter_bounds` for ``parts``; ``scratch`` is
    ``(≥ parts, widest step)``.  (``parts`` is an argument: ``numba.get_num_threads()`` inside a
    kernel would keep it out of numba's on-disk cache.)"""
    t[0] += 1.0
    pos, neg = discounts(alpha, beta, t[0])
    dealt = len(order) > 0
    for L in range(len(level_chunk) - 2, -1, -1):
        # (1) local updates; v_k into ℓ̃[tptr[k]]
        for p in numba.prange(parts):
            y = scratch[p]
            c_lo, c_hi, c_step = _chunks_of_part(level_chunk[L], level_chunk[L + 1], p, parts, dealt)
            for c in range(c_lo, c_hi, c_step):
                s = chunk_state[c]
                for idx in range(chunk_ptr[c], chunk_ptr[c + 1]):
                    k = _step(order, idx)
                    if kind[U(k)] == SINGLETON:
                        continue  # v = ℓ̃[lo] already
                    lo, hi = tptr[U(k)], tptr[U(k + 1)]
                    n = hi - lo
                    local_strategy(family, eta, a, b, s, n, y, 0)
                    v = _dot(loss, lo, y, n)
                    if family == HEDGE:
                        for i in range(n):
                            a[U(s + i)] += loss[U(lo + i)]
                    elif family == PRM_PLUS:
                        for i in range(n):
                            inst = v - loss[U(lo + i)]
                            a[U(s + i)] = prm_plus_regret(a[U(s + i)], inst)
                            b[U(s + i)] = narrowed(inst, b[U(s + i)])
                    else:
                        for i in range(n):
                            a[U(s + i)] = rm_regret(a[U(s + i)], v - loss[U(lo + i)], plus, pos, neg)
                    loss[U(lo)] = v
                    s += n
        # (2) scatter in the serial order, each destination entry owned by one part; a part
        # skips the chunks whose sources all lie outside its range
        for p in numba.prange(parts):
            d_lo, d_hi = bounds[L, p], bounds[L, p + 1]
            for c in range(level_chunk[L + 1] - 1, level_chunk[L] - 1, -1):
                if chunk_src_hi[c] <= d_lo or chunk_src_lo[c] >= d_hi:
                    continue
                for idx in range(chunk_ptr[c + 1] - 1, chunk_ptr[c] - 1, -1):
                    k = _step(order, idx)
                    v = loss[U(tptr[U(k)])]
                    for j in range(sptr[U(k)], sptr[U(k + 1)]):
                        e = np.int64(source[U(j)])
                        if e >= d_lo and e < d_hi:
                            loss[U(e)] += v
