"""The one library entry for solving a game: ``solve(game, method, **options)``.

Every method of the toolkit — regret minimization on the EFCE saddle point, CFR/CFR+, ICFR and
CFR-S, the trigger-regret dynamics, the LPs and the subgradient baseline — is reached through
:func:`solve`, which validates the options once (types, ranges, and whether the method uses
them) before any model is built.  Each method declares itself beside its code (its module's
``SOLVE_METHODS``: :class:`~solvers.options.Method`, with its options and their defaults, the
library function's own); this module only collects them (:data:`METHODS`, :data:`OPTIONS`).
The command line (``efce solve``) is a thin layer over it: its flags are generated from
:data:`OPTIONS`.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
from collections.abc import Callable
from typing import Any

from efce.errors import GameError, OptionError
from efce.games.game import Game
from efce.solvers.options import Method, Option, describe_value
from efce.solvers.result import SolveResult, TraceRow, finite_json
from efce.solvers.scaling import (
    payoff_scale,
    reporting,
    scaled_game,
    scaled_options,
    scaled_result,
    solving_scaled,
)

#: The modules that declare methods (each in its ``SOLVE_METHODS``), in the order
#: ``efce solve --help`` lists the methods.
METHOD_MODULES = (
    "efce.solvers.methods.efce",
    "efce.solvers.methods.cfr",
    "efce.solvers.methods.icfr",
    "efce.solvers.methods.trigger",
    "efce.baselines.lp_highs",
    "efce.baselines.lp_pdlp",
    "efce.baselines.lp_cvxpy",
    "efce.baselines.subgradient",
    "efce.baselines.lp_colgen",
)


def _collect_methods() -> dict[str, Method]:
    methods: dict[str, Method] = {}
    for module in METHOD_MODULES:
        for method in importlib.import_module(module).SOLVE_METHODS:
            if method.name in methods:  # a programming error of the package, not of the user
                raise RuntimeError(f"two modules declare the method '{method.name}'")
            methods[method.name] = method
    return methods


#: Method name → its declaration, collected from the methods' own modules.
METHODS: dict[str, Method] = _collect_methods()


def _merge_options(methods: dict[str, Method]) -> dict[str, Option]:
    """One :class:`~solvers.options.Option` per name over every method (for the command line's
    flags and for parsing ``METHOD[option=value]``): its type, the union of the methods'
    choices, and a help text naming the methods of each variant with their defaults; no range
    check (each method checks its own).

    Raises
    ------
    RuntimeError
        Two methods declare one option with different types (a programming error).
    """
    variants: dict[str, dict[Option, dict[Any, list[str]]]] = {}
    for method in methods.values():
        for option in method.options:
            by_default = variants.setdefault(option.name, {}).setdefault(
                dataclasses.replace(option, default=None), {}
            )
            by_default.setdefault(option.default, []).append(method.name)
    merged = {}
    for name, declared in variants.items():
        kinds = {option.kind for option in declared}
        if len(kinds) != 1:  # one flag parses one type
            raise RuntimeError(f"the methods declare option '{name}' with different types")
        # A method that takes any value (its own check decides) leaves the flag unrestricted.
        open_ended = any(option.choices is None for option in declared)
        choices = [] if open_ended else [c for option in declared for c in option.choices or ()]
        helps: dict[str, list[str]] = {}
        for option, by_default in declared.items():
            helps.setdefault(option.help, []).extend(
                ", ".join(names) + ("" if default is None else f": default {_shown(default)}")
                for default, names in by_default.items()
            )
        merged[name] = Option(
            name,
            kinds.pop(),
            "; ".join(f"{text} ({'; '.join(users)})" for text, users in helps.items()),
            choices=tuple(dict.fromkeys(choices)) if choices else None,
        )
    return merged


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


#: Option name → its type, choices and help over every method that takes it (the ``efce
#: solve`` flags).  The range and default of an option are each method's own
#: (``METHODS[name].options``).
OPTIONS: dict[str, Option] = _merge_options(METHODS)


def methods_using(option: str) -> list[str]:
    """The methods that take ``option``."""
    return [m.name for m in METHODS.values() if option in m.defaults]


def validate_options(method: str, options: dict[str, Any]) -> dict[str, Any]:
    """Check ``options`` for ``method`` and complete them with the method's defaults.

    Parameters
    ----------
    method : str
        A key of :data:`METHODS`.
    options : dict
        Option name → value; ``None`` values count as not given.

    Returns
    -------
    dict
        Every option of the method, given or default.

    Raises
    ------
    OptionError
        Unknown method or option, an option the method does not use (naming the methods that
        do) or does not use with the other options given
        (:attr:`~efce.solvers.options.Method.unused`), a value of the wrong type, not finite, out
        of range, or not among the choices.
    """
    if not isinstance(method, str):
        raise OptionError(
            f"method must be a method name (one of {', '.join(METHODS)}), got {describe_value(method)}"
        )
    if method not in METHODS:
        raise OptionError(f"unknown method '{method}'; valid: {', '.join(METHODS)}")
    if not isinstance(options, dict):
        raise OptionError(
            f"the options of {method} must be a dict of option name → value, got {describe_value(options)}"
        )
    spec = METHODS[method]
    values = dict(spec.defaults)
    for name, value in options.items():
        if value is None:
            continue
        if name not in OPTIONS:
            raise OptionError(f"unknown option '{name}'; valid: {', '.join(OPTIONS)}")
        if name not in spec.defaults:
            users = methods_using(name)
            raise OptionError(
                f"{method} does not use {OPTIONS[name].flag}; it is an option of "
                f"{', '.join(users) if users else 'no method'}"
            )
        values[name] = spec.option(name).validate(value)
    if spec.check is not None:
        spec.check(values)
    for name, why in (spec.unused(values) if spec.unused is not None else {}).items():
        if options.get(name) is not None:
            flag = OPTIONS[name].flag
            raise OptionError(f"{method} does not use {flag} here: {why}; drop {flag}")
    return values


def check_game_argument(game: Any, what: str = "game", allow_game: bool = True) -> Any:
    """A :class:`~games.game.Game`, or a spec string / ``.efg`` path (``str`` or path-like,
    returned as ``str``; a path-like one as a text that reads as a file,
    :func:`games.spec.path_spec`).

    Raises
    ------
    OptionError
        For any other type (None, a number, a list, ...) or an empty string.
    """
    expected = (
        "a Game, a spec string such as 'kuhn:players=3' or a .efg path"
        if allow_game
        else "a spec string such as 'kuhn:players=3' or a .efg path (each method runs in its "
        "own process, which builds the game itself)"
    )
    if isinstance(game, Game) and allow_game:
        return game
    if isinstance(game, os.PathLike):  # a path object is a file, whatever its name looks like
        from efce.games.spec import path_spec

        game = path_spec(game)
    if not isinstance(game, str):
        raise OptionError(f"{what} must be {expected}, got {describe_value(game)}")
    if not game.strip():
        raise OptionError(f"{what} must be {expected}, got an empty string")
    return game


def check_text_list(value: Any, what: str, example: str) -> list[str]:
    """A list (or tuple) of non-empty strings.  A single string is refused rather than read
    letter by letter.

    Raises
    ------
    OptionError
        Naming ``what`` and showing ``example``.
    """
    if isinstance(value, str):
        raise OptionError(
            f"{what} must be a list of names such as {example}, got the string {value!r} (write [{value!r}])"
        )
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise OptionError(f"{what} must be a list of names such as {example}, got {describe_value(value)}")
    return list(value)


def check_folder_argument(value: Any, what: str) -> str:
    """A folder path (``str`` or path-like), returned as ``str``.

    Raises
    ------
    OptionError
        For None, numbers, empty strings and other types.
    """
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise OptionError(f"{what} must be a folder path (a non-empty string), got {describe_value(value)}")
    return value


def device_methods() -> list[str]:
    """The methods that can return their correlated distribution (``--device-out``)."""
    return [m.name for m in METHODS.values() if m.writes_device]


def solve(
    game: Game | str,
    method: str,
    *,
    progress: Callable[[TraceRow], None] | None = None,
    device: bool = False,
    **options: Any,
) -> SolveResult:
    """Solve ``game`` with ``method``: the one entry point of the toolkit.

    Parameters
    ----------
    game : Game or str
        A game, or a spec string / ``.efg`` path (:func:`games.spec.make_game`).
    method : str
        One of :data:`METHODS`: ``rm``, ``cfr``, ``cfr+``, ``icfr``, ``cfr-s``, ``trigger``,
        ``coarse-trigger``, ``lp-highs``, ``lp-pdlp``, ``lp-cvxpy``, ``subgradient``.
    progress : callable, optional
        Called with each :class:`~solvers.result.TraceRow` of the result's trace, in order: as
        it is recorded, or, for a method that records its rows only at its end (an LP), then.
    device : bool
        Return the correlated distribution the method found as ``point`` (a
        :class:`~solvers.evaluation.device_gaps.FactoredDevice`; methods of :func:`device_methods`).
    **options
        See :data:`OPTIONS`; each method takes the options in its ``defaults``.

    Returns
    -------
    SolveResult
        The final point, status, trace and method-specific facts (``info``);
        ``compile_seconds``: the method's warm-up (:func:`warm_up`, and the LP front ends' own
        first-call costs) before the clock of ``seconds`` and the trace started;
        ``info["kernels"]``: whether the kernels ran compiled or, on a small game and without a
        time limit, as Python (:func:`efce.solvers.warm_up.tiered_run`).  Every number
        in payoff units (gaps, welfare, utilities, thresholds) is in the game's own units,
        whatever their magnitude (a game with payoffs far from one runs on scaled payoffs:
        :mod:`efce.solvers.scaling`).  A run that diverged (numbers that became NaN or
        infinite, :func:`finite_or_error`; a subgradient iterate far outside Ξ) has status
        ``error`` and a ``message``.

    Raises
    ------
    OptionError
        Before anything is built, for a bad method or option, ``device`` for a method that has
        no distribution to return, or an argument of the wrong type (a game that is neither a
        Game nor a string, a method that is not a string, ``progress`` that is not callable,
        ``device`` that is not a bool); the message names the argument.  Numbers
        may be of any numeric type (NumPy scalars included), but not bool.
    GameError
        A game the method cannot handle (players, chance), a model over the memory budget, or
        a device whose file could exceed :data:`efce.solvers.evaluation.device.DEVICE_BYTES_LIMIT`
        bytes or whose game has names a device file cannot hold (before iterating).
    """
    if not isinstance(method, str):
        raise OptionError(
            f"method must be a method name (one of {', '.join(METHODS)}), got {describe_value(method)}"
        )
    if progress is not None and not callable(progress):
        raise OptionError(
            f"progress must be a function called with each trace row, or None, got {describe_value(progress)}"
        )
    if not isinstance(device, bool) and type(device).__name__ != "bool_":
        raise OptionError(f"device must be True or False, got {describe_value(device)}")
    game, spec, values = _checked_request(game, method, device, options)
    unreachable = welfare_out_of_reach(game, method, values.get("welfare_threshold"))
    if unreachable is not None:
        return unreachable
    from efce.solvers.warm_up import tiered_run

    # Payoffs far from magnitude one run scaled by a power of two, every payoff-valued number
    # scaled back (efce.solvers.scaling): the methods' absolute tolerances keep their meaning.
    scale = payoff_scale(game)
    run_game, run_values = scaled_game(game, scale), scaled_options(spec, values, scale, options)
    reported: set[int] = set()  # the rows the method passed to progress itself
    shown = reporting(progress, 1.0 / scale, spec.payoff_info)

    def report(row: TraceRow) -> None:
        reported.add(id(row))
        if shown is not None:
            shown(row)

    with solving_scaled(scale):
        # First as Python where that is faster end to end, else compiled after the warm-up.
        ran = tiered_run(
            spec,
            run_game,
            run_values,
            device=device,
            progress=report if progress is not None else None,
            warm_up=warm_up,
        )
    result = scaled_result(ran, spec, scale, options)
    if progress is not None:
        # Every trace row reaches progress: a method that records its rows only at the end (an
        # LP's one row, the solver's answer) has them reported here, in order.
        for method_row, row in zip(ran.trace, result.trace, strict=True):
            if id(method_row) not in reported:
                progress(row)
    return finite_or_error(result)


def _checked_request(
    game: Game | str, method: str, device: bool, options: dict[str, Any]
) -> tuple[Game, Method, dict[str, Any]]:
    """:func:`solve`'s checks before anything runs: the game (built from its spec), the method's
    declaration and its validated options.

    Raises
    ------
    OptionError, GameError
        As :func:`solve` says.
    """
    game = check_game_argument(game)
    values = validate_options(method, options)
    if device and not METHODS[method].writes_device:
        raise OptionError(
            f"{method} has no correlated distribution to write; --device-out is an "
            f"option of {', '.join(device_methods())}"
        )
    if isinstance(game, str):
        from efce.games.spec import make_game

        game = make_game(game)
    check_capability(game, method)
    return game, METHODS[method], values


def compile_kernels(game: Game | str, method: str, *, device: bool = False, **options: Any) -> float:
    """Compile, or load from numba's cache, every kernel that ``solve(game, method, device=device,
    **options)`` would call, without running it: the method's warm-up (:func:`warm_up`) on the
    game and options the run would get (payoffs scaled as :mod:`efce.solvers.scaling` scales
    them), with compiled kernels.  A machine (a Dask worker, a class's laptops) can so be
    prepared ahead; ``efce compare`` compiles its runs' kernels this way in the background
    (:mod:`efce.experiments.compile_ahead`).

    Parameters
    ----------
    game, method, device, **options
        As for :func:`solve`.

    Returns
    -------
    float
        The warm-up's seconds; 0.0 for a method without one (``lp-highs`` and ``lp-cvxpy``,
        whose clock calls no kernel, pay their solver's first call in their own run).

    Raises
    ------
    OptionError, GameError
        What :func:`solve` refuses before it runs, and what the method's warm-up refuses (a
        model over the memory budget).
    """
    from efce.games.resources.compiled import kernel_mode

    game, spec, values = _checked_request(game, method, device, options)
    scale = payoff_scale(game)
    run_game, run_values = scaled_game(game, scale), scaled_options(spec, values, scale, options)
    with solving_scaled(scale), kernel_mode("compiled"):
        seconds = warm_up(spec, run_game, run_values, device=device)
    return 0.0 if seconds is None else seconds


#: Seconds a warm-up runs before :func:`warm_up` says on stderr what it is doing, when numba has
#: not started compiling before (a warm numba cache usually loads in less).
WARM_UP_NOTICE_SECONDS = 0.5

#: The lines :func:`warm_up` prints on stderr (``compare`` passes them on from its children, so
#: that a first run's minute of compiling is said, not silent).
WARM_UP_LINE = re.compile(
    r"^[^:\s]+: (compiling its kernels|loading its compiled kernels|compiled in|warmed up in) "
)


def warm_up(spec: Method, game: Game, values: dict[str, Any], *, device: bool = False) -> float | None:
    """Run ``spec``'s warm-up (:attr:`~efce.solvers.options.Method.warm_up`) before its timed run.

    A warm-up that compiles (numba starts compiling a kernel: it was not in the cache) prints one
    progress line on stderr at once, saying it compiles; one that loads for longer than
    :data:`WARM_UP_NOTICE_SECONDS` without compiling prints one saying it loads.  Either, when
    the warm-up ends, is followed by its time.

    Returns
    -------
    float or None
        Its seconds, or None when the method has no warm-up.
    """
    if spec.warm_up is None:
        return None
    import sys
    import threading
    import time

    from efce.interrupts import discarding
    from efce.solvers.warm_up import compile_notice

    # What has been said: the first compile event says "compiling" at once, even after the
    # timer said "loading" (a cold run's first half second may pass before numba compiles).
    said = {"compiling": False, "loading": False}
    lock = threading.Lock()

    def notice(compiling: bool) -> None:
        with lock:
            if said["compiling"] or (said["loading"] and not compiling):
                return
            said["compiling" if compiling else "loading"] = True
        what = (
            "compiling its kernels (first run; cached after)" if compiling else "loading its compiled kernels"
        )
        print(f"{spec.name}: {what}...", file=sys.stderr, flush=True)

    timer = threading.Timer(WARM_UP_NOTICE_SECONDS, notice, args=(False,))
    timer.daemon = True
    started = time.perf_counter()
    timer.start()
    try:
        # A stop during the warm-up ends it at the tiny run's next boundary: no result to keep.
        with compile_notice(lambda: notice(True)), discarding():
            spec.warm_up(game, values, device=device)
    finally:
        timer.cancel()
    seconds = time.perf_counter() - started
    if said["compiling"] or said["loading"]:
        verb = "compiled" if said["compiling"] else "warmed up"
        print(f"{spec.name}: {verb} in {seconds:.1f} s, outside the timed run", file=sys.stderr, flush=True)
    return seconds


def check_capability(game: Game, method: str) -> None:
    """Refuse, before any model is built, a game ``method`` does not solve by its declared
    capability (:attr:`~solvers.options.Method.players`, :attr:`~solvers.options.Method.chance`:
    a method exact on public chance only refuses private chance, saying who does not observe
    which chance move — :func:`efce.games.chance.chance_visibility`).

    Raises
    ------
    GameError
        Naming the game's players and chance and the methods that do solve it.
    """
    from efce.games.chance import chance_visibility

    spec = METHODS[method]
    players = game.num_players
    visibility = chance_visibility(game)
    if spec.handles(players, visibility.kind):
        return
    able = [m.name for m in METHODS.values() if m.handles(players, visibility.kind)]
    why = (
        "; a one-player game has nothing to correlate: its EFCE is the player's best plan"
        if players == 1
        else ""
    )
    solvers = f"methods that solve it: {', '.join(able) or 'none'}{why}"
    if spec.players in (None, players) and visibility.kind == "private" and spec.chance == "public":
        raise GameError(
            f"{method} solves {spec.capability}; in {game.name}, {visibility.reason} (private "
            f"chance), so the von Stengel–Forges polytope is not the set of correlation plans "
            f"({solvers})"
        )
    has = f"{players} player{'s' if players != 1 else ''}" + (
        "" if visibility.kind == "none" else f" and {visibility.kind} chance moves"
    )
    raise GameError(f"{method} solves {spec.capability}; {game.name} has {has} ({solvers})")


#: Relative slack on "the threshold exceeds the largest terminal welfare" (rounding of sums).
WELFARE_SLACK = 1e-9


def welfare_out_of_reach(game: Game, method: str, threshold: float | None) -> SolveResult | None:
    """The ``infeasible`` result every method gives, before any model is built, when the welfare
    threshold exceeds the largest social welfare of any terminal (a correlated plan's welfare
    is a convex combination of terminal welfares, so none reaches it); None otherwise.

    Returns
    -------
    SolveResult or None
        Status ``infeasible``, no point, ``info`` with the threshold, the largest terminal
        welfare and a message.
    """
    import numpy as np

    if threshold is None or game.num_terminals == 0:
        return None
    best = float(np.asarray(game.payoffs, dtype=np.float64).sum(axis=1).max())
    if threshold <= best + WELFARE_SLACK * max(1.0, abs(best)):
        return None
    message = f"no EFCE has welfare ≥ {threshold:g}: the largest social welfare of any terminal is {best:g}"
    return SolveResult(
        method,
        None,
        "infeasible",
        0,
        0.0,
        0.0,
        info={
            "welfare_threshold": threshold,
            "max_terminal_welfare": best,
            "threshold_met": False,
            "message": message,
        },
    )


def finite_or_error(result: SolveResult) -> SolveResult:
    """``result``, or the same run with status ``error`` when any reported number is NaN or
    infinite (a diverged run: e.g. a huge subgradient step makes the iterates NaN, and a NaN
    gap would otherwise read as a perfect plan).  The non-finite values are reported as None.

    Returns
    -------
    SolveResult
        ``result`` itself, or a new result (``result`` is not changed) with status ``error``,
        ``info`` JSON-ready with ``non_finite`` and a ``message`` naming the non-finite
        quantities, the finite trace rows, and no point if the point was not finite.
    """
    import numpy as np

    bad: list[str] = []
    info = finite_json(result.info, bad)
    for row in result.trace:
        for field_name in ("gap", "infeasibility"):
            finite_json(getattr(row, field_name), bad, f"trace {field_name}")
    point = result.point
    arrays = point if isinstance(point, (list, tuple)) else [point]
    point_diverged = any(
        isinstance(a, np.ndarray) and a.dtype.kind in "fc" and not np.all(np.isfinite(a)) for a in arrays
    )
    if point_diverged:
        bad.append("the final point")
    if not bad:
        return result
    names = list(dict.fromkeys(bad))
    message = (
        f"{result.method} diverged: non-finite values (NaN or infinity) in "
        f"{', '.join(names)}; the run has no valid result (e.g. a step size too large)"
    )
    return dataclasses.replace(
        result,
        point=None if point_diverged else point,
        status="error",
        info={**info, "non_finite": names, "message": message},
        trace=[r for r in result.trace if np.isfinite(r.gap) and np.isfinite(r.infeasibility)],
    )
