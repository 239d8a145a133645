"""The gap sweeps: trigger gains of a correlation plan, best responses and subtree sums over a
player's sequences, the welfare of a plan.

For player ``i`` and a trigger slot at infoset ``Î`` with recommendation sequence ``r`` (EFCE:
``σ̂ = (Î, â)``; von Stengel & Forges 2008; Farina, Ling, Fang, Sandholm 2019; the coarse
concepts: :mod:`efce.concepts`) the gain of the trigger agent is ``D − F``: the deviation value
``D`` is a best response over ``Î``'s subtree against ``ξ[r, σ_{-i}(z)]`` (:func:`trigger_gains`,
read through the trigger tables of :mod:`efce.solvers.evaluation.payoff_operator`), the
following value ``F`` a sum of subtree sums of per-sequence terminal sums (:func:`terminal_sums`,
:func:`subtree_sums`).  The evaluator (:class:`efce.solvers.evaluation.gaps.EFCEGapEvaluator`)
combines them; the trigger-regret dynamics and CFR's exploitability use :func:`subtree_sums` and
:func:`best_response` on their own.
"""

from __future__ import annotations

import numba
import numpy as np

from efce.games.resources.compiled import compiled

from .jit import SharedBodiesCompiler, balanced_part, kernel
from .operator import trigger_lines


@kernel()
def welfare(values: np.ndarray, terminal_row: np.ndarray, weighted: np.ndarray) -> float:
    """``Σ_z p_c(z) (u_1 + u_2)(z) values[terminal_row[z]]``."""
    total = 0.0
    for z in range(len(terminal_row)):
        total += (weighted[z, 0] + weighted[z, 1]) * values[terminal_row[z]]
    return total


@kernel()
def terminal_sums(
    values: np.ndarray,
    terminal_row: np.ndarray,
    own: np.ndarray,
    weighted: np.ndarray,
    n_seq0: int,
    n_seq1: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One pass over the terminals: ``per_seq_i[σ] = Σ_{z: σ_i(z) = σ} p_c(z) u_i(z) ξ[σ(z)]`` for
    both players, and their utilities ``Σ_z p_c(z) u_i(z) ξ[σ(z)]`` (no temporary per terminal)."""
    per_seq0 = np.zeros(n_seq0)
    per_seq1 = np.zeros(n_seq1)
    utilities = np.zeros(2)
    for z in range(len(terminal_row)):
        v = values[terminal_row[z]]
        a = weighted[z, 0] * v
        b = weighted[z, 1] * v
        per_seq0[own[z, 0]] += a
        per_seq1[own[z, 1]] += b
        utilities[0] += a
        utilities[1] += b
    return per_seq0, per_seq1, utilities


@kernel()
def subtree_sums(
    values: np.ndarray, first: np.ndarray, num_actions: np.ndarray, parent_seq: np.ndarray
) -> np.ndarray:
    """``out[σ] = Σ_{σ' ⪰ σ} values[σ']``: bottom-up, every sequence adds its total into its
    parent (infosets numbered top-down, their sequences ``first[I] + a`` numbered in infoset
    order, so this is the sequences in reverse order)."""
    out = values.copy()
    for inf in range(len(first) - 1, -1, -1):
        parent = parent_seq[inf]
        for a in range(num_actions[inf] - 1, -1, -1):
            out[parent] += out[first[inf] + a]
    return out


@kernel()
def best_response(
    first: np.ndarray, num_actions: np.ndarray, parent_seq: np.ndarray, utility: np.ndarray
) -> tuple[float, np.ndarray]:
    """``max_{x ∈ X} ⟨utility, x⟩`` over one player's sequence-form polytope ``X`` by backward
    induction (Farina, Ling, Fang, Sandholm 2019, section 3.2): bottom-up ``V(I) = max_a
    (u[(I, a)] + Σ_{I' below (I, a)} V(I'))``, the value ``u[∅] + Σ_{root infosets} V(I)``; ties
    go to the first action.  Returns ``(value, x)`` with ``x`` a pure maximizer."""
    n_inf = len(first)
    acc = utility.copy()  # acc[σ] = u[σ] + values of the infosets below σ
    choice = np.zeros(n_inf, np.int64)
    for inf in range(n_inf - 1, -1, -1):
        best, arg = -np.inf, 0
        for a in range(num_actions[inf]):
            v = acc[first[inf] + a]
            if v > best:
                best, arg = v, a
        choice[inf] = arg
        acc[parent_seq[inf]] += best
    x = np.zeros(len(utility))
    x[0] = 1.0
    for inf in range(n_inf):  # top-down
        if x[parent_seq[inf]] > 0.0:
            x[first[inf] + choice[inf]] = x[parent_seq[inf]]
    return acc[0], x


@compiled(nogil=True, pipeline_class=SharedBodiesCompiler)
def _gains_part(
    part: int,
    parts: int,
    first: np.ndarray,
    num_actions: np.ndarray,
    trig_count: np.ndarray,
    trig_slot: np.ndarray,
    child_ptr: np.ndarray,
    child_inf: np.ndarray,
    pos: np.ndarray,
    pre: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    term_ptr: np.ndarray,
    line_start: np.ndarray,
    line_w: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    follow: np.ndarray,
    values: np.ndarray,
    cum_work: np.ndarray,
    gains: np.ndarray,
) -> None:
    """Part ``part`` of :func:`trigger_gains`' infosets into ``gains``: a function of its own,
    called once per part (numba compiles a parallel loop's body about twice)."""
    lo, hi = balanced_part(cum_work, part, parts)
    value = np.zeros(len(first))
    gains_of_infosets(
        lo,
        hi,
        first,
        num_actions,
        trig_count,
        trig_slot,
        child_ptr,
        child_inf,
        pos,
        pre,
        end,
        cum,
        term_ptr,
        line_start,
        line_w,
        row_start,
        rows,
        follow,
        values,
        value,
        gains,
    )


@kernel(parallel=True)
def trigger_gains(
    first: np.ndarray,
    num_actions: np.ndarray,
    trig_count: np.ndarray,
    trig_slot: np.ndarray,
    child_ptr: np.ndarray,
    child_inf: np.ndarray,
    pos: np.ndarray,
    pre: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    term_ptr: np.ndarray,
    line_start: np.ndarray,
    line_w: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    follow: np.ndarray,
    values: np.ndarray,
    cum_work: np.ndarray,
    parts: int,
) -> np.ndarray:
    """``D − F`` for every trigger slot of one player (``follow``: the following value of each
    slot), the trigger infosets split into ``parts`` ranges of about equal work (``cum_work``),
    each gain computed by one thread in the serial order: the same on any thread count."""
    gains = np.full(len(follow), np.nan)
    for part in numba.prange(parts):
        # prange's index is unsigned: as int64, one variant of _gains_part, not two
        _gains_part(
            np.int64(part),
            parts,
            first,
            num_actions,
            trig_count,
            trig_slot,
            child_ptr,
            child_inf,
            pos,
            pre,
            end,
            cum,
            term_ptr,
            line_start,
            line_w,
            row_start,
            rows,
            follow,
            values,
            cum_work,
            gains,
        )
    return gains


@compiled(inline="always")
def gains_of_infosets(
    i_lo: int,
    i_hi: int,
    first: np.ndarray,
    num_actions: np.ndarray,
    trig_count: np.ndarray,
    trig_slot: np.ndarray,
    child_ptr: np.ndarray,
    child_inf: np.ndarray,
    pos: np.ndarray,
    pre: np.ndarray,
    end: np.ndarray,
    cum: np.ndarray,
    term_ptr: np.ndarray,
    line_start: np.ndarray,
    line_w: np.ndarray,
    row_start: np.ndarray,
    rows: np.ndarray,
    follow: np.ndarray,
    values: np.ndarray,
    value: np.ndarray,
    gains: np.ndarray,
) -> np.ndarray:
    """The gains of the trigger slots at infosets ``i_lo .. i_hi-1`` (``value``: infoset scratch)."""
    for trig_inf in range(i_lo, i_hi):
        _, _, shift, width = trigger_lines(trig_inf, pos, end, cum, term_ptr, line_start)
        lo, hi = pos[trig_inf], end[trig_inf]
        for a_hat in range(trig_count[trig_inf]):
            rshift = row_start[trig_inf] + a_hat * width - line_start[trig_inf]
            # Best response of the trigger agent, bottom-up over Î's subtree (reverse preorder).
            for q in range(hi - 1, lo - 1, -1):
                inf = pre[q]
                best = -np.inf
                for b in range(num_actions[inf]):
                    s = first[inf] + b
                    p = cum[q] + b
                    v = 0.0
                    for k in range(term_ptr[p] + shift, term_ptr[p + 1] + shift):
                        v += np.float64(line_w[k]) * values[rows[rshift + k]]
                    for c in range(child_ptr[s], child_ptr[s + 1]):
                        v += value[child_inf[c]]
                    if v > best:
                        best = v
                value[inf] = best
            slot = trig_slot[trig_inf] + a_hat
            gains[slot] = value[trig_inf] - follow[slot]
    return gains
