"""The CUDA backend object: the checks that refuse it up front, and the device-resident rm loop.

:class:`CUDABackend` is what ``get_backend("cuda")`` returns.  Unlike the CPU backend it does not
hand the solvers one kernel at a time: the whole iteration of ``rm`` and its checkpoints stay on
the GPU (:meth:`CUDABackend.saddle_point`, a :class:`~.saddle.CudaSaddlePoint`), which
:func:`efce.solvers.methods.efce.solve_efce` drives under the same driver, trace and statuses as
its CPU loop.  What runs on the host — the model's builders, the layouts, the final report by the
CPU evaluator, the Definition-3 check of the plan — runs on :attr:`CUDABackend.host`, a CPU
backend of ``threads`` threads.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

import numpy as np

from efce.errors import MemoryBudgetExceeded, OptionError
from efce.games.resources.memory import gib
from efce.solvers.backends.cpu import CPUBackend
from efce.solvers.backends.cpu.jit import default_threads, run_on_threads

from .layouts import BLOCK_SIZE, DeviceArray, estimate_cuda_bytes

if TYPE_CHECKING:
    from efce.games.game import Game
    from efce.polytopes.chain import Chain
    from efce.solvers.evaluation.payoff_operator import PayoffOperator, TriggerTables
    from efce.solvers.methods.efce import EFCEModel
    from efce.solvers.regret.local import Kernel, LocalRule

    from .saddle import CudaSaddlePoint

#: Threads per block under numba-cuda's simulator, which runs every thread of a block as a Python
#: thread: blocks of 8 keep a run on the papers' small games to seconds, and still send their bigger
#: steps and longer rows to the block reductions (a GPU gets :data:`~.layouts.BLOCK_SIZE`).
SIMULATOR_BLOCK_SIZE = 8

#: Share of the GPU's free memory a run may take (the rest: the CUDA context's own allocations
#: and the allocator's fragmentation, which the estimate does not count).
GPU_MEMORY_FRACTION = 0.95

#: What :class:`CUDABackend` passes on to :class:`~.saddle.CudaSaddlePoint` (the launch shapes).
SIZE_OPTIONS = (
    "block_size",
    "wide_threshold",
    "split_threshold",
    "piece_size",
    "short_row",
    "long_row",
    "row_group",
)

INSTALL_HINT = "pip install 'efce-toolkit[cuda]'"


def simulator_enabled() -> bool:
    """Whether numba-cuda runs its simulator instead of a GPU: only when the user (or the tests)
    set ``NUMBA_ENABLE_CUDASIM=1``, which numba-cuda reads when ``numba.cuda`` is first imported.
    The toolkit never sets it."""
    if "numba.cuda" in sys.modules:
        from numba.cuda.core import config

        return bool(config.ENABLE_CUDASIM)
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def unavailable_reason() -> str | None:
    """Why the CUDA backend cannot run here, in one line (None: it can).

    Checks, cheapest first: numba-cuda installed (the package ``numba_cuda``: numba's own
    deprecated ``numba.cuda`` is not enough), then a CUDA driver and a GPU
    (``numba.cuda.is_available()``).  Under the simulator only the first applies."""
    if importlib.util.find_spec("numba_cuda") is None:
        return f"--backend cuda needs numba-cuda, which is not installed ({INSTALL_HINT})"
    cuda = _cuda()
    if simulator_enabled():
        return None
    if not cuda.is_available():
        detail = " ".join(str(cuda.cuda_error() or "").split())
        return "--backend cuda found no usable CUDA GPU" + (f" ({detail})" if detail else "")
    return None


@functools.cache
def _cuda():
    from .saddle import numba_cuda

    return numba_cuda()


class CUDABackend:
    """``rm``'s iterations and checkpoints on an NVIDIA GPU (numba-cuda).

    Parameters
    ----------
    threads : int, optional
        Threads of the work on the host (the model's layouts, the final report, the
        Definition-3 check); default: numba's current setting.
    **sizes : int
        Launch shapes of :class:`~.saddle.CudaSaddlePoint` (:data:`SIZE_OPTIONS`); the block size
        defaults to :data:`~.layouts.BLOCK_SIZE` on a GPU and :data:`SIMULATOR_BLOCK_SIZE` under the
        simulator.

    Raises
    ------
    OptionError
        numba-cuda is not installed, or there is no CUDA driver or GPU (one line, from
        :func:`unavailable_reason`); an unknown size option or a bad thread count.

    Notes
    -----
    The backend keeps the last run it built (:meth:`saddle_point`) so that the welfare
    bisection's steps reuse one upload; :meth:`release` frees it, as does dropping the backend.
    The chain passes, products and sweeps of :class:`~efce.solvers.backends.protocol.ComputeBackend`
    one at a time are the CPU's: the methods that call them (CFR, the trigger dynamics, the
    evaluators) refuse this backend with one line.
    """

    name = "cuda"

    def __init__(self, threads: int | None = None, **sizes: int):
        unknown = sorted(set(sizes) - set(SIZE_OPTIONS))
        if unknown:
            raise OptionError(f"unknown CUDA size option {unknown[0]!r}; valid: {', '.join(SIZE_OPTIONS)}")
        #: The host's share of the work (a CPU backend; checks ``threads``).
        self.host = CPUBackend(default_threads() if threads is None else threads)
        reason = unavailable_reason()
        if reason is not None:
            raise OptionError(reason)
        self.simulator = simulator_enabled()
        sizes.setdefault("block_size", SIMULATOR_BLOCK_SIZE if self.simulator else BLOCK_SIZE)
        self.sizes = sizes
        self._run: tuple[tuple, CudaSaddlePoint] | None = None

    @property
    def threads(self) -> int:
        return self.host.threads

    def __repr__(self) -> str:
        return f"CUDABackend(threads={self.threads}, {', '.join(f'{k}={v}' for k, v in self.sizes.items())})"

    # ------------------------------------------------------------------ the device
    @property
    def device(self) -> str:
        """The GPU in words (name, memory, compute capability), or the simulator."""
        if self.simulator:
            return "numba-cuda simulator (NUMBA_ENABLE_CUDASIM=1: the kernels run as Python on the CPU)"
        cuda = _cuda()
        device = cuda.get_current_device()
        name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
        _, total = cuda.current_context().get_memory_info()
        major, minor = device.compute_capability
        return f"{name} ({total / 2**30:.0f} GiB, compute capability {major}.{minor})"

    def free_bytes(self) -> float:
        """The GPU's free memory now (infinite under the simulator)."""
        if self.simulator:
            return float("inf")
        free, _ = _cuda().current_context().get_memory_info()
        return float(free)

    def check_memory(
        self, game: Game, *, predictive: bool = True, alternating: bool = True, welfare: bool = False
    ) -> int:
        """Refuse, before anything is built, a run whose estimated GPU bytes
        (:func:`~.layouts.estimate_cuda_bytes`) exceed :data:`GPU_MEMORY_FRACTION` of the GPU's
        free memory.

        Returns
        -------
        int
            The estimate.

        Raises
        ------
        MemoryBudgetExceeded
            One line with both sizes.
        """
        estimate = estimate_cuda_bytes(game, predictive=predictive, alternating=alternating, welfare=welfare)
        free = self.free_bytes()
        if estimate > GPU_MEMORY_FRACTION * free:
            raise MemoryBudgetExceeded(
                f"the EFCE saddle point of {game.name} is too large for the GPU: about "
                f"{gib(estimate)}, over the {gib(int(free))} free on {self.device}. Not building it."
            )
        return estimate

    # ------------------------------------------------------------------ the loop
    def saddle_point(
        self,
        model: EFCEModel,
        rule: LocalRule,
        *,
        alternating: bool = True,
        power: float = 1.0,
        average_deviator: bool = False,
    ) -> CudaSaddlePoint:
        """The GPU run of ``rm`` on ``model`` at iteration 0: a new
        :class:`~.saddle.CudaSaddlePoint` (layouts built on :attr:`host`'s threads, copied
        once), or the last one reset when it ran the same model in the same configuration —
        with the model's current welfare threshold moved into ``A`` on the GPU (the
        bisection's steps)."""
        key = (rule.kernel(), bool(alternating), float(power), bool(average_deviator))
        if self._run is not None and self._run[0] == key and self._run[1].model is model:
            run = self._run[1]
            run.reset()
            if model.operator.tau is not None and model.operator.tau != run.welfare_threshold:
                run.set_welfare_threshold(model.operator.tau)
            return run
        self.release()  # the old run's device memory goes before the new one is allocated
        from .saddle import CudaSaddlePoint

        run = run_on_threads(
            self.threads,
            functools.partial(
                CudaSaddlePoint,
                model,
                rule,
                alternating=alternating,
                power=power,
                average_deviator=average_deviator,
                device_budget=GPU_MEMORY_FRACTION * self.free_bytes(),
                **self.sizes,
            ),
        )
        self._run = (key, run)
        return run

    def release(self) -> None:
        """Drop the kept run (its device arrays are freed)."""
        self._run = None

    # ------------------------------------------------------------------ arrays
    def empty(self, n: int, dtype: type = np.float64) -> DeviceArray:
        return _cuda().device_array(n, dtype=dtype)

    def zeros(self, n: int, dtype: type = np.float64) -> DeviceArray:
        return _cuda().to_device(np.zeros(n, dtype=dtype))

    def to_device(self, array: np.ndarray) -> DeviceArray:
        return _cuda().to_device(np.ascontiguousarray(array))

    def to_host(self, array: DeviceArray | np.ndarray) -> np.ndarray:
        return array if isinstance(array, np.ndarray) else array.copy_to_host()

    # ------------------------------------------------------------------ one kernel at a time
    def _cpu_only(self, what: str) -> NoReturn:
        raise OptionError(
            f"the cuda backend runs rm's whole loop on the GPU (solve_efce); {what} one at a "
            f"time run on the cpu backend"
        )

    def chain_passes(self, chain: Chain, kernel: Kernel) -> NoReturn:
        self._cpu_only("a chain's passes")

    def chain_minimum(self, chain: Chain, loss: DeviceArray) -> NoReturn:
        self._cpu_only("the chain minimum")

    def chain_violations(
        self, chain: Chain, arrays: Sequence[DeviceArray], scales: Sequence[float] | np.ndarray
    ) -> NoReturn:
        self._cpu_only("the chain violations")

    def rescaled_point(self, chain: Chain, values: DeviceArray) -> NoReturn:
        self._cpu_only("the rescaled point")

    def payoff_products(self, operator: PayoffOperator) -> NoReturn:
        self._cpu_only("the payoff operator's products")

    def gap_sweeps(self, tables: TriggerTables) -> NoReturn:
        self._cpu_only("the gap sweeps")
