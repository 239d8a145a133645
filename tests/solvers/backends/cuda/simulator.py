"""The CUDA kernels' tests run under numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``: the
kernels as Python, on the CPU, threads of a block as Python threads).

numba-cuda reads the variable once, when ``numba.cuda`` is first imported, so this module (which
the folder's ``conftest.py`` imports before any test module) sets it before anything imports
``numba.cuda``; nothing in the toolkit imports it outside the CUDA backend, which imports it on
first use.  :data:`requires_simulator` skips a test module, with the reason, where numba-cuda is
not installed or ``numba.cuda`` was already imported against a real GPU in this process.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

if "numba.cuda" not in sys.modules:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

#: The simulator's launcher polls its block's Python threads in a loop that holds the GIL for
#: the interpreter's switch interval (5 ms by default) at a time; a shorter one lets the
#: threads run between polls: a step of three_doors' loop took 0.17 s instead of 0.36 s, a
#: checkpoint 0.14 s instead of 0.59 s (the folder's tests set it, ``conftest.py``).
SWITCH_INTERVAL = 2e-4


def _why_not() -> str | None:
    if importlib.util.find_spec("numba_cuda") is None:
        return "numba-cuda is not installed (pip install 'efce-toolkit[cuda]')"
    from numba.cuda.core import config

    if not config.ENABLE_CUDASIM:
        return "numba.cuda was imported without NUMBA_ENABLE_CUDASIM=1 before these tests"
    return None


REASON = _why_not()

#: ``pytestmark`` of the test modules that launch kernels.
requires_simulator = pytest.mark.skipif(REASON is not None, reason=REASON or "")

#: Options of :class:`efce.solvers.backends.cuda.saddle.CudaSaddlePoint` that run every chain
#: step on one thread and every CSR row on one thread: the CPU engine's arithmetic, operation
#: for operation (blocks of 8 keep the simulator's Python threads few).
NARROW = {"block_size": 8, "wide_threshold": 10**9, "short_row": 10**9, "long_row": 10**9}

#: Options that send the tiny test games' bigger steps to whole blocks, their biggest (Y's root
#: simplex, 13-15 entries) to pieces of 4 entries on a block each, and their longer CSR rows to
#: groups of threads and to blocks: the paths of the big games' root simplex and long rows.
WIDE = {
    "block_size": 4,
    "wide_threshold": 3,
    "split_threshold": 8,
    "piece_size": 4,
    "short_row": 2,
    "long_row": 4,
    "row_group": 2,
}

#: As :data:`WIDE` for whole runs, with fewer blocks (the simulator runs a block's threads as
#: Python threads and polls them, so block reductions cost it ~10x a thread's loop): Y's root
#: simplex in pieces of 8 entries, steps with more than 4 entries plus sources on a block, rows
#: of more than 2 nonzeros on groups of 2 threads, of more than 4 on a block.
BLOCKS = {
    "block_size": 8,
    "wide_threshold": 4,
    "split_threshold": 8,
    "piece_size": 8,
    "short_row": 2,
    "long_row": 4,
    "row_group": 2,
}
