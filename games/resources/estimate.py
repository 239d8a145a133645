"""Size of a generated game computed from its parameters alone, in milliseconds, so that a game
that cannot fit in memory is refused before the generator starts building it.

Each generator estimates its own tree beside its code (the ``estimate`` of its
:class:`~games.generators.params.GameGenerator` declaration, e.g.
:func:`games.generators.leduc.leduc_size`; :func:`games.spec.estimate_spec` reads them from a
spec string).  An estimate is a :class:`SizeEstimate`: exact counts, or an upper or a lower
bound; :func:`check_estimate` is the one rule that decides from it whether a game may be built
(a game known only by a lower bound is refused), and :func:`check_size` applies it when a
generator is called from Python.

:func:`estimate_bytes` turns nodes into bytes with the peak memory the builder and
``efce info`` take per node (see :data:`BYTES_PER_NODE`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

#: Peak bytes per node of building a game and reading its sizes (builder states, observation
#: histories, the game's arrays, sequence spaces, relevant-pair count): the peak RSS of
#: ``efce info GAME --json`` minus the 97.5 MiB of an empty run and 8 bytes per terminal and
#: player, over the node count, is 185 (goofspiel:ranks=5, 8.5M nodes), 198 (kuhn:players=6),
#: about 200 (goofspiel:players=3,ranks=4), 221 (large Battleship, 5.1M nodes) and 235 (medium
#: Battleship) since the builder frees its lists and temporaries as it goes (333–400 before).
#: Below a million nodes the fixed costs of numba's runtime weigh more (leduc:players=3: 252;
#: Battleship 2×3 with 3 shots, a 200 MiB run: 424), but no budget refuses such games.
BYTES_PER_NODE = 300


@dataclass(frozen=True)
class SizeEstimate:
    """Estimated size of a game tree.

    ``nodes`` and ``terminals`` are Python integers (they may be astronomically large);
    ``exact`` says whether they are exact counts rather than bounds."""

    nodes: int
    terminals: int
    players: int
    exact: bool = True
    lower_bound: bool = False  # when not exact: a lower (else an upper) bound

    @property
    def bytes(self) -> int:
        return estimate_bytes(self.nodes, self.terminals, self.players)

    def describe(self) -> str:
        """``about 1,234 nodes`` (or ``at least``/``at most`` for bounds)."""
        return f"{self.bound} {format_count(self.nodes)} nodes"

    @property
    def bound(self) -> str:
        return "about" if self.exact else ("at least" if self.lower_bound else "at most")


def format_count(n: int) -> str:
    """``1,234,567`` up to 10^15, then ``9.43e+159`` (exact for Python integers of any size,
    which ``float`` would overflow), and ``10^301029`` (the exponent rounded down) beyond about
    a thousand digits."""
    if n < 10**15:
        return f"{n:,}"
    if n.bit_length() > 3000:  # str() of huge integers is slow (and capped by Python)
        return f"10^{int((n.bit_length() - 1) * math.log10(2))}"
    digits = str(n)
    return f"{digits[0]}.{digits[1:3]}e+{len(digits) - 1}"


_ALREADY_CHECKED: ContextVar[bool] = ContextVar("games_size_checked", default=False)


def check_size(estimate: Callable[..., SizeEstimate], display: str, **params: Any) -> None:
    """Refuse to build a game whose size ``estimate(**params)`` (the generator's own estimator)
    exceeds the memory budget (:func:`games.resources.memory.check_budget`); generators call
    this after checking their parameters and before building.  ``display`` names the game in
    the message.  Inside :func:`size_already_checked` nothing is estimated.

    Raises
    ------
    games.resources.memory.MemoryBudgetExceeded
        With the estimated number of nodes and bytes.
    """
    if _ALREADY_CHECKED.get():
        return
    check_estimate(estimate(**params), display)


def check_estimate(estimate: SizeEstimate, display: str, budget: int | None = None) -> None:
    """The one rule deciding from an estimate whether a game may be built: exact counts and
    upper bounds are checked against the memory budget; a *lower* bound (a game too intricate
    to count quickly) is refused unless it already exceeds the budget, since a lower bound
    under the budget says nothing about the true size.

    Raises
    ------
    games.resources.memory.MemoryBudgetExceeded
        Over the budget, or only a lower bound is known.
    """
    from efce.errors import MemoryBudgetExceeded
    from efce.games.resources.memory import check_budget, gib

    check_budget(estimate.bytes, f"game {display} ({estimate.describe()})", budget)
    if estimate.lower_bound:
        raise MemoryBudgetExceeded(
            f"game {display} is too large to size from its parameters quickly ({estimate.describe()}, "
            f"{gib(estimate.bytes)} or more); not building a game of unknown size"
        )


@contextmanager
def size_already_checked() -> Iterator[None]:
    """Within this block generators skip :func:`check_size` (the caller checked the size
    against its own budget, as :func:`games.spec.make_game` does)."""
    token = _ALREADY_CHECKED.set(True)
    try:
        yield
    finally:
        _ALREADY_CHECKED.reset(token)


def estimate_bytes(nodes: int, terminals: int, players: int) -> int:
    """Peak bytes of building a game with ``nodes`` nodes (``terminals`` of them terminal)."""
    return nodes * BYTES_PER_NODE + terminals * 8 * players
