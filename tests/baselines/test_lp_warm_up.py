"""The LP front ends pay their solver library's first-call costs before their clock starts and
report them as ``compile_seconds``: HiGHS's first run, OR-Tools PDLP's first solve and the gap
evaluator's kernels, cvxpy's first canonicalization and solver call; and numba's compiling of
the model builders' kernels, which is reported as ``compile_seconds``, not as setup.

A first-call cost is made visible by a wrapper that sleeps on the first call in this process
only (what a fresh process pays once: loading a library, starting a thread pool, compiling); a
front end that paid it inside its clock would report it in ``seconds`` and in the trace.

The checks compare instants, not durations against a bound, so that they hold on a slow or
loaded machine (CI's oldest-versions stage, where OR-Tools 9.10's PDLP takes 0.7 s on this LP
and a numba cache written by another numba version is cold): the clock of ``seconds`` started
at ``returned - seconds`` or earlier, so every simulated first call must have ended by then.
"""

from __future__ import annotations

import time

import pytest
from numba.core import event

from efce import games
from efce.baselines import (
    build_efce_lp,
    efce_lp,
    lp_cvxpy,
    lp_highs,
    lp_pdlp,
    solve_lp_cvxpy,
    solve_lp_highs,
    solve_lp_pdlp,
)

#: The sleep of a simulated first call: far above what the tiny LPs take to solve.
FIRST_CALL_SECONDS = 1.5


@pytest.fixture(scope="module")
def game():
    return games.sheriff(max_bribe=1, max_items=2, rounds=2)


def slow_first_call(monkeypatch, owner, name: str) -> list[float]:
    """``owner.name`` sleeps :data:`FIRST_CALL_SECONDS` on its first call from now on (in this
    process); returns the list that records when that sleep ended (``time.perf_counter``)."""
    original = getattr(owner, name)
    paid: list[float] = []

    def first_call_is_slow(*args, **kwargs):
        if not paid:
            time.sleep(FIRST_CALL_SECONDS)
            paid.append(time.perf_counter())
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, first_call_is_slow)
    return paid


def timed(solve, *args, **kwargs):
    """``(result, called, returned)``: the front end's result and the instants around its call."""
    called = time.perf_counter()
    result = solve(*args, **kwargs)
    return result, called, time.perf_counter()


def assert_first_calls_before_the_clock(timing, *first_calls: list[float]) -> None:
    """Every simulated first call ended before the clock of ``seconds`` started, was reported as
    ``compile_seconds``, and was counted neither in the trace nor in the model's setup."""
    result, called, returned = timing
    assert result.status == "converged"
    assert all(first_calls), "a simulated first call was never made"
    clock_started_by = returned - result.seconds  # the clock started at this instant or before
    assert max(ended for paid in first_calls for ended in paid) <= clock_started_by
    assert result.compile_seconds >= len(first_calls) * FIRST_CALL_SECONDS
    # The trace runs on the same clock: no row is later than the end of the run.
    assert result.trace and all(row.seconds <= result.seconds for row in result.trace)
    # Setup and compiling are disjoint parts of the time before the clock (the model is built
    # inside the call): a first call counted in both would make them exceed it.
    assert result.setup_seconds + result.compile_seconds <= clock_started_by - called


def test_highs_first_run_is_paid_before_the_clock(game, monkeypatch):
    import highspy

    monkeypatch.setattr(lp_highs, "_WARMED", set())  # as in a fresh process
    paid = slow_first_call(monkeypatch, highspy.Highs, "run")
    timing = timed(solve_lp_highs, game)
    assert timing[0].info["isolated"] is False
    assert_first_calls_before_the_clock(timing, paid)
    again = solve_lp_highs(game)  # this process has paid: nothing to compile or load
    assert again.compile_seconds == 0.0 and again.info["efce_gap"] <= 1e-6


def test_pdlp_first_solve_and_the_gap_evaluator_are_paid_before_the_clock(game, monkeypatch):
    from ortools.pdlp.python import pdlp

    from efce.solvers.evaluation.gaps import EFCEGapEvaluator

    monkeypatch.setattr(lp_pdlp, "_WARMED", set())
    solver = slow_first_call(monkeypatch, pdlp, "primal_dual_hybrid_gradient")
    evaluator = slow_first_call(monkeypatch, EFCEGapEvaluator, "__call__")
    assert_first_calls_before_the_clock(timed(solve_lp_pdlp, game, isolate=False), solver, evaluator)


def test_cvxpy_first_canonicalization_and_solve_are_paid_before_the_clock(game, monkeypatch):
    import cvxpy as cp
    from cvxpy.reductions.solvers.solving_chain import SolvingChain

    monkeypatch.setattr(lp_cvxpy, "_WARMED", set())
    canonicalization = slow_first_call(monkeypatch, cp.Problem, "get_problem_data")
    solver = slow_first_call(monkeypatch, SolvingChain, "solve_via_data")
    timing = timed(solve_lp_cvxpy, game, solver="HIGHS", isolate=False)
    assert_first_calls_before_the_clock(timing, canonicalization, solver)
    # This problem's own canonicalization is model building, reported apart from the solve.
    result = timing[0]
    assert 0 < result.info["canonicalization_seconds"] <= result.setup_seconds


@pytest.mark.parametrize(
    "method, solve_here",
    [
        ("lp-highs", solve_lp_highs),
        ("lp-pdlp", lambda g: solve_lp_pdlp(g, isolate=False)),
        ("lp-cvxpy", lambda g: solve_lp_cvxpy(g, isolate=False)),
    ],
)
def test_the_command_line_reports_the_warm_up_of_the_worker_that_solves(game, method, solve_here, capfd):
    # Under the command line each LP solves in a fresh worker process, which pays the first
    # call again: the warm-up must run there, not in this process, which has paid already.
    import json

    from efce.experiments.cli import main

    assert solve_here(game).status == "converged"  # this process has paid its first call
    assert main(["solve", "sheriff:max_bribe=1,max_items=2,rounds=2", "--method", method, "--json"]) == 0
    out = json.loads(capfd.readouterr().out)
    assert out["status"] == "converged" and out["compile_seconds"] > 0
    assert {"setup_seconds", "seconds", "iterations", "efce_gap"} <= set(out)
    if method != "lp-pdlp":  # PDLP's also holds the gap evaluator's, loaded here
        assert solve_here(game).compile_seconds == 0.0


def test_pdlp_evaluates_its_stages_with_the_array_kind_it_warmed_up(game, monkeypatch):
    # numba compiles one specialization per array kind (dtype, layout, read-only or not): the
    # stages' plans must be of the kind the warm-up evaluated, or a first run compiles again
    # inside the clock.  Plans coming back from the worker process are read-only as unpickled.
    from efce.solvers.evaluation.gaps import EFCEGapEvaluator

    kinds = []
    original = EFCEGapEvaluator.__call__

    def record(self, xi):
        kinds.append((xi.dtype, xi.flags.writeable, xi.flags.c_contiguous))
        return original(self, xi)

    monkeypatch.setattr(EFCEGapEvaluator, "__call__", record)
    result = solve_lp_pdlp(game, isolate=True, first_stage_tolerance=1e-2)
    assert result.status == "converged" and result.info["isolated"] is True
    # the warm-up, one per stage, then the final report's gaps of the three concepts
    assert len(kinds) == 1 + len(result.trace) + 3 and len(result.trace) >= 2
    assert len(set(kinds)) == 1


def compiling_builder(monkeypatch) -> list[float]:
    """The model's constraint builder compiles for :data:`FIRST_CALL_SECONDS` on each call (a
    simulated numba compilation: numba's ``numba:compile`` event around a sleep, as numba fires
    it on an empty cache); returns the list of the instants those compilations ended."""
    original = efce_lp.vsf_constraints
    ended: list[float] = []

    def compiles(*args, **kwargs):
        with event.trigger_event("numba:compile"):
            time.sleep(FIRST_CALL_SECONDS)
        ended.append(time.perf_counter())
        return original(*args, **kwargs)

    monkeypatch.setattr(efce_lp, "vsf_constraints", compiles)
    return ended


def test_the_model_build_reports_numba_compiling_apart(game, monkeypatch):
    ended = compiling_builder(monkeypatch)
    called = time.perf_counter()
    model = build_efce_lp(game)
    wall = time.perf_counter() - called
    assert ended and model.compile_seconds >= FIRST_CALL_SECONDS
    assert model.build_seconds + model.compile_seconds <= wall  # disjoint parts of the build
    monkeypatch.undo()
    assert build_efce_lp(game).compile_seconds == 0.0  # compiled (or cached): nothing to report


@pytest.mark.parametrize(
    "solve_here",
    [
        solve_lp_highs,
        lambda g: solve_lp_pdlp(g, isolate=False),
        lambda g: solve_lp_cvxpy(g, solver="HIGHS", isolate=False),
    ],
    ids=["lp-highs", "lp-pdlp", "lp-cvxpy"],
)
def test_the_builders_compiling_is_compile_time_not_setup(game, monkeypatch, solve_here):
    solve_here(game)  # this process has paid the solver's first call
    ended = compiling_builder(monkeypatch)
    result, called, returned = timed(solve_here, game)
    assert result.status == "converged" and ended
    assert result.compile_seconds >= FIRST_CALL_SECONDS
    clock_started_by = returned - result.seconds
    assert max(ended) <= clock_started_by
    assert result.setup_seconds + result.compile_seconds <= clock_started_by - called
