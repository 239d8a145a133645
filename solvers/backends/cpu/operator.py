"""The products of the EFCE payoff operator ``A`` with a vector, serial and parallel.

``A`` (:class:`efce.solvers.evaluation.payoff_operator.PayoffOperator`; rows: Ξ's chain entries,
columns: Y's entries) has a *deviation* part — for a trigger slot of player ``i`` at infoset
``Î`` with recommendation sequence ``r`` (EFCE: ``σ̂ = (Î, â)``) the rows ``(r, σ_{-i}(z))`` and
columns ``(slot, σ_i(z))`` of the terminals ``z`` below ``Î``, read from the trigger tables
(:class:`efce.solvers.evaluation.payoff_operator.PlayerTriggerTable`) — and a *following* part —
column ``λ_t``, rows ``σ(z)`` for the terminals trigger ``t`` fires on, walked up each terminal's
own sequences (each names its trigger, ``follow``) — plus, with a welfare threshold, the column
``λ_τ``.  The same kernels serve every concept (:mod:`efce.concepts`); EFCE's tables make them
the arithmetic they always were.

Every sum runs in the order of a CSR product with the explicit matrix (ascending column for
``A y``, ascending Ξ entry for ``Aᵀ x``): regret matching breaks ties exactly, so this keeps the
iterates bit-identical to the explicit-matrix computation.  One body per unit of work —
:func:`trigger_lines` (a trigger infoset's geometry, for all four deviation kernels),
:func:`deviation_row_adds` / :func:`deviation_column_sums` (one trigger), :func:`following_row`
/ :func:`following_column_adds` (one terminal) — serves the serial kernels and the parallel ones,
which split the work among threads so that every output entry is written by one thread only, in
the serial order: bit-identical for any thread count.

* deviation part of ``A y``: the rows of trigger ``σ̂`` are the pairs holding ``σ̂`` as its
  player's sequence, so distinct EFCE triggers write distinct rows; the trigger slots are cut
  into ``parts ·`` :data:`BLOCKS_PER_THREAD` ranges of about equal work (``cum_work``), dealt to
  the parts in turn (a coarse concept's slots share rows — ``ξ[σ(Î), ·]`` for sibling infosets —
  so its products run serially: :class:`~efce.solvers.backends.cpu.backend.PayoffProducts`);
* deviation part of ``Aᵀ x``: output ``(σ̂, p)`` is one sum, split the same way;
* following part of ``A y``: one row per terminal, terminals split evenly;
* following part of ``Aᵀ x``: player 1's λ entries, player 2's and λ_τ are disjoint, so two parts
  each walk all terminals in the serial order but write only their player's entries.
"""

from __future__ import annotations

import numba
import numpy as np

from efce.games.arrays import U
from efce.games.resources.compiled import compiled

from .jit import kernel

# The kernels index through games.arrays.U (unsigned); every index here is non-negative.

#: The parallel deviation kernels cut the triggers into this many blocks per thread and deal
#: them out in turn (block ``b`` to thread ``b mod threads``).  Equal nominal work is not equal
#: time: ``A y`` skips the zero entries of ``y`` and the rows of some triggers lie farther apart
#: in memory.  Medium Battleship, player 1, two halves of equal nonzeros: 5.6 and 18.7 ms;
#: dealt in blocks, both threads finish together (``A y`` 54 → 41 ms, ``Aᵀ x`` 65 → 51 ms).
BLOCKS_PER_THREAD = 32


# ---------------------------------------------------------------------- one unit of work
@compiled(inline="always")
def trigger_lines(
    inf: int, pos: np.ndarray, end: np.ndarray, cum: np.ndarray, term_ptr: np.ndarray, line_start: np.ndarray
) -> tuple[int, int, int, int]:
    """The geometry of trigger infoset ``inf`` in its player's tables: its subtree's sequence
    slots ``[p_lo, p_hi)``, the shift from a slot's terminal range to its line entries, and the
    line's width (terminals below ``inf``)."""
    p_lo, p_hi = cum[U(pos[U(inf)])], cum[U(end[U(inf)])]
    shift = line_start[U(inf)] - term_ptr[U(p_lo)]
    width = line_start[U(inf + 1)] - line_start[U(inf)]
    return p_lo, p_hi, shift, width


@compiled(inline="always")
def deviation_row_adds(
    inf: int,
    a: int,
    eb: int,
    p_lo: int,
    p_hi: int,
    shift: int,
    width: int,
    term_ptr: np.ndarray,
    line_start: np.ndarray,
    line_w: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    y: np.ndarray,
    out: np.ndarray,
) -> None:
    """Trigger slot ``a`` of infoset ``inf``: its columns of ``A y``'s deviation part (Y entries
    ``eb + p`` for the preorder slots ``p`` of ``inf``'s subtree), added into its rows in
    ascending column order; zero entries of ``y`` are skipped."""
    rshift = row_start[U(inf)] + a * width - line_start[U(inf)]
    for p in range(p_lo, p_hi):
        v = y[U(eb + p)]
        if v == 0.0:
            continue
        for k in range(term_ptr[U(p)] + shift, term_ptr[U(p + 1)] + shift):
            out[U(rows[U(rshift + k)])] += np.float64(line_w[U(k)]) * v


@compiled(inline="always")
def deviation_column_sums(
    inf: int,
    a: int,
    eb: int,
    p_lo: int,
    p_hi: int,
    shift: int,
    width: int,
    term_ptr: np.ndarray,
    line_start: np.ndarray,
    line_w: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    x: np.ndarray,
    sign: float,
    out: np.ndarray,
) -> None:
    """Trigger slot ``a`` of infoset ``inf``: its entries of ``sign · Aᵀ x``'s deviation part,
    each one sum in ascending row order."""
    rshift = row_start[U(inf)] + a * width - line_start[U(inf)]
    for p in range(p_lo, p_hi):
        acc = 0.0
        for k in range(term_ptr[U(p)] + shift, term_ptr[U(p + 1)] + shift):
            acc += np.float64(line_w[U(k)]) * x[U(rows[U(rshift + k)])]
        out[U(eb + p)] = sign * acc


@compiled(inline="always")
def following_row(
    z: int,
    seq_parent0: np.ndarray,
    seq_parent1: np.ndarray,
    own0: np.ndarray,
    own1: np.ndarray,
    follow0: np.ndarray,
    follow1: np.ndarray,
    weighted: np.ndarray,
    welfare_w: np.ndarray,
    lam_base1: int,
    lam_tau: int,
    y: np.ndarray,
    stack: np.ndarray,
) -> float:
    """Row ``σ(z)`` of ``A y``'s following part: ``−p_c u_i(z) λ_t`` for every trigger ``t`` of
    either player that fires on ``z`` — the triggers ``follow_i[σ]`` named by the own sequences
    ``σ ⪯ σ_i(z)`` (-1: none), at Y entries ``1 + t`` (player 1) and ``lam_base1 + t`` (player
    2) — and ``λ_τ``, added in ascending column order (the order of a CSR row of the explicit
    matrix); ``stack`` holds a path (one slot per depth).

    The pushes have no branch: with ``if t >= 0: stack[n] = t; n += 1`` numba's parfor pass
    (0.68) left the rows of every part but the first at 0 in :func:`following_matvec_parallel`."""
    acc = 0.0
    n = 0
    s = own0[U(z)]
    while s != 0:
        t = follow0[U(s)]
        stack[U(n)] = t
        n += t >= 0  # a sequence naming no trigger (-1) is overwritten by the next
        s = seq_parent0[U(s)]
    w = -weighted[z, 0]
    for q in range(n - 1, -1, -1):
        acc += w * y[U(1 + stack[U(q)])]
    n = 0
    s = own1[U(z)]
    while s != 0:
        t = follow1[U(s)]
        stack[U(n)] = t
        n += t >= 0
        s = seq_parent1[U(s)]
    w = -weighted[z, 1]
    for q in range(n - 1, -1, -1):
        acc += w * y[U(lam_base1 + stack[U(q)])]
    if lam_tau >= 0:
        acc += -welfare_w[U(z)] * y[U(lam_tau)]
    return acc


@compiled(inline="always")
def following_column_adds(
    z: int,
    v: float,
    w: float,
    own: np.ndarray,
    seq_parent: np.ndarray,
    follow: np.ndarray,
    lam_base: int,
    out: np.ndarray,
) -> None:
    """Terminal ``z``'s additions ``w · v`` to the λ entries (``lam_base + t``) of the triggers
    ``t = follow[σ]`` of one player's own sequences ``σ ⪯ σ_i(z)`` in ``Aᵀ x``'s following part."""
    s = own[U(z)]
    while s != 0:
        t = follow[U(s)]
        if t >= 0:
            out[U(lam_base + t)] += w * v
        s = seq_parent[U(s)]


@compiled(inline="always")
def following_columns_start(
    num_lambda: int, lam_tau: int, tau: float, x: np.ndarray, out: np.ndarray
) -> None:
    """Zero the λ entries of ``Aᵀ x`` and set ``λ_τ``'s ``τ · x[0]`` (row ``(∅, ∅)`` is Ξ's entry 0,
    the first of its column)."""
    for e in range(num_lambda + 1):
        out[e] = 0.0
    if lam_tau >= 0:
        out[lam_tau] = tau * x[0]


@compiled(inline="always")
def following_columns_scaled(num_lambda: int, sign: float, out: np.ndarray) -> None:
    """``sign`` times the λ entries (the deviation kernels scale as they write)."""
    for e in range(1, num_lambda + 1):
        out[e] = sign * out[e]


# ---------------------------------------------------------------------- serial kernels
@kernel(shares_bodies=True)
def deviation_matvec(
    trig_count: np.ndarray,
    trig_slot: np.ndarray,
    slot_base: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    term_ptr: np.ndarray,
    line_start: np.ndarray,
    line_w: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    y: np.ndarray,
    out: np.ndarray,
) -> None:
    """``out += `` one player's deviation part of ``A y`` (trigger slots in order)."""
    for inf in range(len(trig_count)):
        p_lo, p_hi, shift, width = trigger_lines(inf, pos, end, cum, term_ptr, line_start)
        for a in range(trig_count[U(inf)]):
            deviation_row_adds(
                inf,
                a,
                slot_base[U(trig_slot[U(inf)] + a)],
                p_lo,
                p_hi,
                shift,
                width,
                term_ptr,
                line_start,
                line_w,
                row_start,
                rows,
                y,
                out,
            )


@kernel(shares_bodies=True)
def deviation_rmatvec(
    trig_count: np.ndarray,
    trig_slot: np.ndarray,
    slot_base: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    term_ptr: np.ndarray,
    line_start: np.ndarray,
    line_w: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    x: np.ndarray,
    sign: float,
    out: np.ndarray,
) -> None:
    """One player's deviation entries of ``out = sign · Aᵀ x``."""
    for inf in range(len(trig_count)):
        p_lo, p_hi, shift, width = trigger_lines(inf, pos, end, cum, term_ptr, line_start)
        for a in range(trig_count[U(inf)]):
            deviation_column_sums(
                inf,
                a,
                slot_base[U(trig_slot[U(inf)] + a)],
                p_lo,
                p_hi,
                shift,
                width,
                term_ptr,
                line_start,
                line_w,
                row_start,
                rows,
                x,
                sign,
                out,
            )


@kernel(shares_bodies=True)
def following_matvec(
    seq_parent0: np.ndarray,
    seq_parent1: np.ndarray,
    own0: np.ndarray,
    own1: np.ndarray,
    follow0: np.ndarray,
    follow1: np.ndarray,
    weighted: np.ndarray,
    welfare_w: np.ndarray,
    terminal_row: np.ndarray,
    lam_base1: int,
    lam_tau: int,
    tau: float,
    y: np.ndarray,
    stack: np.ndarray,
    out: np.ndarray,
) -> None:
    """Columns ``λ`` (and ``λ_τ``) of ``A y`` (:func:`following_row`).  Rows of distinct
    terminals are distinct (the tables merge terminals sharing a pair of sequences), so this pass
    writes each of them once, into a zeroed ``out``, before the deviation part adds to them."""
    for z in range(len(own0)):
        out[U(terminal_row[U(z)])] = following_row(
            z,
            seq_parent0,
            seq_parent1,
            own0,
            own1,
            follow0,
            follow1,
            weighted,
            welfare_w,
            lam_base1,
            lam_tau,
            y,
            stack,
        )
    if lam_tau >= 0:
        out[0] += tau * y[lam_tau]  # (∅, ∅) is Ξ's entry 0


@kernel(shares_bodies=True)
def following_rmatvec(
    seq_parent0: np.ndarray,
    seq_parent1: np.ndarray,
    own0: np.ndarray,
    own1: np.ndarray,
    follow0: np.ndarray,
    follow1: np.ndarray,
    weighted: np.ndarray,
    welfare_w: np.ndarray,
    terminal_row: np.ndarray,
    term_order: np.ndarray,
    lam_base1: int,
    num_lambda: int,
    lam_tau: int,
    tau: float,
    x: np.ndarray,
    sign: float,
    out: np.ndarray,
) -> None:
    """Entries ``λ`` (and ``λ_τ``) of ``sign · Aᵀ x``: minus the following values, summed over
    the terminals in ascending Ξ-entry order (the order of a CSR row of the explicit ``Aᵀ``)."""
    following_columns_start(num_lambda, lam_tau, tau, x, out)
    for q in range(len(term_order)):
        z = term_order[U(q)]
        v = x[U(terminal_row[U(z)])]
        following_column_adds(z, v, -weighted[z, 0], own0, seq_parent0, follow0, 1, out)
        following_column_adds(z, v, -weighted[z, 1], own1, seq_parent1, follow1, lam_base1, out)
        if lam_tau >= 0:
            out[U(lam_tau)] += -welfare_w[U(z)] * v
    following_columns_scaled(num_lambda, sign, out)


# ---------------------------------------------------------------------- parallel kernels
@kernel()
def trigger_work(
    trig_count: np.ndarray, trig_slot: np.ndarray, line_start: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(slot_inf, cum_work)``: the infoset of each trigger slot and the running sum of the
    slots' deviation nonzeros, ``cum_work[k]`` over the slots before ``k`` (length slots + 1).
    :func:`work_part` cuts positions ``1..slots`` of it; position ``k`` is slot ``k - 1``."""
    n_slots = np.int64(trig_slot[len(trig_count)])  # an int32 size would compile np.zeros anew
    slot_inf = np.zeros(n_slots, np.int64)
    work = np.zeros(n_slots + 1, np.int64)
    for inf in range(len(trig_count)):
        width = line_start[inf + 1] - line_start[inf]
        for a in range(trig_count[inf]):
            slot_inf[trig_slot[inf] + a] = inf
            work[trig_slot[inf] + a + 1] = width + 1
    return slot_inf, np.cumsum(work)


@compiled(inline="always")
def work_part(cum_work: np.ndarray, p: int, parts: int) -> tuple[int, int]:
    """Positions ``[lo, hi)`` (slot + 1) of part ``p`` of ``parts``: equal shares of the total work."""
    total = cum_work[-1]
    lo = 1 if p == 0 else np.searchsorted(cum_work, (total * p) // parts, side="right")
    hi = (
        len(cum_work)
        if p == parts - 1
        else np.searchsorted(cum_work, (total * (p + 1)) // parts, side="right")
    )
    return max(lo, 1), max(hi, 1)


@kernel(parallel=True)
def deviation_matvec_parallel(
    slot_inf: np.ndarray,
    cum_work: np.ndarray,
    trig_slot: np.ndarray,
    slot_base: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    term_ptr: np.ndarray,
    line_start: np.ndarray,
    line_w: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    y: np.ndarray,
    out: np.ndarray,
    parts: int,
) -> None:
    """:func:`deviation_matvec` with the trigger slots in ``parts · blocks_per_part`` blocks of
    equal work (:data:`BLOCKS_PER_THREAD` per part), block ``b`` on part ``b mod parts``; for
    slots that write distinct rows (EFCE's)."""
    blocks = parts * BLOCKS_PER_THREAD
    for part in numba.prange(parts):
        for block in range(part, blocks, parts):
            k_lo, k_hi = work_part(cum_work, block, blocks)
            for k in range(k_lo, k_hi):
                inf = slot_inf[U(k - 1)]
                p_lo, p_hi, shift, width = trigger_lines(inf, pos, end, cum, term_ptr, line_start)
                deviation_row_adds(
                    inf,
                    k - 1 - trig_slot[U(inf)],
                    slot_base[U(k - 1)],
                    p_lo,
                    p_hi,
                    shift,
                    width,
                    term_ptr,
                    line_start,
                    line_w,
                    row_start,
                    rows,
                    y,
                    out,
                )


@kernel(parallel=True)
def deviation_rmatvec_parallel(
    slot_inf: np.ndarray,
    cum_work: np.ndarray,
    trig_slot: np.ndarray,
    slot_base: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    term_ptr: np.ndarray,
    line_start: np.ndarray,
    line_w: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    x: np.ndarray,
    sign: float,
    out: np.ndarray,
    parts: int,
) -> None:
    """:func:`deviation_rmatvec` split as :func:`deviation_matvec_parallel` (every output entry
    belongs to one slot, so any concept's slots may be split)."""
    blocks = parts * BLOCKS_PER_THREAD
    for part in numba.prange(parts):
        for block in range(part, blocks, parts):
            k_lo, k_hi = work_part(cum_work, block, blocks)
            for k in range(k_lo, k_hi):
                inf = slot_inf[U(k - 1)]
                p_lo, p_hi, shift, width = trigger_lines(inf, pos, end, cum, term_ptr, line_start)
                deviation_column_sums(
                    inf,
                    k - 1 - trig_slot[U(inf)],
                    slot_base[U(k - 1)],
                    p_lo,
                    p_hi,
                    shift,
                    width,
                    term_ptr,
                    line_start,
                    line_w,
                    row_start,
                    rows,
                    x,
                    sign,
                    out,
                )


@kernel(parallel=True)
def following_matvec_parallel(
    seq_parent0: np.ndarray,
    seq_parent1: np.ndarray,
    own0: np.ndarray,
    own1: np.ndarray,
    follow0: np.ndarray,
    follow1: np.ndarray,
    weighted: np.ndarray,
    welfare_w: np.ndarray,
    terminal_row: np.ndarray,
    lam_base1: int,
    lam_tau: int,
    tau: float,
    y: np.ndarray,
    stacks: np.ndarray,
    out: np.ndarray,
    parts: int,
) -> None:
    """``out = 0``, then :func:`following_matvec` with the terminals in ``parts`` ranges
    (``stacks``: one row per part).  The zeroing runs on the threads too: alone it is ~10 % of
    the product (medium Battleship: 6 ms of ``A y``'s 41 on two threads)."""
    n_out = len(out)
    for part in numba.prange(parts):
        out[(n_out * part) // parts : (n_out * (part + 1)) // parts] = 0.0
    n_z = len(own0)
    for part in numba.prange(parts):
        stack = stacks[part]
        for z in range((n_z * part) // parts, (n_z * (part + 1)) // parts):
            out[U(terminal_row[U(z)])] = following_row(
                z,
                seq_parent0,
                seq_parent1,
                own0,
                own1,
                follow0,
                follow1,
                weighted,
                welfare_w,
                lam_base1,
                lam_tau,
                y,
                stack,
            )
    if lam_tau >= 0:
        out[0] += tau * y[lam_tau]


@kernel(parallel=True)
def following_rmatvec_parallel(
    seq_parent0: np.ndarray,
    seq_parent1: np.ndarray,
    own0: np.ndarray,
    own1: np.ndarray,
    follow0: np.ndarray,
    follow1: np.ndarray,
    weighted: np.ndarray,
    welfare_w: np.ndarray,
    terminal_row: np.ndarray,
    term_order: np.ndarray,
    lam_base1: int,
    num_lambda: int,
    lam_tau: int,
    tau: float,
    x: np.ndarray,
    sign: float,
    out: np.ndarray,
) -> None:
    """:func:`following_rmatvec` as two parts: player 1's λ entries, then player 2's and λ_τ;
    each walks all terminals in the serial order and writes only its own entries."""
    following_columns_start(num_lambda, lam_tau, tau, x, out)
    for player in numba.prange(2):
        if player == 0:
            for q in range(len(term_order)):
                z = term_order[U(q)]
                v = x[U(terminal_row[U(z)])]
                following_column_adds(z, v, -weighted[z, 0], own0, seq_parent0, follow0, 1, out)
        else:
            for q in range(len(term_order)):
                z = term_order[U(q)]
                v = x[U(terminal_row[U(z)])]
                following_column_adds(z, v, -weighted[z, 1], own1, seq_parent1, follow1, lam_base1, out)
                if lam_tau >= 0:
                    out[U(lam_tau)] += -welfare_w[U(z)] * v
    following_columns_scaled(num_lambda, sign, out)
