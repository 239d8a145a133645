"""The passes of a chain whose steps are stored as runs (:class:`efce.polytopes.chain.StepRuns`:
Ξ's chain from ``DECOMPOSE``), parallel, and its linear minimization oracle.

The same arithmetic as :mod:`.chain_passes` — one step body each,
:func:`~.chain_passes.recommend_block` and :func:`~.rules.observe_simplex` — over steps that
are found from their run instead of from three arrays per step: run ``r`` holds the steps
``ptr[r] : ptr[r+1]``, each filling ``run_size[r]`` entries from ``run_nsrc[r]`` source slots,
and the steps' entries and slots follow one another.  A pass walks a chunk of consecutive steps
run by run, with a running entry, slot and state position: a run's kind and sizes are read once
per run, a step costs no memory read beyond its shift byte, its sources, its state and its
entries, and OBSERVELOSS's local updates skip a run of singletons whole.  The sources are read
shifted (:class:`efce.polytopes.chain.ShiftedSources`): a pass carries the stored slots before
the step from step to step (each chunk starts from its own, :func:`run_chunk_slots`), so a step
that repeats the one before it shifted reads the same stored slots, plus its shift; the chain's
own ``source`` array is never read.  (On large Battleship the passes read 1.2 bytes of sources
per relevant pair this way instead of 4.9.)  (Walked step by step, with a test
per step for the end of its run, Ξ's OBSERVELOSS on small Battleship took 29.8 ms per iteration
on one thread against 27.7 ms for the per-step passes of :mod:`.chain_passes` on the same chain;
run by run, 25.5.)  The
chunks of each level (:func:`run_chunks`), the destination bounds of the up pass's scatter and
the chunks' source ranges play the part they play in
:func:`~.chain_passes.chain_observe_parallel`, whose comment explains why the passes give the
serial passes' iterates bit for bit on any thread count; the run passes give the same iterates
as the per-step passes on the same chain.
"""

from __future__ import annotations

import numba
import numpy as np

from efce.games.arrays import U
from efce.games.resources.compiled import compiled
from efce.polytopes.chain import SINGLETON
from efce.solvers.backends.protocol import PRM_PLUS

from .chain_passes import add_weighted, recommend_block, scale_entries, source_sum
from .jit import SharedBodiesCompiler, even_part, kernel
from .rules import discounts, observe_simplex, prm_plus_observe, regret_strategy

# The hot kernels index through games.arrays.U (unsigned); every index here is non-negative.


@compiled(inline="always")
def run_of_step(ptr: np.ndarray, idx: int) -> int:
    """The run holding step ``idx`` (bisection over the runs' first steps)."""
    lo, hi = 0, len(ptr) - 2
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if ptr[mid] <= idx:
            lo = mid
        else:
            hi = mid - 1
    return lo


@compiled(inline="always")
def step_start(ptr: np.ndarray, widths: np.ndarray, starts: np.ndarray, r: int, idx: int) -> int:
    """The first entry (``widths = run_size``, ``starts = run_entry``) or source slot
    (``run_nsrc``, ``run_source``) of step ``idx`` of run ``r``."""
    return starts[r] + (idx - ptr[r]) * widths[r]


@compiled(inline="always")
def stored_before(
    ptr: np.ndarray, run_nsrc: np.ndarray, run_stored: np.ndarray, shift: np.ndarray, r: int, idx: int
) -> int:
    """The stored source slots of the steps before step ``idx`` of run ``r``
    (:class:`~efce.polytopes.chain.ShiftedSources`; a walk over the run's steps before it)."""
    c = run_stored[r]
    for k in range(ptr[r], idx):
        if shift[k] == 0:
            c += run_nsrc[r]
    return c


@compiled(inline="always")
def _walk_sources(ptr, run_nsrc, shift, stored, first, last, r, c, a0, width, counts):
    """The smallest source entry of the steps ``first : last`` and one past the largest (``r``:
    the run of step ``first``, ``c``: the stored source slots before it); with a ``counts`` of
    ``buckets + 1`` cells also ``counts[1 + (e − a0) · buckets // width] += 1`` for every source
    entry ``e``."""
    a, b = np.int64(1) << 62, np.int64(0)
    buckets = len(counts) - 1
    for k in range(first, last):
        while k >= ptr[r + 1]:
            r += 1
        ns = run_nsrc[r]
        d = shift[k]
        if d == 0:
            c += ns
        for j in range(c - ns, c):
            e = np.int64(stored[j]) + d
            a = min(a, e)
            b = max(b, e + 1)
            if buckets > 0:
                counts[1 + ((e - a0) * buckets) // width] += 1
    return a, b


# Runs of the common shapes go through copies of the step bodies compiled for their shape.  Most
# steps of the chains DECOMPOSE builds are either a simplex of two to four entries filled from
# one source or a singleton filled from two to seven (Battleship: 51–55 % and 44–47 % of the
# steps; full Sheriff 55 % and 45 %; Goofspiel 4 with random prizes 12 % and 33 %), in runs of
# many steps (Battleship: 73–188 on average).  In a copy the compiler knows the number of
# entries and sources, so it unrolls their loops, and (for a simplex under PRM+, rm's default
# rule) the rule, so it has no rule dispatch.  The arithmetic is the same and in the same order,
# so the iterates are the same bit for bit.  On medium Battleship (two threads) Ξ's RECOMMEND
# took 75 ms per iteration, now 47; its OBSERVELOSS 99, now 71.  Other runs take the general
# body.  :func:`recommend_run` and :func:`observe_run` are functions of their own, called once
# per run: inlined into the parallel passes, their copies made numba compile those passes for
# 16 s each on an empty cache, against 4–6 s for the passes and the two functions apart; the
# scatter's copies are small and stay inlined (called apart, the scatter took 79 ms, not 71).
# Each parallel loop's body, a part's chunks of one level, is a function of its own too
# (:func:`_recommend_chunks`, :func:`_observe_chunks`, :func:`_scatter_chunks`), called once per
# part and level: numba compiles a parallel loop's body about twice, and full Sheriff's run
# passes compiled in 13.7 s of one core, now 12.2, at the same speed.


@compiled(inline="always")
def _recommend_steps(
    steps, single, n, ns, lo, k, c, pos, shift, stored, family, eta, a, b, x, total, w, accumulate
):
    for _ in range(steps):
        d = shift[U(k)]
        if d == 0:
            c += ns
        pos = recommend_block(
            single, lo, lo + n, c - ns, c, pos, stored, d, family, eta, a, b, x, total, w, accumulate
        )
        lo += n
        k += 1
    return lo, c, pos


@compiled(inline="always")
def _singleton_steps(steps, ns, lo, k, c, shift, stored, x, total, w, accumulate):
    for _ in range(steps):
        d = shift[U(k)]
        if d == 0:
            c += ns
        x[U(lo)] = source_sum(stored, x, c - ns, c, d)
        if accumulate:
            add_weighted(total, x, lo, lo + 1, w)
        lo += 1
        k += 1
    return lo, c


@compiled(inline="always")
def _prm_plus_steps(steps, n, lo, k, c, pos, shift, stored, a, b, x, total, w, accumulate):
    for _ in range(steps):
        d = shift[U(k)]
        if d == 0:
            c += 1
        h = source_sum(stored, x, c - 1, c, d)
        regret_strategy(True, a, b, pos, n, x, lo)
        scale_entries(x, lo, lo + n, h)
        if accumulate:
            add_weighted(total, x, lo, lo + n, w)
        pos += n
        lo += n
        k += 1
    return lo, c, pos


@compiled(nogil=True)
def recommend_run(
    steps: int,
    single: bool,
    n: int,
    ns: int,
    lo: int,
    k: int,
    c: int,
    pos: int,
    shift: np.ndarray,
    stored: np.ndarray,
    family: int,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    x: np.ndarray,
    total: np.ndarray,
    w: float,
    accumulate: bool,
) -> tuple[int, int, int]:
    """RECOMMEND over ``steps`` consecutive steps of one run (``n`` entries from ``ns`` source
    slots each; singletons if ``single``) from entry ``lo``, step ``k``, ``c`` stored source
    slots before it (:class:`~efce.polytopes.chain.ShiftedSources`) and state position ``pos``;
    returns the entry, ``c`` and the state position after them:
    :func:`~.chain_passes.recommend_block` step by step, or its arithmetic in a copy for the
    run's shape."""
    if single and n == 1 and 2 <= ns <= 7:
        if ns == 2:
            lo, c = _singleton_steps(steps, 2, lo, k, c, shift, stored, x, total, w, accumulate)
        elif ns == 3:
            lo, c = _singleton_steps(steps, 3, lo, k, c, shift, stored, x, total, w, accumulate)
        elif ns == 4:
            lo, c = _singleton_steps(steps, 4, lo, k, c, shift, stored, x, total, w, accumulate)
        elif ns == 5:
            lo, c = _singleton_steps(steps, 5, lo, k, c, shift, stored, x, total, w, accumulate)
        elif ns == 6:
            lo, c = _singleton_steps(steps, 6, lo, k, c, shift, stored, x, total, w, accumulate)
        else:
            lo, c = _singleton_steps(steps, 7, lo, k, c, shift, stored, x, total, w, accumulate)
        return lo, c, pos
    if not single and ns == 1 and 2 <= n <= 4 and family == PRM_PLUS:
        if n == 2:
            return _prm_plus_steps(steps, 2, lo, k, c, pos, shift, stored, a, b, x, total, w, accumulate)
        if n == 3:
            return _prm_plus_steps(steps, 3, lo, k, c, pos, shift, stored, a, b, x, total, w, accumulate)
        return _prm_plus_steps(steps, 4, lo, k, c, pos, shift, stored, a, b, x, total, w, accumulate)
    return _recommend_steps(
        steps, single, n, ns, lo, k, c, pos, shift, stored, family, eta, a, b, x, total, w, accumulate
    )


@compiled(inline="always")
def _observe_steps(steps, n, state, lo, family, plus, pos, neg, eta, a, b, loss, y):
    for _ in range(steps):
        loss[U(lo)] = observe_simplex(family, plus, pos, neg, eta, a, b, state, n, loss, lo, y)
        state += n
        lo += n
    return state, lo


@compiled(inline="always")
def _prm_plus_observe_steps(steps, n, state, lo, a, b, loss, y):
    for _ in range(steps):
        loss[U(lo)] = prm_plus_observe(a, b, state, n, loss, lo, y)
        state += n
        lo += n
    return state, lo


@compiled(nogil=True)
def observe_run(
    steps: int,
    n: int,
    state: int,
    lo: int,
    family: int,
    plus: bool,
    pos: float,
    neg: float,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    loss: np.ndarray,
    y: np.ndarray,
) -> tuple[int, int]:
    """OBSERVELOSS's local updates over ``steps`` consecutive simplex steps of ``n`` entries of
    one run, from state position ``state`` and entry ``lo`` (each step's ``v_k`` into its first
    entry); returns the two after them: :func:`~.rules.observe_simplex` step by step, or its
    arithmetic in a copy for the run's size under PRM+."""
    if family == PRM_PLUS and 2 <= n <= 4:
        if n == 2:
            return _prm_plus_observe_steps(steps, 2, state, lo, a, b, loss, y)
        if n == 3:
            return _prm_plus_observe_steps(steps, 3, state, lo, a, b, loss, y)
        return _prm_plus_observe_steps(steps, 4, state, lo, a, b, loss, y)
    return _observe_steps(steps, n, state, lo, family, plus, pos, neg, eta, a, b, loss, y)


@compiled(inline="always")
def _scatter_steps(steps, n, ns, lo, k, c, shift, stored, loss, d_lo, d_hi):
    for _ in range(steps):
        v = loss[U(lo)]
        d = shift[U(k)]
        for j in range(c - ns, c):
            e = np.int64(stored[U(j)]) + d
            if e >= d_lo and e < d_hi:
                loss[U(e)] += v
        if d == 0:
            c -= ns
        lo -= n
        k -= 1
    return c


@compiled(inline="always")
def scatter_run(
    steps: int,
    n: int,
    ns: int,
    lo: int,
    k: int,
    c: int,
    shift: np.ndarray,
    stored: np.ndarray,
    loss: np.ndarray,
    d_lo: int,
    d_hi: int,
) -> int:
    """OBSERVELOSS's scatter over ``steps`` steps of one run (``n`` entries from ``ns`` source
    slots each), backwards from step ``k`` at entry ``lo`` with ``c`` stored source slots up to
    it (:class:`~efce.polytopes.chain.ShiftedSources`): each step's ``v_k`` (in its first entry)
    added into those of its sources that lie in ``d_lo : d_hi``.  Returns the stored slots
    before the last step walked."""
    if ns == 1:
        return _scatter_steps(steps, n, 1, lo, k, c, shift, stored, loss, d_lo, d_hi)
    if n == 1 and ns == 2:
        return _scatter_steps(steps, 1, 2, lo, k, c, shift, stored, loss, d_lo, d_hi)
    if n == 1 and ns == 3:
        return _scatter_steps(steps, 1, 3, lo, k, c, shift, stored, loss, d_lo, d_hi)
    if n == 1 and ns == 4:
        return _scatter_steps(steps, 1, 4, lo, k, c, shift, stored, loss, d_lo, d_hi)
    if n == 1 and ns == 5:
        return _scatter_steps(steps, 1, 5, lo, k, c, shift, stored, loss, d_lo, d_hi)
    if n == 1 and ns == 6:
        return _scatter_steps(steps, 1, 6, lo, k, c, shift, stored, loss, d_lo, d_hi)
    if n == 1 and ns == 7:
        return _scatter_steps(steps, 1, 7, lo, k, c, shift, stored, loss, d_lo, d_hi)
    return _scatter_steps(steps, n, ns, lo, k, c, shift, stored, loss, d_lo, d_hi)


# ---------------------------------------------------------------------- layout of the passes
@kernel()
def run_chunks(
    ptr: np.ndarray,
    run_kind: np.ndarray,
    run_size: np.ndarray,
    run_nsrc: np.ndarray,
    level_ptr: np.ndarray,
    target_work: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~.chain_passes.chain_chunks` for runs: chunks of consecutive steps of one level
    holding about ``target_work`` entries plus sources.  Returns ``(chunk_ptr, chunk_run,
    chunk_state, level_chunk)``: chunk ``c`` is the steps ``chunk_ptr[c] : chunk_ptr[c+1]``, its
    first step lies in run ``chunk_run[c]`` and its first simplex step's state starts at
    ``chunk_state[c]``; level ``L``'s chunks are ``level_chunk[L] : level_chunk[L+1]``."""
    n_levels = len(level_ptr) - 1
    num_steps = ptr[len(ptr) - 1]
    cap = num_steps + n_levels + 1
    chunk_ptr = np.empty(cap, np.int64)
    chunk_run = np.empty(cap, np.int64)
    chunk_state = np.empty(cap, np.int64)
    level_chunk = np.empty(n_levels + 1, np.int64)
    c = 0
    state = 0
    r = 0
    for L in range(n_levels):
        level_chunk[L] = c
        work = target_work  # forces a new chunk at the level's first step
        for idx in range(level_ptr[L], level_ptr[L + 1]):
            while idx >= ptr[r + 1]:
                r += 1
            if work >= target_work:
                chunk_ptr[c] = idx
                chunk_run[c] = r
                chunk_state[c] = state
                c += 1
                work = 0
            work += run_size[r] + run_nsrc[r]
            if run_kind[r] != SINGLETON:
                state += run_size[r]
    level_chunk[n_levels] = c
    chunk_ptr[c] = num_steps
    return chunk_ptr[: c + 1].copy(), chunk_run[:c].copy(), chunk_state[:c].copy(), level_chunk


@kernel()
def run_chunk_slots(
    ptr: np.ndarray, run_nsrc: np.ndarray, shift: np.ndarray, chunk_ptr: np.ndarray
) -> np.ndarray:
    """``slots[c]``: the stored source slots of the steps before chunk ``c``'s first step
    (:class:`~efce.polytopes.chain.ShiftedSources`), and of every step at the end: where a
    chunk's walk starts forwards, and (``slots[c + 1]``) backwards."""
    slots = np.empty(len(chunk_ptr), np.int64)
    c = 0
    r = 0
    q = 0
    for k in range(ptr[len(ptr) - 1]):
        while k >= ptr[r + 1]:
            r += 1
        while q < len(chunk_ptr) and chunk_ptr[q] == k:
            slots[q] = c
            q += 1
        if shift[k] == 0:
            c += run_nsrc[r]
    while q < len(chunk_ptr):
        slots[q] = c
        q += 1
    return slots


@kernel()
def run_source_histograms(
    ptr: np.ndarray,
    run_nsrc: np.ndarray,
    run_stored: np.ndarray,
    shift: np.ndarray,
    stored: np.ndarray,
    level_ptr: np.ndarray,
    buckets: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~.chain_passes.level_source_histograms` for runs: a level's sources are those of
    its consecutive steps."""
    n_levels = len(level_ptr) - 1
    lo = np.zeros(n_levels, np.int64)
    hi = np.zeros(n_levels, np.int64)
    cum = np.zeros((n_levels, buckets + 1), np.int64)
    none = np.zeros(0, np.int64)
    for L in range(n_levels):
        first, last = level_ptr[L], level_ptr[L + 1]
        if first >= last:
            continue
        r = run_of_step(ptr, first)
        c = stored_before(ptr, run_nsrc, run_stored, shift, r, first)
        a, b = _walk_sources(ptr, run_nsrc, shift, stored, first, last, r, c, 0, 1, none)
        if b == 0:
            continue
        lo[L], hi[L] = a, b
        _walk_sources(ptr, run_nsrc, shift, stored, first, last, r, c, a, b - a, cum[L])
        for q in range(buckets):
            cum[L, q + 1] += cum[L, q]
    return lo, hi, cum


@kernel()
def run_chunk_source_ranges(
    ptr: np.ndarray,
    run_nsrc: np.ndarray,
    shift: np.ndarray,
    stored: np.ndarray,
    chunk_ptr: np.ndarray,
    chunk_run: np.ndarray,
    chunk_slot: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~.chain_passes.chunk_source_ranges` for runs: per chunk, its smallest source
    entry and one past its largest (each chunk walked from its run and stored slots,
    :func:`run_chunks` and :func:`run_chunk_slots`)."""
    n = len(chunk_ptr) - 1
    lo = np.zeros(n, np.int64)
    hi = np.zeros(n, np.int64)
    none = np.zeros(0, np.int64)
    for c in range(n):
        a, b = _walk_sources(
            ptr,
            run_nsrc,
            shift,
            stored,
            chunk_ptr[c],
            chunk_ptr[c + 1],
            chunk_run[c],
            chunk_slot[c],
            0,
            1,
            none,
        )
        lo[c], hi[c] = (a, b) if b > 0 else (0, 0)
    return lo, hi


# ---------------------------------------------------------------------- the passes
@compiled(nogil=True, pipeline_class=SharedBodiesCompiler)
def _recommend_chunks(
    p: int,
    parts: int,
    L: int,
    ptr: np.ndarray,
    run_kind: np.ndarray,
    run_size: np.ndarray,
    run_nsrc: np.ndarray,
    run_entry: np.ndarray,
    shift: np.ndarray,
    stored: np.ndarray,
    chunk_ptr: np.ndarray,
    chunk_run: np.ndarray,
    chunk_state: np.ndarray,
    chunk_slot: np.ndarray,
    level_chunk: np.ndarray,
    family: int,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    x: np.ndarray,
    total: np.ndarray,
    w: float,
    accumulate: bool,
) -> None:
    """Part ``p`` of level ``L``'s chunks in :func:`run_recommend_parallel`."""
    c_lo, c_hi = even_part(level_chunk[L], level_chunk[L + 1], p, parts)
    for c in range(c_lo, c_hi):
        pos = chunk_state[c]
        r = chunk_run[c]
        idx, stop = chunk_ptr[c], chunk_ptr[c + 1]
        lo = step_start(ptr, run_size, run_entry, r, idx)
        slot = chunk_slot[c]
        # run by run: a run's steps share their kind and sizes
        while idx < stop:
            run_stop = min(stop, ptr[U(r + 1)])
            n, ns = run_size[U(r)], run_nsrc[U(r)]
            single = run_kind[U(r)] == SINGLETON
            lo, slot, pos = recommend_run(
                run_stop - idx,
                single,
                n,
                ns,
                lo,
                idx,
                slot,
                pos,
                shift,
                stored,
                family,
                eta,
                a,
                b,
                x,
                total,
                w,
                accumulate,
            )
            idx = run_stop
            r += 1


@kernel(parallel=True)
def run_recommend_parallel(
    ptr: np.ndarray,
    run_kind: np.ndarray,
    run_size: np.ndarray,
    run_nsrc: np.ndarray,
    run_entry: np.ndarray,
    shift: np.ndarray,
    stored: np.ndarray,
    chunk_ptr: np.ndarray,
    chunk_run: np.ndarray,
    chunk_state: np.ndarray,
    chunk_slot: np.ndarray,
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
    """RECOMMEND over the chunks of each level in parallel, each part a contiguous share of the
    level's chunks (the steps are numbered in level order, so a part's reads and writes stay in
    one stretch of memory); with a non-empty ``total`` also ``total += w · x``."""
    x[0] = 1.0
    accumulate = len(total) > 0
    if accumulate:
        total[0] += w * x[0]
    for L in range(len(level_chunk) - 1):
        for p in numba.prange(parts):
            _recommend_chunks(
                np.int64(p),  # prange's index is unsigned: one variant of the part, not two
                parts,
                L,
                ptr,
                run_kind,
                run_size,
                run_nsrc,
                run_entry,
                shift,
                stored,
                chunk_ptr,
                chunk_run,
                chunk_state,
                chunk_slot,
                level_chunk,
                family,
                eta,
                a,
                b,
                x,
                total,
                w,
                accumulate,
            )


@compiled(nogil=True, pipeline_class=SharedBodiesCompiler)
def _observe_chunks(
    p: int,
    parts: int,
    L: int,
    ptr: np.ndarray,
    run_kind: np.ndarray,
    run_size: np.ndarray,
    run_entry: np.ndarray,
    chunk_ptr: np.ndarray,
    chunk_run: np.ndarray,
    chunk_state: np.ndarray,
    level_chunk: np.ndarray,
    family: int,
    plus: bool,
    pos: float,
    neg: float,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    loss: np.ndarray,
    y: np.ndarray,
) -> None:
    """Part ``p`` of level ``L``'s chunks in :func:`run_observe_parallel`'s local updates, ``y``
    its scratch row."""
    c_lo, c_hi = even_part(level_chunk[L], level_chunk[L + 1], p, parts)
    for c in range(c_lo, c_hi):
        state = chunk_state[c]
        r = chunk_run[c]
        idx, stop = chunk_ptr[c], chunk_ptr[c + 1]
        lo = step_start(ptr, run_size, run_entry, r, idx)
        # run by run: a singleton run's v are its ℓ̃ already, skipped whole
        while idx < stop:
            run_stop = min(stop, ptr[U(r + 1)])
            n = run_size[U(r)]
            if run_kind[U(r)] != SINGLETON:
                state, lo = observe_run(
                    run_stop - idx, n, state, lo, family, plus, pos, neg, eta, a, b, loss, y
                )
            else:
                lo += n * (run_stop - idx)
            idx = run_stop
            r += 1


@compiled(nogil=True, pipeline_class=SharedBodiesCompiler)
def _scatter_chunks(
    p: int,
    L: int,
    ptr: np.ndarray,
    run_size: np.ndarray,
    run_nsrc: np.ndarray,
    run_entry: np.ndarray,
    shift: np.ndarray,
    stored: np.ndarray,
    chunk_ptr: np.ndarray,
    chunk_run: np.ndarray,
    chunk_slot: np.ndarray,
    level_chunk: np.ndarray,
    bounds: np.ndarray,
    chunk_src_lo: np.ndarray,
    chunk_src_hi: np.ndarray,
    loss: np.ndarray,
) -> None:
    """Part ``p`` of level ``L``'s scatter in :func:`run_observe_parallel`: the level's values
    added into the source entries of ``bounds[L, p] : bounds[L, p+1]``."""
    d_lo, d_hi = bounds[L, p], bounds[L, p + 1]
    for c in range(level_chunk[L + 1] - 1, level_chunk[L] - 1, -1):
        if chunk_src_hi[c] <= d_lo or chunk_src_lo[c] >= d_hi:
            continue
        first, idx = chunk_ptr[c], chunk_ptr[c + 1] - 1
        r = chunk_run[c]
        while idx >= ptr[U(r + 1)]:
            r += 1
        slot = chunk_slot[c + 1]  # the stored slots up to the chunk's last step
        # run by run, backwards: a run's steps share their sizes
        while idx >= first:
            run_first = max(first, ptr[U(r)])
            n, n_src = run_size[U(r)], run_nsrc[U(r)]
            lo = step_start(ptr, run_size, run_entry, r, idx)
            slot = scatter_run(idx - run_first + 1, n, n_src, lo, idx, slot, shift, stored, loss, d_lo, d_hi)
            idx = run_first - 1
            r -= 1


@kernel(parallel=True)
def run_observe_parallel(
    ptr: np.ndarray,
    run_kind: np.ndarray,
    run_size: np.ndarray,
    run_nsrc: np.ndarray,
    run_entry: np.ndarray,
    shift: np.ndarray,
    stored: np.ndarray,
    chunk_ptr: np.ndarray,
    chunk_run: np.ndarray,
    chunk_state: np.ndarray,
    chunk_slot: np.ndarray,
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
    """OBSERVELOSS level by level in ``parts`` parts: (1) every simplex step updates its local
    state and leaves ``v_k`` in its first entry; (2) each part adds the values of the level's
    steps, in the serial pass's order (steps backwards), into the source entries of its range
    ``bounds[L, p] : bounds[L, p+1]``, skipping the chunks whose sources all lie outside it
    (:func:`~.chain_passes.chain_observe_parallel`'s scheme)."""
    t[0] += 1.0
    pos, neg = discounts(alpha, beta, t[0])
    for L in range(len(level_chunk) - 2, -1, -1):
        for p in numba.prange(parts):
            _observe_chunks(
                np.int64(p),  # prange's index is unsigned: one variant of the part, not two
                parts,
                L,
                ptr,
                run_kind,
                run_size,
                run_entry,
                chunk_ptr,
                chunk_run,
                chunk_state,
                level_chunk,
                family,
                plus,
                pos,
                neg,
                eta,
                a,
                b,
                loss,
                scratch[p],
            )
        for p in numba.prange(parts):
            _scatter_chunks(
                np.int64(p),
                L,
                ptr,
                run_size,
                run_nsrc,
                run_entry,
                shift,
                stored,
                chunk_ptr,
                chunk_run,
                chunk_slot,
                level_chunk,
                bounds,
                chunk_src_lo,
                chunk_src_hi,
                loss,
            )


# ---------------------------------------------------------------------- linear minimization
@kernel()
def run_best_vertex(
    ptr: np.ndarray,
    run_size: np.ndarray,
    run_nsrc: np.ndarray,
    run_entry: np.ndarray,
    run_stored: np.ndarray,
    shift: np.ndarray,
    stored: np.ndarray,
    loss: np.ndarray,
    choice: np.ndarray,
) -> float:
    """:func:`~.chain_passes.chain_best_vertex` for runs: bottom-up, a step adds its smallest
    accumulated loss to its sources (recording that entry in ``choice[k]`` unless ``choice`` is
    empty); ``loss`` is overwritten; returns the minimum."""
    c = run_stored[len(run_stored) - 1]
    for r in range(len(ptr) - 2, -1, -1):
        n, ns = run_size[r], run_nsrc[r]
        for k in range(ptr[r + 1] - 1, ptr[r] - 1, -1):
            lo = step_start(ptr, run_size, run_entry, r, k)
            best = lo
            for e in range(lo + 1, lo + n):
                if loss[e] < loss[best]:
                    best = e
            if len(choice) > 0:
                choice[k] = best
            v = loss[best]
            d = shift[k]
            for j in range(c - ns, c):
                loss[stored[j] + d] += v
            if d == 0:
                c -= ns
    return loss[0]


@kernel()
def run_vertex(
    ptr: np.ndarray,
    run_size: np.ndarray,
    run_nsrc: np.ndarray,
    run_entry: np.ndarray,
    shift: np.ndarray,
    stored: np.ndarray,
    choice: np.ndarray,
    x: np.ndarray,
) -> None:
    """:func:`~.chain_passes.chain_vertex` for runs: the vertex with entry ``choice[k]`` picked at
    every simplex step (top-down)."""
    x[0] = 1.0
    c = 0
    for r in range(len(ptr) - 1):
        n, ns = run_size[r], run_nsrc[r]
        lo = run_entry[r]
        for k in range(ptr[r], ptr[r + 1]):
            d = shift[k]
            if d == 0:
                c += ns
            h = 0.0
            for j in range(c - ns, c):
                h += x[stored[j] + d]
            for e in range(lo, lo + n):
                x[e] = h if e == choice[k] else 0.0
            lo += n
