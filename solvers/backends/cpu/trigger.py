"""The trigger-regret dynamics' kernels (:mod:`efce.solvers.methods.trigger` has the math and the
layouts): a behavioural strategy in sequence form, CFR's values of every subtree minimizer, best
responses over every trigger's block, the fixed point ``x = M x`` of the players' trigger
deviations, the players' utility vectors, and a strategy written as a mixture of pure plans.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel


@kernel()
def behaviour_to_sequence(
    b: np.ndarray, seg_ptr: np.ndarray, seg_parent_entry: np.ndarray, out: np.ndarray
) -> None:
    """``π̂[e] = b[e] · π̂[parent entry]`` (1 at a block's root), segments top-down."""
    for g in range(len(seg_ptr) - 1):
        p = seg_parent_entry[g]
        scale = 1.0 if p < 0 else out[p]
        for e in range(seg_ptr[g], seg_ptr[g + 1]):
            out[e] = b[e] * scale


@kernel()
def subtree_values(
    u: np.ndarray,
    trig_weight: np.ndarray,
    b: np.ndarray,
    seg_ptr: np.ndarray,
    seg_parent_entry: np.ndarray,
    entry_seq: np.ndarray,
    entry_trigger: np.ndarray,
    cf: np.ndarray,
    seg_value: np.ndarray,
) -> None:
    """CFR's counterfactual utilities of every subtree minimizer at once, bottom-up.

    Entry ``e`` of trigger ``t`` starts at ``trig_weight[t] · u[entry_seq[e]]`` (the utility
    ``x[σ̂]·u|Σ_ĵ``) and gains the values of its child segments; a segment's value is
    ``Σ_a b[a] cf[a]`` under the recommended behaviour ``b``.  Fills ``cf`` and ``seg_value``
    (the value of a trigger's root segment is ``x[σ̂]·⟨u|Σ_ĵ, π̂_σ̂⟩``)."""
    for e in range(len(cf)):
        cf[e] = trig_weight[entry_trigger[e]] * u[entry_seq[e]]
    for g in range(len(seg_ptr) - 2, -1, -1):
        v = 0.0
        for e in range(seg_ptr[g], seg_ptr[g + 1]):
            v += b[e] * cf[e]
        seg_value[g] = v
        p = seg_parent_entry[g]
        if p >= 0:
            cf[p] += v


@kernel()
def best_response_values(
    values: np.ndarray,
    seg_ptr: np.ndarray,
    seg_parent_entry: np.ndarray,
    cf: np.ndarray,
    seg_value: np.ndarray,
) -> None:
    """Best-response values of per-entry utilities ``values`` over every block (bottom-up)."""
    for e in range(len(cf)):
        cf[e] = values[e]
    for g in range(len(seg_ptr) - 2, -1, -1):
        lo = seg_ptr[g]
        hi = seg_ptr[g + 1]
        v = cf[lo]
        for e in range(lo + 1, hi):
            if cf[e] > v:
                v = cf[e]
        seg_value[g] = v
        p = seg_parent_entry[g]
        if p >= 0:
            cf[p] += v


@kernel()
def mmatrix_solve(off: np.ndarray, excess: np.ndarray, rhs: np.ndarray, n: int) -> None:
    """Solve ``(D − O) y = rhs`` in place (``rhs`` becomes ``y``) for the column diagonally
    dominant M-matrix with off-diagonal magnitudes ``O = off[:n, :n]`` (``off[a, b] ≥ 0``, the
    flow ``b → a``; the diagonal of ``off`` is ignored and overwritten) and column excesses
    ``excess[b] ≥ 0`` (``D[b] = excess[b] + Σ_{a≠b} off[a, b]``), with ``rhs ≥ 0``.

    Gaussian elimination in the Grassmann–Taksar–Heyman form: every pivot is recomputed as its
    column's excess plus its off-diagonal magnitudes, and every update adds terms of one sign,
    so nothing cancels.  The fixed-point systems have excesses ``L_j`` that can be 10^-18 of
    the ``λ`` entries; plain elimination loses the excess to rounding there (zero pivots)."""
    for k in range(n):
        piv = excess[k]
        for i in range(k + 1, n):
            piv += off[i, k]
        off[k, k] = piv
        if piv <= 0.0:  # an isolated state (singular only when rhs is 0 there): y_k = 0
            continue
        for i in range(k + 1, n):
            f = off[i, k] / piv
            if f != 0.0:
                for c in range(k + 1, n):
                    if c != i:
                        off[i, c] += f * off[k, c]
                rhs[i] += f * rhs[k]
        for c in range(k + 1, n):
            excess[c] += off[k, c] * excess[k] / piv
    for k in range(n - 1, -1, -1):
        if off[k, k] <= 0.0:
            rhs[k] = 0.0
            continue
        acc = rhs[k]
        for c in range(k + 1, n):
            acc += off[k, c] * rhs[c]
        rhs[k] = acc / off[k, k]


@kernel()
def stationary(
    rate: np.ndarray,
    n: int,
    out: np.ndarray,
    off: np.ndarray,
    excess: np.ndarray,
    rhs: np.ndarray,
    reach: np.ndarray,
) -> None:
    """A stationary distribution of the continuous-time chain with ``rate[b, a]`` (b → a, a ≠ b)
    into ``out[:n]``: restricted to a closed communicating class (found by transitive closure),
    the balance equations with the mass of one state (the root) fixed to 1 are an M-matrix
    system whose column excesses are the rates into the root."""
    for b in range(n):
        for a in range(n):
            reach[b, a] = (a == b) or rate[b, a] > 0.0
    for k in range(n):
        for b in range(n):
            if reach[b, k]:
                for a in range(n):
                    if reach[k, a]:
                        reach[b, a] = True
    root = 0
    for r in range(n):
        closed = True
        for a in range(n):
            if reach[r, a] and not reach[a, r]:
                closed = False
                break
        if closed:
            root = r
            break
    # Unknowns: the states of the class other than the root.
    idx = np.empty(n, np.int64)
    m = 0
    for a in range(n):
        if a != root and reach[root, a]:
            idx[m] = a
            m += 1
    for p in range(m):
        a = idx[p]
        for q in range(m):
            off[p, q] = rate[idx[q], a]
        excess[p] = rate[a, root]
        rhs[p] = rate[root, a]
    if m > 0:
        mmatrix_solve(off, excess, rhs, m)
    for a in range(n):
        out[a] = 0.0
    out[root] = 1.0
    for p in range(m):
        out[idx[p]] = rhs[p]


@kernel()
def fixed_point(
    coarse: bool,
    lam: np.ndarray,
    pi: np.ndarray,
    first_seq: np.ndarray,
    num_actions: np.ndarray,
    parent_seq: np.ndarray,
    seq_infoset: np.ndarray,
    root_seg: np.ndarray,
    seg_ptr: np.ndarray,
    entry_hi: np.ndarray,
    entry_seq: np.ndarray,
    x: np.ndarray,
    c: np.ndarray,
    lam_above: np.ndarray,
) -> None:
    """``x = M x`` with ``M = Σ λ_σ̂ φ_{σ̂→π̂_σ̂}``, infoset by infoset top-down (module doc).

    ``pi``: the subtree minimizers' recommendations in sequence form (layout order).  The EFCE
    trigger of sequence ``σ`` is ``σ − 1``; the coarse trigger of infoset ``j`` is ``j``.
    ``lam_above``: per sequence (EFCE) or per infoset (coarse), the ``λ`` of the triggers on the
    path to it (``L_j``).  Each infoset's values are rescaled to sum to ``x[p_j]`` exactly, so
    ``x`` lies in the sequence-form polytope up to rounding of single products."""
    n_inf = len(first_seq)
    x[:] = 0.0
    c[:] = 0.0
    x[0] = 1.0
    lam_above[:] = 0.0
    amax = 1
    for j in range(n_inf):
        if num_actions[j] > amax:
            amax = num_actions[j]
    off = np.empty((amax, amax))
    excess = np.empty(amax)
    rhs = np.empty(amax)
    rate = np.empty((amax, amax))
    stat = np.empty(amax)
    reach = np.empty((amax, amax), np.bool_)
    for j in range(n_inf):
        p = parent_seq[j]
        A = num_actions[j]
        f = first_seq[j]
        xp = x[p]
        if coarse:
            pj = seq_infoset[p]
            L = 0.0 if pj < 0 else lam_above[pj] + lam[pj]
            lam_above[j] = L
            denom = L + lam[j]
            e0 = seg_ptr[root_seg[j]]
            if denom > 0.0:
                for a in range(A):
                    x[f + a] = (c[f + a] + lam[j] * xp * pi[e0 + a]) / denom
            else:  # no trigger acts here: every split of x[p_j] is a fixed point
                for a in range(A):
                    x[f + a] = xp / A
        else:
            L = lam_above[p]
            for a in range(A):
                lam_above[f + a] = L + lam[f + a - 1]
            if L > 0.0:
                # Column b: excess L_j, off-diagonal flows λ_jb π̂_jb[ja] (note, fixed point).
                for bb in range(A):
                    tb = f + bb - 1
                    e0 = seg_ptr[root_seg[tb]]
                    for a in range(A):
                        off[a, bb] = lam[tb] * pi[e0 + a]
                    excess[bb] = L
                    rhs[bb] = c[f + bb]
                mmatrix_solve(off, excess, rhs, A)
                for a in range(A):
                    x[f + a] = rhs[a]
            else:  # c = 0: x[j·]/x[p_j] is a stationary distribution
                for bb in range(A):
                    tb = f + bb - 1
                    e0 = seg_ptr[root_seg[tb]]
                    for a in range(A):
                        rate[bb, a] = 0.0 if a == bb else lam[tb] * pi[e0 + a]
                stationary(rate, A, stat, off, excess, rhs, reach)
                for a in range(A):
                    x[f + a] = stat[a]
        # Rescale: exact in exact arithmetic (Σ_a c[ja] = L_j x[p_j]); removes rounding drift.
        total = 0.0
        for a in range(A):
            total += x[f + a]
        if total > 0.0 and np.isfinite(total):
            scale = xp / total
            for a in range(A):
                x[f + a] *= scale
        else:
            for a in range(A):
                x[f + a] = xp / A
        # Push the triggers rooted here into the c of the infosets below.
        if coarse:
            w = lam[j] * xp
            if w > 0.0:
                for e in range(seg_ptr[root_seg[j] + 1], entry_hi[j]):
                    c[entry_seq[e]] += w * pi[e]
        else:
            for a in range(A):
                t = f + a - 1
                w = lam[t] * x[f + a]
                if w > 0.0:
                    for e in range(seg_ptr[root_seg[t] + 1], entry_hi[t]):
                        c[entry_seq[e]] += w * pi[e]


@kernel()
def decompose_strategy(
    x: np.ndarray,
    first_seq: np.ndarray,
    num_actions: np.ndarray,
    parent_seq: np.ndarray,
    plans: np.ndarray,
    alphas: np.ndarray,
) -> int:
    """Write the sequence-form strategy ``x`` as a convex combination of reduced pure plans
    (peeling): repeatedly follow, at every reached infoset, the action with the most remaining
    mass, and subtract that plan times the smallest remaining mass on its sequences.  Fills
    ``plans[k]`` (``-1`` where unreached) and ``alphas[k]``; returns the number of plans."""
    r = x.copy()
    n_inf = len(first_seq)
    plays = np.zeros(len(x), np.bool_)
    k = 0
    while r[0] > 1e-15 and k < plans.shape[0]:
        plays[:] = False
        plays[0] = True
        alpha = r[0]
        for j in range(n_inf):
            if not plays[parent_seq[j]]:
                plans[k, j] = -1
                continue
            best = 0
            for a in range(1, num_actions[j]):
                if r[first_seq[j] + a] > r[first_seq[j] + best]:
                    best = a
            plans[k, j] = best
            plays[first_seq[j] + best] = True
            if r[first_seq[j] + best] < alpha:
                alpha = r[first_seq[j] + best]
        if alpha <= 0.0:  # only rounding residue is left
            break
        for s in range(len(x)):
            if plays[s]:
                r[s] -= alpha
        alphas[k] = alpha
        k += 1
    return k


@kernel()
def utility_vectors(
    term_seq: np.ndarray,
    weighted_payoffs: np.ndarray,
    x_flat: np.ndarray,
    offsets: np.ndarray,
    out_flat: np.ndarray,
) -> None:
    """One pass over the terminals: ``out[offsets[i] + σ_i(z)] += p_c(z) u_i(z) Π_{k≠i}
    x_k[σ_k(z)]`` for every player ``i`` (players' vectors concatenated at ``offsets``)."""
    n = term_seq.shape[1]
    reach = np.empty(n)
    out_flat[:] = 0.0
    for z in range(term_seq.shape[0]):
        for k in range(n):
            reach[k] = x_flat[offsets[k] + term_seq[z, k]]
        for i in range(n):
            w = weighted_payoffs[z, i]
            if w == 0.0:
                continue
            for k in range(n):
                if k != i:
                    w *= reach[k]
            out_flat[offsets[i] + term_seq[z, i]] += w
