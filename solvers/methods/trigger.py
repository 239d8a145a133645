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
it (behavioural → sequence form, the fixed point, CFR values, best responses) is a kernel of the
CPU backend (:mod:`efce.solvers.backends.cpu.trigger`); the local rules run on it through
:class:`solvers.regret.local.Segments`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from efce.errors import GameError
from efce.games.game import Game, SequenceSpace
from efce.games.payoffs import terminal_map
from efce.games.resources.compiled import compiled
from efce.solvers.backends import get_backend
from efce.solvers.driver import IterationDriver, ProgressCallback
from efce.solvers.evaluation.device import (
    DEVICE_BYTES_LIMIT,
    DEVICE_FRAME_BYTES,
    device_bytes_bound,
    infoset_names,
    joint_entry_bytes,
    reduced_plan_texts,
)
from efce.solvers.evaluation.device_gaps import FactoredDevice
from efce.solvers.options import (
    EQUILIBRIUM_REPORT,
    ITERATIONS,
    LOCAL,
    TARGET_GAP,
    TIME_LIMIT,
    Method,
    defaults,
)
from efce.solvers.regret.local import LocalRule, Segments
from efce.solvers.regret.registry import as_rule
from efce.solvers.result import SolveResult, TraceRow
from efce.solvers.warm_up import segments_warm_up

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


def trigger_layout(space: SequenceSpace, coarse: bool) -> TriggerLayout:
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


@compiled(cache=True, nogil=True)
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


# ---------------------------------------------------------------------- one player
class _Player:
    """Player ``i``'s Φ-regret minimizer and the accumulators of the exact gap of ``μ``."""

    def __init__(self, game: Game, i: int, coarse: bool, rule: LocalRule, backend):
        self.backend = backend
        space = game.sequences(i)
        self.space = space
        self.coarse = coarse
        self.S = space.num_sequences
        self.first = space.infoset_first_seq.astype(np.int64)
        self.A = space.infoset_num_actions.astype(np.int64)
        self.pseq = space.infoset_parent_seq.astype(np.int64)
        self.seq_inf = space.seq_infoset.astype(np.int64)
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
        self.backend.behaviour_to_sequence(self.b, lay.seg.ptr, lay.seg_parent_entry, self.pi)
        self.backend.fixed_point(
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
        W = self.backend.subtree_sums(u * x, self.first, self.A, self.pseq)
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
        self.backend.subtree_values(
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
        self.backend.best_response_values(self.G, el.seg.ptr, el.seg_parent_entry, cf, sv)
        efce = float(np.max(sv[el.root_seg] - self.F[1:]))
        Gc = np.bincount(self.coarse_of_entry, weights=self.G, minlength=cl.size)
        cf = np.empty(cl.size)
        sv = np.empty(cl.seg.count)
        self.backend.best_response_values(Gc, cl.seg.ptr, cl.seg_parent_entry, cf, sv)
        efcce = float(np.max(sv[cl.root_seg] - self.following_values(self.F, True)))
        nfcce = float(self.backend.best_response(self.first, self.A, self.pseq, self.U)[0]) - self.utility
        return efce / total_weight, efcce / total_weight, nfcce / total_weight


# ---------------------------------------------------------------------- reduced plans (device)
def reduced_plan_count(space: SequenceSpace) -> int:
    """Number of reduced pure plans of a player (exact Python integer): per sequence, the product
    over its child infosets of the sum over their actions, bottom-up."""
    count = [1] * space.num_sequences
    first, A, pseq = space.infoset_first_seq, space.infoset_num_actions, space.infoset_parent_seq
    for j in range(space.num_infosets - 1, -1, -1):
        count[int(pseq[j])] *= sum(count[int(first[j]) + a] for a in range(int(A[j])))
    return count[0]


def plans_per_iteration(space: SequenceSpace) -> int:
    """Most pure plans :func:`efce.solvers.backends.cpu.trigger.decompose_strategy` uses for one
    strategy: every step zeroes a sequence of the chosen actions, at most ``1 + Σ_j (|A_j| − 1)``
    of them end a step."""
    return 1 + int(space.infoset_num_actions.sum()) - space.num_infosets


def device_size_bound(game: Game, iterations: int) -> int:
    """Joint plans the recorded ``μ`` can have after ``iterations``: at most the product of the
    players' reduced-plan counts, and at most ``iterations · Π_i`` (plans per iteration)."""
    per_iteration = 1
    for p in range(game.num_players):
        per_iteration *= plans_per_iteration(game.sequences(p))
    return min(joint_plan_count(game), iterations * per_iteration)


def check_device_request(game: Game, iterations: int | None) -> bool:
    """Check, before any iteration, that a recorded ``μ`` can be written, and whether its device
    file certainly fits :data:`~efce.solvers.evaluation.device.DEVICE_BYTES_LIMIT`:
    :func:`device_size_bound` joint plans after ``iterations`` (None: any number,
    :func:`joint_plan_count`), each of :func:`~efce.solvers.evaluation.device.device_bytes_bound`'s
    largest size.

    Returns
    -------
    bool
        True when the bound is within the limit (nothing more to check); False when it is not —
        the bound can be 100 times the file — and the recorder then keeps the file's exact size
        within the limit, the run stopping (status ``device_limit``) at the iteration that would
        exceed it.

    Raises
    ------
    GameError
        An infoset or action without an unambiguous name (the file could not be written).
    """
    bound = joint_plan_count(game) if iterations is None else device_size_bound(game, iterations)
    return device_bytes_bound(game, bound) <= DEVICE_BYTES_LIMIT


class _DeviceRecorder:
    """The exact distribution ``μ`` over joint reduced plans.

    ``μ`` pairs the players' strategies *of the same iteration*, so the players' averages are not
    enough.  Each iteration writes every player's ``x_i^t`` as a convex combination of a few
    reduced pure plans (:func:`efce.solvers.backends.cpu.trigger.decompose_strategy`; at most
    :func:`plans_per_iteration`) and adds the
    product of these mixtures to ``μ``.  That product is a distribution over joint plans
    *realization-equivalent* to ``⊗_i x_i^t``: every trigger agent's gain and every utility is
    linear in each player's sequence-form realization and the players are independent within an
    iteration, so all gaps of the recorded distribution equal those of ``μ`` (exactly, up to
    rounding); :func:`device_size_bound` bounds its joint plans before the run.

    Memory is bounded by the size of ``μ``, not by the iterations: the iterations' joint plans
    are buffered and merged into ``μ`` (identical joint plans summed) whenever the buffer holds
    as many entries as ``μ`` itself (at least :data:`MERGE_AT`), an amortized linear cost.

    With ``byte_limit``, the file ``μ`` makes (:func:`~solvers.evaluation.device.write_device`)
    is kept within it: each distinct plan's text length is known when it first appears, so the
    file's size is bounded exactly up to the probabilities' widths
    (:func:`~solvers.evaluation.device.joint_entry_bytes`); an iteration that would take it past
    the limit is not recorded (:meth:`record` returns False) and ``μ`` stays that of the
    iterations before it."""

    #: Buffered entries before the first merge.
    MERGE_AT = 4096

    def __init__(self, game: Game, backend, byte_limit: int | None = None):
        self.game = game
        self.backend = backend
        self.byte_limit = byte_limit
        self.spaces = [game.sequences(p) for p in range(game.num_players)]
        self.plan_ids: list[dict[bytes, int]] = [{} for _ in self.spaces]
        self.plans: list[list[np.ndarray]] = [[] for _ in self.spaces]
        n = len(self.spaces)
        self.ids = np.zeros((0, n), np.int64)  # merged: distinct joint plans, sorted
        self.probs = np.zeros(0)
        self.buffer_ids: list[np.ndarray] = []
        self.buffer_probs: list[np.ndarray] = []
        self.buffered = 0
        # With a byte limit: each distinct plan's text length, and a bound on the file's bytes
        # (exact for the merged μ, every buffered entry counted in full).
        self.listing = infoset_names(game) if byte_limit is not None else None
        self.plan_bytes: list[list[int]] = [[] for _ in self.spaces]
        self.file_bytes = DEVICE_FRAME_BYTES

    def record(self, xs: list[np.ndarray], weight: float) -> bool:
        """Add the iteration's strategies ``xs`` with ``weight`` to ``μ``; False (and ``μ``
        unchanged) when that would take its file past ``byte_limit``."""
        ids, alphas = [], []
        for p, (x, space) in enumerate(zip(xs, self.spaces, strict=True)):
            cap = plans_per_iteration(space)
            plans = np.empty((cap, space.num_infosets), np.int16)
            alpha = np.empty(cap)
            k = self.backend.decompose_strategy(
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
                    if self.listing is not None:
                        text = reduced_plan_texts(self.game, p, plans[r : r + 1], self.listing)[0]
                        self.plan_bytes[p].append(len(text.encode()))
                row_ids[r] = found
            ids.append(row_ids)
            alphas.append(alpha[:k] / alpha[:k].sum())  # drop rounding residue of the peeling
        grids = np.meshgrid(*ids, indexing="ij")
        prob = weight * alphas[0]
        for p in range(1, len(alphas)):
            prob = np.multiply.outer(prob, alphas[p])
        new_ids = np.stack([g.ravel() for g in grids], axis=1)
        if self.byte_limit is not None:
            added = int(self._entry_bytes(new_ids).sum())
            if self.file_bytes + added > self.byte_limit:
                # Near the limit: merge with this iteration to know the exact size, and keep
                # the merge only if it fits.
                self._merge()
                merged_ids, merged_probs = self._merged(new_ids, prob.ravel())
                size = DEVICE_FRAME_BYTES + int(self._entry_bytes(merged_ids).sum())
                if size > self.byte_limit:
                    return False
                self.ids, self.probs, self.file_bytes = merged_ids, merged_probs, size
                return True
            self.file_bytes += added
        self.buffer_ids.append(new_ids)
        self.buffer_probs.append(prob.ravel())
        self.buffered += prob.size
        if self.buffered >= max(self.MERGE_AT, len(self.probs)):
            self._merge()
        return True

    def _entry_bytes(self, ids: np.ndarray) -> np.ndarray:
        """Most bytes of each joint plan's entry in the file (:func:`joint_entry_bytes`)."""
        total = np.zeros(len(ids), np.int64)
        for p, lengths in enumerate(self.plan_bytes):
            total += np.asarray(lengths, np.int64)[ids[:, p]]
        return joint_entry_bytes(0, len(self.spaces)) + total

    def _merged(self, ids: np.ndarray, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``μ`` with the joint plans ``ids`` (weights ``probs``) added: identical ones summed."""
        ids = np.concatenate([self.ids, ids])
        probs = np.concatenate([self.probs, probs])
        unique, inverse = np.unique(ids, axis=0, return_inverse=True)
        return unique, np.bincount(inverse.ravel(), weights=probs, minlength=len(unique))

    def _merge(self) -> None:
        """Fold the buffer into ``μ``: identical joint plans summed."""
        if not self.buffered:
            return
        self.ids, self.probs = self._merged(
            np.concatenate(self.buffer_ids), np.concatenate(self.buffer_probs)
        )
        self.buffer_ids, self.buffer_probs, self.buffered = [], [], 0
        if self.byte_limit is not None:
            self.file_bytes = DEVICE_FRAME_BYTES + int(self._entry_bytes(self.ids).sum())

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
def _utilities(
    backend, term_seq: np.ndarray, weighted_payoffs: np.ndarray, xs: list[np.ndarray], offsets: np.ndarray
) -> list[np.ndarray]:
    """``u_i[σ] = Σ_{z: σ_i(z) = σ} p_c(z) u_i(z) Π_{k≠i} x_k[σ_k(z)]`` for every player (the
    note's utility vectors), in one compiled pass over the terminals."""
    out = np.empty(offsets[-1])
    backend.utility_vectors(term_seq, weighted_payoffs, np.concatenate(xs), offsets, out)
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
        self.backend = get_backend("cpu")  # the dynamics' kernels are serial
        self.game = game
        self.coarse = coarse
        self.averaging = averaging
        self.recorder = None
        if device:
            fits = check_device_request(game, max_iterations)
            self.recorder = _DeviceRecorder(game, self.backend, None if fits else DEVICE_BYTES_LIMIT)
        self.players = [_Player(game, i, coarse, rule, self.backend) for i in range(game.num_players)]
        tm = terminal_map(game)
        self.term_seq = tm.sequences.astype(np.int64)
        self.weighted_payoffs = np.ascontiguousarray(tm.weighted_payoffs())
        self.offsets = np.concatenate([[0], np.cumsum([p.S for p in self.players])]).astype(np.int64)
        self.iterations = 0
        self.total_weight = 0.0

    def step(self) -> bool:
        """One iteration; False (and nothing changed) when the recorded device's file would
        pass :data:`~solvers.evaluation.device.DEVICE_BYTES_LIMIT` with it."""
        self.iterations += 1
        weight = 1.0 if self.averaging == "uniform" else float(self.iterations)
        xs = [p.play() for p in self.players]
        us = _utilities(self.backend, self.term_seq, self.weighted_payoffs, xs, self.offsets)
        if self.recorder is not None and not self.recorder.record(xs, weight):
            self.iterations -= 1
            return False
        for p, u in zip(self.players, us, strict=True):
            p.observe(u, weight)
        self.total_weight += weight
        return True

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
        """The recorded distribution ``μ`` over joint reduced plans, as a device.

        Raises
        ------
        GameError
            The dynamics were made without ``device=True``.
        """
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
    device_full = False
    for it in driver:
        if not dyn.step():
            device_full = True
            break
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
    status = driver.status
    if device_full:
        if dyn.iterations == 0:
            raise GameError(
                f"the device of one iteration already exceeds the device file limit of "
                f"{DEVICE_BYTES_LIMIT:,} bytes (solvers.evaluation.device.DEVICE_BYTES_LIMIT)"
            )
        # The run ends at the last iteration whose device fits; its checkpoint, if not taken.
        status = "device_limit"
        if not driver.trace or driver.trace[-1].iteration != dyn.iterations:
            gaps = dyn.gaps()
            target = gaps["efcce_gap"] if coarse else gaps["efce_gap"]
            extra = {"efce": gaps["efce_gap"], "efcce": gaps["efcce_gap"], "nfcce": gaps["nfcce_gap"]}
            driver.record(TraceRow(dyn.iterations, driver.elapsed(), target, extra=extra))
    assert gaps is not None  # the driver's last iteration is always a checkpoint
    info = dict(gaps)
    info.update(
        {"iteration_seconds": driver.iteration_seconds, "local": as_rule(rule).name, "averaging": averaging}
    )
    point: FactoredDevice | list[np.ndarray]
    if device:
        point = dyn.device()
        info["support"] = int(len(point.probs))
    else:
        point = dyn.average_strategies()
    if device_full:
        info["message"] = (
            f"stopped after {dyn.iterations:,} iterations: the next one would take the device file "
            f"past its limit of {DEVICE_BYTES_LIMIT:,} bytes (solvers.evaluation.device.DEVICE_BYTES_LIMIT)"
        )
    return SolveResult(
        method="coarse-trigger" if coarse else "trigger",
        point=point,
        status=status,
        iterations=dyn.iterations,
        setup_seconds=setup,
        seconds=driver.elapsed(),
        trace=driver.trace,
        info=info,
    )


# ----------------------------------------------------------------------------- declaration
def _run(
    coarse: bool, game: Game, *, progress: ProgressCallback | None, device: bool = False, **o
) -> SolveResult:
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


def _runner(coarse: bool):
    # A partial of a module-level function, not a closure: a warm-up's helper processes
    # receive the runner pickled (efce.solvers.parallel_compile).
    return functools.partial(_run, coarse)


def _check_before_warm_up(game: Game, o: Mapping[str, Any], device: bool) -> None:
    if device:
        check_device_request(game, o["iterations"])


def _method(name: str, description: str) -> Method:
    run = _runner(name == "coarse-trigger")
    warm_up = segments_warm_up(run, check=_check_before_warm_up)
    return Method(
        name,
        description,
        OPTIONS,
        run,
        players=None,
        writes_device=True,
        warm_up=warm_up,
        compiles_kernels=True,
        payoff_info=EQUILIBRIUM_REPORT,
    )


#: ``trigger`` and ``coarse-trigger`` for :func:`efce.solve` (collected by
#: :data:`efce.experiments.solve.METHODS`).
SOLVE_METHODS = (
    _method("trigger", "deterministic trigger-regret dynamics (EFCE, n players, chance; Farina et al. 2022)"),
    _method("coarse-trigger", "deterministic coarse-trigger-regret dynamics (EFCCE, n players, chance)"),
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
