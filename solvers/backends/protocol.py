"""What a compute backend implements: the interface the solvers' iteration loops call.

A backend owns the arrays and the kernels of a loop; the solvers hold only its objects.  Arrays
a backend makes (:meth:`ComputeBackend.empty`, :meth:`~ComputeBackend.zeros`,
:meth:`~ComputeBackend.to_device`) may live on a device: a loop hands them back to the same
backend's methods and reads them on the host only through :meth:`~ComputeBackend.to_host`.  Per
checkpoint only scalars come back (a chain minimum, violations, a welfare).  Whatever a backend
prepares from a structure — a chain's passes, the payoff operator's products, the gap sweeps —
it prepares once (:meth:`~ComputeBackend.chain_passes`, :meth:`~ComputeBackend.payoff_products`,
:meth:`~ComputeBackend.gap_sweeps`), so a device copy is made once per run.

Shapes and dtypes (``n`` a chain's entries): points, losses and work arrays float64; a rule's
state the dtypes of :func:`efce.solvers.regret.local.state_dtype` /
:func:`~efce.solvers.regret.local.prediction_dtype`; a running sum float64 or float32
(:attr:`ChainPasses.sum_dtype`).  Sign convention: minimizers observe losses
(:mod:`efce.solvers.regret.protocol`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:  # annotations only
    from efce.polytopes.chain import Chain
    from efce.solvers.backends.cpu import CPUBackend
    from efce.solvers.evaluation.payoff_operator import PayoffOperator, TriggerTables
    from efce.solvers.regret.local import Kernel

#: An array of a backend: a numpy array on the CPU, a device array elsewhere.
Array = Any

#: The families of local rules a backend's chain passes run (:class:`efce.solvers.regret.local.Kernel`):
#: regret matching (RM, RM+, DCFR discounting), Hedge, predictive RM+ (bfloat16 predictions on
#: big chains).  Every backend implements the same arithmetic (:mod:`efce.solvers.backends.cpu.rules`).
RM, HEDGE, PRM_PLUS = 0, 1, 2


class ChainPasses(Protocol):
    """The two passes of Algorithm 1 over one chain (Farina, Ling, Fang, Sandholm 2019, section
    3.2), with one rule's kernel (:class:`efce.solvers.regret.local.Kernel`) fused in: what a
    :class:`efce.solvers.regret.algebra.ChainMinimizer` runs.  ``a``, ``b``, ``t`` are the rule's
    state arrays (:meth:`efce.solvers.regret.local.Kernel.arrays`)."""

    #: dtype of the running sum a loop keeps for this chain (:meth:`recommend`'s ``total``).
    sum_dtype: type
    #: dtypes :meth:`recommend` accepts for ``total``.
    sum_dtypes: tuple

    def recommend(self, a: Array, b: Array, x: Array, total: Array, w: float) -> None:
        """RECOMMEND into ``x`` (float64, entry order); with a non-empty ``total``, also
        ``total += w · x`` in the same pass."""

    def observe(self, a: Array, b: Array, t: Array, loss: Array) -> None:
        """OBSERVELOSS of ``loss`` (float64, entry order; overwritten with the accumulated
        loss ``ℓ̃``), updating the state in place."""


class OperatorProducts(Protocol):
    """The products of the EFCE payoff operator ``A``
    (:class:`efce.solvers.evaluation.payoff_operator.PayoffOperator`) with a vector.  The
    operator's welfare threshold ``τ`` is read at every call (a bisection moves it)."""

    def matvec(self, y: Array, out: Array) -> Array:
        """``out = A y`` (``out``: one slot per Ξ entry); returns ``out``."""

    def rmatvec(self, x: Array, out: Array, sign: float = 1.0) -> Array:
        """``out = sign · Aᵀ x`` (``out``: one slot per Y entry); returns ``out``."""


class GapSweeps(Protocol):
    """The sweeps of the EFCE gap evaluator over one game's trigger tables
    (:class:`efce.solvers.evaluation.gaps.EFCEGapEvaluator`)."""

    def gains(self, values: Array) -> tuple[list[np.ndarray], np.ndarray]:
        """Every trigger agent's gain against ``ξ = values`` (the tables' order), per player
        (host arrays, NaN for the empty sequence), and the players' utilities."""

    def welfare(self, values: Array) -> float:
        """``Σ_z p_c(z) (u_1 + u_2)(z) ξ[σ(z)]`` for ``ξ = values``."""


@runtime_checkable
class ComputeBackend(Protocol):
    """A compute backend: its arrays, and every kernel the EFCE saddle-point loop (``rm``) and
    its checkpoints run.  ``cpu`` (:class:`efce.solvers.backends.cpu.CPUBackend`) implements
    this and more (the kernels of CFR's exploitability, of the trigger-regret dynamics, of the
    n-player device gaps and of the Definition-3 check, which run on the CPU only)."""

    #: The registry name (``"cpu"``, ``"cuda"``).
    name: str

    # ------------------------------------------------------------------ arrays
    def empty(self, n: int, dtype: type = np.float64) -> Array:
        """An uninitialized array of ``n`` values."""

    def zeros(self, n: int, dtype: type = np.float64) -> Array:
        """An array of ``n`` zeros."""

    def to_device(self, array: np.ndarray) -> Array:
        """A host array as this backend's (the same array on the CPU)."""

    def to_host(self, array: Array) -> np.ndarray:
        """This backend's array as a numpy array (the same array on the CPU)."""

    # ------------------------------------------------------------------ chains
    def chain_passes(self, chain: Chain, kernel: Kernel) -> ChainPasses:
        """The passes of a chain's regret minimizer running the rule ``kernel``."""

    def chain_minimum(self, chain: Chain, loss: Array) -> float:
        """``min_{x ∈ chain} ⟨loss, x⟩`` (section 3.2 applied bottom-up); ``loss`` (float64,
        entry order) is overwritten."""

    def chain_violations(
        self, chain: Chain, arrays: Sequence[Array], scales: Sequence[float] | np.ndarray
    ) -> tuple:
        """The largest violation of the chain's own constraints by each point ``scales[r] ·
        arrays[r]`` (:meth:`efce.polytopes.chain.Chain.violations`), as floats."""

    def rescaled_point(self, chain: Chain, values: Array) -> np.ndarray:
        """The float64 chain point whose local strategies are the normalized blocks of
        ``values`` (:meth:`efce.polytopes.chain.Chain.rescaled_point`), on the host."""

    # ------------------------------------------------------------------ payoff operator, gaps
    def payoff_products(self, operator: PayoffOperator) -> OperatorProducts:
        """The products of ``operator`` on this backend."""

    def gap_sweeps(self, tables: TriggerTables) -> GapSweeps:
        """The gap evaluator's sweeps over ``tables``."""


def cpu_backend(backend: str | ComputeBackend | None = None) -> CPUBackend:
    """The CPU backend for a CPU-only kernel family (best responses, the Definition-3 check, the
    n-player device gaps, a chain's minimizing vertex): ``backend`` itself, or a new one by name
    (default ``"cpu"``), as :func:`efce.solvers.backends.get_backend` gives it.

    Returns
    -------
    CPUBackend
        The backend, checked to be the CPU's (those kernels exist on no other backend).

    Raises
    ------
    OptionError
        ``backend`` names or is another backend, or an unknown one.
    """
    # Imported on use: the registry imports this module, and the CPU backend is its first entry.
    from efce.errors import OptionError
    from efce.solvers.backends import get_backend
    from efce.solvers.backends.cpu import CPUBackend

    resolved = get_backend(backend)
    if not isinstance(resolved, CPUBackend):
        raise OptionError(f"this computation runs on the CPU backend only, got backend {resolved.name!r}")
    return resolved


__all__ = [
    "HEDGE",
    "PRM_PLUS",
    "RM",
    "Array",
    "ChainPasses",
    "ComputeBackend",
    "GapSweeps",
    "OperatorProducts",
    "cpu_backend",
]
