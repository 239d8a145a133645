"""lp-pdlp, lp-cvxpy solver choice, HiGHS settings and the backends' input checks and errors."""

import itertools
import re

import numpy as np
import pytest

from efce import games
from efce.baselines import build_efce_lp, estimate_pdlp_bytes, solve_lp_cvxpy, solve_lp_highs, solve_lp_pdlp
from efce.baselines.backends import MAX_ABS_PAYOFF, BackendError, highs_copies_coexist
from efce.baselines.lp_cvxpy import installed_lp_solvers
from efce.games.game import Game, GameError
from efce.games.resources.memory import MemoryBudgetExceeded
from efce.solvers.evaluation.gaps import efce_gap

GAMES = {
    "fig1": lambda: games.farina_fig1(),
    "sheriff111": lambda: games.sheriff(max_bribe=1, max_items=1, rounds=1),
    "sheriff222": lambda: games.sheriff(max_bribe=2, max_items=2, rounds=2),
    "battleship22": lambda: games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2),
}
_cache = {}


def _game(name):
    if name not in _cache:
        _cache[name] = GAMES[name]()
    return _cache[name]


def _reference(name):
    key = ("ref", name)
    if key not in _cache:
        _cache[key] = solve_lp_highs(_game(name), solver="ipm").info["welfare"]
    return _cache[key]


def _with_payoffs(game: Game, payoffs) -> Game:
    return Game(
        num_players=2,
        parent=game.parent,
        action=game.action,
        player=game.player,
        infoset=game.infoset,
        chance_prob=game.chance_prob,
        payoffs=payoffs,
        terminal_index=game.terminal_index,
        name=f"{game.name}-modified",
    )


@pytest.mark.parametrize("name", list(GAMES))
def test_pdlp_agrees_with_highs_and_is_an_efce(name):
    game = _game(name)
    ref = _reference(name)
    # highspy is loaded in this process: PDLP runs in its own worker exactly when the two HiGHS
    # copies clash (highspy <= 1.15 and OR-Tools both ship a libhighs.so.1).
    r = solve_lp_pdlp(game, tolerance=1e-7)
    assert r.info["isolated"] is (not highs_copies_coexist())
    assert r.status == "converged" and r.method == "lp-pdlp"
    assert abs(r.info["welfare"] - ref) <= 1e-5
    assert efce_gap(game, r.point) <= 1e-5 and r.info["efce_gap"] <= 1e-7
    assert build_efce_lp(game).vsf.max_violation(r.point) <= 1e-7
    assert (
        r.trace
        and r.trace[-1].gap == r.info["efce_gap"]
        and r.trace[-1].infeasibility == r.info["max_violation"]
    )


def test_pdlp_stages_give_an_anytime_trace():
    game = _game("sheriff222")
    r = solve_lp_pdlp(game, tolerance=1e-7, first_stage_tolerance=1e-2)
    assert r.status == "converged" and len(r.trace) >= 3
    its = [row.iteration for row in r.trace]
    secs = [row.seconds for row in r.trace]
    assert its == sorted(its) and secs == sorted(secs)
    tols = [row.extra["stage_tolerance"] for row in r.trace]
    assert all(b < a for a, b in itertools.pairwise(tols))
    # The first stage is loose: its iterate is visibly worse than the last.
    assert r.trace[0].gap + r.trace[0].infeasibility > r.trace[-1].gap + r.trace[-1].infeasibility
    assert abs(r.trace[-1].extra["welfare"] - _reference("sheriff222")) <= 1e-6


@pytest.mark.parametrize("largest", [None, 0])
def test_pdlp_presolves_the_cold_stage_and_warm_starts_the_others(monkeypatch, largest):
    """Glop's presolve makes PDLP ignore a warm start: only the first stage (no start) may use
    it, every later stage starts from the last primal-dual pair without it; an LP over
    ``PRESOLVE_MAX_NONZEROS`` (here 0) starts without it, and its estimate has no room for it."""
    from ortools.pdlp import solvers_pb2

    from efce.baselines import lp_pdlp

    game = _game("sheriff222")
    with_presolve = estimate_pdlp_bytes(game)
    if largest is not None:
        monkeypatch.setattr(lp_pdlp, "PRESOLVE_MAX_NONZEROS", largest)
        nonzeros = build_efce_lp(game).nonzeros
        assert estimate_pdlp_bytes(game) < with_presolve - 200 * nonzeros
    calls = []
    run = lp_pdlp._Backend.run

    def recording(self, params_bytes, primal, dual):
        params = solvers_pb2.PrimalDualHybridGradientParams()
        params.ParseFromString(params_bytes)
        calls.append((params.presolve_options.use_glop, primal is None))
        return run(self, params_bytes, primal, dual)

    monkeypatch.setattr(lp_pdlp._Backend, "run", recording)
    r = solve_lp_pdlp(game, tolerance=1e-7, first_stage_tolerance=1e-2)
    assert r.status == "converged" and len(calls) >= 3
    assert calls[0] == (largest is None, True)
    assert all(call == (False, False) for call in calls[1:])


def test_pdlp_threshold_above_optimum_and_memory_refusal():
    game = _game("sheriff222")
    # Above every terminal's welfare: refused as infeasible without calling the backend.
    r = solve_lp_pdlp(game, objective="feasibility", welfare_threshold=3.5)
    assert r.status == "infeasible" and r.point is None and "no terminal" in r.info["message"]
    # Just above the optimum PDLP has no certificate within seconds: never "converged".
    r = solve_lp_pdlp(
        game, objective="feasibility", welfare_threshold=_reference("sheriff222") + 0.1, time_limit=3
    )
    assert r.status in ("time_limit", "infeasible")
    need = estimate_pdlp_bytes(game)
    with pytest.raises(MemoryBudgetExceeded, match="PDLP.*too large"):
        solve_lp_pdlp(game, memory_budget=need - 1)


@pytest.mark.parametrize("name", ["fig1", "sheriff222"])
def test_every_installed_cvxpy_solver_agrees(name):
    game = _game(name)
    ref = _reference(name)
    model = build_efce_lp(game)
    solvers = installed_lp_solvers()
    assert {"CLARABEL", "HIGHS"} <= set(solvers)
    for solver in solvers:
        r = solve_lp_cvxpy(game, model=model, solver=solver.lower())
        assert r.status == "converged", solver
        assert abs(r.info["welfare"] - ref) <= 1e-5, (solver, r.info["welfare"], ref)
        assert r.info["efce_gap"] <= 1e-5 and r.info["max_violation"] <= 1e-5, solver


def test_unknown_cvxpy_solver_lists_installed_ones():
    with pytest.raises(ValueError, match="not installed; installed: .*CLARABEL"):
        solve_lp_cvxpy(_game("fig1"), solver="GUROBI_NOT_HERE")


@pytest.mark.parametrize(
    "options",
    [
        {"solver": "ipx", "run_crossover": "off"},
        {"solver": "simplex", "simplex_strategy": 4},
        {"solver": "pdlp", "pdlp_optimality_tolerance": 1e-7},
    ],
)
def test_highs_settings_reach_the_optimum(options):
    game = _game("sheriff222")
    r = solve_lp_highs(game, options=options)
    assert r.status == "converged" and r.info["highs_options"]["solver"] == options["solver"]
    assert abs(r.info["welfare"] - _reference("sheriff222")) <= 1e-5 and r.info["efce_gap"] <= 1e-6


def test_highs_default_is_exact_on_small_models_and_first_order_on_large_ones(monkeypatch):
    from efce.baselines import lp_highs as lp_highs

    game = _game("sheriff222")
    small = solve_lp_highs(game)
    assert small.info["highs_options"] == lp_highs.EXACT_OPTIONS and small.info["highs_status"] == "Optimal"
    # The same game, counted as "large": HiPDLP's point passes the project's own checks.
    monkeypatch.setattr(lp_highs, "FIRST_ORDER_NONZEROS", 1)
    large = solve_lp_highs(game)
    assert large.info["highs_options"] == lp_highs.FIRST_ORDER_OPTIONS and large.status == "converged"
    assert abs(large.info["welfare"] - small.info["welfare"]) <= 1e-5
    assert max(large.info["efce_gap"], large.info["max_violation"]) <= lp_highs.UNVERIFIED_TOLERANCE


def test_highs_rejected_option_is_one_line():
    with pytest.raises(BackendError) as info:
        solve_lp_highs(_game("fig1"), options={"simplex_strategy": 99})
    message = str(info.value)
    assert message.startswith("HiGHS failed: option simplex_strategy=99") and "\n" not in message


@pytest.mark.parametrize("front_end", ["highs", "pdlp", "cvxpy"])
def test_unusable_inputs_are_refused_before_the_backend(front_end, monkeypatch):
    from efce.baselines import efce_lp as efce_lp

    fn = {"highs": solve_lp_highs, "pdlp": solve_lp_pdlp, "cvxpy": solve_lp_cvxpy}[front_end]
    game = _game("fig1")
    huge = np.array(game.payoffs, dtype=float)
    huge[0, 0] = 1e308

    def no_build(*args, **kwargs):
        raise AssertionError("the model was built")

    monkeypatch.setattr(efce_lp, "build_efce_lp", no_build)
    for module in ("efce.baselines.lp_highs", "efce.baselines.lp_pdlp", "efce.baselines.lp_cvxpy"):
        monkeypatch.setattr(f"{module}.build_efce_lp", no_build)
    with pytest.raises(
        GameError,
        match=re.escape(
            f"reach 1e+308 in magnitude; the EFCE LP needs finite payoffs of at most {MAX_ABS_PAYOFF:g}"
        ),
    ):
        fn(_with_payoffs(game, huge))
    with pytest.raises(GameError, match="welfare threshold must be a finite number, not nan"):
        fn(game, welfare_threshold=float("nan"))


def test_cli_methods_and_flags(capsys):
    import json

    from efce.experiments.cli import main

    game = "sheriff:max_bribe=1,max_items=1,rounds=1"
    assert main(["solve", game, "--method", "lp-pdlp", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "lp-pdlp" and out["status"] == "converged"
    assert abs(out["welfare"] - 0.5) <= 1e-5 and out["efce_gap"] <= 1e-6
    assert main(["solve", game, "--method", "lp-cvxpy", "--lp-solver", "clarabel", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "lp-cvxpy-clarabel" and abs(out["welfare"] - 0.5) <= 1e-6
    assert main(["solve", game, "--method", "lp-cvxpy", "--lp-solver", "nope", "--json"]) == 2
    assert "installed: " in json.loads(capsys.readouterr().out)["error"]
    assert (
        main(
            [
                "solve",
                game,
                "--method",
                "subgradient",
                "--step-rule",
                "polyak",
                "--iterations",
                "50",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["step_rule"] == "polyak"
    assert main(["solve", game, "--method", "rm", "--objective", "welfare", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    lower, upper = out["welfare_interval"]
    assert out["method"] == "rm-welfare" and upper - lower <= 1e-2 and upper >= 0.5


@pytest.mark.parametrize("perturb, expected", [(False, "converged"), (True, "error")])
def test_an_inaccurate_optimum_counts_only_when_the_projects_checks_accept_it(monkeypatch, perturb, expected):
    """cvxpy's "optimal, inaccurate" is a point the solver does not vouch for: like lp-highs's
    "Unknown", it is converged only when its gap and violation are at most 1e-6."""
    from efce.baselines import lp_cvxpy

    right = lp_cvxpy._solve_arrays

    def inaccurate(*args):
        out = right(*args)
        if perturb:
            out["x"] = out["x"] * 0.99
        return dict(out, status="optimal_inaccurate")

    monkeypatch.setattr(lp_cvxpy, "_solve_arrays", inaccurate)
    r = solve_lp_cvxpy(_game("sheriff222"), solver="CLARABEL")
    assert r.info["cvxpy_status"] == "optimal_inaccurate" and r.status == expected


def test_a_solver_stopped_by_its_limit_warns_nothing():
    """Clarabel stopped after one iteration: the run says it (its status), not a Python warning
    from cvxpy's unpacking."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = solve_lp_cvxpy(_game("sheriff222"), solver="CLARABEL", max_iter=1)
    assert r.status == "time_limit"
    assert not [w for w in caught if "inaccurate" in str(w.message)]
