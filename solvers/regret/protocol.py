"""The regret-minimizer protocol every minimizer of :mod:`solvers` implements.

A *regret minimizer* over a compact convex set ``Z ⊂ R^n`` plays the online game of Farina,
Ling, Fang, Sandholm 2019, section 2.3: at every round it RECOMMENDs a point ``z_t ∈ Z`` and then
OBSERVEs the loss vector ``ℓ_t`` of that round; its cumulative regret is

    ``R^T = Σ_t ⟨ℓ_t, z_t⟩ − min_{z ∈ Z} Σ_t ⟨ℓ_t, z⟩``.

**Sign convention:** minimizers observe **losses**.  A player who maximizes a utility ``u``
feeds ``−u`` (the EFCE solver's correlator observes ``A y``, its deviator ``−Aᵀ x``).

Minimizers are immutable objects; everything that changes lives in an explicit *state*, a pytree
(dicts and tuples) of numpy arrays, as in optax:

* ``dim`` — ``n``;
* ``init() -> state``;
* ``recommend(state) -> point`` — a new array in ``Z``; never modifies ``state``;
* ``observe(state, loss, *, donate=False) -> state`` — the state after observing ``loss``, the
  loss of the last recommendation of ``state``.  **Purity:** the caller's ``state`` and ``loss``
  are left untouched.  **Donation** (like JAX's ``donate_argnums``): with ``donate=True`` the
  caller hands both over — the minimizer may update the state's arrays and overwrite ``loss`` in
  place, and the caller must use neither afterwards, only the returned state.  This is what the
  solvers' loops do: at 10^8 entries a copy of the state per iteration is not affordable;
* ``minimize(loss) -> (value, point)`` — where the set has one, the exact linear minimization
  oracle ``min_{z ∈ Z} ⟨loss, z⟩`` and a minimizer (it gives regrets exactly,
  :func:`solvers.regret.algebra.regret`) — see :class:`LinearOracle`.

Local rules on simplexes (:class:`solvers.regret.local.LocalRule`) have the per-segment form
``recommend(state, seg)`` / ``observe(state, loss, seg)`` instead: they are the building block
that :func:`solvers.regret.algebra.simplex` and :func:`solvers.regret.algebra.chain_minimizer` turn into
regret minimizers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from efce.polytopes.chain import Chain

#: A minimizer's state: a pytree (dicts, tuples) of numpy arrays.
State = Any


@runtime_checkable
class RegretMinimizer(Protocol):
    """A regret minimizer over a set in ``R^dim`` (see the module docstring for the contract)."""

    @property
    def dim(self) -> int: ...

    def init(self) -> State: ...

    def recommend(self, state: State) -> np.ndarray: ...

    def observe(self, state: State, loss: np.ndarray, *, donate: bool = False) -> State: ...


@runtime_checkable
class LinearOracle(Protocol):
    """A set with an exact linear minimization oracle."""

    def minimize(self, loss: np.ndarray) -> tuple[float, np.ndarray]: ...


#: What the solvers accept as ``minimizer=``: builds the regret minimizer of a chain (points in
#: the chain's entry order).
MinimizerFactory = Callable[[Chain], RegretMinimizer]


def copy_state(state: State) -> State:
    """A deep copy of a state pytree (arrays copied, containers rebuilt, immutable leaves
    shared)."""
    if isinstance(state, np.ndarray):
        return state.copy()
    if isinstance(state, dict):
        return {key: copy_state(value) for key, value in state.items()}
    if isinstance(state, (tuple, list)):
        return type(state)(copy_state(value) for value in state)
    if state is None or isinstance(state, (bool, int, float, complex, str, bytes, np.generic)):
        return state  # immutable
    raise TypeError(
        f"a regret-minimizer state holds numpy arrays, dicts and tuples, not {type(state).__name__}"
    )


__all__ = ["LinearOracle", "MinimizerFactory", "RegretMinimizer", "State", "copy_state"]
