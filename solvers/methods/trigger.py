"""Deterministic trigger-regret dynamics: EFCE (``trigger``) and EFCCE (``coarse-trigger``) in
n-player games with chance.

Every player runs a Φ-regret minimizer (Gordon, Greenwald, Marks, ICML 2008) over her trigger
deviations; every iteration all players play mixed sequence-form strategies ``x_i^t`` at once, and
the correlated distribution is the weighted average of their products
``μ = Σ_t w_t ⊗_i x_i^t / Σ_t w_t``.  Its EFCE (EFCCE) gap is at most the largest Φ-regret divided
by ``Σ_t w_t`` (uniform weights), so it goes to 0 like ``O(T^-1/2)``.  The same dynamics appear in
Farina, Celli, Marchesi, Gatti, *Simple uncoupled no-regret learning dynamics for extensive-form
correlated equilibrium* (JACM 2022) and, with predictive minimizers, in Anagnostides, Farina,
Kroer, Celli, Sandholm, *Faster no-regret learning dynamics for extensive-form correlated and
coarse correlated equilibria* (EC 2022).  The construction follows ``shared/trigger-regret.md``;
``docs/algorithms.md`` has the equations.

Math (player ``i``, sequence-form polytope ``Q``; ``Σ_ĵ`` the sequences at or below infoset ``ĵ``,
``Q_ĵ`` the sequence-form polytope of that subtree):

* Trigger deviation ``φ_{σ̂→π̂}`` (``σ̂ = (ĵ, â)``, ``π̂ ∈ Q_ĵ``):
  ``φ(x)[σ] = x[σ] − x[σ]·[σ ⪰ σ̂] + x[σ̂]·π̂[σ]`` for ``σ ∈ Σ_ĵ``, ``x[σ]`` otherwise.
  Coarse (EFCCE) trigger at ``ĵ``: ``φ(x)[σ] = x[p_ĵ]·π̂[σ]`` for ``σ ∈ Σ_ĵ``.
* ``co Φ = Δ(triggers) ◁ Π_σ̂ Q_ĵ`` (a scaled extension, Farina et al. 2019): ``λ`` on the simplex
  of triggers, ``z_σ̂ = λ_σ̂ π̂_σ̂``.  It is minimized by one local simplex minimizer for ``λ`` and,
  per trigger, CFR over a copy of the subtree's infosets (the "subtree minimizers").  The
  utility ``⟨u, M x⟩`` gives ``z_σ̂`` the utility ``x[σ̂]·u|Σ_ĵ`` (coarse: ``x[p_ĵ]·u|Σ_ĵ``) and
  ``λ_σ̂`` the value of the subtree minimizer's recommendation minus ``⟨u|{σ ⪰ σ̂}, x⟩`` (coarse:
  ``⟨u|Σ_ĵ, x⟩``) — Algorithm 1 of the scaled extension.
* Fixed point ``x = M x``, infoset by infoset top-down: with ``c[ja]`` the mass pushed into ``j``'s
  sequences by triggers strictly above ``j`` and ``L_j`` the ``λ`` of the sequences ``⪯ p_j``,
  ``x[ja](L_j + λ_ja) − Σ_b λ_jb π̂_jb[ja] x[jb] = c[ja]`` — a nonsingular M-matrix system when
  ``L_j > 0``; a stationary distribution of the chain ``b → a`` with rates ``λ_jb π̂_jb[ja]``
  when ``L_j = 0``.  Coarse: ``x[ja] = (c[ja] + λ_j x[p_j] π̂_j[ja]) / (L_j + λ_j)``.
* Exact gap of ``μ``: with ``G_σ̂ = Σ_t w_t x^t[σ̂] u^t|Σ_ĵ`` and
  ``F_σ̂ = Σ_t w_t ⟨u^t|{σ ⪰ σ̂}, x^t⟩``, player ``i``'s EFCE gain is
  ``max_σ̂ (max_{π∈Q_ĵ} ⟨G_σ̂, π⟩ − F_σ̂) / Σ_t w_t`` (a best response per subtree).  The EFCCE gain
  sums ``G`` and ``F`` over the triggers of each infoset; the NFCCE gain is a best response to
  ``Σ_t w_t u^t`` minus the utility.  All three are exact for ``μ`` (cross-checked against
  :func:`solvers.evaluation.device_gaps.device_gaps` of the expanded distribution in the tests).

Layout.  A *trigger layout* lists, for every trigger, a copy of its subtree's infosets (in the
sequence space's depth-first preorder, so parents come first) as segments of a flat array: one
entry per (trigger, sequence of the subtree), ``Σ_σ̂ |Σ_ĵ|`` entries per player.  Every pass over
it (behavioural → sequence form, the fixed point, CFR values, best responses) is a numba kernel
below; the local rules run on it through :class:`solvers.regret.local.Segments`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numba
import numpy as np

from efce.errors import GameError
from efce.games.game import Game
from efce.games.payoffs import terminal_map
from efce.solvers.driver import IterationDriver, ProgressCallback
from efce.solvers.evaluation.device import DEVICE_BYTES_LIMIT, check_device_size
from efce.solvers.evaluation.device_gaps import FactoredDevice
from efce.solvers.options import ITERATIONS, LOCAL, TARGET_GAP, TIME_LIMIT, Method, defaults
from efce.solvers.regret.local import LocalRule, Segments
from efce.solvers.regret.registry import as_rule
from efce.solvers.result import SolveResult, TraceRow

METHODS = ("trigger", "coarse-trigger")
#: Weights of the averaged distribution: uniform (w_t = 1) or linear (w_t = t).
AVERAGING = ("uniform", "linear")
#: Default local rule and averaging: PRM+ with linear weights was fastest or tied on every game
#: measured (docs/results/trigger/table.md).
DEFAULT_RULE = "prm+"
DEFAULT_AVERAGING = "linear"
#: The options of ``trigger`` and ``coarse-trigger`` (:data:`SOLVE_METHODS`): type, range and
#: default of each.
OPTIONS = (ITERATIONS.with_default(10_000), TIME_LIMIT, TARGET_GAP, LOCAL.with_default(DEFAULT_RULE))
#: Option name → the default of ``trigger`` and ``coarse-trigger`` (:data:`OPTIONS`),
#: :func:`solve_trigger`'s own.
DEFAULTS = defaults(OPTIONS)


# ---------------------------------------------------------------------- layouts
@dataclass(frozen=True, eq=False)
class TriggerLayout:
    """Per trigger, a copy of its subtree's infosets as consecutive segments of a flat array.

    Attributes
    ----------
    trigger_root : int64[num_triggers]
        The infoset ``ĵ`` whose subtree the trigger's continuation lives in.
    seg : Segments
        One segment per (trigger, infoset of the subtree), of the infoset's number of actions.
    seg_infoset, seg_trigger, seg_parent_entry : int64[num_segments]
        The infoset, the trigger, and the entry of the parent sequence in the same trigger's block
        (``-1`` for the root segment).
    entry_seq, entry_trigger : int64[num_entries]
        The sequence and the trigger of every entry.
    root_seg : int64[num_triggers]
        First (root) segment of every trigger's block; ``entry_hi`` its block's end entry.
    """

    trigger_root: np.ndarray
    seg: Segments
    seg_infoset: np.ndarray
    seg_trigger: np.ndarray
    seg_parent_entry: np.ndarray
    entry_seq: np.ndarray
    entry_trigger: np.ndarray
    root_seg: np.ndarray
    entry_hi: np.ndarray

    @property
    def num_triggers(self) -> int:
        return len(self.trigger_root)

    @property
    def size(self) -> int:
        return self.seg.total


def trigger_layout(space, coarse: bool) -> TriggerLayout:
    """The layout of the EFCE triggers (one per non-empty sequence, ``σ̂ = σ``: index ``σ − 1``)
    or of the EFCCE triggers (one per infoset) of a sequence space."""
    tree = space.tree
    A = space.infoset_num_actions.astype(np.int64)
    first = space.infoset_first_seq.astype(np.int64)
    if coarse:
        roots = np.arange(space.num_infosets, dtype=np.int64)
    else:
        roots = space.seq_infoset[1:].astype(np.int64)
    # Preorder end of every infoset's subtree: the end of its last action's subtree.
    end = tree.subtree_hi[first + A - 1] if space.num_infosets else np.zeros(0, np.int64)
    arrays = _build_layout(
        roots,
        tree.preorder.astype(np.int64),
        tree.position.astype(np.int64),
        end.astype(np.int64),
        A,
        first,
        space.infoset_parent_seq.astype(np.int64),
        space.seq_infoset.astype(np.int64),
    )
    seg_ptr, seg_inf, seg_trig, seg_par, e_seq, e_trig, root_seg, e_hi = arrays
    return TriggerLayout(roots, Segments(seg_ptr), seg_inf, seg_trig, seg_par, e_seq, e_trig, root_seg, e_hi)


@numba.njit(cache=True)
def _build_layout(roots, preorder, position, end, num_actions, first_seq, parent_seq, seq_infoset):
    n_seg = 0
    n_ent = 0
    for t in range(len(roots)):
        j = roots[t]
        for q in range(position[j], end[j]):
            n_seg += 1
            n_ent += num_actions[preorder[q]]
    seg_ptr = np.zeros(n_seg + 1, np.int64)
    seg_inf = np.empty(n_seg, np.int64)
    seg_trig = np.empty(n_seg, np.int64)
    seg_par = np.empty(n_seg, np.int64)
    e_seq = np.empty(n_ent, np.int64)
    e_trig = np.empty(n_ent, np.int64)
    root_seg = np.empty(len(roots), np.int64)
    e_hi = np.empty(len(roots), np.int64)
    local_seg = np.zeros(len(first_seq), np.int64)  # infoset -> its segment in the current block
    g = 0
    e = 0
    for t in range(len(roots)):
        j = roots[t]
        root_seg[t] = g
        for q in range(position[j], end[j]):
            k = preorder[q]
            local_seg[k] = g
            seg_inf[g] = k
            seg_trig[g] = t
            if k == j:
                seg_par[g] = -1
            else:
                ps = parent_seq[k]
                pk = seq_infoset[ps]
                seg_par[g] = seg_ptr[local_seg[pk]] + ps - first_seq[pk]
            for a in range(num_actions[k]):
                e_seq[e] = first_seq[k] + a
                e_trig[e] = t
                e += 1
            g += 1
            seg_ptr[g] = e
        e_hi[t] = e
    return seg_ptr, seg_inf, seg_trig, seg_par, e_seq, e_trig, root_seg, e_hi


# ---------------------------------------------------------------------- kernels
@numba.njit(cache=True)
def _behaviour_to_sequence(b, seg_ptr, seg_parent_entry, out):
    """``π̂[e] = b[e] · π̂[parent entry]`` (1 at a block's root), segments top-down."""
    for g in range(len(seg_ptr) - 1):
        p = seg_parent_entry[g]
        scale = 1.0 if p < 0 else out[p]
        for e in range(seg_ptr[g], seg_ptr[g + 1]):
            out[e] = b[e] * scale


@numba.njit(cache=True)
def _subtree_values(u, trig_weight, b, seg_ptr, seg_parent_entry, entry_seq, entry_trigger, cf, seg_value):
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


@numba.njit(cache=True)
def _best_response_values(values, seg_ptr, seg_parent_entry, cf, seg_value):
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


@numba.njit(cache=True)
def _mmatrix_solve(off, excess, rhs, n):
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


@numba.njit(cache=True)
def _stationary(rate, n, out, off, excess, rhs, reach):
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
        _mmatrix_solve(off, excess, rhs, m)
    for a in range(n):
        out[a] = 0.0
    out[root] = 1.0
    for p in range(m):
        out[idx[p]] = rhs[p]


@numba.njit(cache=True)
def _fixed_point(
    coarse,
    lam,
    pi,
    first_seq,
    num_actions,
    parent_seq,
    seq_infoset,
    root_seg,
    seg_ptr,
    entry_hi,
    entry_seq,
    x,
    c,
    lam_above,
):
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
                _mmatrix_solve(off, excess, rhs, A)
                for a in range(A):
                    x[f + a] = rhs[a]
            else:  # c = 0: x[j·]/x[p_j] is a stationary distribution
                for bb in range(A):
                    tb = f + bb - 1
                    e0 = seg_ptr[root_seg[tb]]
                    for a in range(A):
                        rate[bb, a] = 0.0 if a == bb else lam[tb] * pi[e0 + a]
                _stationary(rate, A, stat, off, excess, rhs, reach)
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


@numba.njit(cache=True)
def _subtree_sums(values, seq_parent):
    """``W[σ] = Σ_{σ' ⪰ σ} values[σ']`` (sequences are numbered top-down)."""
    out = values.copy()
    for s in range(len(out) - 1, 0, -1):
        out[seq_parent[s]] += out[s]
    return out


# ---------------------------------------------------------------------- one player
class _Player:
    """Player ``i``'s Φ-regret minimizer and the accumulators of the exact gap of ``μ``."""

    def __init__(self, game: Game, i: int, coarse: bool, rule: LocalRule):
        space = game.sequences(i)
        self.space = space
        self.coarse = coarse
        self.S = space.num_sequences
        self.first = space.infoset_first_seq.astype(np.int64)
        self.A = space.infoset_num_actions.astype(np.int64)
        self.pseq = space.infoset_parent_seq.astype(np.int64)
        self.seq_inf = space.seq_infoset.astype(np.int64)
        self.seq_parent = space.seq_parent.astype(np.int64)
        self.rule = rule
        # The minimizer's layout, and the EFCE layout the gap accumulators use (the same one for
        # `trigger`; for `coarse-trigger` the EFCE gap of μ is reported too).
        self.layout = trigger_layout(space, coarse)
        self.efce_layout = self.layout if not coarse else trigger_layout(space, False)
        self.lam_seg = Segments.from_sizes([self.layout.num_triggers] if self.layout.num_triggers else [])
        self.lam_state = rule.init(self.lam_seg)
        self.sub_state = rule.init(self.layout.seg)
        n_ent = self.layout.size
        self.pi = np.zeros(n_ent)
        self.cf = np.zeros(n_ent)
        self.seg_value = np.zeros(self.layout.seg.count)
        self.x = np.zeros(self.S)
        self.x[0] = 1.0
        self._c = np.zeros(self.S)
        self._lam_above = np.zeros(self.S if not coarse else space.num_infosets)
        # Accumulators of the exact gap (module doc): G per EFCE entry, F per sequence, the
        # weighted utility vectors and strategies, and the weighted utility.
        self.G = np.zeros(self.efce_layout.size)
        self.F = np.zeros(self.S)
        self.U = np.zeros(self.S)
        self.X = np.zeros(self.S)
        self.utility = 0.0
        # Coarse triggers of infoset ĵ = the EFCE triggers (ĵ, â) summed: their blocks in the
        # EFCE layout are consecutive copies of one subtree, mapped onto the coarse layout.
        self.coarse_layout = self.layout if coarse else trigger_layout(space, True)
        el, cl = self.efce_layout, self.coarse_layout
        if el.size:
            trig_inf = self.seq_inf[1:]
            offset = np.arange(el.size) - el.seg.ptr[el.root_seg[el.entry_trigger]]
            self.coarse_of_entry = cl.seg.ptr[cl.root_seg[trig_inf[el.entry_trigger]]] + offset
        else:
            self.coarse_of_entry = np.zeros(0, np.int64)

    # -------------------------------------------------------------- the strategy of the round
    def play(self) -> np.ndarray:
        """Recommend ``M`` (``λ``, ``π̂``) and play its fixed point ``x = M x``."""
        lay = self.layout
        if lay.num_triggers == 0:
            return self.x
        self.lam = self.rule.recommend(self.lam_state, self.lam_seg)
        self.b = self.rule.recommend(self.sub_state, lay.seg)
        _behaviour_to_sequence(self.b, lay.seg.ptr, lay.seg_parent_entry, self.pi)
        _fixed_point(
            self.coarse,
            self.lam,
            self.pi,
            self.first,
            self.A,
            self.pseq,
            self.seq_inf,
            lay.root_seg,
            lay.seg.ptr,
            lay.entry_hi,
            lay.entry_seq,
            self.x,
            self._c,
            self._lam_above,
        )
        return self.x

    def trigger_weights(self, x: np.ndarray, coarse: bool) -> np.ndarray:
        """``x[σ̂]`` per EFCE trigger, ``x[p_ĵ]`` per coarse trigger."""
        return x[self.pseq] if coarse else x[1:]

    def following_values(self, W: np.ndarray, coarse: bool) -> np.ndarray:
        """``⟨u|{σ ⪰ σ̂}, x⟩`` per EFCE trigger, ``⟨u|Σ_ĵ, x⟩`` per coarse trigger, from ``W``."""
        if not coarse:
            return W[1:]
        return np.add.reduceat(W[1:], self.first - 1) if len(self.first) else np.zeros(0)

    # -------------------------------------------------------------- observe u
    def observe(self, u: np.ndarray, weight: float) -> None:
        """Feed the utility vector ``u`` of the round to the minimizer and the accumulators."""
        x = self.x
        W = _subtree_sums(u * x, self.seq_parent)
        # Accumulators of the exact gap (weights w_t).
        el = self.efce_layout
        self.G += weight * (x[1:][el.entry_trigger] * u[el.entry_seq])
        self.F += weight * W
        self.U += weight * u
        self.X += weight * x
        self.utility += weight * W[0]
        lay = self.layout
        if lay.num_triggers == 0:
            return
        # Subtree minimizers: CFR with the utility x[σ̂]·u|Σ_ĵ; λ: value of π̂ minus following.
        _subtree_values(
            u,
            self.trigger_weights(x, self.coarse),
            self.b,
            lay.seg.ptr,
            lay.seg_parent_entry,
            lay.entry_seq,
            lay.entry_trigger,
            self.cf,
            self.seg_value,
        )
        lam_utility = self.seg_value[lay.root_seg] - self.following_values(W, self.coarse)
        self.rule.observe(self.sub_state, -self.cf, lay.seg)
        self.rule.observe(self.lam_state, -lam_utility, self.lam_seg)

    # -------------------------------------------------------------- gaps of μ
    def gains(self, total_weight: float) -> tuple[float, float, float]:
        """Player ``i``'s best EFCE, EFCCE and NFCCE gains against ``μ`` (unclipped)."""
        el, cl = self.efce_layout, self.coarse_layout
        if el.num_triggers == 0:
            return 0.0, 0.0, 0.0
        cf = np.empty(el.size)
        sv = np.empty(el.seg.count)
        _best_response_values(self.G, el.seg.ptr, el.seg_parent_entry, cf, sv)
        efce = float(np.max(sv[el.root_seg] - self.F[1:]))
        Gc = np.bincount(self.coarse_of_entry, weights=self.G, minlength=cl.size)
        cf = np.empty(cl.size)
        sv = np.empty(cl.seg.count)
        _best_response_values(Gc, cl.seg.ptr, cl.seg_parent_entry, cf, sv)
        efcce = float(np.max(sv[cl.root_seg] - self.following_values(self.F, True)))
        nfcce = float(_tree_best_response(self.U, self.first, self.A, self.pseq)) - self.utility
        return efce / total_weight, efcce / total_weight, nfcce / total_weight


@numba.njit(cache=True)
def _tree_best_response(u, first, num_actions, parent_seq):
    """``max_{x ∈ Q} ⟨u, x⟩`` by backward induction over the infosets (numbered top-down)."""
    values = u.copy()
    for j in range(len(first) - 1, -1, -1):
        best = values[first[j]]
        for a in range(1, num_actions[j]):
            if values[first[j] + a] > best:
                best = values[first[j] + a]
        values[parent_seq[j]] += best
    return values[0]


# ---------------------------------------------------------------------- reduced plans (device)
def reduced_plan_count(space) -> int:
    """Number of reduced pure plans of a player (exact Python integer): per sequence, the product
    over its child infosets of the sum over their actions, bottom-up."""
    count = [1] * space.num_sequences
    first, A, pseq = space.infoset_first_seq, space.infoset_num_actions, space.infoset_parent_seq
    for j in range(space.num_infosets - 1, -1, -1):
        count[int(pseq[j])] *= sum(count[int(first[j]) + a] for a in range(int(A[j])))
    return count[0]


def plans_per_iteration(space) -> int:
    """Most pure plans :func:`_decompose` uses for one strategy: every step zeroes a sequence of
    the chosen actions, at most ``1 + Σ_j (|A_j| − 1)`` of them end a step."""
    return 1 + int(space.infoset_num_actions.sum()) - space.num_infosets


def device_size_bound(game: Game, iterations: int) -> int:
    """Joint plans the recorded ``μ`` can have after ``iterations``: at most the product of the
    players' reduced-plan counts, and at most ``iterations · Π_i`` (plans per iteration)."""
    per_iteration = 1
    for p in range(game.num_players):
        per_iteration *= plans_per_iteration(game.sequences(p))
    return min(joint_plan_count(game), iterations * per_iteration)


@numba.njit(cache=True)
def _decompose(x, first_seq, num_actions, parent_seq, plans, alphas):
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


class _DeviceRecorder:
    """The exact distribution ``μ`` over joint reduced plans.

    ``μ`` pairs the players' strategies *of the same iteration*, so the players' averages are not
    enough.  Each iteration writes every player's ``x_i^t`` as a convex combination of a few
    reduced pure plans (:func:`_decompose`; at most :func:`plans_per_iteration`) and adds the
    product of these mixtures to ``μ``.  That product is a distribution over joint plans
    *realization-equivalent* to ``⊗_i x_i^t``: every trigger agent's gain and every utility is
    linear in each player's sequence-form realization and the players are independent within an
    iteration, so all gaps of the recorded distribution equal those of ``μ`` (exactly, up to
    rounding); :func:`device_size_bound` bounds its joint plans before the run.

    Memory is bounded by the size of ``μ``, not by the iterations: the iterations' joint plans
    are buffered and merged into ``μ`` (identical joint plans summed) whenever the buffer holds
    as many entries as ``μ`` itself (at least :data:`MERGE_AT`), an amortized linear cost."""

    #: Buffered entries before the first merge.
    MERGE_AT = 4096

    def __init__(self, game: Game):
        self.game = game
        self.spaces = [game.sequences(p) for p in range(game.num_players)]
        self.plan_ids: list[dict[bytes, int]] = [{} for _ in self.spaces]
        self.plans: list[list[np.ndarray]] = [[] for _ in self.spaces]
        n = len(self.spaces)
        self.ids = np.zeros((0, n), np.int64)  # merged: distinct joint plans, sorted
        self.probs = np.zeros(0)
        self.buffer_ids: list[np.ndarray] = []
        self.buffer_probs: list[np.ndarray] = []
        self.buffered = 0

    def record(self, xs: list[np.ndarray], weight: float) -> None:
        ids, alphas = [], []
        for p, (x, space) in enumerate(zip(xs, self.spaces, strict=True)):
            cap = plans_per_iteration(space)
            plans = np.empty((cap, space.num_infosets), np.int16)
            alpha = np.empty(cap)
            k = _decompose(
                x,
                space.infoset_first_seq.astype(np.int64),
                space.infoset_num_actions.astype(np.int64),
                space.infoset_parent_seq.astype(np.int64),
                plans,
                alpha,
            )
            row_ids = np.empty(k, np.int64)
            for r in range(k):
                key = plans[r].tobytes()
                found = self.plan_ids[p].get(key)
                if found is None:
                    found = len(self.plans[p])
                    self.plan_ids[p][key] = found
                    self.plans[p].append(plans[r].copy())
                row_ids[r] = found
            ids.append(row_ids)
            alphas.append(alpha[:k] / alpha[:k].sum())  # drop rounding residue of the peeling
        grids = np.meshgrid(*ids, indexing="ij")
        prob = weight * alphas[0]
        for p in range(1, len(alphas)):
            prob = np.multiply.outer(prob, alphas[p])
        self.buffer_ids.append(np.stack([g.ravel() for g in grids], axis=1))
        self.buffer_probs.append(prob.ravel())
        self.buffered += prob.size
        if self.buffered >= max(self.MERGE_AT, len(self.probs)):
            self._merge()

    def _merge(self) -> None:
        """Fold the buffer into ``μ``: identical joint plans summed."""
        if not self.buffered:
            return
        ids = np.concatenate([self.ids, *self.buffer_ids])
        probs = np.concatenate([self.probs, *self.buffer_probs])
        unique, inverse = np.unique(ids, axis=0, return_inverse=True)
        self.probs = np.bincount(inverse.ravel(), weights=probs, minlength=len(unique))
        self.ids = unique
        self.buffer_ids, self.buffer_probs, self.buffered = [], [], 0

    def device(self) -> FactoredDevice:
        self._merge()
        tables = [
            np.array(rows, dtype=np.int16).reshape(len(rows), space.num_infosets)
            for rows, space in zip(self.plans, self.spaces, strict=True)
        ]
        tables = [t.astype(np.int8) if t.size == 0 or t.max() < 127 else t.astype(np.int32) for t in tables]
        return FactoredDevice(tables, self.ids.astype(np.int64), self.probs / self.probs.sum())


def joint_plan_count(game: Game) -> int:
    """Number of joint reduced pure plans (product over players), an exact integer."""
    out = 1
    for p in range(game.num_players):
        out *= reduced_plan_count(game.sequences(p))
    return out


# ---------------------------------------------------------------------- dynamics
@numba.njit(cache=True)
def _utilities_kernel(term_seq, weighted_payoffs, x_flat, offsets, out_flat):
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


def _utilities(
    term_seq: np.ndarray, weighted_payoffs: np.ndarray, xs: list[np.ndarray], offsets: np.ndarray
) -> list[np.ndarray]:
    """``u_i[σ] = Σ_{z: σ_i(z) = σ} p_c(z) u_i(z) Π_{k≠i} x_k[σ_k(z)]`` for every player (the
    note's utility vectors), in one compiled pass over the terminals."""
    out = np.empty(offsets[-1])
    _utilities_kernel(term_seq, weighted_payoffs, np.concatenate(xs), offsets, out)
    return [out[offsets[i] : offsets[i + 1]] for i in range(len(xs))]


class TriggerDynamics:
    """The trigger-regret dynamics of a game; :meth:`step` runs one simultaneous iteration.

    Parameters
    ----------
    game : Game
    coarse : bool
        EFCCE (coarse triggers) instead of EFCE.
    rule : LocalRule or str
        Local rule of the ``λ`` simplex and of every subtree simplex.
    averaging : {"uniform", "linear"}
        Weights ``w_t`` of ``μ``.
    device : bool
        Record ``μ`` over joint reduced plans (:meth:`device`).
    max_iterations : int, optional
        With ``device``: the iteration budget, to refuse (before any iteration) a distribution
        whose file could exceed :data:`solvers.evaluation.device.DEVICE_BYTES_LIMIT` bytes
        (:func:`device_size_bound` joint plans, :func:`~solvers.evaluation.device.device_bytes_bound`).

    Raises
    ------
    GameError
        Unknown averaging, or a device request beyond the size limit (before any iteration).
    """

    def __init__(
        self,
        game: Game,
        *,
        coarse: bool = False,
        rule: LocalRule | str = DEFAULT_RULE,
        averaging: str = DEFAULT_AVERAGING,
        device: bool = False,
        max_iterations: int | None = None,
    ):
        if averaging not in AVERAGING:
            raise GameError(f"unknown averaging '{averaging}'; valid: {', '.join(AVERAGING)}")
        rule = as_rule(rule)
        self.game = game
        self.coarse = coarse
        self.averaging = averaging
        self.recorder = None
        if device:
            bound = (
                joint_plan_count(game) if max_iterations is None else device_size_bound(game, max_iterations)
            )
            check_device_size(
                game,
                bound,
                f"joint reduced plans (bound for {max_iterations} iterations)"
                if max_iterations is not None
                else "joint reduced plans",
            )
            self.recorder = _DeviceRecorder(game)
        self.players = [_Player(game, i, coarse, rule) for i in range(game.num_players)]
        tm = terminal_map(game)
        self.term_seq = tm.sequences.astype(np.int64)
        self.weighted_payoffs = np.ascontiguousarray(tm.weighted_payoffs())
        self.offsets = np.concatenate([[0], np.cumsum([p.S for p in self.players])]).astype(np.int64)
        self.iterations = 0
        self.total_weight = 0.0

    def step(self) -> None:
        self.iterations += 1
        weight = 1.0 if self.averaging == "uniform" else float(self.iterations)
        xs = [p.play() for p in self.players]
        us = _utilities(self.term_seq, self.weighted_payoffs, xs, self.offsets)
        if self.recorder is not None:
            self.recorder.record(xs, weight)
        for p, u in zip(self.players, us, strict=True):
            p.observe(u, weight)
        self.total_weight += weight

    def gaps(self) -> dict:
        """Exact EFCE, EFCCE, NFCCE gaps (clipped at 0), utilities and welfare of ``μ``."""
        gains = np.array([p.gains(self.total_weight) for p in self.players]).reshape(-1, 3)
        utilities = np.array([p.utility / self.total_weight for p in self.players])
        best = np.maximum(gains.max(axis=0), 0.0)
        return {
            "efce_gap": float(best[0]),
            "efcce_gap": float(best[1]),
            "nfcce_gap": float(best[2]),
            "utilities": utilities.tolist(),
            "welfare": float(utilities.sum()),
        }

    def average_strategies(self) -> list[np.ndarray]:
        """Each player's weighted-average sequence-form strategy (the marginals of ``μ``)."""
        return [p.X / self.total_weight for p in self.players]

    def device(self) -> FactoredDevice:
        if self.recorder is None:
            raise GameError("the distribution was not recorded (pass device=True)")
        return self.recorder.device()


def solve_trigger(
    game: Game,
    iterations: int = DEFAULTS["iterations"],
    *,
    coarse: bool = False,
    rule: LocalRule | str = DEFAULTS["local"],
    averaging: str = DEFAULT_AVERAGING,
    time_limit: float | None = DEFAULTS["time_limit"],
    target_gap: float | None = DEFAULTS["target_gap"],
    check_every: int | None = None,
    progress: ProgressCallback | None = None,
    device: bool = False,
) -> SolveResult:
    """Run the trigger-regret dynamics (EFCE; ``coarse=True``: EFCCE) for ``iterations``.

    The defaults are those of ``trigger`` and ``coarse-trigger`` (:data:`OPTIONS`).

    Parameters
    ----------
    game : Game
        Any number of players, chance allowed.
    iterations : int
        The budget (default 10,000).
    coarse : bool
        Coarse (infoset) triggers: the dynamics of an EFCCE.
    rule : LocalRule or str
        Local regret minimizer of the ``λ`` simplex and of every subtree simplex (default PRM+,
        :data:`DEFAULT_RULE`).
    averaging : {"uniform", "linear"}
        Weights of the averaged distribution ``μ``.
    time_limit, target_gap, check_every, progress
        As for :class:`~solvers.driver.IterationDriver`; ``target_gap`` stops (status
        ``converged``) once the EFCE gap (EFCCE gap when ``coarse``) of ``μ`` is at most it.
    device : bool
        Also return ``μ`` as a distribution over joint reduced plans (``point``).

    Returns
    -------
    SolveResult
        ``trace`` rows carry the EFCE gap (``gap``; the EFCCE gap when ``coarse``) and extras
        ``efce``, ``efcce``, ``nfcce``; ``info`` has ``efce_gap``, ``efcce_gap``, ``nfcce_gap``,
        ``utilities``, ``welfare`` (all exact for ``μ``), ``iteration_seconds``, ``local``,
        ``averaging``.  ``point``: a :class:`~solvers.evaluation.device_gaps.FactoredDevice` with
        ``device=True``, else the list of the players' average sequence-form strategies.

    Raises
    ------
    ValueError
        A bad iteration budget or time limit, or an unknown rule name.
    GameError
        Unknown averaging, or ``device=True`` beyond the device size limit.
    """
    started = time.perf_counter()
    # The driver validates the budget before the (larger) model is built.
    driver = IterationDriver(
        iterations=iterations, time_limit=time_limit, check_every=check_every, progress=progress
    )
    dyn = TriggerDynamics(
        game, coarse=coarse, rule=rule, averaging=averaging, device=device, max_iterations=iterations
    )
    setup = time.perf_counter() - started
    gaps = None
    for it in driver:
        dyn.step()
        if driver.checkpoint_due():
            with driver.paused():
                gaps = dyn.gaps()
            target = gaps["efcce_gap"] if coarse else gaps["efce_gap"]
            row = TraceRow(
                it,
                driver.elapsed(),
                target,
                extra={"efce": gaps["efce_gap"], "efcce": gaps["efcce_gap"], "nfcce": gaps["nfcce_gap"]},
            )
            if driver.record(
                row, converged=target_gap is not None and target <= target_gap, aim=(target, target_gap)
            ):
                break
    info = dict(gaps)
    info.update(
        {"iteration_seconds": driver.iteration_seconds, "local": as_rule(rule).name, "averaging": averaging}
    )
    point = dyn.device() if device else dyn.average_strategies()
    if device:
        info["support"] = int(len(point.probs))
    return SolveResult(
        method="coarse-trigger" if coarse else "trigger",
        point=point,
        status=driver.status,
        iterations=dyn.iterations,
        setup_seconds=setup,
        seconds=driver.elapsed(),
        trace=driver.trace,
        info=info,
    )


# ----------------------------------------------------------------------------- declaration
def _runner(coarse: bool):
    def run(game: Game, *, progress: ProgressCallback | None, device: bool = False, **o) -> SolveResult:
        return solve_trigger(
            game,
            o["iterations"],
            coarse=coarse,
            rule=o["local"],
            time_limit=o["time_limit"],
            target_gap=o["target_gap"],
            progress=progress,
            device=device,
        )

    return run


#: ``trigger`` and ``coarse-trigger`` for :func:`efce.solve` (collected by
#: :data:`efce.experiments.solve.METHODS`).
SOLVE_METHODS = (
    Method(
        "trigger",
        "deterministic trigger-regret dynamics (EFCE, n players, chance; Farina et al. 2022)",
        OPTIONS,
        _runner(False),
        players=None,
        writes_device=True,
    ),
    Method(
        "coarse-trigger",
        "deterministic coarse-trigger-regret dynamics (EFCCE, n players, chance)",
        OPTIONS,
        _runner(True),
        players=None,
        writes_device=True,
    ),
)

__all__ = [
    "solve_trigger",
    "TriggerDynamics",
    "trigger_layout",
    "device_size_bound",
    "reduced_plan_count",
    "joint_plan_count",
    "METHODS",
    "AVERAGING",
    "DEVICE_BYTES_LIMIT",
]
