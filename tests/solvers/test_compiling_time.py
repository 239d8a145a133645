"""``efce.solvers.warm_up.compiling_time``: the seconds numba spends compiling inside a block,
counted once for nested compilations and not at all for calls of compiled code.

Compilations are simulated with numba's own ``numba:compile`` events around a sleep (what
numba's dispatcher fires around a real compilation, and not around a cache load), so that the
expected seconds are known; one test compiles a real function.
"""

from __future__ import annotations

import time

import numba
from numba.core import event

from efce.solvers.warm_up import compiling_time

SLEEP = 0.2


def simulated_compile(seconds: float, inner: float = 0.0) -> None:
    """A compilation event lasting ``seconds``, with one nested inside lasting ``inner``."""
    with event.trigger_event("numba:compile"):
        time.sleep(seconds)
        if inner:
            with event.trigger_event("numba:compile"):
                time.sleep(inner)


def test_nothing_compiled_is_zero():
    with compiling_time() as compiled:
        time.sleep(0.01)
    assert compiled() == 0.0


def test_compilations_add_up_and_a_nested_one_counts_once():
    called = time.perf_counter()
    with compiling_time() as compiled:
        simulated_compile(SLEEP, inner=SLEEP)  # 2 × SLEEP, of which SLEEP nested
        time.sleep(SLEEP)  # not compiling
        simulated_compile(SLEEP)
    wall = time.perf_counter() - called
    assert compiled() >= 3 * SLEEP
    # Counting the nested one again would exceed the block's compiling time, 3 × SLEEP of
    # 4 × SLEEP: the outer event already covers it.
    assert compiled() <= wall - SLEEP


def test_outside_the_block_is_not_counted():
    with compiling_time() as compiled:
        pass
    simulated_compile(SLEEP)
    assert compiled() == 0.0


def test_a_real_compilation_counts_and_a_call_of_compiled_code_does_not():
    add_one = numba.njit(lambda x: x + 1)  # never compiled: no cache
    with compiling_time() as compiled:
        assert add_one(1) == 2
    assert compiled() > 0.0
    with compiling_time() as again:
        assert add_one(2) == 3
    assert again() == 0.0
