"""Where numba's on-disk cache of compiled kernels goes, decided once before any kernel is
compiled (``games/__init__`` imports this module first; every module with kernels imports
``games``).

Kernels are declared ``@numba.njit(cache=True)``.  numba looks for a cache location in this
order (``numba.core.caching.CacheImpl._locator_classes``): ``NUMBA_CACHE_DIR``, the
``__pycache__`` folder beside the source file, the user-wide cache folder
(``$XDG_CACHE_HOME/numba`` or ``~/.cache/numba``); a location that cannot be created or written
is skipped.  When none works (a read-only install run by a user without a writable home, a
sandbox), numba raises ``RuntimeError: cannot cache function ...`` while the module is being
imported, so every command would fail.  :func:`configure` detects that case up front and points
``NUMBA_CACHE_DIR`` at a fresh temporary folder (kernels are then cached for this process
only), or, when not even a temporary folder can be made, turns caching off: kernels are
compiled in memory on first use, as without ``cache=True``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import cast

#: How caching was set up: "default" (one of numba's own locations is writable), "temporary"
#: (a per-process temporary folder), "disabled" (no writable location: compiled in memory).
mode = "default"

# One source file per folder with kernels; the in-tree locator works per source folder.
_KERNEL_SOURCES = (
    "games/relevant.py",
    "polytopes/decompose.py",
    "solvers/backends/cpu/jit.py",
    "solvers/methods/trigger.py",
    "solvers/evaluation/payoff_operator.py",
)


def _probe_function():  # stands in for a kernel when asking numba's locators
    return None


def _numba_can_cache(py_file: str) -> bool:
    """Would numba find a writable cache location for a kernel defined in ``py_file``?"""
    from numba.core import caching

    locators = cast("list[type[caching._CacheLocator]]", caching.CacheImpl._locator_classes)
    for locator in locators:
        try:
            if locator.from_function(_probe_function, py_file) is not None:
                return True
        except OSError:
            continue
    return False


def configure(make_temp_dir: Callable[..., str] = tempfile.mkdtemp) -> str:
    """Make sure importing the kernels cannot fail for want of a cache folder; returns and
    records :data:`mode`."""
    global mode
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        ok = all(_numba_can_cache(os.path.join(root, path)) for path in _KERNEL_SOURCES)
    except (ImportError, AttributeError):  # numba's internals moved: trust its defaults
        ok = True
    if ok:
        mode = "default"
        return mode
    from numba.core import config

    try:
        folder = make_temp_dir(prefix="efce-numba-cache-")
    except OSError:
        folder = None
    if folder is not None:
        os.environ["NUMBA_CACHE_DIR"] = folder  # inherited by child processes
        config.CACHE_DIR = folder  # type: ignore[attr-defined]  # numba sets its options at run time
        owner = os.getpid()

        def remove_cache_folder() -> None:  # in the process that made it, not in forked children
            if os.getpid() == owner:
                shutil.rmtree(folder, ignore_errors=True)

        atexit.register(remove_cache_folder)
        from efce.interrupts import remove_on_abort

        remove_on_abort(folder)  # an abort from a compiled call runs no atexit function
        mode = "temporary"
        return mode
    # Nothing writable at all: cache=True must not try to open a cache.
    from numba.core.dispatcher import Dispatcher

    Dispatcher.enable_caching = lambda self: None  # type: ignore[method-assign]  # patched on purpose
    mode = "disabled"
    return mode


configure()
