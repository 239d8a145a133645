"""The deviator of the saddle point fused with the payoff operator's products: ``Y``'s two passes
run trigger block by trigger block, each block's loss and point computed where they are used, so
neither ``Y``'s point, nor its loss, nor its chain is ever held in full.

``Y`` (:mod:`efce.polytopes.triggers`) is the weights ``λ`` (one simplex of ``K`` entries) and,
per trigger, a copy of part of its player's sequence tree (its *block*: the sequences of the
infosets at preorder positions ``pos[Î] .. end[Î]-1`` of each trigger slot's infoset ``Î``, at Y
entries ``slot_base + p`` for the preorder slots ``p``).  The deviator's regret minimizer is
Algorithm 1 over that chain (Farina, Ling, Fang, Sandholm 2019, section 3.2), and its loss is
``−Aᵀ x``; ``A``'s deviation columns of a slot are its block's entries
(:mod:`.operator`).  So for each slot, on one thread, with its block in that thread's scratch:

* :func:`deviator_observe` — the block's losses ``−Aᵀ x`` (:func:`~.operator.deviation_column_sums`),
  then its steps bottom-up (infosets in reverse preorder), each updating its local state
  (:func:`~.rules.observe_simplex`) and adding its value to its parent sequence, the block's
  root adding into its weight's loss ``ℓ̃[λ_t]`` (whose following part
  :func:`~.operator.following_rmatvec` wrote first); :func:`lambda_observe` then updates the
  weights' simplex;
* :func:`deviator_recommend` — the block's point top-down from its weight ``λ_t`` (the weights'
  strategy, :func:`lambda_recommend`), then its columns of ``A y`` added into Ξ's loss
  (:func:`~.operator.deviation_row_adds`; the following part :func:`~.operator.following_matvec`
  wrote first, from the weights alone), optionally ``w · y`` into a running sum;
* :func:`deviator_observe` with ``best`` — ``min_{y ∈ Y} ⟨−Aᵀ ξ, y⟩`` the same way (the checkpoints'
  gap, :func:`efce.solvers.methods.efce.saddle_point_gap`).

Under PRM+ (rm's default rule) a step of 3 or 4 actions — most of Battleship's and Sheriff's
deviator steps — runs a copy of the rule's arithmetic compiled for its size
(:func:`~.rules.observe_simplex_unrolled`, :func:`~.rules.local_strategy_unrolled`), whose loops
the compiler unrolls: medium Battleship's two deviator passes 158 → 141–144 ms per iteration on 2
threads.  The copies cost compiling (about 5 s on one core for the two kernels); sizes met less
often take the general body.

Every number is computed as by the chain passes over ``Y``'s chain and the operator's products
into full buffers, in the same order: a block's entries receive their children's values in the
order the chain's up pass adds them (reverse preorder: children of one sequence are one level,
read backwards), a weight receives its roots' values in that order too, each loss entry is one
sum, and the rows of ``A y`` receive their columns in ascending column order (player 1's slots
before player 2's; distinct EFCE slots write distinct rows, so only EFCE's are split among
threads in :func:`deviator_recommend`, as in :class:`~.backend.PayoffProducts`).  The iterates are
bit-identical to the unfused loop's on any thread count; the state of the rule is indexed by Y
entry (``state position = entry − 1``), which no number depends on.
"""

from __future__ import annotations

import numba
import numpy as np

from efce.games.arrays import U
from efce.games.resources.compiled import compiled

from .jit import SharedBodiesCompiler, kernel
from .operator import BLOCKS_PER_THREAD, deviation_column_sums, deviation_row_adds, trigger_lines, work_part
from .rules import local_strategy, local_strategy_unrolled, observe_simplex, observe_simplex_unrolled

# The hot kernels index through games.arrays.U (unsigned); every index here is non-negative.


@kernel()
def slot_work(
    trig_count: np.ndarray,
    trig_slot: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    line_start: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(slot_inf, cum_work, widest)``: the infoset of each trigger slot, the running work of
    the slots (``cum_work[k]`` over the slots before ``k``: each slot's block of sequences plus
    its line of terminals), as :func:`~.operator.work_part` cuts it, and the largest block."""
    n_slots = np.int64(trig_slot[len(trig_count)])  # an int32 size would compile np.zeros anew
    slot_inf = np.zeros(n_slots, np.int32)  # infoset numbers fit int32
    work = np.zeros(n_slots + 1, np.int64)
    widest = 1
    for inf in range(len(trig_count)):
        block = cum[end[inf]] - cum[pos[inf]]
        widest = max(widest, block)
        for a in range(trig_count[inf]):
            slot_inf[trig_slot[inf] + a] = inf
            work[trig_slot[inf] + a + 1] = block + line_start[inf + 1] - line_start[inf] + 1
    return slot_inf, np.cumsum(work), widest


@compiled(inline="always")
def _slot_range(cum_work: np.ndarray, part: int, parts: int, serial: bool) -> tuple[int, int, int, int]:
    """``(first, stop, step, blocks)``: part ``part``'s blocks of slots (``work_part`` positions,
    slot + 1): every block in turn on one part when ``serial``, else blocks ``part, part +
    parts, …`` of ``parts ·`` :data:`~.operator.BLOCKS_PER_THREAD`."""
    if serial:
        return 0, 1, 1, 1
    return part, parts * BLOCKS_PER_THREAD, parts, parts * BLOCKS_PER_THREAD


@compiled(inline="always")
def _observe_slot(
    s: int,
    slot_inf: np.ndarray,
    trig_slot: np.ndarray,
    slot_base: np.ndarray,
    slot_trigger: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    pre: np.ndarray,
    num_actions: np.ndarray,
    parent_slot: np.ndarray,
    term_ptr: np.ndarray,
    line_start: np.ndarray,
    line_w: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    x: np.ndarray,
    lam_base: int,
    loss_lam: np.ndarray,
    family: int,
    plus: bool,
    pos_d: float,
    neg_d: float,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    loss: np.ndarray,
    y: np.ndarray,
    best: bool,
) -> None:
    """Slot ``s``'s block: its losses ``−Aᵀ x`` into ``loss`` (block slot ``p`` at ``p − p_lo``),
    then bottom-up either the rule's update (:func:`~.rules.observe_simplex`, ``y`` its strategy
    scratch) or, with ``best``, each step's smallest accumulated loss (the first smallest, as
    :func:`~.chain_passes.chain_best_vertex`), added to the parent's entry, or the root's to
    ``loss_lam[λ]``."""
    inf = slot_inf[U(s)]
    p_lo, p_hi, shift, width = trigger_lines(inf, pos, end, cum, term_ptr, line_start)
    deviation_column_sums(
        inf,
        s - trig_slot[U(inf)],
        -p_lo,
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
        -1.0,
        loss,
    )
    eb = slot_base[U(s)]
    root = pos[U(inf)]
    for q in range(end[U(inf)] - 1, root - 1, -1):
        n = num_actions[U(pre[U(q)])]
        lo = cum[U(q)] - p_lo
        if best:
            pick = lo
            for e in range(lo + 1, lo + n):
                if loss[U(e)] < loss[U(pick)]:
                    pick = e
            v = loss[U(pick)]
        else:
            v = observe_simplex_unrolled(
                family, plus, pos_d, neg_d, eta, a, b, eb + cum[U(q)] - 1, n, loss, lo, y
            )
        if q == root:
            loss_lam[U(lam_base + slot_trigger[U(s)])] += v
        else:
            loss[U(parent_slot[U(q)] - p_lo)] += v


@compiled(nogil=True, pipeline_class=SharedBodiesCompiler)
def _observe_part(
    part: int,
    parts: int,
    serial: bool,
    slot_inf: np.ndarray,
    cum_work: np.ndarray,
    trig_slot: np.ndarray,
    slot_base: np.ndarray,
    slot_trigger: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    pre: np.ndarray,
    num_actions: np.ndarray,
    parent_slot: np.ndarray,
    term_ptr: np.ndarray,
    line_start: np.ndarray,
    line_w: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    x: np.ndarray,
    lam_base: int,
    loss_lam: np.ndarray,
    family: int,
    plus: bool,
    pos_d: float,
    neg_d: float,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    loss: np.ndarray,
    y: np.ndarray,
    best: bool,
) -> None:
    """Part ``part`` of :func:`deviator_observe`'s slots, ``loss`` and ``y`` its scratch rows."""
    n_slots = len(slot_inf)
    first, stop, step, blocks = _slot_range(cum_work, part, parts, serial)
    for block in range(first, stop, step):
        k_lo, k_hi = (1, n_slots + 1) if serial else work_part(cum_work, block, blocks)
        start, stop_k, step_k = (k_hi - 1, k_lo - 1, -1) if serial else (k_lo, k_hi, 1)
        for k in range(start, stop_k, step_k):
            _observe_slot(
                k - 1,
                slot_inf,
                trig_slot,
                slot_base,
                slot_trigger,
                pos,
                end,
                cum,
                pre,
                num_actions,
                parent_slot,
                term_ptr,
                line_start,
                line_w,
                row_start,
                rows,
                x,
                lam_base,
                loss_lam,
                family,
                plus,
                pos_d,
                neg_d,
                eta,
                a,
                b,
                loss,
                y,
                best,
            )


@kernel(parallel=True)
def deviator_observe(
    slot_inf: np.ndarray,
    cum_work: np.ndarray,
    trig_slot: np.ndarray,
    slot_base: np.ndarray,
    slot_trigger: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    pre: np.ndarray,
    num_actions: np.ndarray,
    parent_slot: np.ndarray,
    term_ptr: np.ndarray,
    line_start: np.ndarray,
    line_w: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    x: np.ndarray,
    lam_base: int,
    loss_lam: np.ndarray,
    family: int,
    plus: bool,
    pos_d: float,
    neg_d: float,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    loss_rows: np.ndarray,
    y_rows: np.ndarray,
    best: bool,
    serial: bool,
    parts: int,
) -> None:
    """One player's blocks (``_observe_slot``), the update of the rule's state (``best``
    False) or the best response's values (True), the roots' values added into ``loss_lam``.
    ``serial``: the slots in reverse order on one part, for a trigger with several slots (an
    NFCCE trigger: its roots add into one weight, in the order the chain's up pass does);
    otherwise each slot has a weight of its own and the slots are split among the parts.  The
    scratch rows: ``loss_rows[p]`` one block, ``y_rows[p]`` the widest infoset.

    Each part's loop is a function of its own (``_observe_part``), called once per part:
    numba compiles a parallel loop's body about twice, so the loop written out here took twice
    as long to compile, for the same speed."""
    for part in numba.prange(parts):
        _observe_part(
            np.int64(part),  # prange's index is unsigned: one variant, not two
            parts,
            serial,
            slot_inf,
            cum_work,
            trig_slot,
            slot_base,
            slot_trigger,
            pos,
            end,
            cum,
            pre,
            num_actions,
            parent_slot,
            term_ptr,
            line_start,
            line_w,
            row_start,
            rows,
            x,
            lam_base,
            loss_lam,
            family,
            plus,
            pos_d,
            neg_d,
            eta,
            a,
            b,
            loss_rows[part],
            y_rows[part],
            best,
        )


@compiled(nogil=True, pipeline_class=SharedBodiesCompiler)
def _recommend_part(
    part: int,
    parts: int,
    serial: bool,
    slot_inf: np.ndarray,
    cum_work: np.ndarray,
    trig_slot: np.ndarray,
    slot_base: np.ndarray,
    slot_trigger: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    pre: np.ndarray,
    num_actions: np.ndarray,
    parent_slot: np.ndarray,
    term_ptr: np.ndarray,
    line_start: np.ndarray,
    line_w: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    lam_base: int,
    y_lam: np.ndarray,
    family: int,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    out: np.ndarray,
    total: np.ndarray,
    w: float,
    point: np.ndarray,
    y: np.ndarray,
) -> None:
    """Part ``part`` of :func:`deviator_recommend`'s slots, ``y`` its scratch row."""
    n_slots = len(slot_inf)
    scatter = len(out) > 0
    accumulate = len(total) > 0
    keep = len(point) > 0
    first, stop, step, blocks = _slot_range(cum_work, part, parts, serial)
    for block in range(first, stop, step):
        k_lo, k_hi = (1, n_slots + 1) if serial else work_part(cum_work, block, blocks)
        for k in range(k_lo, k_hi):
            s = k - 1
            inf = slot_inf[U(s)]
            p_lo, p_hi, shift, width = trigger_lines(inf, pos, end, cum, term_ptr, line_start)
            eb = slot_base[U(s)]
            root = pos[U(inf)]
            for q in range(root, end[U(inf)]):
                n = num_actions[U(pre[U(q)])]
                lo = cum[U(q)] - p_lo
                h = y_lam[U(lam_base + slot_trigger[U(s)])] if q == root else y[U(parent_slot[U(q)] - p_lo)]
                local_strategy_unrolled(family, eta, a, b, eb + cum[U(q)] - 1, n, y, lo)
                for e in range(lo, lo + n):
                    y[U(e)] = h * y[U(e)]
                    if accumulate:
                        total[U(eb + p_lo + e)] += w * y[U(e)]
                    if keep:
                        point[U(eb + p_lo + e)] = y[U(e)]
            if scatter:
                deviation_row_adds(
                    inf,
                    s - trig_slot[U(inf)],
                    -p_lo,
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
def deviator_recommend(
    slot_inf: np.ndarray,
    cum_work: np.ndarray,
    trig_slot: np.ndarray,
    slot_base: np.ndarray,
    slot_trigger: np.ndarray,
    pos: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    pre: np.ndarray,
    num_actions: np.ndarray,
    parent_slot: np.ndarray,
    term_ptr: np.ndarray,
    line_start: np.ndarray,
    line_w: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    lam_base: int,
    y_lam: np.ndarray,
    family: int,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    out: np.ndarray,
    total: np.ndarray,
    w: float,
    point: np.ndarray,
    y_rows: np.ndarray,
    serial: bool,
    parts: int,
) -> None:
    """One player's blocks top-down from their weights ``y_lam[λ]`` (each step ``h · y`` of its
    local strategy, ``h`` its parent's value), then the block's columns of ``A y`` added into
    ``out`` (none when ``out`` is empty); a non-empty ``total`` also receives ``w · y`` and a
    non-empty ``point`` the block (Y entry order).  ``serial``: the slots in order on one part
    (slots sharing rows, a coarse concept's); otherwise split among the parts.  Each part's loop is
    a function of its own (``_recommend_part``), as in :func:`deviator_observe`."""
    for part in numba.prange(parts):
        _recommend_part(
            np.int64(part),  # prange's index is unsigned: one variant, not two
            parts,
            serial,
            slot_inf,
            cum_work,
            trig_slot,
            slot_base,
            slot_trigger,
            pos,
            end,
            cum,
            pre,
            num_actions,
            parent_slot,
            term_ptr,
            line_start,
            line_w,
            row_start,
            rows,
            lam_base,
            y_lam,
            family,
            eta,
            a,
            b,
            out,
            total,
            w,
            point,
            y_rows[part],
        )


@kernel()
def lambda_observe(
    family: int,
    plus: bool,
    pos_d: float,
    neg_d: float,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    loss_lam: np.ndarray,
    y: np.ndarray,
) -> None:
    """The weights' simplex (Y's first step, state positions ``0 .. K-1``) observes its
    accumulated losses ``loss_lam[1 .. K]``; ``y`` is its strategy scratch."""
    k = len(loss_lam) - 1
    observe_simplex(family, plus, pos_d, neg_d, eta, a, b, 0, k, loss_lam, 1, y)


@kernel()
def lambda_recommend(
    family: int,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    y_lam: np.ndarray,
    total: np.ndarray,
    w: float,
    point: np.ndarray,
) -> None:
    """``y_lam[0] = 1`` and the weights' strategy into ``y_lam[1 .. K]`` (``h = 1``: the chain's
    ``1 · y`` is ``y``); a non-empty ``total`` also receives ``w · y_lam`` (the constant's and
    the weights' entries), a non-empty ``point`` the values."""
    k = len(y_lam) - 1
    y_lam[0] = 1.0
    local_strategy(family, eta, a, b, 0, k, y_lam, 1)
    if len(total) > 0:
        for e in range(k + 1):
            total[e] += w * y_lam[e]
    if len(point) > 0:
        for e in range(k + 1):
            point[e] = y_lam[e]


@kernel()
def lambda_minimum(loss_lam: np.ndarray) -> float:
    """The best response's last step: the smallest accumulated loss of the weights (the
    constant's loss is 0, and ``0 + v`` is ``v``)."""
    best = 1
    for e in range(2, len(loss_lam)):
        if loss_lam[e] < loss_lam[best]:
            best = e
    return 0.0 + loss_lam[best]
