"""How the CPU backend compiles its kernels and runs them on a number of threads.

**The on-disk cache.**  numba (checked on 0.68) keys a ``cache=True`` kernel's cache on the
content of *its own* source file only (``numba.core.caching``: the index's stamp is a hash of that
file).  Every jitted function the kernel calls — inlined with ``inline="always"`` at numba's IR
level, or called and linked into the kernel's object code — is compiled into the cached object, so
editing the callee's file while the kernel's file stays the same leaves the kernel running the old
callee: a cached ``f`` in ``a.py`` calling ``g`` of ``b.py`` kept returning ``g``'s old value
after ``b.py`` changed, inlined or not, until ``a.py`` itself changed.  Splitting the kernels into
modules by job therefore needs more than numba's stamp.  :func:`kernel` compiles with
``cache=True`` (through :class:`~efce.games.resources.numba_cache.CheckedCache`, which also
recovers from damaged entries and lets processes share the folder) and adds to every cache
entry's key the hash of **every module of this folder**
(but the Python-only :data:`PYTHON_ONLY`) **and of** :mod:`efce.games.arrays` (the compiled
helpers the kernels share with the builders), plus the values of the constants the kernels read
from other modules (step kinds, rule families): a change to any code a kernel can inline or call
recompiles it.  (The package's builders — DECOMPOSE, the relevant pairs, the trigger tables — keep
``compiled(cache=True)`` in their own modules, stamped by numba alone.)  Like every numba function
of the package, a kernel called on a small input outside a timed run may run as its Python twin
instead of compiling (:mod:`efce.games.resources.compiled`).

**Shared bodies.**  A serial kernel and its parallel form share their step bodies
(``inline="always"``); the serial kernels that inline one compile through
:class:`SharedBodiesCompiler`, which removes the reference counting numba's IR-level inlining
adds per inlined call (``@kernel(shares_bodies=True)``).

**Threads.**  The thread count is data of a backend object, never numba's global setting as far as
the rest of the toolkit is concerned: :func:`run_on_threads` sets numba's (thread-local) count
around one parallel call and restores it, and :func:`default_threads` / :func:`available_threads`
are the only reads of numba's setting and pool size outside a kernel.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

# The parallel passes meet at a barrier a few dozen times per iteration.  libgomp's default
# (spin, then sleep) lets a waiting thread burn a core that another process needs; on a shared
# 2-core machine under load that made a 2-thread pass 4x slower than a 1-thread one, while a
# passive wait costs microseconds per barrier.  Read by libgomp when numba first starts its
# threads (after this import); a value set by the user wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba  # noqa: E402
import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
from numba.core import ir_utils  # noqa: E402
from numba.core.compiler import CompilerBase, DefaultPassBuilder  # noqa: E402
from numba.core.compiler_machinery import FunctionPass, PassManager, register_pass  # noqa: E402
from numba.core.typed_passes import NopythonRewrites  # noqa: E402

from efce.games import arrays  # noqa: E402
from efce.games.resources.compiled import compiled  # noqa: E402
from efce.games.resources.numba_cache import CheckedCache  # noqa: E402
from efce.polytopes.chain import SIMPLEX, SINGLETON  # noqa: E402
from efce.solvers.backends.protocol import HEDGE, PRM_PLUS, RM  # noqa: E402

#: Bytes kept free after each row of :func:`thread_rows`: two cache lines, so no line that one
#: thread writes (nor the line the adjacent-line prefetcher pairs with it) holds another
#: thread's row.
THREAD_ROW_GAP = 128


def source_stamp(paths: Iterable[str | os.PathLike[str]], constants: Iterable[object] = ()) -> str:
    """A hash of the content of the files ``paths`` (in the given order) and of ``constants``."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).name.encode())
        digest.update(Path(path).read_bytes())
    digest.update(repr(tuple(constants)).encode())
    return digest.hexdigest()


#: The modules of this folder that hold no compiled code (the backend object in Python): the
#: only ones left out of the kernels' stamp.
PYTHON_ONLY = ("__init__.py", "backend.py")


def kernel_sources() -> list[Path]:
    """The files whose content stamps the CPU kernels' cache: every module of this folder but
    :data:`PYTHON_ONLY`, and :mod:`efce.games.arrays`."""
    here = Path(__file__).resolve().parent
    modules = sorted(p for p in here.glob("*.py") if p.name not in PYTHON_ONLY)
    return [*modules, Path(arrays.__file__).resolve()]


@register_pass(mutates_CFG=True, analysis_only=False)
class PropagateCopies(FunctionPass):
    """numba's copy propagation and dead-code removal on the typed IR (``ir_utils.simplify``, the
    first step of its parfor pass), for :class:`SharedBodiesCompiler`."""

    _name = "efce_propagate_copies"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state: Any) -> bool:
        ir_utils.simplify(state.func_ir, state.typemap, state.calltypes, {})
        return True


class SharedBodiesCompiler(CompilerBase):
    """numba's nopython pipeline with :class:`PropagateCopies` after its rewrites: the compiler of
    a serial kernel that inlines bodies shared with its parallel form (``@kernel(shares_bodies=True)``).

    numba inlines an ``inline="always"`` function at its IR level by assigning the caller's
    variables to the callee's arguments, and lowers every such assignment of an array with a
    reference-count increment (and a decrement where the copy dies).  Inside a loop, an inlined
    step body taking the chain's arrays so added about a dozen NRT calls per step to the serial
    OBSERVELOSS pass (callgrind, CFR+ on Leduc: 14 % more instructions in the compiled code per
    iteration than the pass with the body written out).  The parallel kernels never paid this:
    numba's parfor pipeline propagates such copies away first.  Run here too, the serial kernels'
    inlined bodies carry no reference counting at all (10 % fewer compiled instructions per
    CFR+ iteration than before the bodies were shared); the arithmetic is untouched."""

    def define_pipelines(self) -> list[PassManager]:
        pipeline = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pipeline.add_pass_after(PropagateCopies, NopythonRewrites)
        pipeline.finalize()
        return [pipeline]


#: numba options of a serial kernel that inlines bodies shared with its parallel form.
SHARED_BODIES = {"pipeline_class": SharedBodiesCompiler}


class StampedKernels:
    """A decorator factory: ``@kernels(**options)`` compiles like
    ``compiled(cache=True, nogil=True, **options)`` (:func:`efce.games.resources.compiled.compiled`:
    numba's ``njit`` whose calls on small inputs may run as Python) with a cache keyed also on
    :func:`source_stamp` of ``sources`` (and ``constants``); ``shares_bodies=True`` adds
    :data:`SHARED_BODIES`.  ``nogil``: a kernel touches no Python object, and a signal's
    watchdog must run while it does (:mod:`efce.interrupts`)."""

    def __init__(self, sources: Iterable[str | os.PathLike[str]], constants: Iterable[object] = ()):
        self.cache_class = type("StampedCache", (CheckedCache,), {"stamp": source_stamp(sources, constants)})

    def __call__(self, shares_bodies: bool = False, **options: Any) -> Callable[[Callable[..., Any]], Any]:
        if shares_bodies:
            options = {**SHARED_BODIES, **options}
        return compiled(cache=True, nogil=True, cache_class=self.cache_class, **options)


#: The decorator of every cached CPU kernel (see the module docstring).
kernel = StampedKernels(kernel_sources(), (SIMPLEX, SINGLETON, RM, HEDGE, PRM_PLUS, arrays.U.__name__))


# ---------------------------------------------------------------------- threads
def available_threads() -> int:
    """The most threads the CPU kernels can use: numba's pool (``NUMBA_NUM_THREADS``, by default
    every core)."""
    return int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]  # set at run time


def default_threads() -> int:
    """The thread count a CPU backend gets when none is given: numba's current setting (every
    core of the pool unless ``numba.set_num_threads`` changed it)."""
    return int(numba.get_num_threads())


def run_on_threads(threads: int, function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` with numba's thread count (per calling thread) set to ``threads`` and
    restored afterwards: how every parallel kernel of the backend is launched."""
    before = numba.get_num_threads()
    if before == threads:
        return function(*args)
    numba.set_num_threads(threads)
    try:
        return function(*args)
    finally:
        numba.set_num_threads(before)


def thread_rows(width: int, dtype: npt.DTypeLike = np.float64) -> np.ndarray:
    """Per-thread scratch for the parallel kernels: one row per thread of numba's pool
    (``NUMBA_NUM_THREADS``), each row's first ``width`` slots usable.

    Rows of a plain ``(threads, width)`` array share cache lines when ``width`` is small (Ξ's
    widest simplex on Battleship has 6 entries: 48-byte rows), and every write to one thread's
    row then evicts the line from the other core — false sharing, which made the two-thread
    OBSERVELOSS pass on medium Battleship slower than the one-thread one (151 against 166 ms;
    with rows apart, 103).  Here each row is followed by :data:`THREAD_ROW_GAP` unused bytes.

    Returns
    -------
    ndarray
        Uninitialized, shape ``(NUMBA_NUM_THREADS, stride)`` with ``stride ≥ width``; kernels
        use ``rows[p, :width]``.
    """
    itemsize = np.dtype(dtype).itemsize
    gap = -(-THREAD_ROW_GAP // itemsize)
    stride = -(-max(int(width), 1) // gap) * gap + gap
    return np.empty((available_threads(), stride), dtype=dtype)


@compiled(inline="always")
def balanced_part(cum_work: np.ndarray, part: int, parts: int) -> tuple[int, int]:
    """Items ``[lo, hi)`` of part ``part`` of ``parts`` with about equal work, where
    ``cum_work[i]`` is the work of items ``0 .. i-1`` (``len(cum_work)`` = items + 1): the
    parts cover every item once, in order, for kernels that split a loop by work."""
    n = len(cum_work) - 1
    total = cum_work[n]
    lo = 0 if part == 0 else np.searchsorted(cum_work, (total * part) // parts, side="right") - 1
    hi = (
        n if part == parts - 1 else np.searchsorted(cum_work, (total * (part + 1)) // parts, side="right") - 1
    )
    return lo, hi


@compiled(inline="always")
def even_part(lo: int, hi: int, p: int, parts: int) -> tuple[int, int]:
    """Bounds of part ``p`` of ``parts`` equal parts of ``range(lo, hi)``."""
    n = hi - lo
    return lo + (n * p) // parts, lo + (n * (p + 1)) // parts
