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

**Damaged and shared caches.**  numba trusts its cache files: an index (``.nbi``) truncated or
emptied, or a code file (``.nbc``) truncated — what an interrupted first run, a full disk or a
network file system leaves — ends every later command in ``UnpicklingError`` or ``EOFError``;
and processes sharing one cache folder can each number a new entry's code file alike
(numba names it after the index's length), so that one process's index points at another's
code for another signature.  Every cached function of the package therefore caches through
:class:`CheckedCache`: an entry that cannot be read is deleted and recompiled, with one line on
stderr per process (:func:`report_damage`); a cache that cannot be written (a full disk) is
reported the same way and the run goes on with the code compiled in memory; each code file is
named after a hash of its entry's key and holds that key, so a file is never taken for another
entry; and the index is read, updated and replaced under a lock on the cache folder
(``fcntl.flock``, where the file system has it), so that concurrent processes add their entries
without losing each other's.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any, cast

from numba.core.caching import FunctionCache, IndexDataCacheFile

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


# ---------------------------------------------------------------------- damaged and shared caches
#: What :func:`report_damage` has said in this process (one line each at most).
_REPORTED: set[str] = set()


def report_damage(what: str, detail: str) -> None:
    """Say on stderr, once per process and kind (``what``), that the compiled-code cache could
    not be used and what the run does instead.  Never raises: a closed or broken stderr is no
    reason to end a run."""
    if what in _REPORTED:
        return
    _REPORTED.add(what)
    with contextlib.suppress(OSError, ValueError, AttributeError):  # stderr closed or None
        print(f"efce: {detail}", file=sys.stderr, flush=True)


def _unreadable(error: BaseException) -> bool:
    """Whether ``error``, raised while reading a cache entry, means the entry is damaged (rather
    than this process being out of memory or asked to stop)."""
    return isinstance(error, Exception) and not isinstance(error, MemoryError)


@contextlib.contextmanager
def _folder_lock(folder: str) -> Iterator[None]:
    """An exclusive lock on ``folder``'s index updates, between processes: ``flock`` on a lock
    file in it; nothing where the file system offers no lock (the update is then as numba's)."""
    try:
        import fcntl

        handle = open(os.path.join(folder, ".efce-index.lock"), "a")  # noqa: SIM115  (closed below)
    except (ImportError, OSError):
        yield
        return
    try:
        with contextlib.suppress(OSError):  # no locks on this file system: unlocked
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        handle.close()  # releases the lock


class CheckedCacheFile(IndexDataCacheFile):
    """numba's index and code files of one function, with each code file named after a hash of
    its entry's key and holding the key, and the index updated under a folder lock."""

    def save(self, key: Any, data: Any) -> None:
        name = f"{self._index_name[: -len('.nbi')]}.{hashlib.sha256(repr(key).encode()).hexdigest()[:16]}.nbc"
        self._save_data(name, (key, data))
        with _folder_lock(self._cache_path):
            overloads = self._load_index()
            if overloads.get(key) != name:
                overloads[key] = name
                self._save_index(overloads)

    def load(self, key: Any) -> Any:
        overloads = self._load_index()
        name = overloads.get(key)
        if name is None:
            return None
        try:
            stored = self._load_data(name)
        except OSError:  # removed since the index was read
            return None
        # An entry written by numba's own cache (or for another key) is not ours: a miss.
        if not (isinstance(stored, tuple) and len(stored) == 2 and stored[0] == key):
            return None
        return stored[1]

    @property
    def index_path(self) -> str:
        return self._index_path

    def data_path(self, key: Any) -> str | None:
        """The code file the index names for ``key`` (None if the index cannot be read)."""
        try:
            name = self._load_index().get(key)
        except Exception:  # the index itself is damaged
            return None
        return None if name is None else self._data_path(name)


class CheckedCache(FunctionCache):
    """numba's per-function cache, made safe to share and to find damaged
    (:class:`CheckedCacheFile`): an entry that cannot be read is deleted — its code file, or the
    index when the index is what cannot be read — and the function recompiled; a failed write
    is reported and skipped.  ``stamp`` (a class attribute) is added to every entry's key:
    :mod:`efce.solvers.backends.cpu.jit` sets it to a hash of the files a kernel can inline."""

    stamp = ""

    def __init__(self, py_func: Callable[..., Any]):
        super().__init__(py_func)
        plain = self._cache_file
        self._cache_file = CheckedCacheFile(
            cache_path=self._cache_path,
            filename_base=self._impl.filename_base,
            source_stamp=plain._source_stamp,
        )

    def _index_key(self, sig: Any, codegen: Any) -> tuple:
        key = super()._index_key(sig, codegen)
        return (*key, self.stamp) if self.stamp else key

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        try:
            return super().load_overload(sig, target_context)
        except BaseException as error:
            if not _unreadable(error):
                raise
            self._discard(sig, target_context, error)
            return None

    def save_overload(self, sig: Any, data: Any) -> None:
        try:
            super().save_overload(sig, data)
        except BaseException as error:
            if not _unreadable(error):
                raise
            report_damage(
                "write",
                f"cannot write numba's compiled-code cache in {self._cache_path} "
                f"({type(error).__name__}: {error}); going on with the code compiled in memory",
            )

    def _discard(self, sig: Any, target_context: Any, error: BaseException) -> None:
        """Delete what could not be read: the code file of ``sig``'s entry when the index reads,
        else the index."""
        cache_file = cast("CheckedCacheFile", self._cache_file)
        try:
            key = self._index_key(sig, target_context.codegen())
            path = cache_file.data_path(key) or cache_file.index_path
        except Exception:
            path = cache_file.index_path
        with contextlib.suppress(OSError):
            os.unlink(path)
        report_damage(
            "read",
            f"a damaged entry of numba's compiled-code cache was discarded and is recompiled "
            f"({os.path.basename(path)}: {type(error).__name__}: {error})",
        )
