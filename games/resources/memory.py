"""The one resources module: how much memory the machine has, how much this process has used,
and the budget every model that can outgrow the machine checks its estimate against up front, so
that it is refused with a clear message instead of being killed by the system.

Measurements go through psutil (portable) and, for the peak resident set size, through the
operating system's own high-water mark where it keeps one (``getrusage`` on POSIX, the peak
working set on Windows).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

import psutil

from efce.errors import MemoryBudgetExceeded  # re-exported: its old home

#: Fraction of the available RAM a single model may claim by default.
DEFAULT_BUDGET_FRACTION = 0.6
MIB = 2**20


def available_memory_bytes() -> int:
    """Memory the system can give a new process without swapping (psutil's ``available``)."""
    return int(psutil.virtual_memory().available)


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far.

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


def peak_memory_mib() -> float:
    """:func:`peak_rss_bytes` in MiB, rounded to 0.1 (the ``peak_memory_mib`` JSON key)."""
    return round(peak_rss_bytes() / MIB, 1)


def default_memory_budget() -> int:
    return int(DEFAULT_BUDGET_FRACTION * available_memory_bytes())


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
        Bytes; default: :data:`DEFAULT_BUDGET_FRACTION` of the available RAM.

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
        note = f" ({DEFAULT_BUDGET_FRACTION:.0%} of the available RAM)"
    if estimate_bytes > budget:
        raise MemoryBudgetExceeded(f"{what} is too large: about {gib(estimate_bytes)}, over the memory "
                                   f"budget of {gib(budget)}{note}. Not building it.")
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
    if _libc and hasattr(_libc, "malloc_trim"):
        _libc.malloc_trim(0)
