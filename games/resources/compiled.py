"""How every numba function of the package runs: compiled, or as its own Python source.

numba compiles a function for each new combination of argument types (a *variant*) the first
time a process calls it, or loads it from its on-disk cache (:mod:`.numba_cache`).  On an empty
cache that costs seconds per kernel — rm's kernels took 42 s to compile on this 2-core machine
for a game of 17 nodes whose solve takes a millisecond — while the same kernels, run by CPython
on NumPy arrays, take microseconds per element.  So every numba function of the package is
declared with :func:`compiled` (``numba.njit`` with the same options), whose dispatcher, a
:class:`TieredDispatcher`, can run the function's **Python twin** instead of compiling it: the
same source, executed by CPython, with each compiled function it calls replaced by that
function's twin (:func:`python_twin`).  The twin is the reference the compiled code is checked
against (``tests/games/resources/test_compiled.py`` runs both on the same inputs); it is not
a second implementation to keep in step.

What a call does is decided by the **mode** of the calling context (:func:`kernel_mode`), and
only when the call's variant is not compiled in this process yet — a variant already compiled
(or loaded) always runs compiled, as numba's own dispatch finds it before asking for anything:

* ``"compiled"``: numba's behaviour — load the variant from the cache or compile it.  What the
  warm-ups and every timed run use (:mod:`efce.solvers.warm_up`), so that a run's clock only
  ever sees compiled code.
* ``"auto"`` (the default): a call whose array arguments hold at most
  :data:`INTERPRET_MAX_ELEMENTS` elements runs the twin; a larger one compiles; and a function
  whose twin has run :data:`KERNEL_INTERPRET_SECONDS` in this process compiles from then on
  (a loop over a small game pays at most that before it runs compiled).
* ``"interpreted"``: every call runs the twin.  Within :func:`interpreted_attempt` a call over
  :data:`INTERPRET_MAX_ELEMENTS` elements, or one made after the attempt's CPU seconds are spent,
  raises :class:`~efce.errors.InterpretationEnded` instead: :func:`efce.solve` then compiles
  and runs again (:func:`efce.solvers.warm_up.tiered_run`).
* ``"claimed"`` (:func:`claimed_compiles`, never a default): a call compiles its variant if
  this process is the first of those compiling a run together to claim it, else runs the twin
  (:mod:`efce.solvers.parallel_compile`).

**Processes compiling at once.**  When the environment variable ``EFCE_COMPILE_SHARED`` names a
folder (``efce compare`` sets it for its runs and its background compiling,
:mod:`efce.experiments.compile_ahead`), a process about to compile — or load — a variant first
claims it there (:func:`shared_compile`): the first to claim it compiles it into numba's cache,
and a process that finds it claimed waits until it is written, then loads it.  The processes so
compile each variant once between them, not once each.  A claim whose process has ended
unfinished (killed) is taken over.

The environment variable ``EFCE_KERNELS`` (``compiled``, ``auto`` or ``interpreted``) sets the
default mode, and ``compiled`` also turns :func:`efce.solve`'s interpreted attempt off (the
benchmarks and the test suite run so).

The twin follows Python's and NumPy's rules where numba's differ: an integer never overflows,
a float32 operand meeting a Python float stays float32 (NumPy's promotion; numba widens it),
and ``exp`` or ``**`` may differ from the compiled code's in the last bit.  The package's
kernels compute in float64 on the small games the twin runs (float32 state starts at 2²⁰
entries), so there the twin gives the compiled code's numbers.
"""

from __future__ import annotations

import hashlib
import os
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from numba.core.caching import FunctionCache
from numba.core.dispatcher import Dispatcher
from numba.core.registry import CPUDispatcher

from efce.errors import InterpretationEnded, OptionError

from .numba_cache import CheckedCache

#: The modes a call can run in (see the module docstring).
KERNEL_MODES = ("compiled", "auto", "interpreted")

#: The environment variable that sets the default mode.
MODE_VARIABLE = "EFCE_KERNELS"

#: Largest call (elements of its array arguments, tuples of arrays included) that ``auto`` mode
#: and an interpreted attempt run as Python: the twin spends some 10–50 µs per element, so such
#: a call takes well under a second, where compiling a kernel takes one to ten.
INTERPRET_MAX_ELEMENTS = 20_000

#: The environment variable naming the folder of the variants claimed by processes compiling
#: into one numba cache at once (:func:`shared_compile`).
SHARED_VARIABLE = "EFCE_COMPILE_SHARED"

#: Longest wait for a variant another process claimed: past it, this process compiles the
#: variant itself (a claimant stopped, not killed, would otherwise hold it for ever).
SHARED_WAIT_SECONDS = 600.0

#: Seconds of Python-twin calls after which ``auto`` mode compiles a function: what a loop over a
#: small game pays at most before it runs compiled (about the compile time of a small kernel).
KERNEL_INTERPRET_SECONDS = 1.0


@dataclass(frozen=True)
class _Tier:
    """The calling context's mode; ``deadline`` and ``strict`` only for an interpreted attempt."""

    mode: str
    deadline: float | None = None
    strict: bool = False
    claims: str | None = None  # the folder of claimed variants, in "claimed" mode only


_TIER: ContextVar[_Tier | None] = ContextVar("efce_kernel_tier", default=None)


def default_mode() -> str:
    """The mode of a context that chose none: ``EFCE_KERNELS`` if set, else ``auto``.

    Raises
    ------
    OptionError
        ``EFCE_KERNELS`` is set to something other than a mode (a typo ran every kernel in
        ``auto`` mode unsaid before).
    """
    value = os.environ.get(MODE_VARIABLE, "")
    mode = value.strip().lower()
    if not mode:
        return "auto"
    if mode not in KERNEL_MODES:
        raise OptionError(f"{MODE_VARIABLE} must be one of {', '.join(KERNEL_MODES)}, got {value!r}")
    return mode


def current_mode() -> str:
    """The mode calls made here run in."""
    tier = _TIER.get()
    return default_mode() if tier is None else tier.mode


def compiled_only() -> bool:
    """Whether ``EFCE_KERNELS=compiled`` asks for compiled code everywhere."""
    return default_mode() == "compiled"


@contextmanager
def kernel_mode(mode: str) -> Iterator[None]:
    """Inside the block (in this thread or task), calls run in ``mode``: ``"compiled"``,
    ``"auto"`` or ``"interpreted"`` (without limits).

    Raises
    ------
    ValueError
        An unknown mode.
    """
    if mode not in KERNEL_MODES:
        raise ValueError(f"kernel mode must be one of {', '.join(KERNEL_MODES)}, got {mode!r}")
    token = _TIER.set(_Tier(mode))
    try:
        yield
    finally:
        _TIER.reset(token)


@contextmanager
def interpreted_attempt(seconds: float) -> Iterator[None]:
    """Inside the block every call runs as Python, until a call's arrays hold more than
    :data:`INTERPRET_MAX_ELEMENTS` elements or the process has spent ``seconds`` of CPU time
    since the block began (CPU, not wall-clock, time: the same run decides alike on a busy
    machine): that call raises :class:`~efce.errors.InterpretationEnded` (what was computed is
    to be computed again, compiled)."""
    token = _TIER.set(_Tier("interpreted", time.process_time() + seconds, strict=True))
    try:
        yield
    finally:
        _TIER.reset(token)


@contextmanager
def claimed_compiles(claims: str) -> Iterator[None]:
    """Inside the block (the *claimed* mode), a call whose variant this process has not compiled
    claims it in the folder ``claims``, which processes compiling the same run at once share:
    the first process to claim a variant compiles it (or loads it from the cache), and every
    other runs the call as the function's Python twin.  Each variant is so compiled by one
    process, which writes it to the on-disk cache for the others to load
    (:mod:`efce.solvers.parallel_compile`)."""
    token = _TIER.set(_Tier("claimed", claims=claims))
    try:
        yield
    finally:
        _TIER.reset(token)


def _variant_name(dispatcher: Dispatcher, args: tuple) -> str:
    """A file name for the variant of ``dispatcher`` that ``args`` call: a hash of the function's
    qualified name and the argument types."""
    kinds = ",".join(str(dispatcher.typeof_pyval(a)) for a in args)
    function = dispatcher.py_func
    key = f"{function.__module__}.{function.__qualname__}({kinds})"
    return hashlib.sha256(key.encode()).hexdigest()[:32]


@contextmanager
def shared_compile(name: str, folder: str) -> Iterator[None]:
    """Around compiling (or loading) one kernel variant with the processes that share ``folder``
    (``EFCE_COMPILE_SHARED``): the block runs once this process holds the variant's claim — at
    once if none does; else after the claimant has written the variant to numba's cache (its
    ``.done`` file), so that the block loads it; or after the claimant ended without (its process
    is gone) or :data:`SHARED_WAIT_SECONDS` passed, so that the block compiles it.  A folder that
    cannot be written shares nothing: the block runs at once.

    Parameters
    ----------
    name : str
        The variant's file name: a hash of the function's qualified name and argument types.
    folder : str
        The folder of the claims.

    Yields
    ------
    None
        Inside the block this process holds the claim (or nobody could).
    """
    claim, done = os.path.join(folder, name + ".claim"), os.path.join(folder, name + ".done")
    waited_since = time.monotonic()
    while not os.path.exists(done):
        try:
            handle = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            if _claimant_gone(claim) or time.monotonic() - waited_since > SHARED_WAIT_SECONDS:
                with suppress(OSError):
                    os.remove(claim)  # taken over: the next turn of the loop claims it
                waited_since = time.monotonic()
                continue
            time.sleep(0.02)
            continue
        except OSError:  # no folder, or not writable: compile alone
            break
        with os.fdopen(handle, "w") as fh:
            fh.write(str(os.getpid()))
        try:
            yield
        except BaseException:
            with suppress(OSError):
                os.remove(claim)  # another process compiles it
            raise
        with suppress(OSError):
            os.close(os.open(done, os.O_CREAT | os.O_WRONLY))
        return
    yield


def _claimant_gone(claim: str) -> bool:
    """Whether the process that wrote the claim file ``claim`` has ended (a claim just created,
    its number not written yet, counts as held)."""
    try:
        with open(claim) as fh:
            text = fh.read().strip()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if not text.isdigit():
        return False
    try:
        os.kill(int(text), 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists (another user's process by that number): held
        return False
    return False


def _claim(dispatcher: Dispatcher, args: tuple, claims: str) -> bool:
    """Whether this process wins the claim on the variant of ``dispatcher`` that ``args`` call: an
    empty file named after the function and the argument types, created if absent (atomically:
    one process of several creates it); False also when the folder no longer exists."""
    name = _variant_name(dispatcher, args)
    try:
        os.close(os.open(os.path.join(claims, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    except FileNotFoundError:
        # The folder is gone: the process that made it has ended (an aborted command removes
        # it), so a helper compiles nothing more and its tiny runs end within milliseconds.
        return False
    return True


# ---------------------------------------------------------------------- the Python twins
_TWINS: dict[Dispatcher, Callable[..., Any]] = {}
_TWIN_GLOBALS: dict[int, dict[str, Any]] = {}


def _twin_globals(module_globals: dict[str, Any]) -> dict[str, Any]:
    """A copy of a module's globals with every numba function replaced by its twin (made once
    per module; registered before it is filled, so that mutually calling functions resolve)."""
    twin_globals = _TWIN_GLOBALS.get(id(module_globals))
    if twin_globals is None:
        twin_globals = _TWIN_GLOBALS[id(module_globals)] = dict(module_globals)
        for name, value in module_globals.items():
            if isinstance(value, Dispatcher) and hasattr(value, "py_func"):
                twin_globals[name] = python_twin(value)
    return twin_globals


def python_twin(dispatcher: Dispatcher) -> Callable[..., Any]:
    """The Python twin of a numba function: its own source run by CPython, the numba functions
    it calls by name replaced by their twins (calls through other references go through their
    dispatchers, in the caller's mode).  Results are NumPy scalars where compiled code returns
    Python numbers (:class:`TieredDispatcher` converts them).

    Returns
    -------
    callable
        A plain Python function with the dispatcher's signature.
    """
    twin = _TWINS.get(dispatcher)
    if twin is None:
        function = dispatcher.py_func
        twin_globals = _twin_globals(function.__globals__)
        twin = _TWINS.get(dispatcher)  # made while the globals were filled
        if twin is None:
            twin = types.FunctionType(
                function.__code__,
                twin_globals,
                function.__name__,
                function.__defaults__,
                function.__closure__,
            )
            twin.__kwdefaults__ = function.__kwdefaults__
            twin.__qualname__ = function.__qualname__
            _TWINS[dispatcher] = twin
    return twin


def _boxed(value: Any) -> Any:
    """``value`` as compiled code returns it: NumPy scalars as Python numbers, in tuples too."""
    if isinstance(value, np.generic):
        return value.item()
    if type(value) is tuple:
        return tuple(_boxed(v) for v in value)
    return value


def _elements(args: tuple) -> int:
    """Elements of the arrays among ``args`` (in tuples too)."""
    total = 0
    for arg in args:
        if isinstance(arg, np.ndarray):
            total += arg.size
        elif type(arg) is tuple:
            total += _elements(arg)
    return total


#: Calls this process has run as a Python twin (:func:`twin_calls`).
_TWIN_CALLS = 0


def twin_calls() -> int:
    """How many calls this process has run as a Python twin so far: a run that made none ran
    compiled code only, whatever its mode (variants compiled earlier in the process are always
    used)."""
    return _TWIN_CALLS


class TieredDispatcher(CPUDispatcher):
    """numba's CPU dispatcher that, asked to compile a variant (no compiled variant matches the
    call), may run the function's Python twin instead, by the calling context's mode (see the
    module docstring).  Called from compiled code, it is compiled as numba compiles any callee."""

    #: Seconds its twin has run in ``auto`` mode in this process.
    interpreted_seconds: float = 0.0

    def _compile_for_args(self, *args: Any, **kws: Any) -> Any:
        tier = _TIER.get()
        mode = default_mode() if tier is None else tier.mode
        if mode == "claimed":
            assert tier is not None and tier.claims is not None  # set by claimed_compiles only
            if not kws and not _claim(self, args, tier.claims):
                return self._call_twin
            return super()._compile_for_args(*args, **kws)  # type: ignore[misc]  # numba, untyped
        if mode == "interpreted":
            if tier is not None and tier.strict:
                _check_attempt(self, tier, args)
            return self._call_twin
        if mode == "auto" and (
            self.interpreted_seconds < KERNEL_INTERPRET_SECONDS and _elements(args) <= INTERPRET_MAX_ELEMENTS
        ):
            return self._timed_twin
        shared = os.environ.get(SHARED_VARIABLE)
        if shared and not kws:
            with shared_compile(_variant_name(self, args), shared):
                return super()._compile_for_args(*args)  # type: ignore[misc]  # numba, untyped
        return super()._compile_for_args(*args, **kws)  # type: ignore[misc]  # numba, untyped

    def _call_twin(self, *args: Any) -> Any:
        global _TWIN_CALLS
        _TWIN_CALLS += 1
        return _boxed(python_twin(self)(*args))

    def _timed_twin(self, *args: Any) -> Any:
        global _TWIN_CALLS
        _TWIN_CALLS += 1
        started = time.perf_counter()
        try:
            return _boxed(python_twin(self)(*args))
        finally:
            self.interpreted_seconds += time.perf_counter() - started


def _check_attempt(dispatcher: TieredDispatcher, tier: _Tier, args: tuple) -> None:
    elements = _elements(args)
    if elements > INTERPRET_MAX_ELEMENTS:
        raise InterpretationEnded(
            f"{dispatcher.py_func.__qualname__} was called on {elements:,} elements, more than the "
            f"{INTERPRET_MAX_ELEMENTS:,} run as Python"
        )
    if tier.deadline is not None and time.process_time() > tier.deadline:
        raise InterpretationEnded("the interpreted attempt used up its seconds")


def compiled(
    function: Callable[..., Any] | None = None,
    *,
    cache_class: type[CheckedCache] = CheckedCache,
    **options: Any,
) -> Any:
    """``numba.njit(**options)`` for the package's functions: the dispatcher is a
    :class:`TieredDispatcher`, and with ``cache=True`` it caches through ``cache_class``
    (:class:`~.numba_cache.CheckedCache`: damaged entries recompiled, shareable between
    processes).  Used as ``@compiled(cache=True, nogil=True)`` or ``@compiled``.

    Returns
    -------
    TieredDispatcher or callable
        The dispatcher, or a decorator making one.  (Under ``NUMBA_DISABLE_JIT=1`` numba returns
        the plain function, and so does this.)
    """

    def decorate(python_function: Callable[..., Any]) -> Any:
        dispatcher = numba.njit(**options)(python_function)
        if not isinstance(dispatcher, CPUDispatcher):  # NUMBA_DISABLE_JIT: the plain function
            return dispatcher
        # The same object, its calls asking TieredDispatcher before compiling (one type layout).
        dispatcher.__class__ = TieredDispatcher
        # FunctionCache: caching is on (efce.games.resources.numba_cache turns it off when no
        # cache folder is writable; the functions are then compiled in memory).
        if isinstance(dispatcher._cache, FunctionCache):  # type: ignore[attr-defined]  # numba's
            dispatcher._cache = cache_class(python_function)  # type: ignore[attr-defined]
        return dispatcher

    return decorate if function is None else decorate(function)


__all__ = [
    "INTERPRET_MAX_ELEMENTS",
    "KERNEL_INTERPRET_SECONDS",
    "KERNEL_MODES",
    "MODE_VARIABLE",
    "SHARED_VARIABLE",
    "SHARED_WAIT_SECONDS",
    "TieredDispatcher",
    "claimed_compiles",
    "compiled",
    "compiled_only",
    "current_mode",
    "default_mode",
    "interpreted_attempt",
    "kernel_mode",
    "python_twin",
    "shared_compile",
    "twin_calls",
]
