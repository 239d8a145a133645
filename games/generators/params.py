"""How a generator declares its parameters: :class:`Param` (type and range of one parameter).

Every generator module declares ``PARAMETERS: dict[str, Param]`` beside its code;
:data:`efce.games.spec.PARAMETERS` reads them to parse and range-check game spec strings (and to
estimate sizes before building).  Defaults are the generator function's own defaults.

>>> Param("int", 2, 1000).describe()
'an integer, from 2 to 1000'
"""

from __future__ import annotations

from dataclasses import dataclass

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
