"""The passes of a chain's regret minimizer with the local rule fused in, serial and parallel,
and the chain's linear minimization oracle.

Algorithm 1 of Farina, Ling, Fang, Sandholm 2019 unrolled over a chain (section 3.2;
:class:`efce.solvers.regret.algebra.ChainMinimizer`): RECOMMEND top-down ``x[targets_k] = h_k(x) ·
y_k``; OBSERVELOSS bottom-up, step ``k`` reads the accumulated loss ``ℓ̃[targets_k]``, updates its
local state (:func:`efce.solvers.backends.cpu.rules.observe_simplex`) and adds
``⟨ℓ̃[targets_k], y_k⟩`` (pre-update ``y_k``) to ``ℓ̃`` of every source of ``h_k``.  One step body
each (:func:`recommend_step`, :func:`~efce.solvers.backends.cpu.rules.observe_simplex`) serves the
serial passes (:func:`chain_recommend`, :func:`chain_observe`: steps in level order, one loop) and
the parallel ones (:func:`chain_recommend_parallel`, :func:`chain_observe_parallel`: each level's
chunks split among threads), which keep their own loop structures: numba compiles a ``prange``
body into a function of its own, which LLVM optimizes better than the serial single loop on big
chains, while the serial loop has no chunk bookkeeping on the small ones.

Local state arrays are indexed by *state position*: the simplex steps' entries, steps in the
passes' level order (``order``), so each pass finds a step's state with a running counter.
"""

from __future__ import annotations

import numba
import numpy as np

from efce.games.arrays import U
from efce.games.resources.compiled import compiled
from efce.polytopes.chain import SINGLETON

from .jit import even_part, kernel
from .rules import discounts, local_strategy, observe_simplex

# The hot kernels index through games.arrays.U (unsigned); every index here is non-negative.


@compiled(inline="always")
def step_at(order: np.ndarray, idx: int) -> np.int64:
    """Step number ``idx`` of the passes' level order: ``order[idx]``, or ``idx`` itself when
    ``order`` is empty (a chain numbered in level order already, e.g. DECOMPOSE's: no int per
    step is kept for the identity)."""
    return np.int64(idx) if len(order) == 0 else np.int64(order[U(idx)])


# ---------------------------------------------------------------------- chain passes
@compiled(inline="always")
def recommend_block(
    single: bool,
    lo: int,
    hi: int,
    s_lo: int,
    s_hi: int,
    pos: int,
    source: np.ndarray,
    shift: int,
    family: int,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    x: np.ndarray,
    total: np.ndarray,
    w: float,
    accumulate: bool,
) -> int:
    """One step of RECOMMEND, filling entries ``lo:hi`` from the source slots ``s_lo:s_hi``
    (each plus ``shift``: :class:`~efce.polytopes.chain.ShiftedSources`; a singleton step if
    ``single``, else its local state at ``pos``): ``x[lo:hi] = h(x) · y``, and ``total[lo:hi] +=
    w · x[lo:hi]`` when ``accumulate``.  Returns the next state position.  The one step body of
    every RECOMMEND pass (steps given one by one or as runs)."""
    h = source_sum(source, x, s_lo, s_hi, shift)
    if single:
        x[U(lo)] = h
    else:
        local_strategy(family, eta, a, b, pos, hi - lo, x, lo)
        pos += hi - lo
        scale_entries(x, lo, hi, h)
    if accumulate:
        add_weighted(total, x, lo, hi, w)
    return pos


@compiled(inline="always")
def source_sum(source: np.ndarray, x: np.ndarray, s_lo: int, s_hi: int, shift: int) -> float:
    """``h(x)``: the sum of ``x`` over the source slots ``s_lo:s_hi``, each entry plus ``shift``,
    in slot order."""
    h = 0.0
    for j in range(s_lo, s_hi):
        h += x[U(source[U(j)] + shift)]
    return h


@compiled(inline="always")
def scale_entries(x: np.ndarray, lo: int, hi: int, h: float) -> None:
    """``x[lo:hi] = h · x[lo:hi]`` (a simplex step's strategy scaled by its sources' sum)."""
    for e in range(lo, hi):
        x[U(e)] = h * x[U(e)]


@compiled(inline="always")
def add_weighted(total: np.ndarray, x: np.ndarray, lo: int, hi: int, w: float) -> None:
    """``total[lo:hi] += w · x[lo:hi]`` (the running sum of the iterates)."""
    for e in range(lo, hi):
        total[U(e)] += w * x[U(e)]


@compiled(inline="always")
def recommend_step(
    k: np.int64,
    pos: int,
    kind: np.ndarray,
    tptr: np.ndarray,
    sptr: np.ndarray,
    source: np.ndarray,
    family: int,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    x: np.ndarray,
    total: np.ndarray,
    w: float,
    accumulate: bool,
) -> int:
    """Step ``k`` of RECOMMEND (its local state at ``pos``): :func:`recommend_block` of the
    step's entries and sources."""
    return recommend_block(
        kind[U(k)] == SINGLETON,
        tptr[U(k)],
        tptr[U(k + 1)],
        sptr[U(k)],
        sptr[U(k + 1)],
        pos,
        source,
        0,
        family,
        eta,
        a,
        b,
        x,
        total,
        w,
        accumulate,
    )


@kernel()
def chain_recommend(
    kind: np.ndarray,
    tptr: np.ndarray,
    sptr: np.ndarray,
    source: np.ndarray,
    order: np.ndarray,
    family: int,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    x: np.ndarray,
    total: np.ndarray,
    w: float,
) -> None:
    """RECOMMEND: ``x[targets_k] = h_k(x) · y_k`` for the steps in ``order`` (level order); with a
    non-empty ``total``, also ``total += w · x`` entry by entry as ``x`` is written (a running
    average without a second pass over ``x``)."""
    x[0] = 1.0
    accumulate = len(total) > 0
    if accumulate:
        total[0] += w * x[0]
    pos = 0
    for idx in range(len(kind)):
        pos = recommend_step(
            step_at(order, idx), pos, kind, tptr, sptr, source, family, eta, a, b, x, total, w, accumulate
        )


@kernel(shares_bodies=True)
def chain_observe(
    kind: np.ndarray,
    tptr: np.ndarray,
    sptr: np.ndarray,
    source: np.ndarray,
    order: np.ndarray,
    family: int,
    plus: bool,
    alpha: float,
    beta: float,
    eta: float,
    y: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    t: np.ndarray,
    loss: np.ndarray,
) -> None:
    """OBSERVELOSS: ``loss`` (entry order) is overwritten with the accumulated ``ℓ̃``; ``y`` is a
    work buffer as long as the widest step."""
    t[0] += 1.0
    pos, neg = discounts(alpha, beta, t[0])
    s = len(a)  # state position just past the step, running backwards
    for idx in range(len(kind) - 1, -1, -1):
        k = step_at(order, idx)
        lo, hi = tptr[U(k)], tptr[U(k + 1)]
        if kind[U(k)] == SINGLETON:
            v = loss[U(lo)]
        else:
            n = hi - lo
            s -= n
            v = observe_simplex(family, plus, pos, neg, eta, a, b, s, n, loss, lo, y)
        for j in range(sptr[U(k)], sptr[U(k + 1)]):
            loss[U(source[U(j)])] += v


@kernel()
def chain_best_vertex(
    tptr: np.ndarray,
    sptr: np.ndarray,
    source: np.ndarray,
    order: np.ndarray,
    loss: np.ndarray,
    choice: np.ndarray,
) -> float:
    """``min_{x ∈ chain} ⟨loss, x⟩`` by the split of section 3.2 applied bottom-up: a simplex
    step adds its smallest accumulated loss to its sources and records that entry (the first
    smallest) in ``choice[k]`` (nothing is recorded when ``choice`` is empty: the value alone
    needs no array per step).  ``loss`` is overwritten; returns the minimum."""
    for idx in range(len(tptr) - 2, -1, -1):
        k = step_at(order, idx)
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


@kernel()
def chain_vertex(
    tptr: np.ndarray,
    sptr: np.ndarray,
    source: np.ndarray,
    order: np.ndarray,
    choice: np.ndarray,
    x: np.ndarray,
) -> None:
    """The vertex with entry ``choice[k]`` picked at every simplex step (top-down)."""
    x[0] = 1.0
    for idx in range(len(tptr) - 1):
        k = step_at(order, idx)
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


@kernel()
def chain_chunks(
    kind: np.ndarray,
    tptr: np.ndarray,
    sptr: np.ndarray,
    order: np.ndarray,
    level_ptr: np.ndarray,
    target_work: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
            k = step_at(order, idx)
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


@kernel()
def level_source_histograms(
    sptr: np.ndarray, source: np.ndarray, order: np.ndarray, level_ptr: np.ndarray, buckets: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
            k = step_at(order, idx)
            for j in range(sptr[k], sptr[k + 1]):
                s = np.int64(source[j])
                a = min(a, s)
                b = max(b, s + 1)
        if b == 0:
            continue
        lo[L], hi[L] = a, b
        width = b - a
        for idx in range(level_ptr[L], level_ptr[L + 1]):
            k = step_at(order, idx)
            for j in range(sptr[k], sptr[k + 1]):
                cum[L, 1 + ((np.int64(source[j]) - a) * buckets) // width] += 1
        for q in range(buckets):
            cum[L, q + 1] += cum[L, q]
    return lo, hi, cum


@kernel()
def scatter_bounds(lo: np.ndarray, hi: np.ndarray, cum: np.ndarray, parts: int) -> np.ndarray:
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


@kernel()
def chunk_source_ranges(
    sptr: np.ndarray, source: np.ndarray, order: np.ndarray, chunk_ptr: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` per chunk: its smallest source entry and one past its largest, so the up
    pass's scatter skips the chunks that add nothing into a thread's destination range (sources
    of neighbouring steps are close in DECOMPOSE's and the trigger chain's numbering)."""
    n = len(chunk_ptr) - 1
    lo = np.zeros(n, np.int64)
    hi = np.zeros(n, np.int64)
    for c in range(n):
        a, b = np.int64(1) << 62, np.int64(0)
        for idx in range(chunk_ptr[c], chunk_ptr[c + 1]):
            k = step_at(order, idx)
            for j in range(sptr[k], sptr[k + 1]):
                e = np.int64(source[j])
                a = min(a, e)
                b = max(b, e + 1)
        lo[c], hi[c] = (a, b) if b > 0 else (0, 0)
    return lo, hi


@compiled(inline="always")
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
    first, stop = even_part(lo, hi, p, parts)
    return first, stop, 1


@kernel(parallel=True)
def chain_recommend_parallel(
    kind: np.ndarray,
    tptr: np.ndarray,
    sptr: np.ndarray,
    source: np.ndarray,
    order: np.ndarray,
    chunk_ptr: np.ndarray,
    chunk_state: np.ndarray,
    level_chunk: np.ndarray,
    family: int,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    x: np.ndarray,
    total: np.ndarray,
    w: float,
    parts: int,
) -> None:
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
                    pos = recommend_step(
                        step_at(order, idx),
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


@kernel(parallel=True)
def chain_observe_parallel(
    kind: np.ndarray,
    tptr: np.ndarray,
    sptr: np.ndarray,
    source: np.ndarray,
    order: np.ndarray,
    chunk_ptr: np.ndarray,
    chunk_state: np.ndarray,
    level_chunk: np.ndarray,
    bounds: np.ndarray,
    chunk_src_lo: np.ndarray,
    chunk_src_hi: np.ndarray,
    family: int,
    plus: bool,
    alpha: float,
    beta: float,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    t: np.ndarray,
    loss: np.ndarray,
    scratch: np.ndarray,
    parts: int,
) -> None:
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
                    k = step_at(order, idx)
                    if kind[U(k)] == SINGLETON:
                        continue  # v = ℓ̃[lo] already
                    lo, hi = tptr[U(k)], tptr[U(k + 1)]
                    n = hi - lo
                    loss[U(lo)] = observe_simplex(family, plus, pos, neg, eta, a, b, s, n, loss, lo, y)
                    s += n
        # (2) scatter in the serial order, each destination entry owned by one part; a part
        # skips the chunks whose sources all lie outside its range
        for p in numba.prange(parts):
            d_lo, d_hi = bounds[L, p], bounds[L, p + 1]
            for c in range(level_chunk[L + 1] - 1, level_chunk[L] - 1, -1):
                if chunk_src_hi[c] <= d_lo or chunk_src_lo[c] >= d_hi:
                    continue
                for idx in range(chunk_ptr[c + 1] - 1, chunk_ptr[c] - 1, -1):
                    k = step_at(order, idx)
                    v = loss[U(tptr[U(k)])]
                    for j in range(sptr[U(k)], sptr[U(k + 1)]):
                        e = np.int64(source[U(j)])
                        if e >= d_lo and e < d_hi:
                            loss[U(e)] += v
