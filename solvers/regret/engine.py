"""The solvers' driver of a chain regret minimizer, and the chain's linear minimization oracle.

The regret minimizer of a chain ``{1} ◁h1 X1 ◁h2 … ◁hn Xn`` is
:func:`solvers.algebra.chain_minimizer`: Algorithm 1 of Farina, Ling, Fang, Sandholm 2019 unrolled
into two flat passes (section 3.2), whose fast backend runs the passes as compiled loops with the
local rule fused in (:mod:`solvers.kernels`; cost per iteration linear in the number of entries
plus sources) and whose numpy backend runs any other rule.  :class:`ChainEngine` holds one
minimizer's state for a solver loop and donates it at every observation, so an iteration copies
no state; :func:`minimizer_factory` turns a solver's ``rule=`` / ``minimizer=`` options into the
minimizers of its chains.
"""

from __future__ import annotations

import functools
import inspect
from contextlib import contextmanager

import numba
import numpy as np

from efce.games.arrays import thread_rows
from efce.polytopes.chain import Chain

from . import kernels
from .algebra import SUM_DTYPES, accumulation, chain_linear_minimum, chain_minimizer, widest_step
from .local import LocalRule, as_rule, state_dtype
from .protocol import MinimizerFactory, RegretMinimizer

#: Chains with fewer entries run the serial passes whatever the thread count: below this a
#: pass takes tens of microseconds and the threads' fork/join costs more than it saves.  The
#: parallel passes are bit-identical to the serial ones, so the switch never changes an iterate.
PARALLEL_MIN_ENTRIES = 50_000

#: Buckets of each level's destination range from which the up pass's scatter is cut into
#: parts of equal additions (the cut is at most one bucket off the ideal).
SCATTER_BUCKETS = 4096

#: Entries plus sources per chunk of the parallel passes (fixed, independent of the thread
#: count): big enough to amortize the loop overhead, small enough to balance a level's chunks.
CHUNK_WORK = 4096


class ParallelChainPasses:
    """The chain passes of a compiled :class:`~solvers.algebra.ChainMinimizer` on numba's
    threads (:func:`solvers.kernels.chain_recommend_parallel` /
    :func:`~solvers.kernels.chain_observe_parallel`), bit-identical to its serial passes.

    Holds the chunking of the level order (one int64 pair per chunk, ~1/1000 of the entries),
    a histogram of each level's source entries (:data:`SCATTER_BUCKETS` counts per level) and a
    per-thread strategy scratch whose rows share no cache line
    (:func:`games.arrays.thread_rows`).  They run on ``numba.get_num_threads()`` parts, one
    thread included: numba compiles a ``prange`` body into a function of its own, which LLVM
    optimizes better than the serial kernels' single loop (one thread, medium Battleship: Ξ
    RECOMMEND 176 against 320 ms, OBSERVELOSS 171 against 204–223, Y's 44 against 90 and 73
    against 90), so the serial kernels serve only chains under :data:`PARALLEL_MIN_ENTRIES` and
    as the tests' reference."""

    def __init__(self, minimizer):
        chain = minimizer.chain
        self.kernel = minimizer.kernel
        kind, tptr, sptr, source, order = minimizer._recommend_args[:5]
        level_ptr = level_bounds(chain)
        chunk_ptr, chunk_state, level_chunk = kernels.chain_chunks(
            kind, tptr, sptr, order, level_ptr, CHUNK_WORK
        )
        self._static = (kind, tptr, sptr, source, order, chunk_ptr, chunk_state, level_chunk)
        self._histograms = kernels.level_source_histograms(sptr, source, order, level_ptr, SCATTER_BUCKETS)
        self._bounds: dict[int, np.ndarray] = {}  # per thread count, made on first use
        self._chunk_ranges = kernels.chunk_source_ranges(sptr, source, order, chunk_ptr)
        widest = widest_step(chain)
        self._scratch = thread_rows(widest)

    def recommend(self, state, out, accumulate=None):
        parts = numba.get_num_threads()
        k = self.kernel
        a, b, _ = k.arrays(state)
        total, w = accumulation(accumulate, len(out), SUM_DTYPES)
        kernels.chain_recommend_parallel(*self._static, k.family, k.eta, a, b, out, total, w, parts)
        return out

    def observe(self, state, work):
        """``work``: contiguous float64 loss, overwritten (the donated work space)."""
        parts = numba.get_num_threads()
        k = self.kernel
        a, b, t = k.arrays(state)
        bounds = self._bounds.get(parts)
        if bounds is None:
            bounds = self._bounds[parts] = kernels.scatter_bounds(*self._histograms, parts)
        kernels.chain_observe_parallel(
            *self._static,
            bounds,
            *self._chunk_ranges,
            k.family,
            k.plus,
            k.alpha,
            k.beta,
            k.eta,
            a,
            b,
            t,
            work,
            self._scratch,
            parts,
        )
        return state


class ChainEngine:
    """A regret minimizer over ``chain`` together with its state (points and losses in the
    chain's entry order).

    Parameters
    ----------
    chain : Chain
    rule : LocalRule or str, optional
        Runs :func:`solvers.algebra.chain_minimizer` ``(chain, rule)``.
    minimizer : RegretMinimizer, optional
        Any regret minimizer over the chain's entries instead (``dim == chain.num_entries``).

    Raises
    ------
    ValueError
        Neither or both of ``rule`` and ``minimizer``, or a minimizer of the wrong dimension.
    """

    def __init__(
        self, chain: Chain, rule: LocalRule | str | None = None, *, minimizer: RegretMinimizer | None = None
    ):
        if (rule is None) == (minimizer is None):
            raise ValueError("ChainEngine needs exactly one of a local rule and a minimizer")
        if minimizer is None:
            minimizer = chain_minimizer(chain, rule)
        elif not isinstance(minimizer, RegretMinimizer):
            raise TypeError(
                f"minimizer must implement solvers.protocol.RegretMinimizer (dim, init, "
                f"recommend, observe), got {type(minimizer).__name__}"
            )
        if minimizer.dim != chain.num_entries:
            raise ValueError(
                f"the minimizer works in R^{minimizer.dim} but the chain has {chain.num_entries} entries"
            )
        self.chain = chain
        self._n = chain.num_entries
        self.minimizer = minimizer
        self.state = minimizer.init()
        parameters = inspect.signature(minimizer.recommend).parameters
        self._writes_into_out = "out" in parameters
        self._fuses_accumulation = "accumulate" in parameters
        self._work: np.ndarray | None = None  # loss work space, allocated on first use
        self._t = 0
        # The compiled chain passes of a big chain run on every thread numba is given.
        self._parallel = (
            ParallelChainPasses(minimizer)
            if getattr(minimizer, "backend", None) == "compiled"
            and hasattr(minimizer, "_recommend_args")
            and self._n >= PARALLEL_MIN_ENTRIES
            else None
        )
        #: dtype of the running sum a solver loop may hand :meth:`recommend` (``accumulate``):
        #: float32 on the chains whose rule state is float32 when the compiled passes run them
        #: (the pass adds ``w · x`` computed in float64 and rounds the sum), float64 otherwise.
        self.sum_dtype = state_dtype(self._n) if self._parallel is not None else np.float64

    @property
    def iterations(self) -> int:
        """Number of observed losses."""
        return self._t

    def recommend(
        self, out: np.ndarray | None = None, accumulate: tuple[np.ndarray, float] | None = None
    ) -> np.ndarray:
        """The current point: a new array, or written into ``out`` (float64, entry order).
        ``accumulate=(total, w)`` also adds ``w`` times the point into ``total`` — in the same
        pass when the chain runs compiled (a running average costs no second sweep)."""
        if self._parallel is not None and out is not None and _usable_work(out, self._n):
            return self._parallel.recommend(self.state, out, accumulate)
        if self._fuses_accumulation:
            return self.minimizer.recommend(self.state, out=out, accumulate=accumulate)
        if self._writes_into_out:
            x = self.minimizer.recommend(self.state, out=out)
        else:
            x = self.minimizer.recommend(self.state)
            if out is not None:
                out[:] = x
                x = out
        if accumulate is not None:
            total, w = accumulation(accumulate, self._n)
            total += w * x
        return x

    def observe(self, loss: np.ndarray, overwrite: bool = False) -> None:
        """Observe the loss of the last recommendation.  ``loss`` is left untouched unless
        ``overwrite=True``: then a contiguous float64 ``loss`` is used as the work space of the
        bottom-up pass (no copy) and holds garbage afterwards."""
        if overwrite:
            work = loss  # the minimizer copies it if it cannot serve as work space
        else:
            loss = np.asarray(loss)
            if loss.shape != (self._n,):
                raise ValueError(f"loss has shape {loss.shape}, expected ({self._n},)")
            if self._work is None:
                self._work = np.empty(self._n)
            work = self._work
            np.copyto(work, loss)
        if self._parallel is not None and _usable_work(work, self._n):
            self.state = self._parallel.observe(self.state, work)
        else:
            self.state = self.minimizer.observe(self.state, work, donate=True)
        self._t += 1


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


def available_threads() -> int:
    """The most threads the compiled passes can use: numba's pool (``NUMBA_NUM_THREADS``, by
    default every core)."""
    return int(numba.config.NUMBA_NUM_THREADS)


@contextmanager
def thread_count(threads: int | None):
    """Run the compiled passes inside on ``threads`` threads (``None``: leave numba's setting,
    all cores unless changed), restoring the previous count afterwards.

    Raises
    ------
    ValueError
        ``threads`` is not an integer from 1 to :func:`available_threads`.
    """
    if threads is None:
        yield numba.get_num_threads()
        return
    most = available_threads()
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or not 1 <= threads <= most:
        raise ValueError(
            f"threads must be an integer from 1 to {most} (the cores numba may use), got {threads!r}"
        )
    before = numba.get_num_threads()
    numba.set_num_threads(int(threads))
    try:
        yield int(threads)
    finally:
        numba.set_num_threads(before)


def on_threads(solver):
    """Give ``solver`` the keyword ``threads`` (see :func:`thread_count`)."""

    @functools.wraps(solver)
    def run(*args, threads: int | None = None, **kwargs):
        with thread_count(threads):
            return solver(*args, **kwargs)

    return run


def _usable_work(work, n: int) -> bool:
    return (
        type(work) is np.ndarray
        and work.dtype == np.float64
        and work.shape == (n,)
        and work.flags.c_contiguous
        and work.flags.writeable
    )


def minimizer_factory(
    rule: LocalRule | str | None, minimizer: MinimizerFactory | None, default_rule: LocalRule
) -> MinimizerFactory:
    """The function ``chain -> RegretMinimizer`` a solver builds the minimizers of its chains
    with, from its options: ``minimizer`` itself, else :func:`solvers.algebra.chain_minimizer`
    with ``rule`` (``default_rule`` when ``None``).  Call it before any expensive work: it is the
    options' validation.

    Raises
    ------
    ValueError
        Both ``rule`` and ``minimizer`` are given, or ``rule`` names no rule.
    TypeError
        ``rule`` is not a local rule or ``minimizer`` is not callable.
    """
    if rule is not None and minimizer is not None:
        raise ValueError(
            "give either rule= (a local rule for every simplex) or minimizer= (a "
            "function chain -> regret minimizer), not both"
        )
    if minimizer is not None:
        if not callable(minimizer):
            raise TypeError(
                f"minimizer= must be a function chain -> regret minimizer, e.g. "
                f"lambda chain: chain_minimizer(chain, rule); got {type(minimizer).__name__}"
            )
        return minimizer
    local = as_rule(default_rule if rule is None else rule)
    return lambda chain: chain_minimizer(chain, local)


def chain_minimum(chain: Chain, loss: np.ndarray, *, donate: bool = False) -> float:
    """``min_{x ∈ chain} ⟨loss, x⟩`` (entry order), by the split of section 3.2 applied
    bottom-up: a simplex step contributes its smallest accumulated loss to its sources.  With
    ``donate``, a float64 ``loss`` is overwritten instead of copied."""
    return chain_linear_minimum(chain, loss, vertex=False, donate=donate)[0]
