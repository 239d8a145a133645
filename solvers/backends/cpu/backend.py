"""The CPU backend object: numpy arrays, the numba kernels of this folder, a thread count.

:class:`CPUBackend` implements :class:`efce.solvers.backends.protocol.ComputeBackend` and the
CPU-only kernel families (local rules on segments, CFR's best responses, the trigger-regret
dynamics, the n-player device gaps, the Definition-3 check).  Its parallel kernels run on
``threads`` parts, numba's count set around each call (:func:`~.jit.run_on_threads`); serial
kernels are the backend's attributes themselves (no Python call in between).  Every parallel
kernel gives the same result on any thread count: each output is computed by one thread in the
serial order, or is a maximum.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from numbers import Integral
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from efce.errors import OptionError
from efce.polytopes.chain import Chain, ShiftedSources
from efce.solvers.backends.sizing import variant_size
from efce.solvers.regret import local

from . import chain_passes, chain_runs, deviator, device, feasibility, gaps, operator, rules, trigger
from .jit import available_threads, default_threads, run_on_threads, thread_rows

if TYPE_CHECKING:  # annotations only
    from efce.solvers.evaluation.payoff_operator import PayoffOperator, PlayerTriggerTable, TriggerTables
    from efce.solvers.regret.local import Kernel

#: Chains with fewer entries run the serial passes whatever the thread count: below this a
#: pass takes tens of microseconds and the threads' fork/join costs more than it saves.  The
#: parallel passes are bit-identical to the serial ones, so the switch never changes an iterate.
#: Bigger chains run the parallel passes on every thread count, one included: numba compiles a
#: ``prange`` body into a function of its own, which LLVM optimizes better than the serial
#: kernels' single loop (one thread, medium Battleship: Ξ RECOMMEND 176 against 320 ms,
#: OBSERVELOSS 171 against 204–223, Y's 44 against 90 and 73 against 90).
PARALLEL_MIN_ENTRIES = 50_000

#: Operators with fewer rows run the serial products whatever the thread count (the threads'
#: fork/join costs more than it saves there), and so do all on one thread (the parallel
#: products are no faster there); the parallel products are bit-identical anyway.
PARALLEL_MIN_ROWS = 50_000

#: Buckets of each level's destination range from which the up pass's scatter is cut into
#: parts of equal additions (the cut is at most one bucket off the ideal).
SCATTER_BUCKETS = 4096

#: Entries plus sources per chunk of the parallel passes (fixed, independent of the thread
#: count): big enough to amortize the loop overhead, small enough to balance a level's chunks.
CHUNK_WORK = 4096

#: Dtypes of the running sums the RECOMMEND passes add into: the EFCE saddle point keeps its
#: correlator's running sum in float32 on big chains (:attr:`ParallelChainPasses.sum_dtype`).
SUM_DTYPES = (np.float64, np.float32)

_NO_CHOICE = np.zeros(0, dtype=np.int64)
_NO_VALUES = np.zeros(0)
_IDENTITY_ORDER = np.zeros(0, dtype=np.int32)


def kernel_order(chain: Chain) -> np.ndarray:
    """The ``order`` argument of the chain kernels: the chain's
    :attr:`~efce.polytopes.chain.Chain.step_order`, or an empty array for a chain numbered in
    level order already (the kernels read it as the identity, so the ~10⁸ steps of the large
    Battleship Ξ chain keep no int32 each for it)."""
    if chain.level_sorted:
        return _IDENTITY_ORDER
    return chain.step_order


def level_bounds(chain: Chain) -> np.ndarray:
    """``level_ptr``: the steps of level ``d`` (from 1) are positions ``level_ptr[d-1] :
    level_ptr[d]`` of the passes' level order (int64), read from the chain's own bounds when it
    keeps them (then no per-step level or order array is built)."""
    if chain.level_ptr is not None:
        return np.asarray(chain.level_ptr, dtype=np.int64)
    sizes = np.fromiter((len(level) for level in chain.levels), dtype=np.int64)
    level_ptr = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=level_ptr[1:])
    return level_ptr


def _step_arrays(chain: Chain) -> tuple:
    """``(kind, target_ptr, source_ptr, source, order)`` as the chain kernels take them."""
    kind = chain.kind.astype(np.int8, copy=False)
    return kind, chain.target_ptr, chain.source_ptr, chain.source, kernel_order(chain)


def _shifted(chain: Chain) -> ShiftedSources:
    """The sources of a chain stored as runs, as its run kernels read them."""
    shifted = chain.shifted_sources
    assert shifted is not None, "a chain stored as runs has shifted sources"
    return shifted


class SerialChainPasses:
    """The passes of a small chain (:func:`~.chain_passes.chain_recommend`,
    :func:`~.chain_passes.chain_observe`): :attr:`recommend` and :attr:`observe` are the kernels
    with the chain and the rule bound — at ~10 µs per pass (CFR+ on Leduc) a Python call in
    between is measurable."""

    parallel = False
    sum_dtype = np.float64
    sum_dtypes = SUM_DTYPES

    def __init__(self, chain: Chain, kernel):
        static = _step_arrays(chain)
        #: ``recommend(a, b, x, total, w)``: the recommendation pass with the chain and the rule bound.
        self.recommend = partial(chain_passes.chain_recommend, *static, kernel.family, kernel.eta)
        #: ``observe(a, b, t, loss)``: the observation pass with the chain and the rule bound.
        self.observe = partial(
            chain_passes.chain_observe,
            *static,
            kernel.family,
            kernel.plus,
            kernel.alpha,
            kernel.beta,
            kernel.eta,
            np.empty(chain.widest_step),  # one step's strategy, allocated once
        )


class ParallelChainPasses:
    """The passes of a big chain on ``threads`` threads (:func:`~.chain_passes.chain_recommend_parallel`
    / :func:`~.chain_passes.chain_observe_parallel`), bit-identical to the serial passes.

    Holds the chunking of the level order (one int64 pair per chunk, ~1/1000 of the entries),
    the destination bounds of each level's scatter (from a histogram of its source entries in
    :data:`SCATTER_BUCKETS` buckets) and a per-thread strategy scratch whose rows share no cache
    line (:func:`~.jit.thread_rows`)."""

    parallel = True
    sum_dtypes = SUM_DTYPES

    def __init__(self, chain: Chain, kernel, threads: int):
        level_ptr = level_bounds(chain)
        runs = chain.runs
        static: tuple[np.ndarray, ...]
        if runs is not None:
            # Steps stored as runs (Ξ's): the run kernels (.chain_runs), no array per step, and
            # their sources shifted (ShiftedSources), never the chain's source array.
            ptr, run_kind, run_size, run_nsrc, run_entry, _ = runs.kernel_arrays()
            shifted = _shifted(chain)
            chunk_ptr, chunk_run, chunk_state, level_chunk = chain_runs.run_chunks(
                ptr, run_kind, run_size, run_nsrc, level_ptr, CHUNK_WORK
            )
            chunk_slot = chain_runs.run_chunk_slots(ptr, run_nsrc, shifted.shift, chunk_ptr)
            histograms = chain_runs.run_source_histograms(
                ptr, run_nsrc, shifted.run_stored, shifted.shift, shifted.stored, level_ptr, SCATTER_BUCKETS
            )
            static = (
                ptr,
                run_kind,
                run_size,
                run_nsrc,
                run_entry,
                shifted.shift,
                shifted.stored,
                chunk_ptr,
                chunk_run,
                chunk_state,
                chunk_slot,
                level_chunk,
            )
            source_ranges = chain_runs.run_chunk_source_ranges(
                ptr, run_nsrc, shifted.shift, shifted.stored, chunk_ptr, chunk_run, chunk_slot
            )
            self._recommend_kernel = chain_runs.run_recommend_parallel
            self._observe_kernel = chain_runs.run_observe_parallel
        else:
            kind, tptr, sptr, source, order = _step_arrays(chain)
            chunk_ptr, chunk_state, level_chunk = chain_passes.chain_chunks(
                kind, tptr, sptr, order, level_ptr, CHUNK_WORK
            )
            histograms = chain_passes.level_source_histograms(sptr, source, order, level_ptr, SCATTER_BUCKETS)
            static = (kind, tptr, sptr, source, order, chunk_ptr, chunk_state, level_chunk)
            source_ranges = chain_passes.chunk_source_ranges(sptr, source, order, chunk_ptr)
            self._recommend_kernel = chain_passes.chain_recommend_parallel
            self._observe_kernel = chain_passes.chain_observe_parallel
        self.threads = threads
        #: Level ``L``'s chunks are ``level_chunk[L] : level_chunk[L+1]`` (fixed at build time).
        self.level_chunk = level_chunk
        #: Whether a level's chunks are dealt to the threads in turn (a chain read through its
        #: level order) rather than cut into contiguous shares (``chain_passes._chunks_of_part``).
        self.dealt = runs is None and len(static[4]) > 0
        self._recommend = (*static, kernel.family, kernel.eta)
        self._observe = (
            *static,
            chain_passes.scatter_bounds(*histograms, threads),
            *source_ranges,
            kernel.family,
            kernel.plus,
            kernel.alpha,
            kernel.beta,
            kernel.eta,
        )
        self._scratch = thread_rows(chain.widest_step)
        big = variant_size(chain.num_entries) >= local.FLOAT32_STATE_MIN_ENTRIES
        #: float32 on chains of 2²⁰ entries or more (:func:`~efce.solvers.regret.local.state_dtype`'s
        #: threshold): the pass adds ``w · x`` computed in float64 and rounds the sum.
        self.sum_dtype = np.float32 if big else np.float64

    def recommend(self, a: np.ndarray, b: np.ndarray, x: np.ndarray, total: np.ndarray, w: float) -> None:
        """RECOMMEND on ``threads`` threads (:func:`~.chain_passes.chain_recommend_parallel`)."""
        run_on_threads(
            self.threads,
            self._recommend_kernel,
            *self._recommend,
            a,
            b,
            x,
            total,
            w,
            self.threads,
        )

    def observe(self, a: np.ndarray, b: np.ndarray, t: np.ndarray, loss: np.ndarray) -> None:
        """OBSERVELOSS on ``threads`` threads (:func:`~.chain_passes.chain_observe_parallel`)."""
        run_on_threads(
            self.threads,
            self._observe_kernel,
            *self._observe,
            a,
            b,
            t,
            loss,
            self._scratch,
            self.threads,
        )


class PayoffProducts:
    """``A y`` and ``sign · Aᵀ x`` of a :class:`~efce.solvers.evaluation.payoff_operator.PayoffOperator`
    with the serial kernels or, for an operator of :data:`PARALLEL_MIN_ROWS` rows or more on more
    than one thread, the parallel ones (:mod:`.operator`), which need per player the infoset of
    each trigger slot and the running work, and one stack per thread (rows two cache lines
    apart: the following pass writes them per terminal).  The deviation part of ``A y`` is split
    among threads only for EFCE, whose trigger slots write distinct rows; a coarse concept's
    slots share rows (``ξ[σ(Î), ·]`` of sibling infosets), so that part runs on one thread."""

    def __init__(self, op, threads: int, parallel_min_rows: int):
        self.operator = op
        tables = op.tables
        self.parts = threads if variant_size(op.shape[0]) >= parallel_min_rows and threads > 1 else 1
        lam_base1 = 1 + op.trigger_base[1]
        self._lam_base1 = lam_base1
        self._following = (
            op.seq_parents[0],
            op.seq_parents[1],
            op.own_sequences[0],
            op.own_sequences[1],
            tables.players[0].follow_trigger,
            tables.players[1].follow_trigger,
            tables.weighted,
            op.welfare_weight,
            tables.terminal_row,
        )
        # what the λ entries of Aᵀ x read: the terminals in ascending Ξ entry, the first λ entry
        # of player 2's triggers, the number of triggers
        self._following_columns = (
            *self._following,
            op.term_order,
            lam_base1,
            op.triggers.num_triggers,
        )
        self._deviation = tuple(
            (
                t.trig_count,
                t.trig_slot,
                op.slot_base[i],
                t.pos,
                t.end,
                t.cum,
                t.term_ptr,
                t.line_start,
                t.line_weight,
                t.row_start,
                t.rows,
            )
            for i, t in enumerate(tables.players)
        )
        self._split_rows = tables.concept == "efce"
        if self.parts > 1:
            self._stacks = thread_rows(op.max_depth + 2, np.int64)
        else:
            self._stack = np.empty(op.max_depth + 2, dtype=np.int64)

    @cached_property
    def _deviation_parallel(self) -> tuple:
        """The parallel deviation kernels' arguments: per trigger slot its infoset and the running
        work, then the serial ones but the counts (read through the infoset).  Made at the first
        parallel :meth:`matvec` or :meth:`rmatvec`: the fused deviator of rm's loop calls neither,
        and these are two int64 per trigger slot."""
        return tuple(
            (*operator.trigger_work(t.trig_count, t.trig_slot, t.line_start), *args[1:])
            for t, args in zip(self.operator.tables.players, self._deviation, strict=True)
        )

    def _tau(self) -> tuple[float, int]:
        tau = self.operator.tau
        return (0.0 if tau is None else tau), self.operator.lambda_tau

    def matvec(self, y: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out = A y`` (``out`` has one slot per Ξ entry)."""
        tau, lam_tau = self._tau()
        if self.parts > 1:
            return run_on_threads(self.parts, self._matvec_parallel, y, out, tau, lam_tau)
        self.following_matvec(y, out)
        for args in self._deviation:
            operator.deviation_matvec(*args, y, out)
        return out

    def following_matvec(self, y: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out =`` the following part of ``A y`` (and the welfare column's): every other entry
        0.  Reads ``y`` at the weights ``λ`` only (entries ``0 .. K``), so ``y`` may hold just
        those (:class:`FusedDeviator`)."""
        tau, lam_tau = self._tau()
        if self.parts > 1:
            return run_on_threads(
                self.parts,
                operator.following_matvec_parallel,
                *self._following,
                self._lam_base1,
                lam_tau,
                tau,
                y,
                self._stacks,
                out,
                self.parts,
            )
        out[:] = 0.0
        operator.following_matvec(*self._following, self._lam_base1, lam_tau, tau, y, self._stack, out)
        return out

    def _matvec_parallel(self, y, out, tau, lam_tau):
        parts = self.parts
        # The following pass zeroes ``out`` and writes every terminal row.
        operator.following_matvec_parallel(
            *self._following, self._lam_base1, lam_tau, tau, y, self._stacks, out, parts
        )
        if not self._split_rows:
            for args in self._deviation:
                operator.deviation_matvec(*args, y, out)
            return out
        for args in self._deviation_parallel:
            operator.deviation_matvec_parallel(*args, y, out, parts)
        return out

    def rmatvec(self, x: np.ndarray, out: np.ndarray, sign: float = 1.0) -> np.ndarray:
        """``out = sign · Aᵀ x`` (``out`` has one slot per Y entry)."""
        tau, lam_tau = self._tau()
        following = self._following_columns
        if self.parts > 1:
            return run_on_threads(
                self.parts, self._rmatvec_parallel, x, out, sign, (*following, lam_tau, tau)
            )
        for args in self._deviation:
            operator.deviation_rmatvec(*args, x, sign, out)
        operator.following_rmatvec(*following, lam_tau, tau, x, sign, out)
        return out

    def following_rmatvec(self, x: np.ndarray, out: np.ndarray, sign: float = 1.0) -> np.ndarray:
        """The entries ``0 .. K`` of ``sign · Aᵀ x`` (the constant's 0, the weights ``λ``'s following
        values, ``λ_τ``'s); writes nothing else, so ``out`` may hold just those."""
        tau, lam_tau = self._tau()
        following = (*self._following_columns, lam_tau, tau)
        if self.parts > 1:
            return run_on_threads(self.parts, operator.following_rmatvec_parallel, *following, x, sign, out)
        operator.following_rmatvec(*following, x, sign, out)
        return out

    def _rmatvec_parallel(self, x, out, sign, following):
        for args in self._deviation_parallel:
            operator.deviation_rmatvec_parallel(*args, x, sign, out, self.parts)
        operator.following_rmatvec_parallel(*following, x, sign, out)
        return out


class FusedDeviator:
    """The deviator's regret minimizer over ``Y`` with a rule's kernel, fused with the payoff
    operator's products (:mod:`.deviator`): its state (one value per Y entry but the constant,
    indexed by entry), the weights' point and loss (``K + 1`` values each), and per thread one
    block of scratch — no array of Y's entries besides the state, nor Y's chain.

    :meth:`scatter` writes ``A y`` of the current point into Ξ's loss buffer, :meth:`observe`
    takes the loss ``−Aᵀ x`` of a Ξ point, :meth:`best_response` gives ``min_{y ∈ Y} ⟨−Aᵀ ξ, y⟩``
    (a checkpoint's gap), :meth:`point` the current point in full; the numbers are those of the
    chain passes over ``Y`` and the operator's products (:mod:`.deviator`), bit for bit.

    Parameters
    ----------
    products : PayoffProducts
        The operator's products on this backend (their following parts are used).
    kernel : Kernel
        The rule's compiled form; ``state`` its state over Y's entries but the constant
        (:meth:`efce.solvers.regret.local.LocalRule.init` over one segment of that many).
    """

    def __init__(self, products: PayoffProducts, kernel: Kernel, state: dict[str, np.ndarray]):
        op = products.operator
        tables = op.tables
        self.products = products
        self.kernel = kernel
        self.state = state
        self.parts = products.parts
        self.num_entries = op.shape[1]
        num_lambda = op.triggers.num_triggers
        #: The constant and the weights' values of the current point (``K + 1``).
        self.y_lam = np.empty(num_lambda + 1)
        self._loss_lam = np.empty(num_lambda + 1)
        self._players = []
        widest_block = widest_step = 1
        for i, t in enumerate(tables.players):
            slot_inf, cum_work, block = deviator.slot_work(
                t.trig_count, t.trig_slot, t.pos, t.end, t.cum, t.line_start
            )
            widest_block = max(widest_block, int(block))
            widest_step = max(widest_step, int(t.num_actions.max(initial=1)))
            self._players.append(
                (
                    slot_inf,
                    cum_work,
                    t.trig_slot,
                    op.slot_base[i],
                    t.slot_trigger,
                    t.pos,
                    t.end,
                    t.cum,
                    t.pre,
                    t.num_actions,
                    _parent_slots(t),
                    t.term_ptr,
                    t.line_start,
                    t.line_weight,
                    t.row_start,
                    t.rows,
                )
            )
        self._lam_base = (1, 1 + op.trigger_base[1])
        concept = tables.concept
        # A coarse concept's slots share rows of A: its scatter keeps the serial order.  An NFCCE
        # trigger's slots add into one weight: its up pass keeps the chain's order.
        self._serial_scatter = concept != "efce"
        self._serial_observe = concept == "nfcce"
        self._block_rows = thread_rows(widest_block)
        self._step_rows = thread_rows(widest_step)
        big = variant_size(self.num_entries) >= local.FLOAT32_STATE_MIN_ENTRIES
        #: dtype of the running sum of the points a loop may keep: float32 where Y's chain passes
        #: would keep it so (:attr:`ParallelChainPasses.sum_dtype`), float64 below.
        self.sum_dtype = (
            np.float32 if big and variant_size(self.num_entries) >= PARALLEL_MIN_ENTRIES else np.float64
        )

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.kernel.arrays(self.state)

    def scatter(
        self,
        out: np.ndarray,
        total: np.ndarray | None = None,
        w: float = 0.0,
        point: np.ndarray | None = None,
    ) -> None:
        """``out = A y`` for the current point ``y`` (Ξ entry order; none with an empty ``out``);
        with ``total`` also ``total += w · y``, with ``point`` ``point = y`` (Y entry order)."""
        k = self.kernel
        a, b, _ = self._arrays()
        total = _NO_VALUES if total is None else total
        point = _NO_VALUES if point is None else point
        deviator.lambda_recommend(k.family, k.eta, a, b, self.y_lam, total, w, point)
        if len(out):
            self.products.following_matvec(self.y_lam, out)
        for lam_base, static in zip(self._lam_base, self._players, strict=True):
            run_on_threads(
                self.parts,
                deviator.deviator_recommend,
                *static,
                lam_base,
                self.y_lam,
                k.family,
                k.eta,
                a,
                b,
                out,
                total,
                w,
                point,
                self._block_rows,
                self._serial_scatter,
                1 if self._serial_scatter else self.parts,
            )

    def observe(self, x: np.ndarray) -> None:
        """Observe the loss ``−Aᵀ x`` of the Ξ point ``x`` (float64, entry order): the state is
        updated in place."""
        k = self.kernel
        a, b, t = self._arrays()
        t[0] += 1.0
        pos, neg = rules.discounts(k.alpha, k.beta, t[0])
        self._blocks(x, False, pos, neg, a, b)
        # the weights' simplex last, with the weights' point buffer as its strategy scratch
        deviator.lambda_observe(k.family, k.plus, pos, neg, k.eta, a, b, self._loss_lam, self.y_lam)

    def best_response(self, values: np.ndarray) -> float:
        """``min_{y ∈ Y} ⟨−Aᵀ ξ, y⟩`` for ``ξ = values`` (float32 or float64, Ξ entry order), as
        :func:`~.chain_passes.chain_best_vertex` over Y's chain gives it; the state is untouched."""
        a, b, _ = self._arrays()
        self._blocks(values, True, 1.0, 1.0, a, b)
        return float(deviator.lambda_minimum(self._loss_lam))

    def _blocks(self, x, best, pos, neg, a, b) -> None:
        k = self.kernel
        self.products.following_rmatvec(x, self._loss_lam, -1.0)
        serial = self._serial_observe
        for lam_base, static in zip(self._lam_base, self._players, strict=True):
            run_on_threads(
                self.parts,
                deviator.deviator_observe,
                *static,
                x,
                lam_base,
                self._loss_lam,
                k.family,
                k.plus,
                pos,
                neg,
                k.eta,
                a,
                b,
                self._block_rows,
                self._step_rows,
                best,
                serial,
                1 if serial else self.parts,
            )

    def point(self) -> np.ndarray:
        """The current point, a new float64 array (Y entry order)."""
        y = np.empty(self.num_entries)
        self.scatter(_NO_VALUES, point=y)
        return y


def _parent_slots(t: PlayerTriggerTable) -> np.ndarray:
    """The preorder slot of each preorder infoset's parent sequence (-1: the empty sequence)."""
    n_inf = len(t.first)
    inf_of_seq = np.repeat(np.arange(n_inf, dtype=np.int64), t.num_actions)  # sequences 1, 2, ...
    slot_of_seq = np.zeros(t.num_sequences, dtype=np.int32)  # slots number fewer than sequences
    slot_of_seq[1:] = t.cum[t.pos[inf_of_seq]] + (np.arange(1, t.num_sequences) - t.first[inf_of_seq])
    parent = t.infoset_parent[t.pre]
    return np.where(parent > 0, slot_of_seq[parent], np.int32(-1))


def cumulative_work(t: PlayerTriggerTable) -> np.ndarray:
    """Running cost of the trigger infosets ``0..I-1`` of one player's table in
    :func:`~.gaps.trigger_gains`: per trigger slot, a pass over the subtree's sequences and the
    infoset's line of terminals."""
    subtree_sequences = t.cum[t.end] - t.cum[t.pos]
    width = np.diff(t.line_start)
    per_infoset = t.trig_count.astype(np.int64) * (subtree_sequences + width + 1)
    return np.concatenate(([0], np.cumsum(per_infoset)))


class GapSweeps:
    """The gap evaluator's sweeps over one game's
    :class:`~efce.solvers.evaluation.payoff_operator.TriggerTables`
    (:mod:`~efce.solvers.backends.cpu.gaps`): the trigger infosets of each player split among
    ``threads`` threads by their work."""

    def __init__(self, tables, threads: int):
        self.tables = tables
        self.threads = threads
        self._players = tuple(
            (
                t.first,
                t.num_actions,
                t.trig_count,
                t.trig_slot,
                t.child_ptr,
                t.child_inf,
                t.pos,
                t.pre,
                t.end,
                t.cum,
                t.term_ptr,
                t.line_start,
                t.line_weight,
                t.row_start,
                t.rows,
            )
            for t in tables.players
        )
        self._cum_work = tuple(cumulative_work(t) for t in tables.players)

    def gains(self, values: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """Per player, the gain ``D − F`` of every trigger slot against ``ξ = values``, and the
        players' utilities.  A slot's following value ``F`` sums the subtree sums of its
        following sequences: EFCE's slot ``(I, a)`` follows ``(I, a)``; a coarse slot at ``I``
        follows every sequence of ``I`` (the terminals below ``I``)."""
        tables = self.tables
        players = tables.players
        per_seq0, per_seq1, utilities = gaps.terminal_sums(
            values,
            tables.terminal_row,
            tables.terminal_sequences,
            tables.weighted,
            players[0].num_sequences,
            players[1].num_sequences,
        )
        out = []
        for i, per_seq in enumerate((per_seq0, per_seq1)):
            t = players[i]
            # Following values: per own sequence, then accumulated over subtrees.
            follow = gaps.subtree_sums(per_seq, t.first, t.num_actions, t.infoset_parent)
            if t.concept == "efce":
                follow_slot = follow[1:]
            else:
                hosts = np.flatnonzero(t.trig_count)
                per_infoset = np.add.reduceat(follow, t.first) if len(t.first) else np.zeros(0)
                follow_slot = np.ascontiguousarray(per_infoset[hosts])
            out.append(
                run_on_threads(
                    self.threads,
                    gaps.trigger_gains,
                    *self._players[i],
                    follow_slot,
                    values,
                    self._cum_work[i],
                    self.threads,
                )
            )
        return out, utilities

    def welfare(self, values: np.ndarray) -> float:
        """``Σ_z p_c(z) (u_1 + u_2)(z) ξ[σ(z)]`` for ``ξ = values`` (one pass over the terminals)."""
        return float(gaps.welfare(values, self.tables.terminal_row, self.tables.weighted))


def _is_integer(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


@dataclass(frozen=True)
class CPUBackend:
    """The CPU backend: numpy arrays and numba kernels on ``threads`` threads.

    Parameters
    ----------
    threads : int, optional
        Threads of the parallel kernels (default: numba's current setting — every core of
        numba's pool unless changed); iterates and reports are the same on every count.
    parallel_min_size : int, optional
        Chains and operators of at least this many entries / rows run the parallel kernels
        (default :data:`PARALLEL_MIN_ENTRIES` / :data:`PARALLEL_MIN_ROWS`); ``1`` runs them on
        every size (the tests compare them with the serial ones).

    Raises
    ------
    OptionError
        ``threads`` is not an integer from 1 to :func:`~.jit.available_threads`, or
        ``parallel_min_size`` is not a positive integer.
    """

    threads: int = field(default_factory=default_threads)
    parallel_min_size: int | None = field(default=None, repr=False)
    name: ClassVar[str] = "cpu"

    def __post_init__(self):
        most = available_threads()
        if not _is_integer(self.threads) or not 1 <= self.threads <= most:
            raise OptionError(
                f"threads must be an integer from 1 to {most} (the cores numba may use), got {self.threads!r}"
            )
        size = self.parallel_min_size
        if size is not None and (not _is_integer(size) or size < 1):
            raise OptionError(f"parallel_min_size must be a positive integer, got {size!r}")

    def _smallest_parallel(self, default: int) -> int:
        return default if self.parallel_min_size is None else self.parallel_min_size

    # ------------------------------------------------------------------ kernel variants
    def variant_sizes(self, sizes: Iterable[int | tuple[int, int]]) -> list[tuple[int, int]]:
        """The sizes a warm-up stands in (:func:`~efce.solvers.backends.sizing.sized_as`) to call
        every kernel variant that a run on chains and operators of ``sizes`` entries calls.

        A chain's size chooses serial or parallel passes (:data:`PARALLEL_MIN_ENTRIES`) and a
        float64 or float32 running sum; an operator's, serial or parallel products
        (:data:`PARALLEL_MIN_ROWS`, on more than one thread); the entries of a rule's state —
        a chain's simplex entries, at most its entries — float64 or float32 state
        (:data:`~efce.solvers.regret.local.FLOAT32_STATE_MIN_ENTRIES`).  Sizes between the same
        thresholds choose alike: each class is represented by its lowest size (0, or the
        largest threshold reached).  A chain of 2²⁰ entries or more may keep its state in either
        dtype, so both are included.

        Parameters
        ----------
        sizes : iterable of int or (int, int)
            Entries of the run's chains, rows of its operators, entries of its segment sets;
            a pair ``(lo, hi)`` is a size known only to lie in ``[lo, hi]`` (every class a size
            in the range falls in is included).

        Returns
        -------
        list of (int, int)
            ``(entries, state entries)`` pairs, in increasing order; empty for no sizes.
        """
        narrow = local.FLOAT32_STATE_MIN_ENTRIES
        thresholds = sorted(
            {
                self._smallest_parallel(PARALLEL_MIN_ENTRIES),
                self._smallest_parallel(PARALLEL_MIN_ROWS),
                narrow,
            }
        )
        classes = set()
        for size in sizes:
            lo, hi = (size, size) if isinstance(size, int | Integral) else size
            for n in (lo, hi, *(t for t in thresholds if lo < t <= hi)):
                entries = max((t for t in thresholds if t <= n), default=0)
                classes.add((entries, entries))
                if entries >= narrow:
                    classes.add((entries, 0))
        return sorted(classes)

    # ------------------------------------------------------------------ arrays
    def empty(self, n: int, dtype: type = np.float64) -> np.ndarray:
        return np.empty(n, dtype=dtype)

    def zeros(self, n: int, dtype: type = np.float64) -> np.ndarray:
        return np.zeros(n, dtype=dtype)

    def to_device(self, array: np.ndarray) -> np.ndarray:
        return array

    def to_host(self, array: np.ndarray) -> np.ndarray:
        return np.asarray(array)

    # ------------------------------------------------------------------ chains
    def chain_passes(self, chain: Chain, kernel: Kernel) -> SerialChainPasses | ParallelChainPasses:
        """Serial passes below :data:`PARALLEL_MIN_ENTRIES` entries, parallel ones above (the
        entries a warm-up stands in, :func:`~efce.solvers.backends.sizing.sized_as`)."""
        if variant_size(chain.num_entries) >= self._smallest_parallel(PARALLEL_MIN_ENTRIES):
            return ParallelChainPasses(chain, kernel, self.threads)
        return SerialChainPasses(chain, kernel)

    def chain_minimum(self, chain: Chain, loss: np.ndarray) -> float:
        """``min_{x ∈ chain} ⟨loss, x⟩``; ``loss`` (float64, contiguous) is overwritten."""
        return self._best_vertex(chain, loss, _NO_CHOICE)

    def chain_vertex(self, chain: Chain, loss: np.ndarray) -> tuple[float, np.ndarray]:
        """``min_{x ∈ chain} ⟨loss, x⟩`` and a vertex attaining it (the first smallest entry of
        every step); ``loss`` (float64, contiguous) is overwritten."""
        choice = np.empty(chain.num_steps, dtype=np.int64)
        value = self._best_vertex(chain, loss, choice)
        point = np.empty(chain.num_entries)
        runs = chain.runs
        if runs is not None:
            ptr, _, size, nsrc, entry, _ = runs.kernel_arrays()
            shifted = _shifted(chain)
            chain_runs.run_vertex(ptr, size, nsrc, entry, shifted.shift, shifted.stored, choice, point)
        else:
            order = kernel_order(chain)
            chain_passes.chain_vertex(chain.target_ptr, chain.source_ptr, chain.source, order, choice, point)
        return value, point

    @staticmethod
    def _best_vertex(chain: Chain, loss: np.ndarray, choice: np.ndarray) -> float:
        runs = chain.runs
        if runs is not None:
            ptr, _, size, nsrc, entry, _ = runs.kernel_arrays()
            s = _shifted(chain)
            return float(
                chain_runs.run_best_vertex(
                    ptr, size, nsrc, entry, s.run_stored, s.shift, s.stored, loss, choice
                )
            )
        return float(
            chain_passes.chain_best_vertex(
                chain.target_ptr, chain.source_ptr, chain.source, kernel_order(chain), loss, choice
            )
        )

    def chain_violations(
        self, chain: Chain, arrays: Sequence[np.ndarray], scales: Sequence[float] | np.ndarray
    ) -> tuple[float, ...]:
        """The violation of each point ``scales[r] · arrays[r]`` (one value per entry each); float32
        points are read without a float64 copy, in the same pass as the others."""
        is_narrow = [a.dtype == np.float32 for a in arrays]
        wide = [r for r, flag in enumerate(is_narrow) if not flag]
        narrow = [r for r, flag in enumerate(is_narrow) if flag]
        group = {
            dtype: tuple(np.ascontiguousarray(arrays[r], dtype=dtype) for r in mine) or (np.empty(0, dtype),)
            for dtype, mine in ((np.float64, wide), (np.float32, narrow))
        }
        runs = chain.runs
        steps: tuple[np.ndarray, ...]
        if runs is not None:
            ptr, _, size, nsrc, entry, run_source = runs.kernel_arrays()
            s = _shifted(chain)
            sweep = feasibility.run_chain_violations
            steps = (ptr, size, nsrc, entry, run_source, s.run_stored, s.shift, s.stored)
        else:
            sweep, steps = feasibility.chain_violations, (chain.target_ptr, chain.source_ptr, chain.source)
        worst = np.zeros(len(arrays))
        worst[wide + narrow] = run_on_threads(
            self.threads,
            sweep,
            *steps,
            group[np.float64],
            len(wide),
            group[np.float32],
            len(narrow),
            np.ascontiguousarray(np.asarray(scales, dtype=np.float64)[wide + narrow]),
            self.threads,
        )
        return tuple(float(w) for w in worst)

    def rescaled_point(self, chain: Chain, values: np.ndarray) -> np.ndarray:
        """The float64 chain point rescaled from ``values`` (float32 or float64), a new array."""
        x = np.empty(chain.num_entries)
        values = np.ascontiguousarray(values)
        runs = chain.runs
        if runs is not None:
            s = _shifted(chain)
            feasibility.run_rescaled_point(*runs.kernel_arrays()[:5], s.shift, s.stored, values, x)
        else:
            feasibility.rescaled_point(
                chain.target_ptr, chain.source_ptr, chain.source, chain.kind, values, x
            )
        return x

    def definition3_violations(
        self,
        structure: tuple,
        cum_work: np.ndarray,
        arrays: tuple[np.ndarray, ...],
        index_map: np.ndarray,
        scales: np.ndarray,
    ) -> tuple[np.ndarray, np.int64]:
        """:func:`~.feasibility.definition3_violations` of the plans ``arrays`` on this backend's
        threads: ``(worst per plan, the first bad row or -1)``."""
        return run_on_threads(
            self.threads,
            feasibility.definition3_violations,
            *structure,
            arrays,
            index_map,
            scales,
            cum_work,
            self.threads,
        )

    # ------------------------------------------------------------------ payoff operator, gaps
    def payoff_products(self, op: PayoffOperator) -> PayoffProducts:
        """``op``'s products on this backend's threads (parallel from :data:`PARALLEL_MIN_ROWS` rows)."""
        return PayoffProducts(op, self.threads, self._smallest_parallel(PARALLEL_MIN_ROWS))

    def fused_deviator(
        self, products: PayoffProducts, kernel: Kernel, state: dict[str, np.ndarray]
    ) -> FusedDeviator:
        """The deviator of the saddle point of ``products``' operator with the rule ``kernel``,
        fused with those products (:meth:`payoff_products`), on their threads
        (:class:`FusedDeviator`)."""
        return FusedDeviator(products, kernel, state)

    def gap_sweeps(self, tables: TriggerTables) -> GapSweeps:
        """The gap evaluator's sweeps over ``tables`` on this backend's threads."""
        return GapSweeps(tables, self.threads)

    # ------------------------------------------------------------------ serial CPU-only kernels
    # The kernels themselves (numba dispatchers), called as the backend's methods.
    recommend_segments = staticmethod(rules.recommend_segments)
    observe_segments = staticmethod(rules.observe_segments)
    best_response = staticmethod(gaps.best_response)
    subtree_sums = staticmethod(gaps.subtree_sums)
    behaviour_to_sequence = staticmethod(trigger.behaviour_to_sequence)
    subtree_values = staticmethod(trigger.subtree_values)
    best_response_values = staticmethod(trigger.best_response_values)
    fixed_point = staticmethod(trigger.fixed_point)
    utility_vectors = staticmethod(trigger.utility_vectors)
    decompose_strategy = staticmethod(trigger.decompose_strategy)
    device_deviation_sums = staticmethod(device.device_deviation_sums)
