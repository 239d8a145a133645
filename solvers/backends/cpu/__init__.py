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

from .backend import CPUBackend

__all__ = ["CPUBackend"]
