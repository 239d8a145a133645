"""The one library entry for solving a game: ``solve(game, method, **options)``.

Every method of the toolkit — regret minimization on the EFCE saddle point, CFR/CFR+, ICFR and
CFR-S, the trigger-regret dynamics, the LPs and the subgradient baseline — is reached through
:func:`solve`, which validates
the options once (types, ranges, and whether the method uses them) before any model is built.
The command line (``efce solve``) is a thin layer over it: its flags are generated from
:data:`OPTIONS`.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from efce.errors import OptionError
from efce.games.game import Game
from efce.solvers.regret.registry import RULE_NAMES
from efce.solvers.result import SolveResult


@dataclass(frozen=True)
class Option:
    """One solver option: its type, its valid range, and its help text.

    ``check`` returns an error message (what is expected) or None.
    """

    name: str
    kind: type
    help: str
    check: Callable[[Any], str | None] | None = None
    choices: tuple[str, ...] | None = None


def _positive(v):
    return None if v > 0 else "a positive number"


def _at_least_one(v):
    return None if v >= 1 else "an integer ≥ 1"


def _thread_count(v):
    from efce.solvers.backends import available_threads

    most = available_threads()
    return None if 1 <= v <= most else f"an integer from 1 to {most} (the cores available)"


def _nonnegative(v):
    return None if v >= 0 else "a number ≥ 0"


OPTIONS: dict[str, Option] = {
    o.name: o
    for o in [
        Option("iterations", int, "iteration budget", _at_least_one),
        Option("time_limit", float, "seconds for the iterations (or the solver call)", _positive),
        Option(
            "target_gap",
            float,
            "stop once the max deviation (or exploitability) is at most this "
            "(0: run the whole budget unless the gap reaches exactly 0; lp-pdlp: its relative "
            "tolerance, > 0)",
            _nonnegative,
        ),
        Option("welfare_threshold", float, "look for an EFCE with social welfare at least this"),
        Option(
            "objective",
            str,
            "LP objective; for rm, 'welfare' bisects the welfare threshold for an "
            "interval around the optimal EFCE welfare",
            choices=("welfare", "feasibility", "player1", "player2"),
        ),
        Option("lp_solver", str, "the cvxpy solver (CLARABEL, HIGHS, PDLP, SCS, ...; installed ones)"),
        Option("local", str, "local regret minimizer at every simplex", choices=RULE_NAMES),
        Option("step_size", float, "subgradient step size", _positive),
        Option(
            "step_rule",
            str,
            "subgradient step rule: constant α, α/√t, or Polyak's f/‖g‖² capped at α",
            choices=("constant", "sqrt", "polyak"),
        ),
        Option(
            "start",
            str,
            "subgradient initial plan (the uniform plan is an exact EFCE in some games)",
            choices=("uniform", "random"),
        ),
        Option("seed", int, "random seed", _nonnegative),
        Option(
            "averaging",
            str,
            "rm: weight of iteration t in the average plan: t (linear, the paper's), "
            "t² (quadratic) or 1 (uniform)",
            choices=("linear", "quadratic", "uniform"),
        ),
        Option(
            "updates",
            str,
            "rm: the deviator answers the correlator's fresh point (alternating, the "
            "paper's) or both move from the previous points (simultaneous)",
            choices=("alternating", "simultaneous"),
        ),
        Option(
            "threads",
            int,
            "threads of the compiled chain passes and payoff operator (default: all "
            "cores; the iterates are the same for every count)",
            _thread_count,
        ),
    ]
}


@dataclass(frozen=True)
class Method:
    """A solver reachable through :func:`solve`: its options and their defaults."""

    name: str
    description: str
    defaults: dict[str, Any]
    run: Callable[..., SolveResult]
    #: The method can return its correlated distribution as a device (``solve(..., device=True)``,
    #: ``efce solve --device-out``); its ``run`` then takes the keyword ``device``.
    writes_device: bool = False
    #: Checks that involve several options or the method's own reading of one (run by
    #: :func:`validate_options`, so before any game is built); raises :class:`OptionError`.
    check: Callable[[dict[str, Any]], None] | None = None


def _check_rm(o):
    if o["objective"] not in ("feasibility", "welfare"):
        raise OptionError(
            f"rm takes --objective feasibility (any EFCE) or welfare (the optimal-welfare "
            f"interval), not {o['objective']}"
        )
    if o["objective"] == "welfare" and o["welfare_threshold"] is not None:
        raise OptionError("rm --objective welfare searches the threshold itself; drop --welfare-threshold")


def _check_pdlp(o):
    # 0 means "run the whole budget" for the iterative methods; PDLP's --target-gap is instead
    # its relative tolerance, where 0 is no stopping rule at all.
    if o["target_gap"] is not None and o["target_gap"] <= 0:
        raise OptionError(
            f"lp-pdlp reads --target-gap as its relative tolerance, which must be "
            f"a positive number, got {o['target_gap']:g}"
        )


def _check_cvxpy(o):
    from efce.baselines.lp_cvxpy import installed_lp_solvers

    installed = installed_lp_solvers()
    if o["lp_solver"].upper() not in installed:  # names are case-insensitive, as in the backend
        raise OptionError(
            f"--lp-solver: cvxpy solver '{o['lp_solver']}' is not installed; "
            f"installed: {', '.join(installed)}"
        )


def _run_rm(game, *, progress, **o):
    from efce.solvers.methods.efce import solve_efce
    from efce.solvers.regret.registry import make_rule

    if o["objective"] == "welfare":
        from efce.solvers.methods.welfare import solve_optimal_welfare

        # Each bisection step is one rm run, so --iterations caps a step (as it caps a plain run);
        # the bisection itself ends at the interval width, the time limit, or when no step decides.
        return solve_optimal_welfare(
            game,
            tolerance=WELFARE_INTERVAL_WIDTH,
            time_limit=o["time_limit"],
            step_iterations=o["iterations"],
            rule=o["local"],
            averaging=o["averaging"],
            alternating=o["updates"] == "alternating",
            threads=o["threads"],
        )
    return solve_efce(
        game,
        iterations=o["iterations"],
        time_limit=o["time_limit"],
        target_gap=o["target_gap"],
        welfare_threshold=o["welfare_threshold"],
        rule=make_rule(o["local"]),
        progress=progress,
        threads=o["threads"],
        averaging=o["averaging"],
        alternating=o["updates"] == "alternating",
    )


def _run_cfr(variant):
    def run(game, *, progress, **o):
        from efce.solvers.methods.cfr import solve_cfr
        from efce.solvers.regret.registry import make_rule

        return solve_cfr(
            game,
            iterations=o["iterations"],
            variant=variant,
            rule=make_rule(o["local"]) if o["local"] else None,
            time_limit=o["time_limit"],
            target_gap=o["target_gap"],
            progress=progress,
            threads=o["threads"],
        )

    return run


def _run_icfr(variant):
    def run(game, *, progress, device=False, **o):
        from efce.solvers.methods.icfr import solve_icfr

        if device:
            # The empirical frequency has at most one joint plan per iteration: refuse up front
            # what could not be written (the exact support is checked again when writing).
            from efce.solvers.evaluation.device import check_device_size
            from efce.solvers.methods.trigger import joint_plan_count

            check_device_size(
                min(o["iterations"], joint_plan_count(game)),
                f"joint plans (bound for {o['iterations']} iterations)",
            )
        return solve_icfr(
            game,
            o["iterations"],
            seed=o["seed"],
            method=variant,
            time_limit=o["time_limit"],
            target_gap=o["target_gap"],
            progress=progress,
        )

    return run


def _run_trigger(coarse):
    def run(game, *, progress, device=False, **o):
        from efce.solvers.methods.trigger import solve_trigger

        return solve_trigger(
            game,
            o["iterations"],
            coarse=coarse,
            rule=o["local"],
            time_limit=o["time_limit"],
            target_gap=o["target_gap"],
            progress=progress,
            device=device,
        )

    return run


def _run_lp(backend):
    def run(game, *, progress, **o):
        from efce import baselines

        common = dict(
            objective={"player1": 0, "player2": 1}.get(o["objective"], o["objective"]),
            time_limit=o["time_limit"],
            welfare_threshold=o["welfare_threshold"],
        )
        if backend == "highs":
            return baselines.solve_lp_highs(game, **common)
        if backend == "pdlp":
            return baselines.solve_lp_pdlp(game, tolerance=o["target_gap"], progress=progress, **common)
        return baselines.solve_lp_cvxpy(game, solver=o["lp_solver"], **common)

    return run


def _run_subgradient(game, *, progress, **o):
    from efce.baselines import solve_subgradient

    return solve_subgradient(
        game,
        iterations=o["iterations"],
        time_limit=o["time_limit"],
        step_size=o["step_size"],
        step_rule=o["step_rule"],
        seed=o["seed"],
        start=o["start"],
        progress=progress,
    )


_COMMON = {"time_limit": None}
#: Width of the welfare interval ``rm --objective welfare`` stops at.
WELFARE_INTERVAL_WIDTH = 1e-2
METHODS: dict[str, Method] = {
    m.name: m
    for m in [
        Method(
            "rm",
            "regret minimization on the EFCE saddle point (Farina et al. 2019, Algorithm 1)",
            {
                **_COMMON,
                "iterations": 10_000,
                "target_gap": 1e-3,
                "welfare_threshold": None,
                "objective": "feasibility",
                "local": "prm+",
                "averaging": "linear",
                "updates": "alternating",
                "threads": None,
            },
            _run_rm,
            check=_check_rm,
        ),
        Method(
            "cfr",
            "CFR (Nash equilibrium, two players)",
            {**_COMMON, "iterations": 1000, "target_gap": None, "local": None, "threads": None},
            _run_cfr("cfr"),
        ),
        Method(
            "cfr+",
            "CFR+ (Nash equilibrium, two players)",
            {**_COMMON, "iterations": 1000, "target_gap": None, "local": None, "threads": None},
            _run_cfr("cfr+"),
        ),
        Method(
            "icfr",
            "ICFR (EFCE, n players, chance; Celli et al. 2020)",
            {**_COMMON, "iterations": 10_000, "target_gap": None, "seed": 0},
            _run_icfr("icfr"),
            writes_device=True,
        ),
        Method(
            "cfr-s",
            "CFR-S (EFCCE, n players, chance; Celli et al. 2020)",
            {**_COMMON, "iterations": 10_000, "target_gap": None, "seed": 0},
            _run_icfr("cfr-s"),
            writes_device=True,
        ),
        Method(
            "trigger",
            "deterministic trigger-regret dynamics (EFCE, n players, chance; Farina et al. 2022)",
            {**_COMMON, "iterations": 10_000, "target_gap": None, "local": "prm+"},
            _run_trigger(False),
            writes_device=True,
        ),
        Method(
            "coarse-trigger",
            "deterministic coarse-trigger-regret dynamics (EFCCE, n players, chance)",
            {**_COMMON, "iterations": 10_000, "target_gap": None, "local": "prm+"},
            _run_trigger(True),
            writes_device=True,
        ),
        Method(
            "lp-highs",
            "the von Stengel–Forges EFCE LP solved by HiGHS",
            {**_COMMON, "welfare_threshold": None, "objective": "welfare"},
            _run_lp("highs"),
        ),
        Method(
            "lp-pdlp",
            "the von Stengel–Forges EFCE LP solved by OR-Tools PDLP (first-order); "
            "--target-gap is its relative tolerance",
            {**_COMMON, "welfare_threshold": None, "objective": "welfare", "target_gap": 1e-6},
            _run_lp("pdlp"),
            check=_check_pdlp,
        ),
        Method(
            "lp-cvxpy",
            "the von Stengel–Forges EFCE LP through cvxpy",
            {**_COMMON, "welfare_threshold": None, "objective": "welfare", "lp_solver": "HIGHS"},
            _run_lp("cvxpy"),
            check=_check_cvxpy,
        ),
        Method(
            "subgradient",
            "subgradient descent on the max deviation with incremental projection",
            {
                **_COMMON,
                "iterations": 10_000,
                "step_size": 1e-3,
                "step_rule": "constant",
                "start": "uniform",
                "seed": 0,
            },
            _run_subgradient,
        ),
    ]
}


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
        do), a value of the wrong type, not finite, out of range, or not among the choices.
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
                f"{method} does not use {_flag(name)}; it is an option of "
                f"{', '.join(users) if users else 'no method'}"
            )
        values[name] = _check_value(OPTIONS[name], value)
    if spec.check is not None:
        spec.check(values)
    return values


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


def check_game_argument(game: Any, what: str = "game", allow_game: bool = True) -> Any:
    """A :class:`~games.game.Game`, or a spec string / ``.efg`` path (``str`` or path-like,
    returned as ``str``).

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
    if isinstance(game, os.PathLike):
        game = os.fspath(game)
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


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _check_value(option: Option, value: Any) -> Any:
    flag = _flag(option.name)
    # Numbers of any numeric type (NumPy scalars included) are accepted; bools are not.
    if option.kind is int:
        if is_integer(value):
            value = int(value)
        elif is_real(value) and math.isfinite(float(value)) and float(value).is_integer():
            value = int(float(value))
        else:
            raise OptionError(f"{flag} must be an integer, got {describe_value(value)}")
    elif option.kind is float:
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
    elif not isinstance(value, str):
        raise OptionError(f"{flag} must be a string, got {describe_value(value)}")
    if option.choices is not None and value not in option.choices:
        raise OptionError(f"{flag} must be one of {', '.join(option.choices)}; got '{value}'")
    if option.check is not None and (expected := option.check(value)) is not None:
        raise OptionError(f"{flag} must be {expected}, got {value}")
    return value


def device_methods() -> list[str]:
    """The methods that can return their correlated distribution (``--device-out``)."""
    return [m.name for m in METHODS.values() if m.writes_device]


def solve(game: Game | str, method: str, *, progress=None, device: bool = False, **options) -> SolveResult:
    """Solve ``game`` with ``method``: the one entry point of the toolkit.

    Parameters
    ----------
    game : Game or str
        A game, or a spec string / ``.efg`` path (:func:`games.spec.make_game`).
    method : str
        One of :data:`METHODS`: ``rm``, ``cfr``, ``cfr+``, ``icfr``, ``cfr-s``, ``trigger``,
        ``coarse-trigger``, ``lp-highs``, ``lp-pdlp``, ``lp-cvxpy``, ``subgradient``.
    progress : callable, optional
        Called with each :class:`~solvers.result.TraceRow` as it is recorded.
    device : bool
        Return the correlated distribution the method found as ``point`` (a
        :class:`~solvers.evaluation.device_gaps.FactoredDevice`; methods of :func:`device_methods`).
    **options
        See :data:`OPTIONS`; each method takes the options in its ``defaults``.

    Returns
    -------
    SolveResult
        The final point, status, trace and method-specific facts (``info``).

    Raises
    ------
    OptionError
        Before anything is built, for a bad method or option, ``device`` for a method that has
        no distribution to return, or an argument of the wrong type
        (a game that is neither a Game nor a string, a method that is not a string).  Numbers
        may be of any numeric type (NumPy scalars included), but not bool.
    GameError
        A game the method cannot handle (players, chance), a model over the memory budget, or
        a device over :data:`solvers.evaluation.device.DEVICE_PLAN_LIMIT` joint plans (before iterating).
    """
    if not isinstance(method, str):
        raise OptionError(
            f"method must be a method name (one of {', '.join(METHODS)}), got {describe_value(method)}"
        )
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
    unreachable = welfare_out_of_reach(game, method, values.get("welfare_threshold"))
    if unreachable is not None:
        return unreachable
    if device:
        return finite_or_error(METHODS[method].run(game, progress=progress, device=True, **values))
    return finite_or_error(METHODS[method].run(game, progress=progress, **values))


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
        With ``info["message"]`` naming the non-finite quantities when the status changed.
    """
    import numpy as np

    bad: list[str] = []

    def clean(value, name):
        if isinstance(value, (float, np.floating)) and not np.isfinite(value):
            bad.append(name)
            return None
        if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
            if not np.all(np.isfinite(value)):
                bad.append(name)
                return None
            return value
        if isinstance(value, (list, tuple)):
            items = [clean(v, name) for v in value]
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, dict):
            return {k: clean(v, f"{name}.{k}" if name else k) for k, v in value.items()}
        return value

    result.info = clean(result.info, "")
    for row in result.trace:
        for field_name in ("gap", "infeasibility"):
            if not np.isfinite(getattr(row, field_name)):
                bad.append(f"trace {field_name}")
    point = result.point
    arrays = point if isinstance(point, (list, tuple)) else [point]
    if any(isinstance(a, np.ndarray) and a.dtype.kind in "fc" and not np.all(np.isfinite(a)) for a in arrays):
        bad.append("the final point")
        result.point = None
    if not bad:
        return result
    names = ", ".join(dict.fromkeys(bad))
    result.status = "error"
    result.info["non_finite"] = list(dict.fromkeys(bad))
    result.info["message"] = (
        f"{result.method} diverged: non-finite values (NaN or infinity) in "
        f"{names}; the run has no valid result (e.g. a step size too large)"
    )
    result.trace = [r for r in result.trace if np.isfinite(r.gap) and np.isfinite(r.infeasibility)]
    return result
