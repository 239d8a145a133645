"""The CPU backend: numba kernels by job, run on a given number of threads.

* :mod:`.rules` — the local rules' arithmetic (RM/RM+/DCFR, Hedge, PRM+ with bfloat16
  predictions) and the rules on segments;
* :mod:`.chain_passes` — a chain's RECOMMEND / OBSERVELOSS passes with a rule fused in, serial and
  parallel, and the chain's linear minimization oracle;
* :mod:`.operator` — the payoff operator's products ``A y`` and ``Aᵀ x``, serial and parallel;
* :mod:`.gaps` — the gap sweeps: trigger gains, subtree sums, best responses, welfare;
* :mod:`.feasibility` — chain violations, the rescaled chain point, the Definition-3 check;
* :mod:`.trigger`, :mod:`.device` — the trigger-regret dynamics and the n-player device gaps;
* :mod:`.jit` — how the kernels are compiled and cached, and run on a number of threads;
* :mod:`.backend` — :class:`CPUBackend`, the object the solvers hold.
"""

from __future__ import annotations

from efce.errors import OptionError

from .. import ComputeBackend, get_backend
from .backend import CPUBackend


def cpu_backend(backend: str | ComputeBackend | None = None) -> CPUBackend:
    """The CPU backend for a CPU-only kernel family (best responses, the Definition-3 check, the
    n-player device gaps): ``backend`` itself, or a new one by name (default ``"cpu"``), as
    :func:`efce.solvers.backends.get_backend` gives it.

    Returns
    -------
    CPUBackend
        The backend, checked to be the CPU's (those kernels exist on no other backend).

    Raises
    ------
    OptionError
        ``backend`` names or is another backend, or an unknown one.
    """
    resolved = get_backend(backend)
    if not isinstance(resolved, CPUBackend):
        raise OptionError(f"this computation runs on the CPU backend only, got backend {resolved.name!r}")
    return resolved


__all__ = ["CPUBackend", "cpu_backend"]
