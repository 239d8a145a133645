"""How much memory a run may use: every model that can outgrow the machine checks its estimate
against this budget up front, so that it is refused with a clear message instead of being
killed by the system."""

from __future__ import annotations

import ctypes
import ctypes.util

from .game import GameError

#: Fraction of the available RAM a single model may claim by default.
DEFAULT_BUDGET_FRACTION = 0.6


def available_memory_bytes() -> int:
    """``MemAvailable`` from ``/proc/meminfo`` (falls back to ``MemFree``, then 4 GiB)."""
    try:
        with open("/proc/meminfo") as fh:
            info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in fh if ":" in line}
        return info.get("MemAvailable", info.get("MemFree", 4 * 2**30))
    except (OSError, ValueError, IndexError):
        return 4 * 2**30


def default_memory_budget() -> int:
    return int(DEFAULT_BUDGET_FRACTION * available_memory_bytes())


def gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB"


class MemoryBudgetExceeded(GameError):
    """A model was refused up front because its estimated size exceeds the memory budget."""


def check_budget(estimate_bytes: int, what: str, budget: int | None = None) -> int:
    """Raise :class:`MemoryBudgetExceeded` naming ``what`` and both sizes if ``estimate_bytes``
    exceeds ``budget`` (bytes; default: 60% of the available RAM).  Returns the budget."""
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
