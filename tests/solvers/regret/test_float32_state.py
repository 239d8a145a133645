"""The regret-minimizer state in float32 (big chains): the dynamics are those of float64 up to
rounding and the threads still agree bit for bit.  With the compiled passes the EFCE loop also
keeps its running sum in float32; the reported plan is then the chain point rescaled from the
running sum and satisfies Definition 3 to float64 rounding."""

import numpy as np
import pytest

from efce.games.spec import make_game
from efce.polytopes.feasibility import FeasibilityCheck
from efce.solvers.backends import available_threads
from efce.solvers.backends.cpu import CPUBackend
from efce.solvers.methods.efce import build_efce_model, solve_efce
from efce.solvers.regret import local
from efce.solvers.regret.engine import ChainEngine
from efce.solvers.regret.local import make_rule

GAME = "battleship:rows=2,cols=2,ship_sizes=[1],shots=2"


@pytest.fixture
def float32_everywhere(monkeypatch):
    """Give even these small chains the float32 state of the big ones."""
    monkeypatch.setattr(local, "FLOAT32_STATE_MIN_ENTRIES", 1)


def test_state_dtype_switches_at_the_documented_size():
    assert local.state_dtype(local.FLOAT32_STATE_MIN_ENTRIES) == np.float32
    assert local.state_dtype(local.FLOAT32_STATE_MIN_ENTRIES - 1) == np.float64


@pytest.mark.parametrize("rule", ["rm+", "prm+", "dcfr"])
def test_float32_state_converges_like_float64_and_stays_feasible(rule, monkeypatch):
    game = make_game(GAME)
    model = build_efce_model(game)
    wide = solve_efce(game, model=model, rule=rule, iterations=2000, target_gap=None)
    monkeypatch.setattr(local, "FLOAT32_STATE_MIN_ENTRIES", 1)
    engine = ChainEngine(model.xi_chain, make_rule(rule))
    # PRM+'s prediction is bfloat16 bits (test_bfloat16_prediction.py)
    assert all(
        a.dtype == (np.uint16 if key == "prediction" else np.float32)
        for key, a in engine.state.items()
        if key != "t"
    )
    narrow = solve_efce(game, model=model, rule=rule, iterations=2000, target_gap=None)
    # The points are float64 and feasible to float64 rounding whatever the state's dtype.
    assert narrow.info["max_violation"] <= 1e-12
    check = FeasibilityCheck(game, model.pairs)
    assert check(narrow.point) <= 1e-12
    # The regrets carry ~7 digits: the trajectories part (regret matching is not smooth, and on
    # this game the gap of either fluctuates by 4x from one checkpoint to the next before 1,000
    # iterations), but the convergence is that of float64.
    assert narrow.info["efce_gap"] < 1e-3 and wide.info["efce_gap"] < 1e-3
    assert (
        narrow.info["efce_gap"] < 3 * wide.info["efce_gap"]
        and wide.info["efce_gap"] < 3 * narrow.info["efce_gap"]
    )
    assert (
        narrow.info["efce_gap"]
        < 0.05 * solve_efce(game, model=model, rule=rule, iterations=2, target_gap=None).info["efce_gap"]
    )


def test_float32_state_is_the_same_on_every_thread_count(float32_everywhere):
    game = make_game(GAME)
    runs = [
        solve_efce(
            game, iterations=100, target_gap=None, backend=CPUBackend(t, parallel_min_size=1), rule="prm+"
        )
        for t in range(1, min(2, available_threads()) + 1)
    ]
    assert all(np.array_equal(runs[0].point, r.point) for r in runs)


def test_float32_running_sum_reports_a_plan_feasible_to_float64(float32_everywhere):
    game = make_game(GAME)
    model = build_efce_model(game)
    wide = solve_efce(game, model=model, iterations=2000, target_gap=None, check_every=500)
    big = CPUBackend(parallel_min_size=1)  # these small chains run as the big ones
    assert ChainEngine(model.xi_steps, make_rule("prm+"), backend=big).sum_dtype == np.float32
    narrow = solve_efce(game, model=model, iterations=2000, target_gap=None, check_every=500, backend=big)
    assert narrow.point.dtype == np.float64
    # The plan: Definition 3 to float64 rounding, checked independently of the solver.
    assert narrow.info["plan_violation"] <= 1e-12
    assert FeasibilityCheck(game, model.pairs)(narrow.point) <= 1e-12
    # The iterates stay float64; the running average has float32's precision, reported as it is.
    assert max(row.extra["violation_iterate"] for row in narrow.trace) <= 1e-12
    average = max(row.extra["violation_average"] for row in narrow.trace)
    assert 1e-12 < average <= 1e-6
    assert narrow.info["max_violation"] >= average and not narrow.info["feasible_iterates"]
    assert wide.info["plan_violation"] <= 1e-12 and wide.info["feasible_iterates"]
    # The same dynamics (float64 iterates): the gaps differ by the average's float32 rounding.
    assert narrow.info["efce_gap"] == pytest.approx(wide.info["efce_gap"], abs=1e-6)


def test_average_point_divides_float64_sums_and_rescales_float32_ones():
    from efce.solvers.methods.efce import average_point

    game = make_game(GAME)
    chain = build_efce_model(game).xi_steps
    rng = np.random.default_rng(3)
    running = 7.0 * chain.random_point(rng) + 3.0 * chain.random_point(rng)  # weights 7 and 3
    wide = running.copy()
    assert average_point(chain, wide, 10.0, in_place=True) is wide
    assert np.allclose(wide, running / 10.0, rtol=1e-15, atol=0)
    narrow = average_point(chain, running.astype(np.float32), 10.0)
    assert narrow.dtype == np.float64 and chain.violations((narrow,))[0] <= 1e-15
    assert chain.violations((running.astype(np.float32),), (0.1,))[0] > 1e-12  # what it mends
    assert np.allclose(narrow, running / 10.0, rtol=1e-5, atol=1e-9)
