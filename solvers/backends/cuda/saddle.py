"""The EFCE saddle point's regret-minimization loop with every array on the GPU.

``min_{ξ ∈ Ξ} max_{y ∈ Y} ξᵀ A y`` (Farina, Ling, Fang, Sandholm 2019, sections 2.1, 2.3 and 5):
the correlator runs Algorithm 1 on Ξ's chain observing ``A y``, the deviator on Y's chain
observing ``−Aᵀ x``, with alternating (or simultaneous) updates and the correlator's running
sum ``Σ_t t^p x_t`` — the loop of :func:`solvers.methods.efce.solve_efce` (its ``_iterate``),
whose arithmetic :class:`CudaSaddlePoint` reproduces step by step.  The chains, the rules' state,
the iterates, the running sums and ``A``/``Aᵀ`` (:mod:`.layouts`) are copied to the GPU once;
a checkpoint brings back four scalars and the plan is copied back once, at the end.

Dtypes follow the CPU engine: a rule's per-entry state is float32 on chains whose simplex
entries reach 2²⁰ (PRM+'s prediction bfloat16) and the running sum float32 on chains of 2²⁰
entries (:func:`solvers.regret.local.state_dtype`); iterates and losses are float64.  The plan
is then :meth:`~polytopes.chain.Chain.rescaled_point` of the running sum, on the host
(:func:`solvers.methods.efce.average_point`), feasible to float64 rounding.

Every reduction has a fixed shape (block reductions, an ordered gather instead of atomic adds),
so a run gives the same iterates every time.  They are not the CPU engine's bit for bit: a wide
step or a long row is summed by a block in another order, the GPU contracts multiply-adds, and
regret matching turns one-ulp differences into different ties.  A step or row summed by one
thread is the CPU's arithmetic, operation for operation.
"""

from __future__ import annotations

import functools
import math
import time
import warnings
from types import ModuleType

import numpy as np

from efce.errors import MemoryBudgetExceeded, OptionError
from efce.games.resources.memory import gib
from efce.solvers.backends.cpu.rules import discounts
from efce.solvers.backends.protocol import HEDGE, PRM_PLUS, RM
from efce.solvers.methods.efce import Checkpoint, EFCEModel, average_point
from efce.solvers.regret.local import LocalRule, as_rule, prediction_dtype, state_dtype

from .layouts import (
    BLOCK_SIZE,
    PIECE_ENTRIES,
    ROW_GROUP,
    SHORT_ROW,
    SPLIT_ENTRIES,
    ChainLayout,
    DeviceArray,
    PayoffLayout,
    chain_layout,
    payoff_layout,
    run_device_bytes,
)


@functools.cache
def numba_cuda() -> ModuleType:
    """numba.cuda, imported on first use (it reads ``NUMBA_ENABLE_CUDASIM`` then) with numba's
    warning about small grids silenced: the passes launch one grid per level, and the narrow
    levels are small by nature."""
    from numba import cuda
    from numba.core.errors import NumbaPerformanceWarning

    warnings.filterwarnings(
        "ignore",
        message="Grid size .* will likely result in GPU under-utilization",
        category=NumbaPerformanceWarning,
    )
    return cuda


def _kernels():
    from . import kernels

    return kernels


def _blocks(n: int, block: int) -> int:
    return (n + block - 1) // block


def _fill(array, value, block_size: int) -> None:
    if array.size:
        _kernels().fill[min(_blocks(array.size, block_size), 4096), block_size](array, value)


def _check_power_of_two(name: str, value: int, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= most:
        raise OptionError(f"{name} must be an integer from 1 to {most}, got {value!r}")
    if value & (value - 1):
        raise OptionError(f"{name} must be a power of two (the block reductions halve it), got {value}")
    return int(value)


class DeviceRule:
    """A compiled local rule's state over one chain, on the GPU, indexed by entry.

    The state is the rule's :class:`~solvers.regret.local.Kernel` arrays (``a``: regrets or
    cumulative losses; PRM+'s predictions in ``pred16`` as bfloat16 bits or ``pred64``), in the
    dtypes the CPU rule would use on the chain's simplex entries; ``observations`` counts the
    losses seen (DCFR's discount reads it)."""

    def __init__(self, rule: LocalRule, layout: ChainLayout | DeviceChain):
        cuda = numba_cuda()
        kernel = rule.kernel()
        if kernel is None:
            raise OptionError(
                f"local rule {rule.name!r} has no compiled form, so it cannot run on the GPU; "
                f"use one of rm, rm+, hedge, prm+, dcfr"
            )
        self.kernel = kernel
        n = layout.num_entries
        self.state_dtype = state_dtype(layout.simplex_entries)
        self.a = cuda.to_device(np.zeros(n, dtype=self.state_dtype))
        predictive = kernel.family == PRM_PLUS
        bf16 = predictive and prediction_dtype(layout.simplex_entries) == np.uint16
        self.pred16 = cuda.to_device(np.zeros(n if bf16 else 0, dtype=np.uint16))
        self.pred64 = cuda.to_device(np.zeros(n if predictive and not bf16 else 0))
        self.observations = 0

    def arrays(self) -> tuple:
        return self.a, self.pred64, self.pred16

    def reset(self, block_size: int) -> None:
        """The initial state again (zeros; +0.0 in every dtype, bfloat16 bits included)."""
        for array in self.arrays():
            _fill(array, 0, block_size)
        self.observations = 0

    def discounts(self) -> tuple[float, float]:
        """Count one more observation; DCFR's factors for it (1, 1 without discounting)."""
        self.observations += 1
        k = self.kernel
        alpha, beta = discounts(k.alpha, k.beta, float(self.observations))
        return float(alpha), float(beta)

    def to_host(self) -> dict[str, np.ndarray]:
        """The state (entry-indexed host copies): ``a`` and the predictions."""
        return {
            "a": self.a.copy_to_host(),
            "pred64": self.pred64.copy_to_host(),
            "pred16": self.pred16.copy_to_host(),
        }


class DeviceChain:
    """A :class:`~.layouts.ChainLayout` on the GPU and its passes, one launch per level."""

    def __init__(self, layout: ChainLayout, block_size: int):
        cuda = numba_cuda()
        # Scalars only: the host's layout arrays may go once they are on the GPU.
        self.num_entries = layout.num_entries
        self.num_steps = layout.num_steps
        self.simplex_entries = layout.simplex_entries
        self.wide_threshold = layout.wide_threshold
        self.num_wide = len(layout.wide_steps)
        self.block = block_size
        self.arrays = {
            name: cuda.to_device(np.ascontiguousarray(a)) for name, a in layout.device_arrays().items()
        }
        w, g, sp, pieces = layout.wide_ptr, layout.gather_part_ptr, layout.split_ptr, layout.piece_ptr
        # per level: (lo, hi) positions, (w_lo, w_hi) wide steps, (g_lo, g_hi) the destinations
        # it fills, gathered into before it runs
        self.levels = [
            (
                int(layout.level_ptr[L]),
                int(layout.level_ptr[L + 1]),
                int(w[L]),
                int(w[L + 1]),
                int(g[L + 1]),
                int(g[L + 2]),
            )
            for L in range(layout.depth)
        ]
        self.root_gather = (int(g[0]), int(g[1]))  # the entries no step fills, after level 0
        # per level: (s_lo, s_hi) split steps, (p_lo, p_hi) their pieces
        self.split_levels = [
            (int(sp[L]), int(sp[L + 1]), int(pieces[sp[L]]), int(pieces[sp[L + 1]]))
            for L in range(layout.depth)
        ]
        self.num_split = len(layout.split_steps)
        self.piece_size = layout.piece_size
        self._scal = cuda.to_device(np.zeros((max(self.num_split, 1), 4)))  # shift, scale, h, v
        self._piece_partial = cuda.device_array(max(len(layout.piece_step), 1))
        self._empty64 = cuda.device_array(0)  # an absent total or prediction
        self._empty16 = cuda.to_device(np.zeros(0, dtype=np.uint16))
        self._partial = None  # the violations' per-block maxima, made on first use

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values()) + self._scal.nbytes + self._piece_partial.nbytes

    def _grid(self, lo, hi, w_lo, w_hi) -> int:
        return (w_hi - w_lo) + _blocks(hi - lo, self.block)

    def recommend(
        self,
        rule_family: int,
        eta: float,
        state: tuple,
        x: DeviceArray,
        total: DeviceArray,
        w: float,
        accumulate: bool,
    ) -> None:
        """RECOMMEND into ``x`` (and ``total += w · x`` when ``accumulate``) from the state
        ``(a, pred64, pred16)`` under the rule family ``rule_family``."""
        k, d = _kernels(), self.arrays
        k.set_root[1, 1](x, total, w, accumulate)
        for (lo, hi, w_lo, w_hi, _, _), split in zip(self.levels, self.split_levels, strict=True):
            if split[1] > split[0]:
                self._split_strategy(split, rule_family, eta, state, x)
                self._apply(
                    split, k.PIECE_WRITE, rule_family, False, 1.0, 1.0, eta, state, x, total, w, accumulate
                )
            grid = self._grid(lo, hi, w_lo, w_hi)
            if grid:
                k.recommend_level[grid, self.block](
                    d["kind"],
                    d["target_ptr"],
                    d["source_ptr"],
                    d["source"],
                    d["order"],
                    lo,
                    hi,
                    d["wide_steps"],
                    w_lo,
                    w_hi,
                    self.wide_threshold,
                    rule_family,
                    eta,
                    *state,
                    x,
                    total,
                    w,
                    accumulate,
                )

    def observe(self, rule: DeviceRule, loss: DeviceArray) -> None:
        """OBSERVELOSS of ``loss`` (overwritten with the accumulated ``ℓ̃``), level by level from
        the last: the local updates, then the gather into the sources."""
        k, d = _kernels(), self.arrays
        pos, neg = rule.discounts()
        spec = rule.kernel
        for (lo, hi, w_lo, w_hi, g_lo, g_hi), split in zip(
            reversed(self.levels), reversed(self.split_levels), strict=True
        ):
            self._gather(g_lo, g_hi, loss)
            if split[1] > split[0]:
                state = rule.arrays()
                self._split_strategy(split, spec.family, spec.eta, state, loss)
                self._partials(split, k.PIECE_VALUE, -1, spec.family, spec.eta, state, loss)
                self._combine(split, k.PIECE_VALUE, loss)
                self._apply(
                    split,
                    k.PIECE_UPDATE,
                    spec.family,
                    spec.plus,
                    pos,
                    neg,
                    spec.eta,
                    state,
                    loss,
                    self._empty64,
                    0.0,
                    False,
                )
                k.piece_values[_blocks(split[1] - split[0], self.block), self.block](
                    d["target_ptr"], d["order"], d["split_steps"], split[0], split[1], self._scal, loss
                )
            grid = self._grid(lo, hi, w_lo, w_hi)
            if grid:
                k.observe_level[grid, self.block](
                    d["kind"],
                    d["target_ptr"],
                    d["source_ptr"],
                    d["order"],
                    lo,
                    hi,
                    d["wide_steps"],
                    w_lo,
                    w_hi,
                    self.wide_threshold,
                    spec.family,
                    spec.plus,
                    pos,
                    neg,
                    spec.eta,
                    *rule.arrays(),
                    loss,
                )
        self._gather(*self.root_gather, loss)

    # The split steps of one level (``split`` = (s_lo, s_hi, p_lo, p_hi)), phase by phase.
    def _partials(self, split, mode, masked, family, eta, state, values) -> None:
        d = self.arrays
        _kernels().piece_partials[split[3] - split[2], self.block](
            d["target_ptr"],
            d["order"],
            d["split_steps"],
            d["piece_step"],
            d["piece_ptr"],
            self.piece_size,
            split[2],
            mode,
            masked,
            family,
            eta,
            *state,
            values,
            self._scal,
            self._piece_partial,
        )

    def _combine(self, split, mode, values) -> None:
        d = self.arrays
        _kernels().piece_combine[split[1] - split[0], self.block](
            d["target_ptr"],
            d["source_ptr"],
            d["source"],
            d["order"],
            d["split_steps"],
            split[0],
            d["piece_ptr"],
            mode,
            values,
            self._piece_partial,
            self._scal,
        )

    def _split_strategy(self, split, family, eta, state, values) -> None:
        """Each split step's shift (Hedge), scale and ``h`` into ``_scal``."""
        k = _kernels()
        if family == HEDGE:
            self._partials(split, k.PIECE_SHIFT, -1, family, eta, state, values)
            self._combine(split, k.PIECE_SHIFT, values)
        self._partials(split, k.PIECE_TOTAL, -1, family, eta, state, values)
        self._combine(split, k.PIECE_TOTAL, values)

    def _apply(self, split, mode, family, plus, pos, neg, eta, state, x, total, w, accumulate) -> None:
        d = self.arrays
        _kernels().piece_apply[split[3] - split[2], self.block](
            d["target_ptr"],
            d["order"],
            d["split_steps"],
            d["piece_step"],
            d["piece_ptr"],
            self.piece_size,
            split[2],
            mode,
            family,
            plus,
            pos,
            neg,
            eta,
            *state,
            x,
            total,
            w,
            accumulate,
            self._scal,
        )

    def _gather(self, g_lo: int, g_hi: int, loss) -> None:
        """Every destination ``g_lo <= p < g_hi`` adds its values (:func:`~.kernels.gather_into`)."""
        if g_hi > g_lo:
            d = self.arrays
            _kernels().gather_into[_blocks(g_hi - g_lo, self.block), self.block](
                d["gather_dest"], d["gather_ptr"], d["gather_value"], g_lo, g_hi, loss
            )

    def minimum(self, loss: DeviceArray, masked: int = -1) -> None:
        """``min_{z ∈ chain} ⟨loss, z⟩`` into ``loss[0]`` (``loss`` is overwritten), the entry
        ``masked`` (-1: none) left out of its simplex (:func:`~.kernels.best_level`)."""
        k, d = _kernels(), self.arrays
        for (lo, hi, w_lo, w_hi, g_lo, g_hi), split in zip(
            reversed(self.levels), reversed(self.split_levels), strict=True
        ):
            self._gather(g_lo, g_hi, loss)
            if split[1] > split[0]:
                self._partials(
                    split, k.PIECE_MIN, masked, RM, 0.0, (loss, self._empty64, self._empty16), loss
                )
                self._combine(split, k.PIECE_MIN, loss)
            grid = self._grid(lo, hi, w_lo, w_hi)
            if grid:
                k.best_level[grid, self.block](
                    d["target_ptr"],
                    d["source_ptr"],
                    d["order"],
                    lo,
                    hi,
                    d["wide_steps"],
                    w_lo,
                    w_hi,
                    self.wide_threshold,
                    masked,
                    loss,
                )
        self._gather(*self.root_gather, loss)

    def violations(
        self, x: DeviceArray, x_scale: float, s: DeviceArray, s_scale: float, scalars: DeviceArray, slot: int
    ) -> None:
        """The chain violations (:meth:`~polytopes.chain.Chain.violations`) of ``x_scale · x``
        and ``s_scale · s`` into ``scalars[slot]`` and ``scalars[slot + 1]``."""
        cuda, k, d = numba_cuda(), _kernels(), self.arrays
        grid = self.num_wide + _blocks(self.num_steps, self.block)
        if self._partial is None:
            self._partial = cuda.device_array((2, grid))
        k.violations[grid, self.block](
            d["target_ptr"],
            d["source_ptr"],
            d["source"],
            d["all_wide_steps"],
            self.wide_threshold,
            x,
            x_scale,
            s,
            s_scale,
            self._partial,
        )
        k.finish_violations[1, self.block](self._partial, x, x_scale, s, s_scale, scalars, slot)


class DeviceCSR:
    """A :class:`~.layouts.CSR` on the GPU: ``out = sign · M x``."""

    def __init__(self, csr, block_size: int, group: int):
        cuda = numba_cuda()
        self.shape = csr.shape
        self.short_threshold = csr.short_threshold
        self.num_medium, self.num_long = len(csr.medium_rows), len(csr.long_rows)
        self.tau_position = csr.tau_position
        self.block = block_size
        self.group = group
        self.arrays = {
            name: cuda.to_device(np.ascontiguousarray(a)) for name, a in csr.device_arrays().items()
        }
        per_block = block_size // group
        self.grid = (
            len(csr.long_rows) + _blocks(len(csr.medium_rows), per_block) + _blocks(csr.shape[0], block_size)
        )

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values())

    def matvec(self, x: DeviceArray, out: DeviceArray, sign: float = 1.0) -> None:
        """``out = sign · M x`` on the device (:func:`~.kernels.csr_matvec`)."""
        d = self.arrays
        if self.grid:
            _kernels().csr_matvec[self.grid, self.block](
                d["ptr"],
                d["col"],
                d["val"],
                x,
                out,
                sign,
                self.short_threshold,
                d["long_rows"],
                d["medium_rows"],
                self.group,
            )

    def set_value(self, position: int, value: float) -> None:
        _kernels().set_value[1, 1](self.arrays["val"], position, value)


#: Slots of the scalars a checkpoint brings back.
_VIOLATIONS, _MINIMUM, _WELFARE, _BOUND = 0, 2, 3, 4


class CudaSaddlePoint:
    """One regret-minimization run of the EFCE saddle point on the GPU.

    Parameters
    ----------
    model : EFCEModel
        :func:`solvers.methods.efce.build_efce_model`'s model, with or without a welfare
        threshold (then ``A`` holds the column ``λ_τ``: ``--objective welfare``).
    rule : LocalRule or str
        The local rule at every simplex of both chains: ``rm``, ``rm+``, ``dcfr``, ``hedge``,
        ``prm+`` or any rule with a compiled form (:meth:`~solvers.regret.local.LocalRule.kernel`).
    alternating : bool
        The deviator answers the correlator's fresh point (default), or both move from the
        previous points (simultaneous).
    power : float
        Iteration ``t`` weighs ``t^power`` in the averages (0 uniform, 1 linear, 2 quadratic).
    average_deviator : bool, optional
        Keep the deviator's running sum too (for :meth:`deviation_bound`); default: when the
        model has a welfare threshold.
    block_size : int
        Threads per block (a power of two up to 1024).
    wide_threshold : int, optional
        Chain steps with more entries plus sources run on a block each (default: the block size).
    split_threshold, piece_size : int, optional
        Chain steps with more entries than ``split_threshold`` (default 32,768, at least
        ``wide_threshold``) run as pieces of ``piece_size`` entries (default 4,096), a block each.
    short_row, long_row, row_group : int, optional
        CSR rows with at most ``short_row`` (default 16 or ``long_row``) nonzeros are summed by a
        thread, up to ``long_row`` (default: the block size) by ``row_group`` threads (a power of
        two up to the block size; default 32 or the block), longer ones by a block.
    device_budget : float, optional
        Bytes the run may allocate on the GPU (default: no limit).  Checked against the exact
        count of its layouts (:func:`~.layouts.run_device_bytes`) once they are built on the
        host, before anything is copied: the pre-build estimate fits the game families it was
        measured on, and this check holds for any game.

    Raises
    ------
    OptionError
        A rule without a compiled form, or a size option out of range.
    MemoryBudgetExceeded
        The run's arrays need more than ``device_budget`` bytes (one line, nothing copied).
    """

    def __init__(
        self,
        model: EFCEModel,
        rule: LocalRule | str,
        *,
        alternating: bool = True,
        power: float = 1.0,
        average_deviator: bool | None = None,
        block_size: int = BLOCK_SIZE,
        wide_threshold: int | None = None,
        split_threshold: int | None = None,
        piece_size: int = PIECE_ENTRIES,
        short_row: int | None = None,
        long_row: int | None = None,
        row_group: int | None = None,
        device_budget: float | None = None,
    ):
        rule = as_rule(rule)
        kernel = rule.kernel()
        if kernel is None:
            raise OptionError(
                f"local rule {rule.name!r} has no compiled form, so it cannot run on the GPU; "
                f"use one of rm, rm+, hedge, prm+, dcfr"
            )
        if not (isinstance(power, (int, float)) and math.isfinite(power) and power >= 0):
            raise OptionError(f"the averaging power must be a finite number >= 0, got {power!r}")
        block = _check_power_of_two("block_size", block_size, 1024)
        group = _check_power_of_two(
            "row_group", min(ROW_GROUP, block) if row_group is None else row_group, block
        )
        wide = block if wide_threshold is None else int(wide_threshold)
        long_row = block if long_row is None else int(long_row)
        short_row = min(SHORT_ROW, long_row) if short_row is None else int(short_row)
        split = max(SPLIT_ENTRIES, wide) if split_threshold is None else int(split_threshold)
        if not (1 <= wide <= split and piece_size >= 1 and 1 <= short_row <= long_row):
            raise OptionError(
                f"need 1 <= wide_threshold <= split_threshold, piece_size >= 1 and "
                f"1 <= short_row <= long_row, got {wide}, {split}, {piece_size}, {short_row}, {long_row}"
            )
        cuda = numba_cuda()
        self.model = model
        self.rule = rule
        self.alternating = bool(alternating)
        self.power = float(power)
        self.block = block
        self.welfare_threshold = model.operator.tau
        xi_layout = chain_layout(model.xi_steps, wide, split_threshold=split, piece_size=piece_size)
        y_layout = chain_layout(model.triggers.chain, wide, split_threshold=split, piece_size=piece_size)
        payoff: PayoffLayout = payoff_layout(
            model.operator, model.game, short_threshold=short_row, long_threshold=long_row
        )
        averaged_y = model.operator.tau is not None if average_deviator is None else bool(average_deviator)
        needed = run_device_bytes(
            xi_layout,
            y_layout,
            payoff,
            predictive=kernel.family == PRM_PLUS,
            alternating=self.alternating,
            averaged_deviator=averaged_y,
            block_size=block,
        )
        if device_budget is not None and needed > device_budget:
            raise MemoryBudgetExceeded(
                f"the EFCE saddle point of {model.game.name} is too large for the GPU: its arrays "
                f"take {gib(needed)}, over the {gib(int(device_budget))} it may use. Not copying it."
            )
        self.xi_chain = DeviceChain(xi_layout, block)
        self.y_chain = DeviceChain(y_layout, block)
        self.a = DeviceCSR(payoff.a, block, group)
        self.at = DeviceCSR(payoff.at, block, group)
        self.lambda_tau = payoff.lambda_tau
        self._terminal_row = cuda.to_device(payoff.terminal_row)
        self._welfare_weight = cuda.to_device(payoff.welfare_weight)
        self._welfare_grid = max(1, min(_blocks(len(payoff.terminal_row), block), 1024))
        self._welfare_partial = cuda.device_array(self._welfare_grid)
        del payoff, xi_layout, y_layout  # the host copies go; the GPU keeps its own

        nx, ny = self.xi_chain.num_entries, self.y_chain.num_entries
        self.rules = (DeviceRule(rule, self.xi_chain), DeviceRule(rule, self.y_chain))
        self.sum_dtype = state_dtype(nx)  # the CPU engine's sum_dtype on the compiled passes
        self.x = cuda.device_array(nx)
        self.y = cuda.device_array(ny)
        self.sum_x = cuda.to_device(np.zeros(nx, dtype=self.sum_dtype))
        self.sum_y = cuda.to_device(np.zeros(ny if averaged_y else 0, dtype=state_dtype(ny)))
        self._averaged_y = averaged_y
        # Simultaneous updates need both losses before either point moves.
        self._loss = None if self.alternating else (cuda.device_array(nx), cuda.device_array(ny))
        self._scalars = cuda.device_array(8)
        self._no_sum = cuda.device_array(0)
        self._no_u16 = cuda.to_device(np.zeros(0, dtype=np.uint16))
        started = time.perf_counter()
        self.reset()  # the first launches: RECOMMEND's kernels are compiled (or loaded) here
        self._first_launch_seconds: float | None = time.perf_counter() - started

    def reset(self) -> None:
        """Back to iteration 0 (the rules' initial state, empty running sums, the first
        points), keeping everything built: a second run without a second upload."""
        for rule in self.rules:
            rule.reset(self.block)
        for total in (self.sum_x, self.sum_y):
            _fill(total, 0, self.block)
        self.weight = 0.0
        self.iterations = 0
        self._recommend(0, self.x, self._no_sum, 0.0, False)
        self._recommend(1, self.y, self._no_sum, 0.0, False)

    def warm_up(self) -> float:
        """Compile (or load from numba-cuda's cache) every kernel the run launches, with the
        run's own argument types: one iteration, a checkpoint, the iterate's violation and,
        with the deviator's average, the welfare certificate, on the run's arrays; then
        :meth:`reset`.  The kernels' types depend on the layouts' index and state dtypes, so
        no smaller stand-in compiles the same specializations.

        Returns
        -------
        float
            Seconds of this call plus those of the constructor's first :meth:`reset` (its
            RECOMMEND kernels' compilation): ``compile_seconds``, outside the run's clock.
            0 once warm.
        """
        if self._first_launch_seconds is None:
            return 0.0
        started = time.perf_counter()
        self.step(1)
        self.checkpoint()
        self.iterate_violation()
        if self._averaged_y:
            self.deviation_bound()
        self.reset()
        self.synchronize()
        seconds = self._first_launch_seconds + time.perf_counter() - started
        self._first_launch_seconds = None
        return seconds

    # ------------------------------------------------------------------ the loop
    def _recommend(self, side: int, out, total, w: float, accumulate: bool) -> None:
        chain, rule = (self.xi_chain, self.y_chain)[side], self.rules[side]
        spec = rule.kernel
        chain.recommend(spec.family, spec.eta, rule.arrays(), out, total, w, accumulate)

    def step(self, t: int) -> None:
        """Iteration ``t`` (from 1): both players observe their loss and move; the averages
        take the new points with weight ``t^power`` (solvers.methods.selfplay.SelfPlay.step)."""
        w = float(t) ** self.power
        sum_y = self.sum_y if self._averaged_y else self._no_sum
        if self.alternating:
            self.a.matvec(self.y, self.x)
            self.xi_chain.observe(self.rules[0], self.x)
            self._recommend(0, self.x, self.sum_x, w, True)
            self.at.matvec(self.x, self.y, -1.0)
            self.y_chain.observe(self.rules[1], self.y)
            self._recommend(1, self.y, sum_y, w, self._averaged_y)
        else:
            assert self._loss is not None  # kept whenever the players move simultaneously
            lx, ly = self._loss
            self.a.matvec(self.y, lx)
            self.at.matvec(self.x, ly, -1.0)
            self.xi_chain.observe(self.rules[0], lx)
            self.y_chain.observe(self.rules[1], ly)
            self._recommend(0, self.x, self.sum_x, w, True)
            self._recommend(1, self.y, sum_y, w, self._averaged_y)
        self.weight += w
        self.iterations += 1

    # ------------------------------------------------------------------ checkpoints
    def checkpoint(self) -> Checkpoint:
        """The scalars of a checkpoint (four back from the GPU): the max deviation of the
        average plan ``ξ̄ = sum_x / weight``, read from the saddle point as
        ``max(0, −min_{y ∈ Y'} ⟨−Aᵀ ξ̄, y⟩)`` with ``Y'`` the trigger agents (``λ_τ`` left out;
        :func:`solvers.methods.efce.saddle_point_gap`), its welfare, and the chain violations of
        the current iterate and of ``ξ̄``.

        Raises
        ------
        RuntimeError
            Before the first :meth:`step` (no average yet).
        """
        if self.weight <= 0.0:
            raise RuntimeError("no average before the first step")
        k, scale = _kernels(), 1.0 / self.weight
        self.xi_chain.violations(self.x, 1.0, self.sum_x, scale, self._scalars, _VIOLATIONS)
        work = self._deviator_work()
        self.at.matvec(self.sum_x, work, -1.0)
        self.y_chain.minimum(work, self.lambda_tau)
        k.copy_scalar[1, 1](work, 0, self._scalars, _MINIMUM)
        self._restore_deviator()
        k.welfare_partial[self._welfare_grid, self.block](
            self._welfare_weight, self._terminal_row, self.sum_x, self._welfare_partial
        )
        k.finish_sum[1, self.block](self._welfare_partial, self._scalars, _WELFARE)
        s = self._scalars.copy_to_host()
        return Checkpoint(
            gap=max(0.0, -scale * float(s[_MINIMUM])),
            welfare=scale * float(s[_WELFARE]),
            violation_iterate=float(s[_VIOLATIONS]),
            violation_average=float(s[_VIOLATIONS + 1]),
        )

    def iterate_violation(self) -> float:
        """The chain violation of the current iterate ``x`` (one scalar back)."""
        self.xi_chain.violations(self.x, 1.0, self.x, 1.0, self._scalars, _VIOLATIONS)
        return float(self._scalars[_VIOLATIONS : _VIOLATIONS + 1].copy_to_host()[0])

    def deviation_bound(self) -> float:
        """``min_{ξ ∈ Ξ} ξᵀ A ȳ`` for the deviator's average ȳ (the welfare certificate of
        :func:`solvers.methods.efce.solve_efce`: above 0 no EFCE reaches the threshold).  ȳ is
        the chain point rescaled from the deviator's running sum on the GPU (a RECOMMEND pass
        reading the sum as regrets: :meth:`~polytopes.chain.Chain.rescaled_point`'s point).
        Overwrites the idle iterate buffer of the correlator's loss.

        Raises
        ------
        RuntimeError
            Without the deviator's running sum, or before the first step.
        """
        if not self._averaged_y or self.weight <= 0.0:
            raise RuntimeError("the deviator's average is kept only with average_deviator (or a threshold)")
        k = _kernels()
        work = self._deviator_work()
        self.y_chain.recommend(
            RM, 0.0, (self.sum_y, self._no_sum, self._no_u16), work, self._no_sum, 0.0, False
        )
        if self.alternating:
            xbuf = self.x
        else:
            assert self._loss is not None  # kept whenever the players move simultaneously
            xbuf = self._loss[0]
        self.a.matvec(work, xbuf)
        self.xi_chain.minimum(xbuf)
        k.copy_scalar[1, 1](xbuf, 0, self._scalars, _BOUND)
        self._restore_deviator()
        return float(self._scalars.copy_to_host()[_BOUND])

    def _deviator_work(self) -> DeviceArray:
        """A Y-sized buffer free between two steps, for the checkpoints' products and minima:
        the simultaneous updates' idle loss buffer, or else the deviator's iterate ``y`` itself,
        which :meth:`_restore_deviator` makes again (no buffer of Y's size is kept for them)."""
        return self.y if self._loss is None else self._loss[1]

    def _restore_deviator(self) -> None:
        """``y`` again after :meth:`_deviator_work` lent it: between two steps ``y`` is
        RECOMMEND of Y's rule state (every step and :meth:`reset` end with that pass), a
        function of the state, so the same pass gives it back bit for bit."""
        if self._loss is None:
            self._recommend(1, self.y, self._no_sum, 0.0, False)

    def set_welfare_threshold(self, welfare_threshold: float) -> None:
        """Move τ in ``A`` and ``Aᵀ`` on the GPU (a model built with a threshold; with
        :func:`solvers.methods.efce.set_welfare_threshold` on the host model)."""
        if self.welfare_threshold is None:
            raise ValueError("the model was built without a welfare threshold; build it with one")
        tau = float(welfare_threshold)
        self.a.set_value(self.a.tau_position, tau)
        self.at.set_value(self.at.tau_position, tau)
        self.welfare_threshold = tau

    # ------------------------------------------------------------------ results
    def average(self) -> np.ndarray:
        """The average plan in Ξ's entry order (float64): the running sum copied back once and
        made a chain point on the host (:func:`solvers.methods.efce.average_point`).

        Raises
        ------
        RuntimeError
            Before the first step.
        """
        if self.weight <= 0.0:
            raise RuntimeError("no average before the first step")
        return average_point(self.model.xi_steps, self.sum_x.copy_to_host(), self.weight, in_place=True)

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        """Host copies of the current iterates ``(x, y)`` (entry order)."""
        return self.x.copy_to_host(), self.y.copy_to_host()

    def synchronize(self) -> None:
        """Wait for the GPU (for timing: launches return before their kernels end)."""
        numba_cuda().synchronize()

    @property
    def device_bytes(self) -> int:
        """Bytes this run holds on the GPU."""
        arrays = [
            self.x,
            self.y,
            self.sum_x,
            self.sum_y,
            self._terminal_row,
            self._welfare_weight,
            self._welfare_partial,
        ]
        arrays += [a for rule in self.rules for a in rule.arrays()]
        arrays += list(self._loss or ())
        return (
            sum(int(a.nbytes) for a in arrays)
            + self.xi_chain.nbytes
            + self.y_chain.nbytes
            + self.a.nbytes
            + self.at.nbytes
        )
