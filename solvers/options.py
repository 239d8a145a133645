"""How a method declares itself: :class:`~efce.solvers.options.Option` (the type, range, help
and default of one option) and :class:`~efce.solvers.options.Method` (its name, description,
capability, options and runner).

Every method module declares, beside its code, the options of its methods (``OPTIONS``, whose
defaults the library function takes as its own) and the methods themselves (``SOLVE_METHODS``,
a tuple of :class:`Method`); :data:`efce.experiments.solve.METHODS` collects them, validates
options once before any model is built, and generates the ``efce solve`` flags from them.  The
options several methods share — an iteration budget, a time limit, a target gap, ... — are
declared once here (:data:`ITERATIONS`, :data:`TIME_LIMIT`, ...) and given each method's default
with :meth:`Option.with_default`.

This module lives in ``solvers/`` with what every method shares (the result type, the iteration
driver): the methods of ``solvers/methods/`` and of ``baselines/`` both import it, as they import
:mod:`solvers.result`, and ``experiments/`` collects from both.

>>> ITERATIONS.with_default(10).validate(3.0)
3
>>> TARGET_GAP.validate(-1)
Traceback (most recent call last):
...
efce.errors.OptionError: --target-gap must be a number ≥ 0, got -1.0
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from efce.concepts import CONCEPTS, DEFAULT_CONCEPT
from efce.errors import OptionError
from efce.solvers.regret.registry import RULE_NAMES

if TYPE_CHECKING:
    from efce.solvers.result import SolveResult


@dataclass(frozen=True)
class Option:
    """One solver option: its type, its valid range, its help text and its default.

    Attributes
    ----------
    name : str
        The keyword of :func:`efce.solve` (``--name-with-dashes`` on the command line).
    kind : type
        ``int``, ``float``, ``str`` or ``bool`` (a flag without a value on the command line).
    help : str
        What the option does (for ``efce solve --help``).
    check : callable, optional
        ``check(value)`` returns what is expected (``"a positive number"``) when ``value`` is
        out of range, else None.
    choices : tuple of str, optional
        The values a ``str`` option takes.
    default : object
        The method's default (None: the option is off, or the library decides, as documented).
    unit : str, optional
        ``"payoff"`` for a number in the game's payoff units (a target gap, a welfare
        threshold), ``"per payoff"`` for one in their inverse (a subgradient step size), None
        for a unitless one: how it is scaled when the method runs on a game whose payoffs are
        scaled (:mod:`efce.solvers.scaling`).
    """

    name: str
    kind: type
    help: str
    check: Callable[[Any], str | None] | None = None
    choices: tuple[str, ...] | None = None
    default: Any = None
    unit: str | None = None

    def with_default(self, default: Any) -> Option:
        """This option with another default (one method's)."""
        return dataclasses.replace(self, default=default)

    @property
    def flag(self) -> str:
        """The command-line flag, ``--time-limit`` for ``time_limit``."""
        return "--" + self.name.replace("_", "-")

    def validate(self, value: Any) -> Any:
        """``value`` converted to the option's type (an integral float for an ``int`` option)
        and checked against its range and choices.

        Returns
        -------
        int, float, str or bool

        Raises
        ------
        OptionError
            A value of the wrong type (a bool is never a number), not finite, out of range, or
            not among the choices; the message names the flag and what is expected.
        """
        flag = self.flag
        # Numbers of any numeric type (NumPy scalars included) are accepted; bools are not.
        if self.kind is int:
            if is_integer(value):
                value = int(value)
            elif is_real(value) and math.isfinite(float(value)) and float(value).is_integer():
                value = int(float(value))
            else:
                raise OptionError(f"{flag} must be an integer, got {describe_value(value)}")
        elif self.kind is float:
            if not is_real(value):
                raise OptionError(f"{flag} must be a number, got {describe_value(value)}")
            try:
                value = float(value)
            except OverflowError:  # an int beyond the float range
                raise OptionError(
                    f"{flag} must be a finite number, got an integer of {len(str(abs(value)))} digits"
                ) from None
            if not math.isfinite(value):
                raise OptionError(f"{flag} must be a finite number, got {value}")
        elif self.kind is bool:
            if not _is_bool(value):
                raise OptionError(f"{flag} must be True or False, got {describe_value(value)}")
            value = bool(value)
        elif not isinstance(value, str):
            raise OptionError(f"{flag} must be a string, got {describe_value(value)}")
        if self.choices is not None and value not in self.choices:
            raise OptionError(f"{flag} must be one of {', '.join(self.choices)}; got '{value}'")
        if self.check is not None and (expected := self.check(value)) is not None:
            raise OptionError(f"{flag} must be {expected}, got {value}")
        return value


@dataclass(frozen=True)
class Method:
    """A solver reachable through :func:`efce.solve`, declared in its own module: its name,
    description, capability (:attr:`players`, :attr:`chance`), :attr:`options` and runner
    (:attr:`run`), documented field by field below."""

    #: The ``method`` argument (``"rm"``, ``"cfr+"``, ...).
    name: str
    #: One line for ``efce solve --help`` (with the paper where it has one).
    description: str
    #: Every option the method takes, with the method's defaults (those of its library function:
    #: one default per option).
    options: tuple[Option, ...]
    #: ``run(game, *, progress, **options)`` (and the keyword ``device`` when
    #: :attr:`writes_device`) → :class:`~solvers.result.SolveResult`; ``options`` holds every
    #: option of :attr:`options`, validated.
    run: Callable[..., SolveResult]
    #: The number of players the method solves (2), None for any number.
    players: int | None = 2
    #: The chance moves the game may have (:data:`CHANCE_SCOPES`): ``"any"``; ``"public"``, none
    #: or public ones only (:func:`efce.games.chance.chance_visibility`: where the two-player LPs
    #: and ``rm`` are exact); ``"none"``.
    chance: str = "any"
    #: The method can return its correlated distribution as a device (``solve(...,
    #: device=True)``, ``efce solve --device-out``).
    writes_device: bool = False
    #: ``check(options)``: checks that involve several options (run by
    #: :func:`efce.experiments.solve.validate_options`, before any game is built); raises
    #: :class:`~efce.errors.OptionError`.
    check: Callable[[dict[str, Any]], None] | None = None
    #: ``warm_up(game, options, device=False)`` compiles (or loads from numba's cache) every
    #: kernel variant the run ``run(game, device=device, **options)`` will call, with the types
    #: it will use (:func:`efce.solvers.warm_up.warm_up_run`): :func:`efce.experiments.solve.solve`
    #: calls it before :attr:`run` and reports its seconds as the result's ``compile_seconds``,
    #: outside the run's clock.  None: the method warms up inside :attr:`run` itself (``lp-highs``
    #: and ``lp-cvxpy``, whose clock calls no kernel, pay their solver's first call in the
    #: process that solves) or not at all.  ``lp-pdlp``'s is
    #: :func:`~baselines.efce_lp.warm_up_lp`.
    warm_up: Callable[..., None] | None = None
    #: The warm-up compiles numba kernels of the method's own on an empty cache (tens of seconds;
    #: not only the game builders' that every method calls): ``efce compare`` runs such a method
    #: after the others and compiles its kernels in the background meanwhile
    #: (:mod:`efce.experiments.compile_ahead`).
    compiles_kernels: bool = False
    #: The run itself compiles (or loads), before its clock starts and in any mode, every kernel
    #: variant its clock calls, or its clock calls none: ``lp-highs`` and ``lp-cvxpy``, whose
    #: clock is the solver call alone, and ``lp-pdlp``, which evaluates the zero plan compiled
    #: before its stages.  Its setup and its report then run each kernel as Python where the
    #: call is small (``auto`` mode, :mod:`efce.games.resources.compiled`), with a time limit
    #: too, since no Python-run kernel can reach its clock
    #: (:func:`efce.solvers.warm_up.tiered_run`).  False (an iteration loop's kernels): the
    #: warm-up compiles them.
    warms_its_clock: bool = False
    #: ``unused(options)`` (every option, defaults filled in) → the options the method does not
    #: use in that configuration, each with why; giving one of them is refused
    #: (:func:`efce.experiments.solve.validate_options`).
    unused: Callable[[dict[str, Any]], dict[str, str]] | None = None
    #: The keys of the result's ``info`` (at any depth) and the trace's extra columns whose
    #: numbers are in payoff units (gaps, welfare, utilities, thresholds): scaled back when the
    #: method ran on a game with scaled payoffs (:mod:`efce.solvers.scaling`).
    payoff_info: frozenset[str] = frozenset()
    #: The fewest players a game must have (a one-player game has no correlation to compute:
    #: its EFCE is the player's best plan).
    min_players: int = 2

    @property
    def defaults(self) -> dict[str, Any]:
        """Option name → the method's default, for every option it takes (a new dict)."""
        return {o.name: o.default for o in self.options}

    def option(self, name: str) -> Option:
        """The declaration of option ``name``.

        Raises
        ------
        KeyError
            The method does not take ``name``.
        """
        for o in self.options:
            if o.name == name:
                return o
        raise KeyError(name)

    def __post_init__(self):
        if self.chance not in CHANCE_SCOPES:
            raise ValueError(f"Method.chance must be one of {', '.join(CHANCE_SCOPES)}, got {self.chance!r}")

    def handles(self, players: int, chance: str) -> bool:
        """Whether the method solves games with ``players`` players whose chance moves are of
        kind ``chance`` (``"none"``, ``"public"`` or ``"private"``:
        ``ChanceVisibility.kind``)."""
        allowed = {"any": True, "public": chance != "private", "none": chance == "none"}[self.chance]
        fits = players == self.players if self.players is not None else players >= self.min_players
        return fits and allowed

    @property
    def capability(self) -> str:
        """The games it solves, in words: ``"two-player games without chance moves"``."""
        if self.players is None:
            players = f"games of {_COUNTS.get(self.min_players, self.min_players)} or more players"
        else:
            players = f"{_COUNTS.get(self.players, self.players)}-player games"
        return f"{players}{CHANCE_SCOPES[self.chance]}"


_COUNTS = {2: "two", 3: "three"}

#: :attr:`Method.chance` → how :attr:`Method.capability` words it.
CHANCE_SCOPES = {
    "any": ", chance moves allowed",
    "public": " without chance moves or with public ones (every player observes every chance outcome)",
    "none": " without chance moves",
}


def defaults(options: tuple[Option, ...]) -> Mapping[str, Any]:
    """Option name → default of ``options``, read-only: what a method's library function takes
    as its own defaults (``iterations: int = DEFAULTS["iterations"]``), so that the function and
    :func:`efce.solve` run one configuration."""
    return MappingProxyType({o.name: o.default for o in options})


def is_integer(value: Any) -> bool:
    """An integer of any type (``int``, NumPy integers, any :class:`numbers.Integral`), not a
    bool (``True`` is an ``int`` to Python, never a count to us)."""
    return isinstance(value, numbers.Integral) and not _is_bool(value)


def is_real(value: Any) -> bool:
    """A real number of any type (``int``, ``float``, NumPy scalars, :class:`numbers.Real`),
    not a bool."""
    return isinstance(value, numbers.Real) and not _is_bool(value)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool) or type(value).__name__ == "bool_"  # numpy.bool_ too


def describe_value(value: Any) -> str:
    """``value`` for a message: its type and a short repr."""
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{type(value).__name__} {text}" if not isinstance(value, str) else f"the string {text}"


# ----------------------------------------------------------------------------- ranges
def positive(value: float) -> str | None:
    """Range check of :class:`Option`: ``value > 0``."""
    return None if value > 0 else "a positive number"


def at_least_one(value: int) -> str | None:
    """Range check of :class:`Option`: ``value ≥ 1``."""
    return None if value >= 1 else "an integer ≥ 1"


def nonnegative(value: float) -> str | None:
    """Range check of :class:`Option`: ``value ≥ 0``."""
    return None if value >= 0 else "a number ≥ 0"


def thread_range(value: int) -> str | None:
    """Range check of :class:`Option`: from 1 to the cores numba may use."""
    from efce.solvers.backends import available_threads

    most = available_threads()
    return None if 1 <= value <= most else f"an integer from 1 to {most} (the cores available)"


# ----------------------------------------------------------------------------- shared options
#: The iteration budget (each iterative method gives its default).
ITERATIONS = Option("iterations", int, "iteration budget", at_least_one)
#: Seconds for the iterations (or the solver call); None: no limit.
TIME_LIMIT = Option("time_limit", float, "seconds for the iterations (or the solver call)", positive)
#: Where an iterative method stops (each gives its default; None: the whole budget).
TARGET_GAP = Option(
    "target_gap",
    float,
    "stop once the max deviation (or exploitability) is at most this "
    "(0: run the whole budget unless the gap reaches exactly 0)",
    nonnegative,
    unit="payoff",
)
#: A lower bound on the social welfare of the EFCE sought; None: any EFCE.
WELFARE_THRESHOLD = Option(
    "welfare_threshold", float, "look for an EFCE with social welfare at least this", unit="payoff"
)
#: The local regret minimizer at every simplex (:data:`solvers.regret.registry.RULE_NAMES`).
LOCAL = Option("local", str, "local regret minimizer at every simplex", choices=RULE_NAMES)
#: Which correlated equilibrium a method computes (:mod:`efce.concepts`).
CONCEPT = Option(
    "concept",
    str,
    "which equilibrium: efce (a trigger fires on a recommended action), efcce (on reaching an "
    "infoset, before its recommendation), nfcce (each player commits at the root)",
    choices=tuple(CONCEPTS),
    default=DEFAULT_CONCEPT,
)
#: The random seed of a method that samples.
SEED = Option("seed", int, "random seed", nonnegative, default=0)
#: The payoff-valued numbers every equilibrium method reports (:attr:`Method.payoff_info`): its
#: gaps and the welfare and utilities of its result, and the gap columns of its trace.
EQUILIBRIUM_REPORT = frozenset(
    {"efce_gap", "efcce_gap", "nfcce_gap", "welfare", "utilities", "efce", "efcce", "nfcce"}
)

#: Whether a solver library prints its own log (its banner, its progress) on stdout; off by
#: default, so that nothing but the toolkit's output reaches a library caller's stdout.
VERBOSE = Option(
    "verbose",
    bool,
    "let the solver library print its own log (HiGHS's banner and progress, PDLP's, the cvxpy solver's)",
    default=False,
)
#: Threads of the compiled passes; None: numba's setting (all cores unless changed).
THREADS = Option(
    "threads",
    int,
    "threads of the compiled chain passes and payoff operator (default: all "
    "cores; the iterates are the same for every count)",
    thread_range,
)

__all__ = [
    "EQUILIBRIUM_REPORT",
    "Option",
    "Method",
    "defaults",
    "is_integer",
    "is_real",
    "describe_value",
    "positive",
    "at_least_one",
    "nonnegative",
    "thread_range",
    "ITERATIONS",
    "TIME_LIMIT",
    "TARGET_GAP",
    "WELFARE_THRESHOLD",
    "CONCEPT",
    "CHANCE_SCOPES",
    "LOCAL",
    "SEED",
    "THREADS",
    "VERBOSE",
]
