"""The CUDA backend: ``rm``'s whole loop on an NVIDIA GPU (``efce solve --method rm --backend
cuda``, ``solve_efce(game, backend="cuda")``), through numba-cuda (optional extra
``pip install "efce-toolkit[cuda]"``; the CPU install does not change).

**What runs where.**  The host builds the model as for the CPU (the game, DECOMPOSE's chain Ξ, the
trigger chain Y, the payoff operator's tables: :func:`~efce.solvers.methods.efce.build_efce_model`),
then the GPU layouts straight from those arrays (:mod:`.layouts`: compiled passes, no numpy
conversion afterwards) and copies them once.  Every iteration — both players' OBSERVELOSS and
RECOMMEND with the local rule fused in, the products with ``A`` and ``Aᵀ``, the running sum — and
every checkpoint — the average's max deviation read from the saddle point, its welfare, the chain
violations of the iterate and of the average, the welfare certificate — run on the GPU
(:mod:`.kernels`, driven by :class:`.saddle.CudaSaddlePoint`); a checkpoint copies back four
scalars.  At the end the running sum is copied back once and made the plan on the host (the chain
point rescaled from it); the final report (the CPU evaluator's gap, utilities, welfare) and the
plan's Definition-3 check run on the CPU, on the backend's ``threads``.  ``--objective welfare``
keeps one upload for the whole bisection: each step resets
the run and moves τ on the GPU.  ``cfr``/``cfr+`` and ``trigger`` stay on the CPU.

**How the loop plugs in.**  :func:`~efce.solvers.methods.efce.solve_efce` has one loop body
(its ``_iterate``: the driver, checkpoints, trace rows, statuses,
certificate, Ctrl-C) over a :class:`~efce.solvers.methods.efce.SaddlePointRun`; the CPU's run
calls the backend's kernels one at a time (:class:`~efce.solvers.methods.efce.HostSaddlePoint`),
this backend's is the device-resident :class:`.saddle.CudaSaddlePoint`
(:meth:`~.CUDABackend.saddle_point`).  The kernel-at-a-time methods of the
:class:`~efce.solvers.backends.protocol.ComputeBackend` protocol are refused here with one line:
the rule state on the GPU is indexed by entry, not by the CPU's running segment position, and
a loop that crossed the bus per kernel would lose what the device gains.

**Arithmetic and determinism.**  The state's dtypes are the CPU engine's (float32 regrets,
bfloat16 predictions and float32 running sum on chains of 2²⁰ entries or more; iterates and
losses float64).  Wide steps and long rows are summed by block reductions and Y's root simplex in
pieces of a block each; OBSERVELOSS's scatter is an ordered gather per destination.  No atomics:
a run gives the same iterates every time.  Not the CPU's bit for bit (sums in another order,
multiply-adds contracted, and regret matching turns one-ulp differences into other ties), so the
tests check the contract: iterates in both polytopes, the checkpoint's scalars equal to the CPU's
for the same average, convergence, the LP's optimal welfare; and, where every step and row runs
on one thread (the CPU's summation order), equality with the CPU engine bit for bit.

**Refusals, before anything is built** (one line each): numba-cuda not installed, no CUDA
driver or GPU (:class:`~.CUDABackend`'s constructor: :class:`~efce.errors.OptionError`, raised by
``rm``'s option check before the game is built), a model larger than the GPU's free memory
(:func:`.layouts.estimate_cuda_bytes` against ``cudaMemGetInfo``:
:class:`~efce.errors.MemoryBudgetExceeded`).

**The simulator.**  With ``NUMBA_ENABLE_CUDASIM=1`` in the environment (numba-cuda reads it when
``numba.cuda`` is first imported) the same kernels run as Python on the CPU: slow, for tests on
the papers' small games (``tests/solvers/backends/cuda``, which sets it; CI runs them).  The
toolkit never sets it: without it, a machine without a GPU is refused.  Under the simulator the
result's ``info["device"]`` says so, ``efce solve`` prints it on stderr, and blocks are
:data:`.backend.SIMULATOR_BLOCK_SIZE` threads (every thread is a Python thread there).

**Compilation.**  The kernels are compiled on first launch for the run's argument types (the
layouts' index and state dtypes) and cached on disk by numba-cuda; :meth:`~.CudaSaddlePoint.warm_up`
launches each once on the run's own arrays before the clock starts and reports the
seconds as ``compile_seconds``.

Modules: :mod:`.layouts` (host: the layouts and the size estimate; imports without numba-cuda),
:mod:`.kernels` (the ``@cuda.jit`` kernels), :mod:`.saddle` (the device arrays and the loop),
:mod:`.backend` (the backend object, its checks).
"""

from .backend import CUDABackend, simulator_enabled, unavailable_reason
from .layouts import estimate_cuda_bytes

__all__ = ["CUDABackend", "estimate_cuda_bytes", "simulator_enabled", "unavailable_reason"]
