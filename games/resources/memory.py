"""The one resources module: how much memory the machine has, how much this process has used,
and the budget every model that can outgrow the machine checks its estimate against up front, so
that it is refused with a clear message instead of being killed by the system; and how many
cores this process may run on.

Measurements go through psutil (portable) and, for the peak resident set size, through the
operating system's own high-water mark where it keeps one (``getrusage`` on POSIX, the peak
working set on Windows).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator

import numpy as np
import psutil

from efce.errors import MemoryBudgetExceeded  # re-exported: its old home
from efce.interrupts import forget_on_abort, remove_on_abort

#: Fraction of the available RAM a single model may claim by default.
DEFAULT_BUDGET_FRACTION = 0.6
MIB = 2**20


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the system has one, else every
    core."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity (macOS, Windows)
        return os.cpu_count() or 1


def available_memory_bytes() -> int:
    """Memory the system can give a new process without swapping (psutil's ``available``)."""
    return int(psutil.virtual_memory().available)


#: The largest peak resident set size of the worker processes this process has ended
#: (:class:`baselines.backends.IsolatedWorker`: an LP solver run where a stop request can end
#: it), reported by each before it exits (:func:`note_worker_peak`).
_worker_peak_bytes = 0


def note_worker_peak(nbytes: int) -> None:
    """Record the peak resident set size a worker process reported before it exited."""
    global _worker_peak_bytes
    _worker_peak_bytes = max(_worker_peak_bytes, int(nbytes))


def own_peak_rss_bytes() -> int:
    """Peak resident set size of this process so far, its workers not counted.

    Returns
    -------
    int
        Bytes: the kernel's high-water mark where there is one (``ru_maxrss`` is KiB on Linux and
        bytes on macOS; ``peak_wset`` on Windows), else the current RSS.
    """
    info = psutil.Process().memory_info()
    peak = getattr(info, "peak_wset", None)
    if peak:
        return int(peak)
    try:
        import resource
    except ImportError:  # neither POSIX nor Windows: the current size is the best we know
        return int(info.rss)
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(maxrss if sys.platform == "darwin" else maxrss * 1024)


def process_peak_rss_bytes(pid: int) -> int | None:
    """Peak resident set size of another live process, read from the operating system (Linux's
    ``VmHWM``, Windows' ``peak_wset``): what a worker about to be killed can no longer report.

    Returns
    -------
    int or None
        Bytes, or None where the system does not tell (macOS, a process that has gone).
    """
    try:
        if sys.platform.startswith("linux"):
            with open(f"/proc/{pid}/status", encoding="ascii") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024  # "VmHWM:  123456 kB"
            return None
        peak = getattr(psutil.Process(pid).memory_info(), "peak_wset", None)
    except (OSError, ValueError, psutil.Error):
        return None
    return int(peak) if peak else None


def peak_rss_bytes() -> int:
    """Peak memory of this process's work so far: its own peak resident set size plus the largest
    of its ended workers' (:func:`note_worker_peak`).  An LP solver in a worker holds its copies
    of the model there while this process holds the model itself, so the run's peak is their
    sum at most; this process's high-water mark alone left the solver's memory out.

    Returns
    -------
    int
        Bytes (:func:`own_peak_rss_bytes` plus the largest worker peak, 0 without workers).
    """
    return own_peak_rss_bytes() + _worker_peak_bytes


def peak_memory_mib() -> float:
    """:func:`peak_rss_bytes` in MiB, rounded to 0.1 (the ``peak_memory_mib`` JSON key)."""
    return round(peak_rss_bytes() / MIB, 1)


def address_space_left() -> int | None:
    """Bytes of address space this process may still map under its limit (``RLIMIT_AS``, set
    by ``ulimit -v`` or by ``efce compare --memory-limit`` for its children); None without one.
    Past it an allocation fails however much RAM is free, so a budget must not exceed it."""
    try:
        import resource
    except ImportError:  # no POSIX limits
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    return max(0, int(soft) - int(psutil.Process().memory_info().vms))


def default_memory_budget() -> int:
    """:data:`DEFAULT_BUDGET_FRACTION` of what this process can still use: the available RAM,
    or the address space left under its limit when that is smaller (:func:`address_space_left`)."""
    return int(DEFAULT_BUDGET_FRACTION * _usable_bytes()[0])


def _usable_bytes() -> tuple[int, str]:
    """The bytes a new model can use and what limits them (for messages)."""
    available = available_memory_bytes()
    left = address_space_left()
    if left is not None and left < available:
        return left, "the address space left under the process's limit"
    return available, "the available RAM"


def gib(n: float) -> str:
    if n >= 2**30 * 10**15:  # estimates of absurd games are integers beyond float range
        from efce.games.resources.estimate import format_count

        return f"{format_count(int(n) // 2**30)} GiB"
    return f"{n / 2**30:.3g} GiB"


def check_budget(estimate_bytes: int, what: str, budget: int | None = None) -> int:
    """Refuse a model whose estimated size exceeds the memory budget, before it is built.

    Parameters
    ----------
    estimate_bytes : int
        Estimated peak memory of building and running the model.
    what : str
        What is refused, for the message (e.g. "the EFCE LP of sheriff(...)").
    budget : int, optional
        Bytes; default: :func:`default_memory_budget` (a share of the available RAM, or of the
        address space left under the process's limit).

    Returns
    -------
    int
        The budget that was applied.

    Raises
    ------
    MemoryBudgetExceeded
        Naming ``what`` and both sizes.
    """
    note = ""
    if budget is None:
        budget = default_memory_budget()
        note = f" ({DEFAULT_BUDGET_FRACTION:.0%} of {_usable_bytes()[1]})"
    if estimate_bytes > budget:
        raise MemoryBudgetExceeded(
            f"{what} is too large: about {gib(estimate_bytes)}, over the memory "
            f"budget of {gib(budget)}{note}. Not building it."
        )
    return budget


_libc = None


def release_free_memory() -> None:
    """Hand the heap pages that freed temporaries leave behind back to the system (glibc's
    ``malloc_trim``; a no-op elsewhere).  Building a game or a chain frees many mid-sized arrays
    whose pages glibc keeps for reuse: after building the large Battleship game they are about
    three times the game's own arrays, and they would count in every later peak."""
    global _libc
    if _libc is None:
        name = ctypes.util.find_library("c")
        try:
            _libc = ctypes.CDLL(name) if name else False
        except OSError:
            _libc = False
    if isinstance(_libc, ctypes.CDLL) and hasattr(_libc, "malloc_trim"):
        _libc.malloc_trim(0)


#: Arrays parked together below this many bytes stay in memory: writing and reading them back
#: would cost more time than the memory is worth (the test games park nothing; the small
#: Battleship instance, ~31 MB of pair arrays, does).
PARK_MIN_BYTES = 8 * MIB

#: Disk space that parking leaves free on the temporary directory's file system.
PARK_DISK_RESERVE = 2**30

#: File systems whose files live in RAM: parking there would not free any memory.
MEMORY_FILE_SYSTEMS = frozenset({"tmpfs", "ramfs"})


def _read_npy_header(f) -> tuple[tuple[int, ...], bool, np.dtype]:
    """Shape, Fortran order and dtype of the ``.npy`` file open in ``f``, left at its data."""
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(f)
    return np.lib.format.read_array_header_2_0(f)


def _read_npy(path: str) -> np.ndarray:
    """The array of a ``.npy`` file as an array owning its memory (``np.load`` may return a view
    of a buffer of its own: a parked game's arrays must come back as they went, not as views)."""
    with open(path, "rb") as f:
        shape, fortran, dtype = _read_npy_header(f)
        out = np.empty(shape, dtype=dtype, order="F" if fortran else "C")
        if out.nbytes:
            data = (out.T if fortran else out).reshape(-1).view(np.uint8)  # C order, a view
            if f.readinto(data.data) != out.nbytes:
                raise OSError(f"{path}: the parked array's file is shorter than its header says")
    return out


class ParkedArrays:
    """Arrays held out of memory while a long computation does not read them.

    ``ParkedArrays(name=array, ...)`` writes every array to a ``.npy`` file in a new private
    temporary directory and keeps no reference to it, so the memory is freed once the caller
    drops its own references; :meth:`restore` reads them back, all at once or a few at a time
    (each file is deleted once read).  The arrays stay in memory instead — same interface,
    nothing written — when together they are smaller than ``min_bytes``, when the directory is
    on a RAM-backed file system, or when its file system would keep less than
    :data:`PARK_DISK_RESERVE` free.  Used as a context manager, the directory is removed on
    leaving the block, whatever ends it (an exception, ``KeyboardInterrupt``); :meth:`close`
    does the same.

    Parameters
    ----------
    min_bytes : int, optional
        Park on disk only from this total size on (default: :data:`PARK_MIN_BYTES`, read at
        the call).
    directory : str, optional
        Where the private directory is made (default: ``tempfile.gettempdir()``).
    **arrays : ndarray
        The arrays, by name.

    Attributes
    ----------
    on_disk : bool
        Whether the arrays were written out (False: they are held in memory).
    """

    def __init__(self, *, min_bytes: int | None = None, directory: str | None = None, **arrays: np.ndarray):
        self._held: dict[str, np.ndarray] = {}
        self._parked = list(arrays)  # names not restored yet
        self._dir: str | None = None
        nbytes = sum(int(a.nbytes) for a in arrays.values())
        directory = tempfile.gettempdir() if directory is None else directory
        min_bytes = PARK_MIN_BYTES if min_bytes is None else min_bytes
        self.on_disk = nbytes >= min_bytes and disk_can_hold(directory, nbytes)
        if not self.on_disk:
            self._held = dict(arrays)
            return
        self._dir = tempfile.mkdtemp(prefix="efce-parked-", dir=directory)
        remove_on_abort(self._dir)  # also when a second Ctrl-C ends the process mid-iteration
        try:
            for name, array in arrays.items():
                np.save(self._path(name), array, allow_pickle=False)
        except BaseException:
            self.close()
            raise

    def _path(self, name: str) -> str:
        assert self._dir is not None  # parked arrays have a folder until close()
        return os.path.join(self._dir, name + ".npy")

    def restore(self, *names: str) -> dict[str, np.ndarray]:
        """The arrays ``names`` (default: all not restored yet), by name: read back from disk (their
        files are deleted; the directory goes with the last one) or the ones held.

        Raises
        ------
        RuntimeError
            An array restored already, or after :meth:`close`.
        """
        names = names or tuple(self._parked)
        gone = [name for name in names if name not in self._parked] or ([] if names else ["every array"])
        if gone:
            raise RuntimeError(f"{', '.join(gone)}: already restored or discarded")
        arrays = {}
        for name in names:
            arrays[name] = self.read(name)
            self._parked.remove(name)
            if self._dir is None:
                del self._held[name]
            else:
                os.remove(self._path(name))
        if not self._parked:
            self.close()
        return arrays

    def _require_parked(self, name: str) -> None:
        """Raise the RuntimeError of :meth:`read`, :meth:`mapped` and :meth:`chunks` for a name
        no longer parked."""
        if name not in self._parked:
            raise RuntimeError(f"{name}: already restored or discarded")

    def read(self, name: str) -> np.ndarray:
        """The parked array ``name`` read into memory of its own (the held array when in memory).
        It stays parked, its file with it until :meth:`restore` or :meth:`close`: a caller that
        maps the file (:meth:`mapped`) drops its maps first, which Windows needs before it
        removes a file.

        Raises
        ------
        RuntimeError
            ``name`` restored already, or after :meth:`close`.
        """
        self._require_parked(name)
        if self._dir is None:
            return self._held[name]
        return _read_npy(self._path(name))

    def mapped(self, name: str) -> np.ndarray:
        """The parked array ``name`` as a read-only memory map of its file (the held array when
        in memory): equal to the parked array, and only the pages a caller reads are brought
        into memory, as clean file pages the system may drop again.  It stays parked; the map
        stays readable after :meth:`restore` or :meth:`close` remove the file (POSIX keeps a
        mapped file's data until the last map goes).

        Raises
        ------
        RuntimeError
            ``name`` restored already, or after :meth:`close`.
        """
        self._require_parked(name)
        if self._dir is None:
            return self._held[name]
        # A plain ndarray view, not np.memmap: compiled kernels take it like any array.
        return np.load(self._path(name), mmap_mode="r", allow_pickle=False).view(np.ndarray)

    def chunks(self, name: str, size: int) -> Iterator[np.ndarray]:
        """The parked 1-d array ``name`` as consecutive pieces of ``size`` elements, read from
        its file one piece at a time (the held array's slices when in memory): a caller can use
        it while only a piece is in memory.  It stays parked.

        Raises
        ------
        RuntimeError
            ``name`` restored already, or after :meth:`close`.
        """
        self._require_parked(name)
        return self._pieces(name, size)

    def _pieces(self, name: str, size: int) -> Iterator[np.ndarray]:
        if self._dir is None:
            array = self._held[name]
            for lo in range(0, len(array), size):
                yield array[lo : lo + size]
            return
        with open(self._path(name), "rb") as f:
            shape, _, dtype = _read_npy_header(f)
            for lo in range(0, shape[0] if shape else 0, size):
                yield np.fromfile(f, dtype=dtype, count=min(size, shape[0] - lo))

    def close(self) -> None:
        """Discard the arrays not restored: remove the directory (or drop the ones held).
        Idempotent."""
        self._held, self._parked = {}, []
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            forget_on_abort(self._dir)
            self._dir = None

    def __enter__(self) -> ParkedArrays:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def disk_can_hold(directory: str, nbytes: int) -> bool:
    """Whether ``nbytes`` written under ``directory`` would leave :data:`PARK_DISK_RESERVE` free
    on a file system that is not RAM-backed (there a file would take memory, not free it)."""
    try:
        free = shutil.disk_usage(directory).free
    except OSError:
        return False
    return free - nbytes >= PARK_DISK_RESERVE and file_system_type(directory) not in MEMORY_FILE_SYSTEMS


def file_system_type(path: str) -> str:
    """The type of the file system holding ``path`` (e.g. ``"ext4"``, ``"tmpfs"``), from the
    mount with the longest prefix of its real path; ``""`` if unknown."""
    real = os.path.realpath(path)
    best, kind = "", ""
    try:
        partitions = psutil.disk_partitions(all=True)
    except (OSError, RuntimeError):
        return ""
    for part in partitions:
        mount = part.mountpoint
        inside = real == mount or real.startswith(mount.rstrip(os.sep) + os.sep)
        if inside and len(mount) > len(best):
            best, kind = mount, part.fstype
    return kind
