"""How a generator declares itself: :class:`~efce.games.generators.params.Param` (type and range
of one parameter) and :class:`~efce.games.generators.params.GameGenerator` (the game's spec
name, its function, parameters and size estimate).

Every generator module declares, beside its code, ``PARAMETERS: dict[str, Param]`` and
``GAMES``, a tuple of :class:`GameGenerator`; :mod:`efce.games.spec` collects the declarations
of every module of :mod:`efce.games.generators` (:data:`efce.games.spec.GENERATORS`) to parse and
range-check game spec strings and to estimate sizes before building.  Defaults are the generator
function's own defaults.  A new game is therefore one module (and its tests).

>>> Param("int", 2, 1000).describe()
'an integer, from 2 to 1000'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from efce.games.game import Game
    from efce.games.resources.estimate import SizeEstimate

#: Largest magnitude of a ``number`` parameter.  Payoffs are sums of products of at most a few
#: such parameters and counts below 1000, so this keeps every payoff far inside the 1e100 limit
#: of :data:`games.game.MAX_ABS_PAYOFF`, and a too large value is refused naming its parameter.
NUMBER_LIMIT = 1e12


@dataclass(frozen=True)
class Param:
    """Type and range of one generator parameter.

    ``kind`` is ``"int"``, ``"number"`` (finite float), ``"bool"``, ``"choice"`` (one of
    ``choices``), ``"int list"`` or ``"number list"``; ``low``/``high`` bound numbers and list
    entries (inclusive); ``length`` fixes a list's length; ``none`` allows the value ``none``."""

    kind: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    length: int | None = None
    none: bool = False

    def describe(self) -> str:
        if self.kind == "choice":
            text = "one of " + ", ".join(self.choices)
        else:
            base = {
                "int": "an integer",
                "number": "a number",
                "bool": "true or false",
                "int list": "a list of integers",
                "number list": "a list of numbers",
            }[self.kind]
            if self.length is not None:
                base = base.replace("a list of", f"a list of {self.length}")
            low, high = self.low, self.high
            if self.kind.startswith("number"):  # numbers are bounded by NUMBER_LIMIT
                low = -NUMBER_LIMIT if low is None else low
                high = NUMBER_LIMIT if high is None else high
            text = base + _range_text(low, high, "each " if "list" in self.kind else "")
        return text + (" or none" if self.none else "")


def _range_text(low, high, prefix: str) -> str:
    if low is not None and high is not None:
        return f", {prefix}from {low:g} to {high:g}"
    if low is not None:
        return f", {prefix}>= {low:g}"
    if high is not None:
        return f", {prefix}<= {high:g}"
    return ""


@dataclass(frozen=True)
class GameGenerator:
    """A game that spec strings name: ``NAME:key=value,...`` calls ``function(**values)``.

    Attributes
    ----------
    name : str
        The spec name (lower case, e.g. ``"kuhn"``, ``"farina-fig1"``).
    function : callable
        Builds the :class:`~games.game.Game`; its keyword defaults are the parameters' defaults.
    parameters : mapping of str to Param
        Type and range of every parameter a spec string may give (the module's ``PARAMETERS``).
    estimate : callable, optional
        ``estimate(**values) -> SizeEstimate``: the size of the tree from every parameter
        (defaults filled in, already range-checked), in milliseconds and without building, so
        that a game over the memory budget is refused before the generator runs
        (:func:`games.resources.estimate.check_size`).  None: no estimate (the game is built
        unchecked).
    check : callable, optional
        ``check(**values)`` raises :class:`~efce.errors.GameError` for parameters that do not go
        together (each alone is checked by its :class:`Param`), e.g. Leduc without any raise
        cap; run before the size is estimated.
    resolve : callable, optional
        ``resolve(**values) -> dict``: every parameter (defaults filled in) with the defaults
        that depend on other parameters made explicit, as the function reads them (Kuhn's
        ``ranks=None`` is ``players + 1``), so that two specs of one game have one canonical
        spec (:func:`efce.games.spec.canonical_spec`).  None: no such default.
    """

    name: str
    function: Callable[..., Game]
    parameters: Mapping[str, Param]
    estimate: Callable[..., SizeEstimate] | None = None
    check: Callable[..., None] | None = None
    resolve: Callable[..., dict] | None = None
