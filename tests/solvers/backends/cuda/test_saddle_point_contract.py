"""The GPU loop's contract with wide steps and long rows on blocks and Y's root simplex in pieces
(:data:`.simulator.BLOCKS`), where it is not the CPU engine bit for bit: iterates in both
polytopes, the reported scalars equal to what the CPU computes for the same average (the
evaluator's gap and welfare, the chain's violations), the same run twice gives the same iterates.
Whole runs (on one thread per step, :data:`.simulator.NARROW`: the simulator runs blocks ~10x
slower than a thread's loop): the target is reached with a plan that satisfies Definition 3, and
the welfare objective agrees with the LP optimum."""

from __future__ import annotations

import numpy as np
import pytest

import efce
from efce.games import load
from efce.games.spec import make_game
from efce.polytopes.feasibility import FeasibilityCheck
from efce.solvers.evaluation.gaps import EFCEGapEvaluator
from efce.solvers.methods.efce import build_efce_model
from tests.paths import GAME_DATA

from .simulator import BLOCKS, NARROW, requires_simulator

pytestmark = requires_simulator

SMALL_SHERIFF = "sheriff:max_bribe=1,max_items=1,rounds=1"


def game_of(name: str):
    return load(GAME_DATA / f"{name}.efg") if name == "three_doors" else make_game(name)


def saddle(model, rule, sizes=BLOCKS, **options):
    from efce.solvers.backends.cuda.saddle import CudaSaddlePoint

    return CudaSaddlePoint(model, rule, **sizes, **options)


def assert_reports_the_cpu_numbers(gpu, model):
    """The checkpoint's scalars against the CPU's for the average the GPU holds."""
    check = gpu.checkpoint()
    running_sum = gpu.sum_x.copy_to_host()
    x, _ = gpu.points()
    scale = 1.0 / gpu.weight
    report = EFCEGapEvaluator(model.game, tables=model.tables).evaluate(running_sum, scale)
    assert check.gap == pytest.approx(report.gap, abs=1e-9)
    assert check.welfare == pytest.approx(report.welfare, abs=1e-9)
    expected = model.xi_steps.violations((x, running_sum), (1.0, scale))
    assert (check.violation_iterate, check.violation_average) == pytest.approx(expected, abs=1e-12)
    return check


@pytest.mark.parametrize(
    ("name", "rule", "alternating"),
    [
        ("farina-fig1", "prm+", True),
        ("farina-fig2", "rm+", False),
        (SMALL_SHERIFF, "hedge", True),
        ("three_doors", "dcfr", False),
        ("three_doors", "rm", True),
    ],
)
def test_iterates_stay_in_both_polytopes_and_checkpoints_report_the_cpu_evaluators_numbers(
    name, rule, alternating
):
    model = build_efce_model(game_of(name))
    gpu = saddle(model, rule, alternating=alternating)
    assert gpu.y_chain.num_wide + gpu.y_chain.num_split > 0  # Y's root simplex: on a block or in pieces
    for t in range(1, 4):
        gpu.step(t)
        x, y = gpu.points()
        assert max(model.xi_steps.violations((x,))) <= 1e-9
        assert max(model.triggers.chain.violations((y,))) <= 1e-9
    check = assert_reports_the_cpu_numbers(gpu, model)
    assert max(check.violation_iterate, check.violation_average) <= 1e-9


def test_the_same_run_twice_gives_the_same_iterates():
    model = build_efce_model(game_of("three_doors"))
    gpu = saddle(model, "prm+")
    runs = []
    for _ in range(2):
        for t in range(1, 3):
            gpu.step(t)
        runs.append((*gpu.points(), gpu.sum_x.copy_to_host(), gpu.checkpoint()))
        gpu.reset()  # back to iteration 0 on the same arrays
    (x0, y0, s0, c0), (x1, y1, s1, c1) = runs
    assert np.array_equal(x0, x1) and np.array_equal(y0, y1) and np.array_equal(s0, s1) and c0 == c1
    assert gpu.weight == 0.0 and not np.any(gpu.sum_x.copy_to_host())


@pytest.mark.parametrize("alternating", [True, False])
def test_checkpoints_between_steps_leave_the_run_unchanged(alternating):
    # The checkpoints' products and minima borrow a buffer of the loop (the deviator's iterate,
    # made again by RECOMMEND; or the simultaneous updates' idle loss): a run checked after
    # every step, with the welfare certificate too, has the same iterates as one never checked.
    model = build_efce_model(game_of("three_doors"), 0.5)
    runs = []
    for checked in (False, True):
        gpu = saddle(model, "prm+", alternating=alternating)
        for t in range(1, 5):
            if checked and t > 1:  # between two steps: the next one's A y reads the deviator
                gpu.checkpoint()
                gpu.deviation_bound()
            gpu.step(t)
        runs.append((*gpu.points(), gpu.sum_x.copy_to_host(), gpu.sum_y.copy_to_host()))
    for unchecked, checked in zip(*runs, strict=True):
        assert np.any(unchecked) and np.array_equal(unchecked, checked)


def run_to(gpu, target, iterations, *, first, every, welfare_threshold=None):
    """Iterate until the average's max deviation (and welfare shortfall) is within ``target``,
    checking at iteration ``first`` and every ``every`` after it (a checkpoint costs the
    simulator about two iterations); returns the checkpoint and the iteration, or None."""
    for t in range(1, iterations + 1):
        gpu.step(t)
        if t >= first and (t - first) % every == 0:
            check = gpu.checkpoint()
            shortfall = 0.0 if welfare_threshold is None else max(0.0, welfare_threshold - check.welfare)
            if check.gap <= target and shortfall <= target:
                return check, t
    return None, iterations


def plan_in_pair_order(gpu, model) -> np.ndarray:
    return gpu.average()[model.entry_of_pair]


def test_big_chain_dtypes_reach_the_target_with_a_plan_that_satisfies_definition_3(monkeypatch):
    # The big games' configuration on a small one: float32 state, bfloat16 predictions and a
    # float32 running sum, so the plan is the chain point rescaled from the sum.
    monkeypatch.setattr("efce.solvers.regret.local.FLOAT32_STATE_MIN_ENTRIES", 1)
    model = build_efce_model(game_of("three_doors"))
    gpu = saddle(model, "prm+", NARROW)
    assert gpu.sum_x.dtype == np.float32 and gpu.rules[0].pred16.size > 0
    check, t = run_to(gpu, 2e-2, 30, first=12, every=3)
    assert check is not None, "no convergence to 2e-2 in 30 iterations (the CPU engine takes 14)"
    plan = plan_in_pair_order(gpu, model)
    assert FeasibilityCheck(model.game, model.pairs)(plan) <= 1e-9
    report = EFCEGapEvaluator(model.game, model.pairs)(plan)
    assert report.gap <= 2e-2 + 1e-6 and report.gap == pytest.approx(check.gap, abs=1e-6)  # float32 sum


def test_welfare_threshold_agrees_with_the_lp_optimum():
    game = game_of("three_doors")
    optimum = efce.solve(game, "lp-highs", objective="welfare").info["welfare"]
    above = optimum + 0.3
    # Above the optimum the deviator's average certifies that no EFCE reaches the threshold.
    model = build_efce_model(game, welfare_threshold=above)
    gpu = saddle(model, "prm+", NARROW)
    assert gpu.lambda_tau == model.triggers.num_triggers
    bounds = []
    for t in range(1, 11):
        gpu.step(t)
        if t in (4, 7, 10):
            bounds.append(gpu.deviation_bound())
            if bounds[-1] > 1e-9:
                break
    assert bounds[-1] > 1e-9, f"no certificate in 10 iterations: {bounds}"
    assert_reports_the_cpu_numbers(gpu, model)  # with λ_τ in Y, the gap leaves it out
    # At the optimum (τ moved on the GPU), an EFCE with that welfare is found to the target.
    gpu = saddle(model, "prm+", NARROW)
    gpu.set_welfare_threshold(optimum)
    check, t = run_to(gpu, 5e-2, 24, first=8, every=3, welfare_threshold=optimum)
    assert check is not None, "the LP's optimal welfare was not reached in 24 iterations (the CPU takes 10)"
    assert check.welfare >= optimum - 5e-2 and gpu.deviation_bound() <= 1e-9
    report = EFCEGapEvaluator(game, model.pairs)(plan_in_pair_order(gpu, model))
    assert report.gap == pytest.approx(check.gap, abs=1e-9) and report.welfare == pytest.approx(check.welfare)


@pytest.mark.parametrize("tau", [None, 0.5])
def test_a_run_holds_on_the_gpu_what_its_byte_count_says(tau):
    # run_device_bytes (what the refusal's estimate is tested against) counts every array the
    # run allocates: the arrays it holds, within the per-block scalars and partial sums.
    from efce.solvers.backends.cuda.layouts import chain_layout, payoff_layout, run_device_bytes

    game = game_of("three_doors")
    model = build_efce_model(game, tau)
    gpu = saddle(model, "prm+")
    chains = (model.xi_steps, model.triggers.chain)
    sizes = {"split_threshold": BLOCKS["split_threshold"], "piece_size": BLOCKS["piece_size"]}
    counted = run_device_bytes(
        *(chain_layout(chain, BLOCKS["wide_threshold"], **sizes) for chain in chains),
        payoff_layout(model.operator, game, short_threshold=2, long_threshold=4),
        predictive=True,
        averaged_deviator=tau is not None,
        block_size=BLOCKS["block_size"],
    )
    assert counted - 64 * 1024 <= gpu.device_bytes <= counted
