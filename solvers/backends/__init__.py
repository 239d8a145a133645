"""The compute-backend layer: every kernel of the solvers' iteration loops and their checkpoints,
behind one small interface.

The solvers never call numba (or a GPU library) themselves.  They hold a *backend* object
(:class:`~efce.solvers.backends.protocol.ComputeBackend`) and ask it for what their loops run:

* the passes of a chain's regret minimizer with the local rule fused in (Algorithm 1 of Farina,
  Ling, Fang, Sandholm 2019 unrolled into RECOMMEND / OBSERVELOSS,
  :meth:`~efce.solvers.backends.protocol.ComputeBackend.chain_passes`), which
  :class:`~efce.solvers.regret.algebra.ChainMinimizer` and
  :class:`~efce.solvers.regret.engine.ChainEngine` run for CFR/CFR+ and the EFCE saddle point;
* the products of the EFCE payoff operator ``A y`` / ``Aᵀ x``
  (:meth:`~efce.solvers.backends.protocol.ComputeBackend.payoff_products`);
* the checkpoint sweeps: the chain minimum (the saddle-point gap), the chain violations of the
  iterates, the trigger gains and welfare of a plan, the rescaled plan;
* allocation and transfer of the loop's arrays (:meth:`~.protocol.ComputeBackend.empty`,
  :meth:`~.protocol.ComputeBackend.to_host`, ...), so that on a device they stay resident and
  only scalars come back per checkpoint.

Backends, by name (:func:`get_backend`):

* ``cpu`` (:class:`efce.solvers.backends.cpu.CPUBackend`, the default) — numba kernels in
  :mod:`efce.solvers.backends.cpu`, several modules by job, one definition per kernel (the serial
  and the parallel forms share their step bodies).  The thread count is the backend's
  ``threads``, set around each parallel kernel; nothing else in the toolkit reads or sets numba's
  thread count.  Iterates and reports are bit-identical on every thread count.  It also runs the
  CPU-only families: local rules on segments, best responses, the trigger-regret dynamics, the
  n-player device gaps, the Definition-3 check.
* ``cuda`` (:class:`efce.solvers.backends.cuda.backend.CUDABackend`; optional extra
  ``efce-toolkit[cuda]``, numba-cuda) — ``rm``'s whole loop resident on the GPU (its
  ``saddle_point``), deterministic run to run, not bitwise equal to the CPU (one-ulp
  differences flip regret-matching ties).  Creating it refuses, in one line, a machine where it
  cannot run (numba-cuda missing, no CUDA driver or GPU); under numba-cuda's simulator
  (``NUMBA_ENABLE_CUDASIM=1``, set by the user or the tests, never by the toolkit) it runs the
  same kernels as Python on the CPU.

A new backend implements :class:`~efce.solvers.backends.protocol.ComputeBackend` and registers a
factory with :func:`register_backend` (or an entry ``"module:attribute"`` imported on first use,
so that an optional dependency is loaded only when the backend is asked for).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from efce.errors import OptionError

from .protocol import HEDGE, PRM_PLUS, RM, Array, ChainPasses, ComputeBackend, GapSweeps, OperatorProducts

if TYPE_CHECKING:
    from efce.games.game import Game

#: Backend factories by name: ``factory()`` returns a backend with its default thread count,
#: ``factory(threads=n)`` one on ``n`` threads; or a string ``"module:attribute"`` naming a
#: factory, imported on first use.
BACKENDS: dict[str, Callable[..., ComputeBackend] | str] = {
    "cpu": "efce.solvers.backends.cpu:CPUBackend",
    "cuda": "efce.solvers.backends.cuda:CUDABackend",
}


def register_backend(name: str, factory: Callable[..., ComputeBackend] | str) -> None:
    """Make ``get_backend(name)`` build ``factory()`` / ``factory(threads=n)`` (a callable, or
    ``"module:attribute"`` imported on first use)."""
    BACKENDS[name] = factory


def get_backend(backend: str | ComputeBackend | None = None, *, threads: int | None = None) -> ComputeBackend:
    """The backend a solver runs on: ``backend`` itself when it is a backend object, else a new
    one of that name (default ``"cpu"``) with ``threads`` threads (default: all numba may use
    unless changed, see :class:`~efce.solvers.backends.cpu.CPUBackend`).

    Raises
    ------
    OptionError
        An unknown name, a backend whose module cannot be imported (an optional dependency
        missing), a backend object together with ``threads``, or a bad thread count.
    """
    if backend is not None and not isinstance(backend, str):
        if threads is not None:
            raise OptionError("give threads= or a backend object (which has its own threads), not both")
        return backend
    name = "cpu" if backend is None else backend
    factory = BACKENDS.get(name)
    if factory is None:
        raise OptionError(f"unknown compute backend {name!r}; valid: {', '.join(BACKENDS)}")
    if isinstance(factory, str):
        module, attribute = factory.split(":")
        try:
            factory = getattr(importlib.import_module(module), attribute)
        except ImportError as error:  # an optional dependency is missing
            raise OptionError(f"compute backend {name!r} is not available: {error}") from None
        BACKENDS[name] = factory
    return factory() if threads is None else factory(threads=threads)


def available_threads() -> int:
    """The most threads the CPU backend can use (numba's pool, ``NUMBA_NUM_THREADS``: by default
    every core)."""
    from .cpu.jit import available_threads as most

    return most()


def estimate_gpu_bytes(game: Game) -> int:
    """The GPU memory of ``rm``'s run with ``backend="cuda"`` in its default configuration,
    counted from ``game`` without building anything (the estimate that refuses a run over the
    GPU's free memory; :func:`~efce.solvers.backends.cuda.layouts.estimate_cuda_bytes`).  Needs
    no numba-cuda.

    Returns
    -------
    int
        Bytes.
    """
    from .cuda.layouts import estimate_cuda_bytes

    return estimate_cuda_bytes(game)


def cuda_simulator_enabled() -> bool:
    """Whether the ``cuda`` backend would run numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``
    set by the user or the tests; the toolkit never sets it) rather than a GPU
    (:func:`~efce.solvers.backends.cuda.backend.simulator_enabled`)."""
    from .cuda.backend import simulator_enabled

    return simulator_enabled()


__all__ = [
    "BACKENDS",
    "HEDGE",
    "PRM_PLUS",
    "RM",
    "Array",
    "ChainPasses",
    "ComputeBackend",
    "GapSweeps",
    "OperatorProducts",
    "available_threads",
    "cuda_simulator_enabled",
    "estimate_gpu_bytes",
    "get_backend",
    "register_backend",
]
