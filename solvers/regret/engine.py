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

import inspect

import numpy as np

from efce.polytopes.chain import Chain

from efce.solvers.regret.algebra import chain_linear_minimum, chain_minimizer
from efce.solvers.regret.local import LocalRule, as_rule
from efce.solvers.regret.protocol import MinimizerFactory, RegretMinimizer


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

    def __init__(self, chain: Chain, rule: LocalRule | str | None = None, *,
                 minimizer: RegretMinimizer | None = None):
        if (rule is None) == (minimizer is None):
            raise ValueError("ChainEngine needs exactly one of a local rule and a minimizer")
        if minimizer is None:
            minimizer = chain_minimizer(chain, rule)
        elif not isinstance(minimizer, RegretMinimizer):
            raise TypeError(f"minimizer must implement solvers.protocol.RegretMinimizer (dim, init, "
                            f"recommend, observe), got {type(minimizer).__name__}")
        if minimizer.dim != chain.num_entries:
            raise ValueError(f"the minimizer works in R^{minimizer.dim} but the chain has "
                             f"{chain.num_entries} entries")
        self.chain = chain
        self._n = chain.num_entries
        self.minimizer = minimizer
        self.state = minimizer.init()
        self._writes_into_out = "out" in inspect.signature(minimizer.recommend).parameters
        self._work: np.ndarray | None = None  # loss work space, allocated on first use
        self._t = 0

    @property
    def iterations(self) -> int:
        """Number of observed losses."""
        return self._t

    def recommend(self, out: np.ndarray | None = None) -> np.ndarray:
        """The current point: a new array, or written into ``out`` (float64, entry order)."""
        if self._writes_into_out:
            return self.minimizer.recommend(self.state, out=out)
        x = self.minimizer.recommend(self.state)
        if out is None:
            return x
        out[:] = x
        return out

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
        self.state = self.minimizer.observe(self.state, work, donate=True)
        self._t += 1


def minimizer_factory(rule: LocalRule | str | None, minimizer: MinimizerFactory | None,
                      default_rule: LocalRule) -> MinimizerFactory:
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
        raise ValueError("give either rule= (a local rule for every simplex) or minimizer= (a "
                         "function chain -> regret minimizer), not both")
    if minimizer is not None:
        if not callable(minimizer):
            raise TypeError(f"minimizer= must be a function chain -> regret minimizer, e.g. "
                            f"lambda chain: chain_minimizer(chain, rule); got {type(minimizer).__name__}")
        return minimizer
    local = as_rule(default_rule if rule is None else rule)
    return lambda chain: chain_minimizer(chain, local)


def chain_minimum(chain: Chain, loss: np.ndarray) -> float:
    """``min_{x ∈ chain} ⟨loss, x⟩`` (entry order), by the split of section 3.2 applied
    bottom-up: a simplex step contributes its smallest accumulated loss to its sources."""
    return chain_linear_minimum(chain, loss, vertex=False)[0]
