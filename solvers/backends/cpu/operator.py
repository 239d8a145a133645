"""The products of the EFCE payoff operator ``A`` with a vector, serial and parallel.

``A`` (:class:`efce.solvers.evaluation.payoff_operator.PayoffOperator`; rows: Ξ's chain entries,
columns: Y's entries) has a *deviation* part — for a trigger ``σ̂ = (Î, â)`` of player ``i`` the
rows ``(σ̂, σ_{-i}(z))`` and columns ``(σ̂, σ_i(z))`` of the terminals ``z`` below ``Î``, read from
the trigger tables (:class:`efce.solvers.evaluation.payoff_operator.PlayerTriggerTable`) — and a
*following* part — column ``λ_σ̂``, rows ``σ(z)`` for ``σ_i(z) ⪰ σ̂``, walked up each terminal's
own sequences — plus, with a welfare threshold, the column ``λ_τ``.

Every sum runs in the order of a CSR product with the explicit matrix (ascending column for
``A y``, ascending Ξ entry for ``Aᵀ x``): regret matching breaks ties exactly, so this keeps the
iterates bit-identical to the explicit-matrix computation.  One body per unit of work —
:func:`trigger_lines` (a trigger infoset's geometry, for all four deviation kernels),
:func:`deviation_row_adds` / :func:`deviation_column_sums` (one trigger), :func:`following_row`
/ :func:`following_column_adds` (one terminal) — serves the serial kernels and the parallel ones,
which split the work among threads so that every output entry is written by one thread only, in
the serial order: bit-identical for any thread count.

* deviation part of ``A y``: the rows of trigger ``σ̂`` are the pairs holding ``σ̂`` as its
  player's sequence, so distinct triggers write distinct rows; the triggers (sequences) are cut
  into ``parts ·`` :data:`BLOCKS_PER_THREAD` ranges of about equal work (``cum_work``), dealt to the parts
  in turn;
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
    s_hat: int,
    p_lo: int,
    p_hi: int,
    shift: int,
    width: int,
    term_ptr: np.ndarray,
    term_w: np.ndarray,
    line_start: np.ndarray,
    line_term: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    trig_base: int,
    block_start: np.ndarray,
    y: np.ndarray,
    out: np.ndarray,
) -> None:
    """Trigger ``s_hat = (inf, a)``'s columns of ``A y``'s deviation part, added into its rows in
    ascending column order; zero entries of ``y`` are skipped."""
    eb = block_start[U(trig_base + s_hat - 1)] - p_lo
    rshift = row_start[U(inf)] + a * width - line_start[U(inf)]
    for p in range(p_lo, p_hi):
        v = y[U(eb + p)]
        if v == 0.0:
            continue
        for k in range(term_ptr[U(p)] + shift, term_ptr[U(p + 1)] + shift):
            out[U(rows[U(rshift + k)])] += term_w[U(line_term[U(k)])] * v


@compiled(inline="always")
def deviation_column_sums(
    inf: int,
    a: int,
    s_hat: int,
    p_lo: int,
    p_hi: int,
    shift: int,
    width: int,
    term_ptr: np.ndarray,
    term_w: np.ndarray,
    line_start: np.ndarray,
    line_term: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    trig_base: int,
    block_start: np.ndarray,
    x: np.ndarray,
    sign: float,
    out: np.ndarray,
) -> None:
    """Trigger ``s_hat = (inf, a)``'s entries of ``sign · Aᵀ x``'s deviation part, each one sum
    in ascending row order."""
    eb = block_start[U(trig_base + s_hat - 1)] - p_lo
    rshift = row_start[U(inf)] + a * width - line_start[U(inf)]
    for p in range(p_lo, p_hi):
        acc = 0.0
        for k in range(term_ptr[U(p)] + shift, term_ptr[U(p + 1)] + shift):
            acc += term_w[U(line_term[U(k)])] * x[U(rows[U(rshift + k)])]
        out[U(eb + p)] = sign * acc


@compiled(inline="always")
def following_row(
    z: int,
    seq_parent0: np.ndarray,
    seq_parent1: np.ndarray,
    own0: np.ndarray,
    own1: np.ndarray,
    weighted: np.ndarray,
    welfare_w: np.ndarray,
    trig_base1: int,
    lam_tau: int,
    y: np.ndarray,
    stack: np.ndarray,
) -> float:
    """Row ``σ(z)`` of ``A y``'s following part: ``−p_c u_i(z) λ_σ̂`` for every own sequence
    ``σ̂ ⪯ σ_i(z)`` of either player (and ``λ_τ``), added in ascending column order (the order of
    a CSR row of the explicit matrix); ``stack`` holds a path (one slot per depth)."""
    acc = 0.0
    n = 0
    s = own0[U(z)]
    while s != 0:
        stack[U(n)] = s
        n += 1
        s = seq_parent0[U(s)]
    w = -weighted[z, 0]
    for q in range(n - 1, -1, -1):
        acc += w * y[U(stack[U(q)])]  # λ of player 1's trigger σ̂ is entry σ̂
    n = 0
    s = own1[U(z)]
    while s != 0:
        stack[U(n)] = s
        n += 1
        s = seq_parent1[U(s)]
    w = -weighted[z, 1]
    for q in range(n - 1, -1, -1):
        acc += w * y[U(trig_base1 + stack[U(q)])]
    if lam_tau >= 0:
        acc += -welfare_w[U(z)] * y[U(lam_tau)]
    return acc


@compiled(inline="always")
def following_column_adds(
    z: int, v: float, w: float, own: np.ndarray, seq_parent: np.ndarray, base: int, out: np.ndarray
) -> None:
    """Terminal ``z``'s additions ``w · v`` to the λ entries of one player's sequences
    ``σ̂ ⪯ σ_i(z)`` (entries ``base + σ̂``) in ``Aᵀ x``'s following part."""
    s = own[U(z)]
    while s != 0:
        out[U(base + s)] += w * v
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
    first: np.ndarray,
    num_actions: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    term_ptr: np.ndarray,
    term_w: np.ndarray,
    line_start: np.ndarray,
    line_term: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    trig_base: int,
    block_start: np.ndarray,
    y: np.ndarray,
    out: np.ndarray,
) -> None:
    """``out += `` one player's deviation part of ``A y`` (triggers in order)."""
    for inf in range(len(first)):
        p_lo, p_hi, shift, width = trigger_lines(inf, pos, end, cum, term_ptr, line_start)
        for a in range(num_actions[U(inf)]):
            deviation_row_adds(
                inf,
                a,
                first[U(inf)] + a,
                p_lo,
                p_hi,
                shift,
                width,
                term_ptr,
                term_w,
                line_start,
                line_term,
                row_start,
                rows,
                trig_base,
                block_start,
                y,
                out,
            )


@kernel(shares_bodies=True)
def deviation_rmatvec(
    first: np.ndarray,
    num_actions: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    term_ptr: np.ndarray,
    term_w: np.ndarray,
    line_start: np.ndarray,
    line_term: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    trig_base: int,
    block_start: np.ndarray,
    x: np.ndarray,
    sign: float,
    out: np.ndarray,
) -> None:
    """One player's deviation entries of ``out = sign · Aᵀ x``."""
    for inf in range(len(first)):
        p_lo, p_hi, shift, width = trigger_lines(inf, pos, end, cum, term_ptr, line_start)
        for a in range(num_actions[U(inf)]):
            deviation_column_sums(
                inf,
                a,
                first[U(inf)] + a,
                p_lo,
                p_hi,
                shift,
                width,
                term_ptr,
                term_w,
                line_start,
                line_term,
                row_start,
                rows,
                trig_base,
                block_start,
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
    weighted: np.ndarray,
    welfare_w: np.ndarray,
    terminal_row: np.ndarray,
    trig_base1: int,
    lam_tau: int,
    tau: float,
    y: np.ndarray,
    stack: np.ndarray,
    out: np.ndarray,
) -> None:
    """Columns ``λ`` (and ``λ_τ``) of ``A y`` (:func:`following_row`).  Rows of distinct
    terminals are distinct (no chance), so this pass writes each of them once, into a zeroed
    ``out``, before the deviation part adds to them."""
    for z in range(len(own0)):
        out[U(terminal_row[U(z)])] = following_row(
            z, seq_parent0, seq_parent1, own0, own1, weighted, welfare_w, trig_base1, lam_tau, y, stack
        )
    if lam_tau >= 0:
        out[0] += tau * y[lam_tau]  # (∅, ∅) is Ξ's entry 0


@kernel(shares_bodies=True)
def following_rmatvec(
    seq_parent0: np.ndarray,
    seq_parent1: np.ndarray,
    own0: np.ndarray,
    own1: np.ndarray,
    weighted: np.ndarray,
    welfare_w: np.ndarray,
    terminal_row: np.ndarray,
    term_order: np.ndarray,
    trig_base1: int,
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
        following_column_adds(z, v, -weighted[z, 0], own0, seq_parent0, 0, out)
        following_column_adds(z, v, -weighted[z, 1], own1, seq_parent1, trig_base1, out)
        if lam_tau >= 0:
            out[U(lam_tau)] += -welfare_w[U(z)] * v
    following_columns_scaled(num_lambda, sign, out)


# ---------------------------------------------------------------------- parallel kernels
@kernel()
def trigger_work(
    first: np.ndarray, num_actions: np.ndarray, line_start: np.ndarray, n_seq: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(seq_inf, cum_work)``: the infoset of each sequence and the running sum over the
    sequences ``1..s`` of their trigger's deviation nonzeros (``cum_work[0] = 0``)."""
    seq_inf = np.zeros(n_seq, np.int64)
    work = np.zeros(n_seq, np.int64)
    for inf in range(len(first)):
        width = line_start[inf + 1] - line_start[inf]
        for a in range(num_actions[inf]):
            seq_inf[first[inf] + a] = inf
            work[first[inf] + a] = width + 1
    return seq_inf, np.cumsum(work)


@compiled(inline="always")
def work_part(cum_work: np.ndarray, p: int, parts: int) -> tuple[int, int]:
    """Sequences ``[lo, hi)`` of part ``p`` of ``parts``: equal shares of the total work."""
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
    seq_inf: np.ndarray,
    cum_work: np.ndarray,
    first: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    term_ptr: np.ndarray,
    term_w: np.ndarray,
    line_start: np.ndarray,
    line_term: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    trig_base: int,
    block_start: np.ndarray,
    y: np.ndarray,
    out: np.ndarray,
    parts: int,
) -> None:
    """:func:`deviation_matvec` with the triggers in ``parts · blocks_per_part`` blocks of equal
    work (:data:`BLOCKS_PER_THREAD` per part), block ``b`` on part ``b mod parts``."""
    blocks = parts * BLOCKS_PER_THREAD
    for part in numba.prange(parts):
        for block in range(part, blocks, parts):
            s_lo, s_hi = work_part(cum_work, block, blocks)
            for s_hat in range(s_lo, s_hi):
                inf = seq_inf[U(s_hat)]
                p_lo, p_hi, shift, width = trigger_lines(inf, pos, end, cum, term_ptr, line_start)
                deviation_row_adds(
                    inf,
                    s_hat - first[U(inf)],
                    s_hat,
                    p_lo,
                    p_hi,
                    shift,
                    width,
                    term_ptr,
                    term_w,
                    line_start,
                    line_term,
                    row_start,
                    rows,
                    trig_base,
                    block_start,
                    y,
                    out,
                )


@kernel(parallel=True)
def deviation_rmatvec_parallel(
    seq_inf: np.ndarray,
    cum_work: np.ndarray,
    first: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    term_ptr: np.ndarray,
    term_w: np.ndarray,
    line_start: np.ndarray,
    line_term: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    trig_base: int,
    block_start: np.ndarray,
    x: np.ndarray,
    sign: float,
    out: np.ndarray,
    parts: int,
) -> None:
    """:func:`deviation_rmatvec` split as :func:`deviation_matvec_parallel`."""
    blocks = parts * BLOCKS_PER_THREAD
    for part in numba.prange(parts):
        for block in range(part, blocks, parts):
            s_lo, s_hi = work_part(cum_work, block, blocks)
            for s_hat in range(s_lo, s_hi):
                inf = seq_inf[U(s_hat)]
                p_lo, p_hi, shift, width = trigger_lines(inf, pos, end, cum, term_ptr, line_start)
                deviation_column_sums(
                    inf,
                    s_hat - first[U(inf)],
                    s_hat,
                    p_lo,
                    p_hi,
                    shift,
                    width,
                    term_ptr,
                    term_w,
                    line_start,
                    line_term,
                    row_start,
                    rows,
                    trig_base,
                    block_start,
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
    weighted: np.ndarray,
    welfare_w: np.ndarray,
    terminal_row: np.ndarray,
    trig_base1: int,
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
                z, seq_parent0, seq_parent1, own0, own1, weighted, welfare_w, trig_base1, lam_tau, y, stack
            )
    if lam_tau >= 0:
        out[0] += tau * y[lam_tau]


@kernel(parallel=True)
def following_rmatvec_parallel(
    seq_parent0: np.ndarray,
    seq_parent1: np.ndarray,
    own0: np.ndarray,
    own1: np.ndarray,
    weighted: np.ndarray,
    welfare_w: np.ndarray,
    terminal_row: np.ndarray,
    term_order: np.ndarray,
    trig_base1: int,
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
                following_column_adds(z, x[U(terminal_row[U(z)])], -weighted[z, 0], own0, seq_parent0, 0, out)
        else:
            for q in range(len(term_order)):
                z = term_order[U(q)]
                v = x[U(terminal_row[U(z)])]
                following_column_adds(z, v, -weighted[z, 1], own1, seq_parent1, trig_base1, out)
                if lam_tau >= 0:
                    out[U(lam_tau)] += -welfare_w[U(z)] * v
    following_columns_scaled(num_lambda, sign, out)
