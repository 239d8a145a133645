"""The suite tests the compiled kernels: every numba function runs compiled, as in a timed run,
in this process and in the commands it starts (``EFCE_KERNELS``, read when a kernel is called;
:mod:`efce.games.resources.compiled`).  The tests of the Python twins and of ``efce.solve``'s
interpreted attempt set their mode themselves (``tests/games/resources/test_compiled.py``,
``tests/solvers/test_tiered_run.py``)."""

import os

os.environ["EFCE_KERNELS"] = "compiled"
