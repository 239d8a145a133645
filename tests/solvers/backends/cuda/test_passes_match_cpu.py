"""Where the GPU sums in the CPU's order, it gives the CPU's numbers bit for bit.

* Every chain step and CSR row on one thread (:data:`.simulator.NARROW`): the whole loop is the
  CPU engine's arithmetic, so the iterates, the running sums and the checkpoint's scalars equal
  the CPU's after every step — for every local rule, both update orders, both chains' kinds (Ξ
  numbered in level order, Y read through its order), float64 state and float32 state with
  bfloat16 predictions and a float32 running sum (the welfare, a block reduction in any case,
  to rounding).
* Wide steps and long rows on blocks (:data:`.simulator.WIDE`) sum in another order; on inputs
  whose sums are exact in any order (a vertex state, integer losses and points), one pass still
  equals the CPU's.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from efce.games import load
from efce.games.arrays import concat_ranges
from efce.games.spec import make_game
from efce.polytopes.chain import SIMPLEX
from efce.solvers.backends import available_threads
from efce.solvers.backends.cpu import CPUBackend
from efce.solvers.evaluation.gaps import EFCEGapEvaluator
from efce.solvers.methods.efce import build_efce_model, saddle_point_gap, saddle_point_play
from efce.solvers.regret.algebra import chain_minimizer
from efce.solvers.regret.engine import chain_minimum, minimizer_factory
from efce.solvers.regret.local import as_rule
from tests.paths import GAME_DATA

from .simulator import NARROW, WIDE, requires_simulator

pytestmark = requires_simulator

RULES = ["rm", "rm+", "dcfr", "hedge", "prm+"]
SMALL_SHERIFF = "sheriff:max_bribe=1,max_items=1,rounds=1"


def game_of(name: str):
    return load(GAME_DATA / f"{name}.efg") if name == "three_doors" else make_game(name)


def saddle(model, rule, **options):
    from efce.solvers.backends.cuda.saddle import CudaSaddlePoint

    return CudaSaddlePoint(model, rule, **options)


def assert_same_run(model, rule, *, alternating, steps):
    """The GPU loop (narrow) and the CPU engine step by step: points, running sum, checkpoint."""
    gpu = saddle(model, rule, alternating=alternating, **NARROW)
    cpu = saddle_point_play(model, minimizer_factory(rule, None, as_rule("rm+")), alternating=alternating)
    for t in range(1, steps + 1):
        gpu.step(t)
        cpu.step(t)
        x, y = gpu.points()
        # the CPU's deviator is fused with the operator: its point is made on request
        assert np.array_equal(x, cpu.points[0]) and np.array_equal(y, cpu.deviator.point()), (
            f"{rule}, step {t}"
        )
    assert np.array_equal(gpu.sum_x.copy_to_host(), cpu.sums[0]) and gpu.weight == cpu.weight
    check = gpu.checkpoint()
    work = np.empty(model.triggers.num_entries)
    scale = 1.0 / cpu.weight
    assert check.gap == saddle_point_gap(model, cpu.sums[0], scale, work)
    # the welfare is a block reduction in any mode: another order of the same sum
    welfare = EFCEGapEvaluator(model.game, tables=model.tables).welfare(cpu.sums[0], scale)
    assert check.welfare == pytest.approx(welfare, rel=1e-14, abs=1e-14)
    assert (check.violation_iterate, check.violation_average) == model.xi_steps.violations(
        (cpu.points[0], cpu.sums[0]), (1.0, scale)
    )
    return gpu


@pytest.mark.parametrize("rule", RULES)
def test_every_rule_on_one_thread_per_step_is_the_cpu_engine_bit_for_bit(rule):
    assert_same_run(build_efce_model(game_of("three_doors")), rule, alternating=True, steps=3)


@pytest.mark.parametrize(("name", "rule"), [("farina-fig1", "prm+"), (SMALL_SHERIFF, "rm+")])
def test_simultaneous_updates_are_the_cpu_engine_bit_for_bit(name, rule):
    assert_same_run(build_efce_model(game_of(name)), rule, alternating=False, steps=3)


def test_float32_state_bfloat16_predictions_and_float32_sum_are_the_cpu_engine_bit_for_bit(monkeypatch):
    # The big chains' dtypes on a small game: both engines take them from the same thresholds.
    monkeypatch.setattr("efce.solvers.regret.local.FLOAT32_STATE_MIN_ENTRIES", 1)
    # the CPU engine's parallel passes keep the running sum in the state's dtype (the serial ones
    # in float64): run them on this small chain
    monkeypatch.setattr("efce.solvers.backends.cpu.backend.PARALLEL_MIN_ENTRIES", 1)
    gpu = assert_same_run(build_efce_model(game_of("farina-fig1")), "prm+", alternating=True, steps=4)
    assert gpu.rules[0].a.dtype == np.float32 and gpu.rules[0].pred16.size == gpu.xi_chain.num_entries
    assert gpu.sum_x.dtype == np.float32 and np.any(gpu.rules[1].pred16.copy_to_host() != 0)


# ---------------------------------------------------------------------- one wide pass
def state_entries(chain) -> np.ndarray:
    """The entry of each position of the CPU rule's state (simplex steps in level order)."""
    steps = chain.step_order[chain.kind[chain.step_order] == SIMPLEX]
    return concat_ranges(chain.target_ptr[steps], chain.step_size[steps])


@pytest.mark.parametrize("rule", ["rm+", "prm+"])
@pytest.mark.parametrize("side", ["xi", "y"])
def test_a_wide_pass_from_a_vertex_state_with_integer_losses_is_the_cpu_pass(side, rule):
    from efce.solvers.backends.cuda.saddle import DeviceChain, DeviceRule

    model = build_efce_model(game_of("farina-fig1"))
    chain = model.xi_steps if side == "xi" else model.triggers.chain
    from efce.solvers.backends.cuda.layouts import chain_layout

    # Y's root simplex in pieces; on Ξ (steps of at most 3 entries) the 3-entry steps in pieces of
    # 2, whose h is not 1
    sizes = (
        (WIDE["wide_threshold"], WIDE["split_threshold"], WIDE["piece_size"]) if side == "y" else (1, 2, 2)
    )
    layout = chain_layout(chain, sizes[0], split_threshold=sizes[1], piece_size=sizes[2])
    assert len(layout.wide_steps) > 0 and len(layout.split_steps) > 0  # the block and piece paths
    device = DeviceChain(layout, WIDE["block_size"])
    gpu_rule = DeviceRule(as_rule(rule), layout)
    # A vertex state: one positive integer regret per simplex, so every strategy is 0/1.
    rng = np.random.default_rng(11)
    minimizer = chain_minimizer(chain, rule)
    state = minimizer.init()
    entries = state_entries(chain)
    regret = np.zeros(chain.num_entries)
    for k in np.flatnonzero(chain.kind == SIMPLEX):
        regret[rng.integers(chain.target_ptr[k], chain.target_ptr[k + 1])] = rng.integers(1, 4)
    state["regret"][:] = regret[entries]
    gpu_rule.a.copy_to_device(regret)
    # RECOMMEND, with a running sum, by the CPU's parallel passes (on two threads)
    cpu = CPUBackend(threads=min(2, available_threads()), parallel_min_size=1).chain_passes(
        chain, minimizer.kernel
    )
    a, b, t = minimizer.kernel.arrays(state)
    x_cpu, total_cpu = np.empty(chain.num_entries), np.ones(chain.num_entries)
    cpu.recommend(a, b, x_cpu, total_cpu, 2.0)
    from numba import cuda

    x, total = cuda.device_array(chain.num_entries), cuda.to_device(np.ones(chain.num_entries))
    spec = gpu_rule.kernel
    device.recommend(spec.family, spec.eta, gpu_rule.arrays(), x, total, 2.0, True)
    assert np.array_equal(x.copy_to_host(), x_cpu) and np.array_equal(total.copy_to_host(), total_cpu)
    # OBSERVELOSS of integer losses: values left in ℓ̃, the scatter, the new state
    loss = rng.integers(-3, 4, chain.num_entries).astype(np.float64)
    loss_cpu = loss.copy()
    cpu.observe(a, b, t, loss_cpu)
    loss_gpu = cuda.to_device(loss)
    device.observe(gpu_rule, loss_gpu)
    assert np.array_equal(loss_gpu.copy_to_host(), loss_cpu)
    host = gpu_rule.to_host()
    assert np.array_equal(host["a"][entries], state["regret"])
    if rule == "prm+":
        assert np.array_equal(host["pred64"][entries], state["prediction"])
    # The chain minimum of any loss: a minimum is exact, the gather in the CPU's order; an entry
    # left out (the welfare weight's, in Y's root simplex) is one the minimum never picks, even
    # where it would be the smallest.
    loss = rng.standard_normal(chain.num_entries)
    root = chain.step_order[0]
    loss[chain.target_ptr[root] + 1] = -1e6
    whole = DeviceChain(chain_layout(chain, WIDE["wide_threshold"]), WIDE["block_size"])  # no pieces
    for masked, chain_on_device in itertools.product((-1, int(chain.target_ptr[root]) + 1), (device, whole)):
        work = cuda.to_device(loss)
        chain_on_device.minimum(work, masked)
        expected = loss.copy()
        if masked >= 0:
            expected[masked] = np.inf
        assert work.copy_to_host()[0] == chain_minimum(chain, expected)


def test_wide_csr_products_of_integer_vectors_are_the_cpu_operators():
    from numba import cuda

    from efce.solvers.backends.cuda.saddle import CudaSaddlePoint

    model = build_efce_model(game_of("three_doors"))
    gpu = CudaSaddlePoint(model, "rm+", **WIDE)
    assert gpu.a.num_medium > 0 and gpu.a.num_long > 0 and gpu.at.num_medium > 0  # all three row paths
    rng = np.random.default_rng(5)
    rows, columns = model.operator.shape
    y = rng.integers(-4, 5, columns).astype(np.float64)
    x = rng.integers(-4, 5, rows).astype(np.float64)
    out = cuda.device_array(rows)
    for sign in (1.0, -1.0):
        gpu.a.matvec(cuda.to_device(y), out, sign)
        assert np.array_equal(out.copy_to_host(), sign * (model.operator @ y))
    out = cuda.device_array(columns)
    gpu.at.matvec(cuda.to_device(x), out, -1.0)
    assert np.array_equal(out.copy_to_host(), model.operator.rmatvec(x, out=np.empty(columns), sign=-1.0))


def test_violations_by_threads_and_by_blocks_of_integer_points_are_the_cpu_chains():
    from numba import cuda

    from efce.solvers.backends.cuda.layouts import chain_layout
    from efce.solvers.backends.cuda.saddle import DeviceChain

    chain = build_efce_model(game_of("three_doors")).xi_steps
    rng = np.random.default_rng(9)
    # off the step equations; and v1 - v2 + v3 for vertices v_i, which meets every step equation
    # and x[0] = 1, so that only its negative entries violate the polytope
    p, q = rng.integers(-2, 3, chain.num_entries).astype(np.float64), rng.integers(0, 5, chain.num_entries)
    v1, v2, v3 = (chain.random_point(rng, vertex=True) for _ in range(3))
    signed = v1 - v2 + v3
    assert chain.violations((signed,)) == (1.0,)
    scalars = cuda.device_array(2)
    for threshold, block in ((10**9, 8), (1, 4)):  # every step on a thread, every step on a block
        device = DeviceChain(chain_layout(chain, threshold), block)
        for first, second in ((p, q.astype(np.float32)), (signed, signed.astype(np.float32))):
            device.violations(cuda.to_device(first), 1.0, cuda.to_device(second), 0.5, scalars, 0)
            assert tuple(scalars.copy_to_host()) == chain.violations((first, second), (1.0, 0.5))


def test_the_gather_adds_in_the_cpu_serial_order():
    from numba import cuda

    from efce.solvers.backends.cuda.layouts import chain_layout
    from efce.solvers.backends.cuda.saddle import DeviceChain

    model = build_efce_model(game_of("three_doors"))
    tested = 0
    for chain in (model.xi_steps, model.triggers.chain):  # every entry a destination; a list
        layout = chain_layout(chain)
        device = DeviceChain(layout, 8)
        rng = np.random.default_rng(2)
        level_of = np.full(chain.num_entries, -1)
        for level, steps in enumerate(chain.levels):
            for k in steps:
                level_of[chain.target_ptr[k] : chain.target_ptr[k + 1]] = level
        for level in range(-1, len(chain.levels)):  # the root's part, then each level's
            loss = rng.standard_normal(chain.num_entries)
            # where a destination gets two values, 1 + 2^53 - 2^53 is 0 in this order and 1 in the other
            part = layout.gather_part_ptr[level + 1 : level + 3]
            for p in range(part[0], part[1]):
                lo, hi = layout.gather_ptr[p], layout.gather_ptr[p + 1]
                if hi - lo == 2 and layout.gather_value[lo] != layout.gather_value[lo + 1]:
                    loss[p if len(layout.gather_dest) == 0 else layout.gather_dest[p]] = 1.0
                    loss[layout.gather_value[lo]], loss[layout.gather_value[lo + 1]] = 2.0**53, -(2.0**53)
                    tested += 1
            # chain_observe's scatter from the deeper levels (steps backwards), into this level's
            # entries only
            expected = loss.copy()
            for steps in chain.levels[level + 1 :][::-1]:
                for k in steps[::-1]:
                    for j in range(chain.source_ptr[k], chain.source_ptr[k + 1]):
                        if level_of[chain.source[j]] == level:
                            expected[chain.source[j]] += expected[chain.target_ptr[k]]
            work = cuda.to_device(loss)
            gather = device.root_gather if level < 0 else device.levels[level][4:]
            device._gather(*gather, work)
            assert np.array_equal(work.copy_to_host(), expected)
    assert tested > 0
