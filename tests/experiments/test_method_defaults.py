"""One default per option: every method's library function runs the configuration its declaration
(``OPTIONS`` beside it, collected in :data:`efce.experiments.solve.METHODS`) gives
:func:`efce.solve`, so calling the function with no options and calling ``efce.solve(game,
method)`` are the same run."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import efce
from efce.baselines import lp_colgen, lp_cvxpy, lp_highs, lp_pdlp, subgradient
from efce.experiments.solve import METHODS
from efce.solvers.methods import cfr, icfr, trigger, welfare
from efce.solvers.methods import efce as efce_method

SMALL_SHERIFF = "sheriff:max_bribe=2,max_items=2,rounds=2"


def test_solve_efce_and_solve_rm_give_the_same_plan_on_small_sheriff():
    game = efce.games.make_game(SMALL_SHERIFF)
    library = efce_method.solve_efce(game)
    entry = efce.solve(game, "rm")
    assert library.status == entry.status == "converged"
    assert library.iterations == entry.iterations
    assert np.array_equal(library.point, entry.point)
    assert library.info["efce_gap"] == entry.info["efce_gap"] <= 1e-3


def _same(value):
    return value


def _alternating(updates):
    return updates == "alternating"


#: Method → (library function, {option: (parameter, declared value → parameter value)}).  Every
#: option of every method is listed; None marks an option that is no parameter of the function
#: (``objective`` of ``rm`` picks the function, ``local`` of ``rm`` is resolved from the
#: declaration when ``rule=None``: the same-plan test above checks it).
LIBRARY = {
    "rm": (
        efce_method.solve_efce,
        {
            "iterations": ("iterations", _same),
            "time_limit": ("time_limit", _same),
            "target_gap": ("target_gap", _same),
            "welfare_threshold": ("welfare_threshold", _same),
            "objective": None,
            "local": None,
            "averaging": ("averaging", _same),
            "updates": ("alternating", _alternating),
            "threads": ("threads", _same),
            "backend": ("backend", _same),
            "concept": ("concept", _same),
        },
    ),
    "cfr": (
        cfr.solve_cfr,
        {
            "iterations": ("iterations", _same),
            "time_limit": ("time_limit", _same),
            "target_gap": ("target_gap", _same),
            "local": ("rule", _same),
            "threads": ("threads", _same),
        },
    ),
    "icfr": (
        icfr.solve_icfr,
        {
            "iterations": ("iterations", _same),
            "time_limit": ("time_limit", _same),
            "target_gap": ("target_gap", _same),
            "seed": ("seed", _same),
        },
    ),
    "trigger": (
        trigger.solve_trigger,
        {
            "iterations": ("iterations", _same),
            "time_limit": ("time_limit", _same),
            "target_gap": ("target_gap", _same),
            "local": ("rule", _same),
        },
    ),
    "lp-highs": (
        lp_highs.solve_lp_highs,
        {
            "time_limit": ("time_limit", _same),
            "welfare_threshold": ("welfare_threshold", _same),
            "objective": ("objective", _same),
            "concept": ("concept", _same),
            "verbose": ("verbose", _same),
        },
    ),
    "lp-pdlp": (
        lp_pdlp.solve_lp_pdlp,
        {
            "time_limit": ("time_limit", _same),
            "welfare_threshold": ("welfare_threshold", _same),
            "objective": ("objective", _same),
            "target_gap": ("tolerance", _same),
            "concept": ("concept", _same),
            "verbose": ("verbose", _same),
        },
    ),
    "lp-cvxpy": (
        lp_cvxpy.solve_lp_cvxpy,
        {
            "time_limit": ("time_limit", _same),
            "welfare_threshold": ("welfare_threshold", _same),
            "objective": ("objective", _same),
            "lp_solver": ("solver", _same),
            "concept": ("concept", _same),
            "verbose": ("verbose", _same),
        },
    ),
    "lp-colgen": (
        lp_colgen.solve_lp_colgen,
        {
            "concept": ("concept", _same),
            "objective": ("objective", _same),
            "tolerance": ("tolerance", _same),
            "time_limit": ("time_limit", _same),
            "iterations": ("iterations", _same),
            "pricing": ("pricing", _same),
        },
    ),
    "subgradient": (
        subgradient.solve_subgradient,
        {
            "iterations": ("iterations", _same),
            "time_limit": ("time_limit", _same),
            "step_size": ("step_size", _same),
            "step_rule": ("step_rule", _same),
            "start": ("start", _same),
            "seed": ("seed", _same),
        },
    ),
}
LIBRARY["cfr+"] = LIBRARY["cfr"]
LIBRARY["cfr-s"] = LIBRARY["icfr"]
LIBRARY["coarse-trigger"] = LIBRARY["trigger"]

#: ``rm --objective welfare`` is :func:`solve_optimal_welfare`, which takes ``rm``'s defaults (a
#: step's target is the bisection's own ε, and it searches the threshold itself).
WELFARE = {
    "target_gap": None,
    "welfare_threshold": None,
    "time_limit": ("time_limit", _same),
    "iterations": ("step_iterations", _same),
    "local": ("rule", _same),
    "averaging": ("averaging", _same),
    "updates": ("alternating", _alternating),
    "concept": ("concept", _same),
}


def _check_defaults(method, function, mapping):
    signature = inspect.signature(function).parameters
    for option in METHODS[method].options:
        assert option.name in mapping, f"{method}: option {option.name} missing from the table"
        if mapping[option.name] is None:
            continue
        parameter, convert = mapping[option.name]
        assert signature[parameter].default == convert(option.default), (
            f"{method}: {function.__name__}({parameter}={signature[parameter].default!r}) but "
            f"the declared default of {option.name} is {option.default!r}"
        )


@pytest.mark.parametrize("method", list(METHODS))
def test_every_library_function_takes_its_methods_declared_defaults(method):
    assert set(LIBRARY) == set(METHODS)
    function, mapping = LIBRARY[method]
    _check_defaults(method, function, mapping)


def test_the_welfare_bisection_takes_rms_defaults():
    _check_defaults("rm", welfare.solve_optimal_welfare, {**LIBRARY["rm"][1], **WELFARE})


#: What each method's run is not compared on: times and memory differ run to run, and
#: ``kernels`` says how ``efce.solve`` ran the kernels (as Python or compiled), which a direct
#: call of the method's function does not choose.
_VARIES = re.compile(r"seconds|memory|peak|rss|^kernels$")

#: A small budget for the iterative methods, given to both calls (the defaults test covers it).
_BUDGET = {"iterations": 30}
#: The library calls of ``efce.solve(game, method)``'s method (its variant fixed by the name).
CALLS = {
    "cfr": lambda g, **o: cfr.solve_cfr(g, variant="cfr", **o),
    "cfr+": lambda g, **o: cfr.solve_cfr(g, variant="cfr+", **o),
    "icfr": lambda g, **o: icfr.solve_icfr(g, method="icfr", **o),
    "cfr-s": lambda g, **o: icfr.solve_icfr(g, method="cfr-s", **o),
    "trigger": lambda g, **o: trigger.solve_trigger(g, coarse=False, **o),
    "coarse-trigger": lambda g, **o: trigger.solve_trigger(g, coarse=True, **o),
    "lp-highs": lp_highs.solve_lp_highs,
    "lp-pdlp": lp_pdlp.solve_lp_pdlp,
    "lp-cvxpy": lp_cvxpy.solve_lp_cvxpy,
    "lp-colgen": lp_colgen.solve_lp_colgen,
    "subgradient": subgradient.solve_subgradient,
}


@pytest.mark.parametrize("method", list(CALLS))
def test_the_library_function_and_efce_solve_are_one_run(method):
    game = efce.games.make_game("farina-fig1")
    budget = _BUDGET if "iterations" in METHODS[method].defaults else {}
    library = CALLS[method](game, **budget).to_json()
    entry = efce.solve(game, method, **budget).to_json()
    for out in (library, entry):
        for key in [k for k in out if _VARIES.search(k)]:
            del out[key]
    assert library == entry
