"""The sizes kernel variants are chosen by, and a stand-in for them while a method warms up.

numba compiles one machine-code *variant* of a kernel per combination of argument types, and
which combination a run passes depends on the size of what it runs on: a chain of
:data:`~efce.solvers.backends.cpu.backend.PARALLEL_MIN_ENTRIES` entries or more runs the parallel
passes (and keeps a float32 running sum from
:data:`~efce.solvers.regret.local.FLOAT32_STATE_MIN_ENTRIES` entries on), a payoff operator of
:data:`~efce.solvers.backends.cpu.backend.PARALLEL_MIN_ROWS` rows the parallel products, and a
rule's state over :data:`~efce.solvers.regret.local.FLOAT32_STATE_MIN_ENTRIES` entries or more
(a chain's simplex entries, a segment set) is float32 with bfloat16 predictions
(:func:`~efce.solvers.regret.local.state_dtype`).  The first kind of choice reads its size
through :func:`variant_size`, the rules' state through :func:`state_variant_size`.

A method's warm-up (:attr:`efce.solvers.options.Method.warm_up`, :mod:`efce.solvers.warm_up`)
compiles — or loads from numba's cache — every variant its run will call *before* the run's clock
starts, by running the method on a tiny game of the same kind: inside :func:`sized_as`, every
size-dependent choice is made as if each structure had the real run's size, so the tiny run
calls the variants of the big one (on arrays of a few entries).  Outside it, nothing changes.
The stand-in is a ``contextvars.ContextVar``: it holds in the thread (or task) that set it
only, so a run in another thread of the process keeps its own sizes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from numbers import Integral

#: (entries, state entries) of an enclosing :func:`sized_as`, or None.
_STAND_IN: ContextVar[tuple[int, int] | None] = ContextVar("efce_stand_in_sizes", default=None)


def variant_size(entries: int) -> int:
    """The size that chooses the kernel variants for a chain or an operator of ``entries``
    entries (or rows): ``entries`` itself, or the size given to an enclosing :func:`sized_as`."""
    stand_in = _STAND_IN.get()
    return entries if stand_in is None else stand_in[0]


def state_variant_size(entries: int) -> int:
    """The size that chooses the dtype of a rule's state over ``entries`` entries: ``entries``
    itself, or the state size given to an enclosing :func:`sized_as`."""
    stand_in = _STAND_IN.get()
    return entries if stand_in is None else stand_in[1]


def _check(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 0:
        raise ValueError(f"{what} must be a non-negative integer, got {value!r}")
    return int(value)


@contextmanager
def sized_as(entries: int, state_entries: int | None = None) -> Iterator[None]:
    """Inside the block, every size-dependent choice of a kernel variant is made as if each
    chain and operator had ``entries`` entries (parallel passes and products, float32 running
    sums) and each rule's state ``state_entries`` (default ``entries``; float32 state): a tiny
    run then calls the variants a run of those sizes calls.

    Raises
    ------
    ValueError
        A size that is not a non-negative integer.
    """
    sizes = (
        _check(entries, "entries"),
        _check(entries if state_entries is None else state_entries, "state_entries"),
    )
    token = _STAND_IN.set(sizes)
    try:
        yield
    finally:
        _STAND_IN.reset(token)


__all__ = ["sized_as", "state_variant_size", "variant_size"]
