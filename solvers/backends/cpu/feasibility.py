"""The feasibility sweeps: a point's violation of its chain's constraints, the chain point
rescaled from any nonnegative values, and the violation of Definition 3 read off the relevant
pairs.

* :func:`chain_violations` — ``max(|x[0] − 1|, max_e −x[e], max_k |Σ_{T_k} x − Σ_{S_k} x|)`` for
  several points at once (:meth:`efce.polytopes.chain.Chain.violations` has the math); the steps
  are split into ranges of about equal work, and the result is a maximum, the same on any number
  of threads;
* :func:`rescaled_point` — top-down, ``x[T_k] = h_k(x) · v[T_k] / Σ_{T_k} v``
  (:meth:`efce.polytopes.chain.Chain.rescaled_point`);
* :func:`definition3_violations` — the constraints of Definition 3 (Farina, Ling, Fang, Sandholm
  2019; von Stengel and Forges 2008) by player 1's infosets, whose rows' player-2 constraints and
  column sums are read once per plan (:class:`efce.polytopes.feasibility.FeasibilityCheck` has
  the math); player 1's infosets are split into ranges of about equal pair counts, and the
  result is a maximum, the same on any number of threads.
"""

from __future__ import annotations

import numba
import numpy as np

from efce.games.arrays import U, lower_bound
from efce.games.resources.compiled import compiled
from efce.polytopes.chain import SINGLETON

from .chain_runs import stored_before
from .jit import SharedBodiesCompiler, balanced_part, kernel


@compiled(inline="always")
def _first_step_of_work(target_ptr, source_ptr, work):
    """The first step ``k`` with ``target_ptr[k] + source_ptr[k] ≥ work`` (the number of steps
    if none): the work (targets plus sources) before step ``k`` is monotone in ``k``, so the
    steps are cut into balanced ranges by bisection, with no per-step array."""
    lo, hi = 0, len(target_ptr) - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if np.int64(target_ptr[mid]) + np.int64(source_ptr[mid]) < work:  # int32 pointers
            lo = mid + 1
        else:
            hi = mid
    return lo


@compiled(inline="always")
def _block_violation(values, lo, hi, s_lo, s_hi, source, shift):
    """``max(|Σ_{T} x − Σ_{S} x|, −min_{T} x)`` for the step filling entries ``lo:hi`` from the
    source slots ``s_lo:s_hi`` (each entry plus ``shift``) of the point ``values``."""
    filled = 0.0
    lowest = 0.0
    for e in range(lo, hi):
        v = values[U(e)]
        filled += v
        if v < lowest:
            lowest = v
    h = 0.0
    for j in range(s_lo, s_hi):
        h += values[U(source[U(j)] + shift)]
    return max(abs(filled - h), -lowest)


@compiled(inline="always")
def _fold_block(local, wide, n_wide, narrow, n_narrow, scales, lo, hi, s_lo, s_hi, source, shift):
    """Each point's :func:`_block_violation` of one step, scaled, into its worst in ``local``
    (the ``n_wide`` float64 points first, then the ``n_narrow`` float32 ones): the step loop of
    both chain layouts."""
    for r in range(n_wide):
        d = _block_violation(wide[r], lo, hi, s_lo, s_hi, source, shift) * scales[r]
        if d > local[r]:
            local[r] = d
    for r in range(n_narrow):
        d = _block_violation(narrow[r], lo, hi, s_lo, s_hi, source, shift) * scales[n_wide + r]
        if d > local[n_wide + r]:
            local[n_wide + r] = d


@compiled(nogil=True, pipeline_class=SharedBodiesCompiler)
def _chain_part(
    part: int,
    parts: int,
    target_ptr: np.ndarray,
    source_ptr: np.ndarray,
    source: np.ndarray,
    wide: np.ndarray,
    n_wide: int,
    narrow: np.ndarray,
    n_narrow: int,
    scales: np.ndarray,
    total: int,
    local: np.ndarray,
) -> None:
    """Part ``part`` of :func:`chain_violations`' steps, its worst values into ``local``: a
    function of its own, called once per part (numba compiles a parallel loop's body about
    twice)."""
    num_steps = len(target_ptr) - 1
    lo = 0 if part == 0 else _first_step_of_work(target_ptr, source_ptr, (total * part) // parts)
    hi = (
        num_steps
        if part == parts - 1
        else _first_step_of_work(target_ptr, source_ptr, (total * (part + 1)) // parts)
    )
    for k in range(lo, hi):
        _fold_block(
            local,
            wide,
            n_wide,
            narrow,
            n_narrow,
            scales,
            target_ptr[k],
            target_ptr[k + 1],
            source_ptr[k],
            source_ptr[k + 1],
            source,
            0,
        )


@kernel(parallel=True)
def chain_violations(
    target_ptr: np.ndarray,
    source_ptr: np.ndarray,
    source: np.ndarray,
    wide: np.ndarray,
    n_wide: int,
    narrow: np.ndarray,
    n_narrow: int,
    scales: np.ndarray,
    parts: int,
) -> np.ndarray:
    """The violations of :meth:`efce.polytopes.chain.Chain.violations` for the first ``n_wide``
    float64 points of ``wide`` and the first ``n_narrow`` float32 points of ``narrow`` (a group
    without points holds one unused empty array), with ``scales`` for wide then narrow: one pass
    over the
    steps reads each step's targets and sources for all the points; the steps are split into
    ``parts`` ranges of equal work."""
    n = n_wide + n_narrow
    num_steps = len(target_ptr) - 1
    total = np.int64(target_ptr[num_steps]) + np.int64(source_ptr[num_steps])
    part_worst = np.zeros((parts, n))
    for part in numba.prange(parts):
        _chain_part(
            np.int64(part),  # prange's index is unsigned: one variant of _chain_part, not two
            parts,
            target_ptr,
            source_ptr,
            source,
            wide,
            n_wide,
            narrow,
            n_narrow,
            scales,
            total,
            part_worst[part],
        )
    return _combined_worst(part_worst, wide, n_wide, narrow, scales)


@compiled(inline="always")
def _combined_worst(part_worst, wide, n_wide, narrow, scales):
    """The parts' worst violations combined, with the root entry's ``|x[0] − 1|``."""
    n = part_worst.shape[1]
    worst = np.zeros(n)
    for r in range(n):
        first = wide[r][0] if r < n_wide else np.float64(narrow[r - n_wide][0])
        worst[r] = abs(scales[r] * first - 1.0)
        for part in range(part_worst.shape[0]):
            if part_worst[part, r] > worst[r]:
                worst[r] = part_worst[part, r]
    return worst


@compiled(inline="always")
def _first_run_step_of_work(ptr, run_size, run_nsrc, run_entry, run_source, work):
    """:func:`_first_step_of_work` for steps stored as runs: the first step ``k`` whose entries
    plus source slots before it reach ``work`` (bisection over the runs, then within one)."""
    lo, hi = 0, len(ptr) - 1  # the first run boundary at or past the work
    while lo < hi:
        mid = (lo + hi) >> 1
        if run_entry[mid] + run_source[mid] < work:
            lo = mid + 1
        else:
            hi = mid
    if lo == 0 or run_entry[lo] + run_source[lo] == work:
        return ptr[lo]
    r = lo - 1  # the step lies inside run r
    per_step = run_size[r] + run_nsrc[r]
    before = run_entry[r] + run_source[r]
    return ptr[r] + (work - before + per_step - 1) // per_step


@compiled(nogil=True, pipeline_class=SharedBodiesCompiler)
def _run_chain_part(
    part: int,
    parts: int,
    ptr: np.ndarray,
    run_size: np.ndarray,
    run_nsrc: np.ndarray,
    run_entry: np.ndarray,
    run_source: np.ndarray,
    run_stored: np.ndarray,
    shift: np.ndarray,
    stored: np.ndarray,
    wide: np.ndarray,
    n_wide: int,
    narrow: np.ndarray,
    n_narrow: int,
    scales: np.ndarray,
    total: int,
    local: np.ndarray,
) -> None:
    """Part ``part`` of :func:`run_chain_violations`' steps, its worst values into ``local``: a
    function of its own, called once per part (numba compiles a parallel loop's body about
    twice)."""
    num_steps = ptr[len(ptr) - 1]
    lo = (
        0
        if part == 0
        else _first_run_step_of_work(ptr, run_size, run_nsrc, run_entry, run_source, (total * part) // parts)
    )
    hi = (
        num_steps
        if part == parts - 1
        else _first_run_step_of_work(
            ptr, run_size, run_nsrc, run_entry, run_source, (total * (part + 1)) // parts
        )
    )
    if lo >= hi:
        return
    r = 0
    while ptr[r + 1] <= lo:
        r += 1
    t_lo = run_entry[r] + (lo - ptr[r]) * run_size[r]
    c = stored_before(ptr, run_nsrc, run_stored, shift, r, lo)
    for k in range(lo, hi):
        if k >= ptr[r + 1]:
            r += 1
        t_hi, ns, d = t_lo + run_size[r], run_nsrc[r], shift[k]
        if d == 0:
            c += ns
        _fold_block(local, wide, n_wide, narrow, n_narrow, scales, t_lo, t_hi, c - ns, c, stored, d)
        t_lo = t_hi


@kernel(parallel=True)
def run_chain_violations(
    ptr: np.ndarray,
    run_size: np.ndarray,
    run_nsrc: np.ndarray,
    run_entry: np.ndarray,
    run_source: np.ndarray,
    run_stored: np.ndarray,
    shift: np.ndarray,
    stored: np.ndarray,
    wide: np.ndarray,
    n_wide: int,
    narrow: np.ndarray,
    n_narrow: int,
    scales: np.ndarray,
    parts: int,
) -> np.ndarray:
    """:func:`chain_violations` for a chain whose steps are stored as runs
    (:class:`efce.polytopes.chain.StepRuns`) with its sources shifted
    (:class:`efce.polytopes.chain.ShiftedSources`): the same ranges of equal work (entries plus
    source slots of the full ``source`` array), found by bisection over the runs."""
    n = n_wide + n_narrow
    last = len(ptr) - 1
    total = run_entry[last] + run_source[last]
    part_worst = np.zeros((parts, n))
    for part in numba.prange(parts):
        _run_chain_part(
            np.int64(part),  # prange's index is unsigned: one variant of _run_chain_part, not two
            parts,
            ptr,
            run_size,
            run_nsrc,
            run_entry,
            run_source,
            run_stored,
            shift,
            stored,
            wide,
            n_wide,
            narrow,
            n_narrow,
            scales,
            total,
            part_worst[part],
        )
    return _combined_worst(part_worst, wide, n_wide, narrow, scales)


@compiled(inline="always")
def _rescaled_block(single, lo, hi, s_lo, s_hi, source, shift, values, x):
    """One step of :func:`rescaled_point`: ``x[lo:hi] = h · v[lo:hi] / Σ v`` (positive parts;
    uniform when the sum is not positive; ``x[lo] = h`` for a singleton step), its source slots'
    entries each plus ``shift``."""
    h = 0.0
    for j in range(s_lo, s_hi):
        h += x[U(source[U(j)] + shift)]
    if single:
        x[U(lo)] = h
        return
    total = 0.0
    for e in range(lo, hi):
        v = np.float64(values[U(e)])
        total += v if v > 0.0 else 0.0
    for e in range(lo, hi):
        v = np.float64(values[U(e)])
        x[U(e)] = h * (v if v > 0.0 else 0.0) / total if total > 0.0 else h / (hi - lo)


@kernel()
def run_rescaled_point(
    ptr: np.ndarray,
    run_kind: np.ndarray,
    run_size: np.ndarray,
    run_nsrc: np.ndarray,
    run_entry: np.ndarray,
    shift: np.ndarray,
    stored: np.ndarray,
    values: np.ndarray,
    x: np.ndarray,
) -> None:
    """:func:`rescaled_point` for a chain whose steps are stored as runs, its sources shifted
    (:class:`efce.polytopes.chain.ShiftedSources`)."""
    x[0] = 1.0
    c = 0
    for r in range(len(ptr) - 1):
        n, ns = run_size[r], run_nsrc[r]
        lo = run_entry[r]
        for k in range(ptr[r], ptr[r + 1]):
            d = shift[k]
            if d == 0:
                c += ns
            _rescaled_block(run_kind[r] == SINGLETON, lo, lo + n, c - ns, c, stored, d, values, x)
            lo += n


@kernel()
def rescaled_point(
    target_ptr: np.ndarray,
    source_ptr: np.ndarray,
    source: np.ndarray,
    kind: np.ndarray,
    values: np.ndarray,
    x: np.ndarray,
) -> None:
    """:meth:`efce.polytopes.chain.Chain.rescaled_point` into ``x`` (steps in their own order:
    every step's sources are filled by earlier steps)."""
    x[0] = 1.0
    for k in range(len(target_ptr) - 1):
        lo, hi = target_ptr[k], target_ptr[k + 1]
        _rescaled_block(kind[k] == SINGLETON, lo, hi, source_ptr[k], source_ptr[k + 1], source, 0, values, x)


@compiled(inline="always")
def _position(index_map, q):
    return q if len(index_map) == 0 else index_map[q]


@compiled(inline="always")
def _read_rows(arrays, scales, index_map, lo, hi, out):
    """``out[r, q - lo] = ξ_r[q]`` for the pairs ``q`` of one row, every array at once."""
    for q in range(lo, hi):
        e = _position(index_map, q)
        for r in range(len(arrays)):
            out[r, q - lo] = scales[r] * arrays[r][e]


@compiled(inline="always")
def _row_violations(sigma2, lo, hi, row_vals, seq_infoset2, nact2, parent2, worst):
    """Player 2's constraints inside one row, ``Σ_b ξ[σ1, (J, b)] = ξ[σ1, σ(J)]``, for every
    plan (``worst[r]`` raised); False if a parent is missing."""
    k = lo
    while k < hi:
        col = sigma2[k]
        if col == 0:
            k += 1
            continue
        j = seq_infoset2[col]
        nb = nact2[j]
        target = parent2[j]
        a = lower_bound(sigma2, lo, hi, target)
        if a >= hi or sigma2[a] != target:
            return False
        for r in range(row_vals.shape[0]):
            lhs = 0.0
            for b in range(nb):
                lhs += row_vals[r, k + b - lo]
            d = abs(lhs - row_vals[r, a - lo])
            if d > worst[r]:
                worst[r] = d
        k += nb
    return True


@compiled(inline="always")
def _infoset_violations(
    inf,
    indptr,
    sigma2,
    first1,
    nact1,
    parent1,
    seq_infoset2,
    nact2,
    parent2,
    arrays,
    index_map,
    scales,
    row_vals,
    col_sum,
    worst,
):
    """The constraints of player 1's infoset ``inf`` (its rows' player-2 constraints and the
    column sums against the parent row), ``worst[r]`` raised per plan; the bad row or -1."""
    f = first1[inf]
    width = indptr[f + 1] - indptr[f]
    n = len(arrays)
    for r in range(n):
        for o in range(width):
            col_sum[r, o] = 0.0
    for a in range(nact1[inf]):
        lo, hi = indptr[f + a], indptr[f + a + 1]
        _read_rows(arrays, scales, index_map, lo, hi, row_vals)
        if not _row_violations(sigma2, lo, hi, row_vals, seq_infoset2, nact2, parent2, worst):
            return f + a
        for r in range(n):
            for o in range(width):
                col_sum[r, o] += row_vals[r, o]
    # Player 1: Σ_a ξ[(I, a), σ2] = ξ[σ(I), σ2] over the shared pattern, merged into σ(I)'s row.
    lo = indptr[f]
    par = parent1[inf]
    q, q_end = indptr[par], indptr[par + 1]
    for o in range(width):
        col = sigma2[lo + o]
        while q < q_end and sigma2[q] < col:
            q += 1
        if q >= q_end or sigma2[q] != col:
            return par
        e = _position(index_map, q)
        for r in range(n):
            d = abs(col_sum[r, o] - scales[r] * arrays[r][e])
            if d > worst[r]:
                worst[r] = d
    return -1


@compiled(nogil=True, pipeline_class=SharedBodiesCompiler)
def _definition3_part(
    part: int,
    parts: int,
    indptr: np.ndarray,
    sigma2: np.ndarray,
    first1: np.ndarray,
    nact1: np.ndarray,
    parent1: np.ndarray,
    seq_infoset2: np.ndarray,
    nact2: np.ndarray,
    parent2: np.ndarray,
    arrays: np.ndarray,
    index_map: np.ndarray,
    scales: np.ndarray,
    cum_work: np.ndarray,
    max_width: int,
    local: np.ndarray,
    bad_rows: np.ndarray,
) -> None:
    """Part ``part`` of :func:`definition3_violations`: its share of the values' signs and its
    infosets, the worst values into ``local`` and its first bad row into ``bad_rows[part]``
    (left alone if none).  A function of its own, called once per part (numba compiles a
    parallel loop's body about twice)."""
    n = len(arrays)
    n_values = len(arrays[0])
    # ξ ≥ 0, in storage order (the map is a bijection).
    for r in range(n):
        lowest = 0.0
        values = arrays[r]
        for q in range((n_values * part) // parts, (n_values * (part + 1)) // parts):
            if values[q] < lowest:
                lowest = values[q]
        if -scales[r] * lowest > local[r]:
            local[r] = -scales[r] * lowest
    lo, hi = balanced_part(cum_work, part, parts)
    buf = np.empty((n, max_width))
    sums = np.empty((n, max_width))
    for inf in range(lo, hi):
        bad = _infoset_violations(
            inf,
            indptr,
            sigma2,
            first1,
            nact1,
            parent1,
            seq_infoset2,
            nact2,
            parent2,
            arrays,
            index_map,
            scales,
            buf,
            sums,
            local,
        )
        if bad >= 0:
            bad_rows[part] = bad
            return


@kernel(parallel=True)
def definition3_violations(
    indptr: np.ndarray,
    sigma2: np.ndarray,
    first1: np.ndarray,
    nact1: np.ndarray,
    parent1: np.ndarray,
    seq_infoset2: np.ndarray,
    nact2: np.ndarray,
    parent2: np.ndarray,
    arrays: np.ndarray,
    index_map: np.ndarray,
    scales: np.ndarray,
    cum_work: np.ndarray,
    parts: int,
) -> tuple[np.ndarray, np.int64]:
    """One pass over the rows, infoset by infoset of player 1 (the rows of an infoset's
    sequences are adjacent): every value of every plan is read once into a row buffer, which
    serves player 2's constraints of that row and the column sums of player 1's constraints.
    The infosets are split into ``parts`` ranges of equal pair counts (``cum_work``), one thread
    each; the first bad row in infoset order is reported, as a serial pass would.  Returns
    ``(worst per plan, bad row or -1)``."""
    n = len(arrays)
    num_rows = len(indptr) - 1
    max_width = 0
    for r in range(num_rows):
        if indptr[r + 1] - indptr[r] > max_width:
            max_width = indptr[r + 1] - indptr[r]
    worst = np.zeros(n)
    e0 = _position(index_map, 0)
    for r in range(n):
        worst[r] = abs(scales[r] * arrays[r][e0] - 1.0)
    # Row ∅ (the root of player 1): player 2's constraints only.
    row_vals = np.empty((n, max_width))
    _read_rows(arrays, scales, index_map, indptr[0], indptr[1], row_vals)
    if not _row_violations(sigma2, indptr[0], indptr[1], row_vals, seq_infoset2, nact2, parent2, worst):
        return worst, np.int64(0)
    part_worst = np.zeros((parts, n))
    part_bad = np.full(parts, -1, np.int64)
    for part in numba.prange(parts):
        _definition3_part(
            np.int64(part),  # prange's index is unsigned: one variant of _definition3_part, not two
            parts,
            indptr,
            sigma2,
            first1,
            nact1,
            parent1,
            seq_infoset2,
            nact2,
            parent2,
            arrays,
            index_map,
            scales,
            cum_work,
            np.int64(max_width),  # not the literal 0 it starts as: one variant, not two
            part_worst[part],
            part_bad,
        )
    for part in range(parts):
        if part_bad[part] >= 0:
            return worst, part_bad[part]
        for r in range(n):
            if part_worst[part, r] > worst[r]:
                worst[r] = part_worst[part, r]
    return worst, np.int64(-1)
