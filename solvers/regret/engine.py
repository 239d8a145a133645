"""The solvers' driver of a chain regret minimizer, and the chain's linear minimization oracle.

The regret minimizer of a chain ``{1} ◁h1 X1 ◁h2 … ◁hn Xn`` is
:func:`efce.solvers.regret.algebra.chain_minimizer`: Algorithm 1 of Farina, Ling, Fang, Sandholm 2019 unrolled
into two flat passes (section 3.2), which a compute backend runs with the local rule fused in
(:mod:`efce.solvers.backends`; cost per iteration linear in the number of entries plus sources)
and numpy runs for any other rule.  :class:`ChainEngine` holds one minimizer's state for a solver
loop and donates it at every observation, so an iteration copies no state; :func:`minimizer_factory`
turns a solver's ``rule=`` / ``minimizer=`` options into the minimizers of its chains.
"""

from __future__ import annotations

import inspect
from typing import Protocol, cast

import numpy as np

from efce.polytopes.chain import Chain
from efce.solvers.backends import ChainPasses, ComputeBackend, get_backend

from .algebra import ChainMinimizer, accumulation, chain_linear_minimum, chain_minimizer
from .local import Kernel, LocalRule, as_rule
from .protocol import MinimizerFactory, RegretMinimizer, State


class _RecommendsInto(Protocol):
    """A minimizer's ``recommend`` that also writes into ``out`` (the chain minimizer's)."""

    def __call__(self, state: State, out: np.ndarray | None = None) -> np.ndarray: ...


class _RecommendsAccumulating(Protocol):
    """A minimizer's ``recommend`` that also writes into ``out`` and adds into a running sum."""

    def __call__(
        self, state: State, out: np.ndarray | None = None, accumulate: tuple[np.ndarray, float] | None = None
    ) -> np.ndarray: ...


class ChainEngine:
    """A regret minimizer over ``chain`` together with its state (points and losses in the
    chain's entry order).

    Parameters
    ----------
    chain : Chain
    rule : LocalRule or str, optional
        Runs :func:`efce.solvers.regret.algebra.chain_minimizer` ``(chain, rule, backend=backend)``.
    minimizer : RegretMinimizer, optional
        Any regret minimizer over the chain's entries instead (``dim == chain.num_entries``).
    backend : ComputeBackend or str, optional
        Where a ``rule``'s passes run (default: the CPU on every thread numba may use); a
        ``minimizer`` brings its own.

    Raises
    ------
    ValueError
        Neither or both of ``rule`` and ``minimizer``, or a minimizer of the wrong dimension.
    """

    def __init__(
        self,
        chain: Chain,
        rule: LocalRule | str | None = None,
        *,
        minimizer: RegretMinimizer | None = None,
        backend: ComputeBackend | str | None = None,
    ):
        if (rule is None) == (minimizer is None):
            raise ValueError("ChainEngine needs exactly one of a local rule and a minimizer")
        if minimizer is None:
            assert rule is not None  # exactly one of the two, checked above
            minimizer = chain_minimizer(chain, rule, backend="auto" if backend is None else backend)
        elif not isinstance(minimizer, RegretMinimizer):
            raise TypeError(
                f"minimizer must implement solvers.regret.protocol.RegretMinimizer (dim, init, "
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
        # The extra keywords of this minimizer's recommend, read from its signature (optional
        # parts of the protocol): the casts below record what the signature showed.
        parameters = inspect.signature(minimizer.recommend).parameters
        self._recommend_accumulating = (
            cast(_RecommendsAccumulating, minimizer.recommend) if "accumulate" in parameters else None
        )
        self._recommend_into = cast(_RecommendsInto, minimizer.recommend) if "out" in parameters else None
        self._work: np.ndarray | None = None  # loss work space, allocated on first use
        self._t = 0
        # A chain minimizer running a compute backend's passes: the engine calls them directly.
        self._passes: ChainPasses | None = None
        self._kernel: Kernel | None = None
        #: The compute backend of the engine's arrays (the minimizer's; the CPU for the others).
        self.backend: ComputeBackend
        #: dtype of the running sum a solver loop may hand :meth:`recommend` (``accumulate``):
        #: the passes' (float32 on the big chains whose rule state is float32: the pass adds
        #: ``w · x`` computed in float64 and rounds the sum), float64 otherwise.
        self.sum_dtype: type
        if isinstance(minimizer, ChainMinimizer) and minimizer.backend is not None:  # compiled
            self._passes = minimizer._passes
            self._kernel = minimizer.kernel
            self.backend = minimizer.backend
            self.sum_dtype = self._passes.sum_dtype
        else:
            self.backend = get_backend()
            self.sum_dtype = np.float64

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
        passes, kernel = self._passes, self._kernel
        if passes is not None and kernel is not None and out is not None and _usable_work(out, self._n):
            a, b, _ = kernel.arrays(self.state)
            total, w = accumulation(accumulate, self._n, passes.sum_dtypes)
            passes.recommend(a, b, out, total, w)
            return out
        if self._recommend_accumulating is not None:
            return self._recommend_accumulating(self.state, out=out, accumulate=accumulate)
        if self._recommend_into is not None:
            x = self._recommend_into(self.state, out=out)
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
        if self._passes is not None and self._kernel is not None and _usable_work(work, self._n):
            a, b, t = self._kernel.arrays(self.state)
            self._passes.observe(a, b, t, work)
        else:
            self.state = self.minimizer.observe(self.state, work, donate=True)
        self._t += 1


def _usable_work(work, n: int) -> bool:
    return (
        type(work) is np.ndarray
        and work.dtype == np.float64
        and work.shape == (n,)
        and work.flags.c_contiguous
        and work.flags.writeable
    )


def minimizer_factory(
    rule: LocalRule | str | None,
    minimizer: MinimizerFactory | None,
    default_rule: LocalRule,
    backend: ComputeBackend | None = None,
) -> MinimizerFactory:
    """The function ``chain -> RegretMinimizer`` a solver builds the minimizers of its chains
    with, from its options: ``minimizer`` itself, else :func:`efce.solvers.regret.algebra.chain_minimizer`
    with ``rule`` (``default_rule`` when ``None``) on ``backend`` (default: the CPU on every
    thread numba may use; a rule without compiled kernel runs the numpy passes).  Call it before
    any expensive work: it is the options' validation.

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
    return RuleMinimizers(local, "auto" if backend is None or local.kernel() is None else backend)


class RuleMinimizers:
    """The :data:`~.protocol.MinimizerFactory` of a local rule: ``factory(chain)`` is
    :func:`efce.solvers.regret.algebra.chain_minimizer` ``(chain, rule, backend=backend)``.  A
    solver may read the rule and the backend from it to run a fused form of a chain minimizer
    (the EFCE saddle point's deviator, :func:`efce.solvers.methods.efce.saddle_point_play`)."""

    def __init__(self, rule: LocalRule, backend: ComputeBackend | str):
        self.rule, self.backend = rule, backend

    def __call__(self, chain: Chain) -> ChainMinimizer:
        return chain_minimizer(chain, self.rule, backend=self.backend)

    def compiled_backend(self) -> ComputeBackend | None:
        """The compute backend the rule's kernel runs on, or None (a rule without a kernel runs
        the numpy passes)."""
        if self.rule.kernel() is None or self.backend == "numpy":
            return None
        return get_backend(None if self.backend in ("auto", "compiled") else self.backend)


def chain_minimum(
    chain: Chain, loss: np.ndarray, *, donate: bool = False, backend: ComputeBackend | None = None
) -> float:
    """``min_{x ∈ chain} ⟨loss, x⟩`` (entry order), by the split of section 3.2 applied
    bottom-up: a simplex step contributes its smallest accumulated loss to its sources.  With
    ``donate``, a float64 ``loss`` is overwritten instead of copied.  Runs on ``backend``
    (default: the CPU)."""
    return chain_linear_minimum(chain, loss, vertex=False, donate=donate, backend=backend)[0]
