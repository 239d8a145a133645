"""Payoffs of any magnitude: a method runs on payoffs of magnitude about one, and every number it
reports in payoff units is scaled back.

The methods' own tolerances are absolute and written for payoffs of magnitude about one: HiGHS's
feasibility and optimality tolerances (1e-7), the relative KKT criterion of PDLP (whose constraint
rows have coefficients of one), rm's certificate threshold (1e-9), the welfare bisection's
interval width (1e-2), the subgradient method's stopping tolerance (1e-6).  On payoffs of
magnitude 1e-300 every plan meets them (PDLP reported "optimal" at half the optimal welfare),
and products of such payoffs with probabilities leave the normal floating-point range.  So
:func:`efce.solve` runs a game whose largest payoff magnitude ``m = max |u|`` lies outside
``[SAFE_LOW, SAFE_HIGH]`` on a copy with every payoff multiplied by ``s = 2^k``, the power of two
that brings ``m·s`` into ``[1, 2)``, and divides every payoff-valued number of the result by ``s``.

* A power of two multiplies exactly in floating point (barring underflow below 1e-308), so the
  copy is the same game in other units, and games that differ by a power of two run the very
  same computation: ``solve(2^j · G)`` reports exactly ``2^j`` times what ``solve(G)`` reports
  (payoff-valued numbers) and the same plan.
* What the caller gives in payoff units is scaled in (an :class:`~efce.solvers.options.Option`
  of ``unit="payoff"``: target gaps, welfare thresholds; ``unit="per payoff"``: the subgradient
  step size), so it keeps its meaning in the game's units; a default the caller did not
  override is one of the method's tolerances, written for payoffs of magnitude one, and is left
  as it is (rm's default target gap 1e-3 is then relative to the largest payoff).  What the
  method reports in payoff units is scaled out (the keys of its
  :attr:`~efce.solvers.options.Method.payoff_info`, at any depth of ``info`` and among the trace
  rows' extra columns, and every trace row's gap); a message that quotes such a number formats
  it through :func:`caller_payoff`.  Everything else — the plan, the iterates' violations,
  times, counts — has no payoff unit and is left as it is.
* Games inside the range run unchanged, so the usual games keep their results to the bit, and
  the methods' absolute tolerances keep the meaning they have always had there.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from efce.games.game import Game
    from efce.solvers.options import Method
    from efce.solvers.result import SolveResult, TraceRow

__all__ = [
    "SAFE_HIGH",
    "SAFE_LOW",
    "caller_payoff",
    "payoff_scale",
    "reporting",
    "scaled_game",
    "scaled_options",
    "scaled_result",
    "scaled_row",
    "solving_scaled",
]

#: Largest payoff magnitudes a game runs with unchanged (2^-20 ≈ 9.5e-7 to 2^20 ≈ 1.05e6).
SAFE_LOW = 2.0**-20
SAFE_HIGH = 2.0**20

#: Caller's payoff units per payoff unit of the game the running method sees (1 / s).
_CALLER_UNITS: contextvars.ContextVar[float] = contextvars.ContextVar("efce_caller_payoff_units", default=1.0)


def payoff_scale(game: Game) -> float:
    """The factor ``s`` the payoffs of ``game`` are multiplied by before a method runs: 1.0 when
    the largest magnitude ``m`` lies in ``[SAFE_LOW, SAFE_HIGH]`` (or the payoffs are all zero),
    else the power of two with ``m·s`` in ``[1, 2)``.

    >>> from efce import games
    >>> payoff_scale(games.farina_fig2())
    1.0
    """
    payoffs = np.asarray(game.payoffs)
    # Two reductions, no temporary array: a game's payoffs may take gigabytes.
    largest = max(float(payoffs.max(initial=0.0)), -float(payoffs.min(initial=0.0)))
    if largest == 0.0 or SAFE_LOW <= largest <= SAFE_HIGH:
        return 1.0
    _, exponent = math.frexp(largest)  # largest = f · 2^exponent, f in [0.5, 1)
    return math.ldexp(1.0, 1 - exponent)


def scaled_game(game: Game, scale: float) -> Game:
    """``game`` with every payoff multiplied by ``scale`` (``game`` itself when it is 1): the same
    tree, names and labels; only the payoff array is new."""
    if scale == 1.0:
        return game
    from efce.games.game import Game

    return Game(
        num_players=game.num_players,
        parent=game.parent,
        action=game.action,
        player=game.player,
        infoset=game.infoset,
        chance_prob=game.chance_prob,
        payoffs=np.asarray(game.payoffs, dtype=np.float64) * scale,
        terminal_index=game.terminal_index,
        labels=game.labels,
        name=game.name,
        player_names=game.player_names,
        original_order=game.original_order,
        infoset_keys=game.infoset_keys,
        comment=game.comment,
        outcome_names=game.outcome_names,
        openspiel_actions=game.openspiel_actions,
    )


def scaled_options(
    method: Method, values: Mapping[str, Any], scale: float, given: Mapping[str, Any]
) -> dict[str, Any]:
    """The options ``values`` of ``method`` (every option, defaults filled in) in the units of the
    game scaled by ``scale``: those the caller gave (``given``, not None) of ``unit="payoff"``
    multiplied by it, of ``unit="per payoff"`` divided by it; the defaults left as they are (the
    method's own tolerances, for payoffs of magnitude one).  A value that would leave the
    floating-point range is clamped to the largest finite one of its sign (a welfare threshold
    of -1e300 on payoffs of 1e-300 is no constraint either way)."""
    out = dict(values)
    if scale == 1.0:
        return out
    for option in method.options:
        value = out.get(option.name)
        if value is None or option.unit is None or given.get(option.name) is None:
            continue
        factor = scale if option.unit == "payoff" else 1.0 / scale
        with np.errstate(over="ignore"):
            scaled = float(np.float64(value) * np.float64(factor))
        if not math.isfinite(scaled):
            scaled = math.copysign(np.finfo(np.float64).max, scaled)
        out[option.name] = scaled
    return out


def scaled_row(row: TraceRow, factor: float, payoff_keys: frozenset[str]) -> TraceRow:
    """``row`` with its gap and its payoff-valued extra columns multiplied by ``factor``."""
    if factor == 1.0:
        return row
    extra = {k: (v * factor if k in payoff_keys and v is not None else v) for k, v in row.extra.items()}
    return dataclasses.replace(row, gap=row.gap * factor, extra=extra)


def _scaled_info(value: Any, factor: float, keys: frozenset[str], payoff: bool = False) -> Any:
    if isinstance(value, dict):
        return {k: _scaled_info(v, factor, keys, payoff or k in keys) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scaled_info(v, factor, keys, payoff) for v in value]
    if isinstance(value, np.ndarray) and payoff and value.dtype.kind in "iuf":
        return value.astype(np.float64) * factor
    number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )
    return float(value) * factor if payoff and number else value


def scaled_result(result: SolveResult, method: Method, scale: float, given: Mapping[str, Any]) -> SolveResult:
    """``result`` of a run on the game scaled by ``scale``, in the caller's units: its
    payoff-valued ``info`` keys (:attr:`~efce.solvers.options.Method.payoff_info`, at any depth)
    and trace columns divided by ``scale``; the options the caller gave in payoff units are
    reported as given (``given``), not as scaled back (a clamped value would differ)."""
    if scale == 1.0:
        return result
    factor = 1.0 / scale
    keys = method.payoff_info
    info = _scaled_info(result.info, factor, keys)
    for option in method.options:
        if option.unit is not None and option.name in info and given.get(option.name) is not None:
            info[option.name] = given[option.name]
    trace = [scaled_row(row, factor, keys) for row in result.trace]
    return dataclasses.replace(result, info=info, trace=trace)


@contextlib.contextmanager
def solving_scaled(scale: float) -> Iterator[None]:
    """Within this block a method runs on a game scaled by ``scale``: :func:`caller_payoff`
    turns its payoff-valued numbers into the caller's units (for its messages)."""
    token = _CALLER_UNITS.set(1.0 / scale)
    try:
        yield
    finally:
        _CALLER_UNITS.reset(token)


def caller_payoff(value: float) -> float:
    """A payoff-valued number of the running method in the caller's units (the method may run on
    a scaled game, :func:`solving_scaled`): for the numbers a message quotes.

    >>> caller_payoff(2.5)
    2.5
    """
    return value * _CALLER_UNITS.get()


def reporting(
    progress: Callable[[TraceRow], None] | None, factor: float, keys: frozenset[str]
) -> Callable[[TraceRow], None] | None:
    """``progress`` as a method calls it, with each row in the caller's units (None: None)."""
    if progress is None or factor == 1.0:
        return progress
    return lambda row: progress(scaled_row(row, factor, keys))
