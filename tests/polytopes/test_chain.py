"""polytopes/chain.py on its own: validation, levels, points, natural order, immutability, and
the check of a point against the chain's own constraints."""

import dataclasses

import numpy as np
import pytest

from efce import games
from efce.errors import ChainError, EFCEError
from efce.games.relevant import relevant_pairs
from efce.polytopes import correlation_plan
from efce.polytopes.chain import SIMPLEX, SINGLETON, Chain, StepArrays
from efce.polytopes.feasibility import FeasibilityCheck
from efce.solvers.backends import available_threads
from efce.solvers.backends.cpu import CPUBackend


def _chain(**changes):
    # {1} ◁ Δ2 (entries 1, 2) ◁_{x1} Δ2 (entries 3, 4) ◁_{x2} {1} (entry 5)
    fields = dict(
        kind=np.array([SIMPLEX, SIMPLEX, SINGLETON], dtype=np.int8),
        target_ptr=np.array([1, 3, 5, 6]),
        source_ptr=np.array([0, 1, 2, 3]),
        source=np.array([0, 1, 2]),
        entry_index=np.arange(6),
        name="tiny",
    )
    fields.update(changes)
    return Chain(**fields)


def test_sizes_levels_and_notation():
    chain = _chain()
    assert (chain.num_entries, chain.num_steps) == (6, 3)
    assert (chain.num_simplex_steps, chain.num_singleton_steps) == (2, 1)
    assert chain.level.tolist() == [1, 2, 2] and chain.depth == 2
    assert [steps.tolist() for steps in chain.levels] == [[0], [1, 2]]
    assert chain.notation() == "{1} ◁ Δ2 ◁ Δ2 ◁ {1}"


def test_known_levels_are_used_as_given():
    chain = _chain(known_level=np.array([1, 2, 2], dtype=np.int32), level_sorted=True)
    assert chain.level.tolist() == [1, 2, 2]
    assert chain.step_order.tolist() == [0, 1, 2]
    assert [steps.tolist() for steps in chain.levels] == [[0], [1, 2]]


def test_points_and_weights_round_trip():
    chain = _chain()
    rng = np.random.default_rng(0)
    x = chain.random_point(rng)
    assert x[0] == 1 and x[1] + x[2] == pytest.approx(1) and x[3] + x[4] == pytest.approx(x[1])
    assert x[5] == pytest.approx(x[2])
    assert np.allclose(chain.point(chain.weights_of(x)), x)
    v = chain.random_point(rng, vertex=True)
    assert set(np.round(v, 12)) <= {0.0, 1.0}
    assert np.allclose(chain.from_natural(chain.to_natural(x)), x)


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(target_ptr=np.array([0, 3, 5, 6])), "target_ptr\\[0\\] must be 1"),
        (dict(source=np.array([0, 3, 2])), "reads an entry that is not filled before it"),
        (dict(kind=np.array([SIMPLEX, SINGLETON, SINGLETON], dtype=np.int8)), "singleton step"),
        (dict(entry_index=np.arange(5)), "entry_index must label every entry"),
    ],
)
def test_malformed_chains_are_refused(changes, message):
    with pytest.raises(ChainError, match=message) as info:
        _chain(**changes).validate()
    assert isinstance(info.value, EFCEError)


def test_a_chain_is_immutable():
    chain = _chain()
    with pytest.raises(dataclasses.FrozenInstanceError):
        chain.name = "other"
    with pytest.raises(AttributeError):
        chain.level = np.zeros(3)


def _reference_violation(chain, x):
    """The chain's constraints written out step by step: x[0] = 1, x ≥ 0, Σ targets = Σ sources."""
    worst = max(abs(x[0] - 1.0), -x.min())
    for k in range(chain.num_steps):
        filled = x[chain.target_ptr[k] : chain.target_ptr[k + 1]].sum()
        h = x[chain.source[chain.source_ptr[k] : chain.source_ptr[k + 1]]].sum()
        worst = max(worst, abs(filled - h))
    return worst


def test_violations_of_the_chains_own_constraints():
    chain = _chain()
    rng = np.random.default_rng(2)
    x = chain.random_point(rng)
    assert chain.violations((x,))[0] <= 1e-15
    # Each rule is seen with the size of its violation: the simplex sum, the singleton, x ≥ 0, root.
    for entry, delta in [(3, 0.25), (5, -0.125), (1, -0.5), (0, 0.0625)]:
        bad = x.copy()
        bad[entry] += delta
        assert chain.violations((bad,))[0] == pytest.approx(_reference_violation(chain, bad), abs=1e-15)
        assert chain.violations((bad,))[0] >= abs(delta) - 1e-15
    negative = x.copy()
    negative[3], negative[4] = x[3] + x[4] + 0.1, -0.1  # the sum holds, the sign does not
    assert chain.violations((negative,))[0] == pytest.approx(0.1)


def test_violations_reject_points_of_the_wrong_size():
    with pytest.raises(ValueError, match="one scale per point"):
        _chain().violations((np.ones(5),))
    with pytest.raises(ValueError, match="one scale per point"):
        _chain().violations((np.ones(6),), (1.0, 2.0))


@pytest.mark.parametrize(
    "make",
    [
        games.farina_fig2,
        lambda: games.sheriff(max_bribe=1, max_items=2, rounds=2),
        lambda: games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2),
    ],
)
def test_decompose_chain_check_agrees_with_definition_3(make):
    """On Ξ's chain the check is ~0 exactly where Definition 3 holds; one perturbed entry is seen
    by both, with the size the step equations give, on every thread count, for several plans."""
    game = make()
    pairs = relevant_pairs(game)
    chain = correlation_plan(game, pairs)
    definition3 = FeasibilityCheck(game, pairs)
    rng = np.random.default_rng(5)
    for trial in range(4):
        x = chain.random_point(rng, vertex=trial % 2 == 1)
        assert chain.violations((x,))[0] <= 1e-12
        assert definition3(chain.to_natural(x, len(pairs))) <= 1e-12
        bad = x.copy()
        bad[int(rng.integers(1, chain.num_entries))] += 0.01 * (1 + trial) * (-1) ** trial
        expected = _reference_violation(chain, bad)
        assert expected >= 0.01 - 1e-15 and definition3(chain.to_natural(bad, len(pairs))) > 1e-3
        for threads in range(1, available_threads() + 1):
            both = chain.violations((x, 4.0 * bad), (1.0, 0.25), backend=CPUBackend(threads=threads))
            assert both[0] <= 1e-12 and both[1] == pytest.approx(expected, abs=1e-15)


def test_rescaled_point_keeps_a_chain_point_and_renormalizes_each_block():
    chain = _chain()
    x = chain.random_point(np.random.default_rng(4))
    assert np.allclose(chain.rescaled_point(x), x, rtol=1e-15, atol=0)
    assert np.allclose(chain.rescaled_point(7.0 * x), x, rtol=1e-15, atol=0)  # a running sum
    # Entries 1, 2 sum to 1, then 3, 4 to x[1], and entry 5 is x[2]: by hand.
    values = np.array([1.0, 0.3, 0.1, 2.0, 6.0, 99.0])
    expected = [1.0, 0.75, 0.25, 0.1875, 0.5625, 0.25]
    assert chain.rescaled_point(values).tolist() == pytest.approx(expected, abs=1e-15)
    # A block with nothing positive becomes uniform on its share; negatives count as 0.
    values[3], values[4] = -1.0, 0.0
    assert chain.rescaled_point(values)[3:5].tolist() == pytest.approx([0.375, 0.375], abs=1e-15)
    with pytest.raises(ValueError, match="expected \\(6,\\)"):
        chain.rescaled_point(np.ones(5))


@pytest.mark.parametrize(
    "make", [games.farina_fig2, lambda: games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2)]
)
def test_rescaled_point_of_a_float32_plan_satisfies_definition_3(make):
    """A correlation plan rounded to float32 violates Definition 3 by float32's rounding; its
    rescaled point satisfies it to float64's and moves no entry by more than a few roundings."""
    game = make()
    pairs = relevant_pairs(game)
    chain = correlation_plan(game, pairs)
    definition3 = FeasibilityCheck(game, pairs)
    x = chain.random_point(np.random.default_rng(8))
    rounded = (1e4 * x).astype(np.float32)  # a running sum: any positive scale
    assert definition3(chain.to_natural(rounded / 1e4, len(pairs))) > 1e-9
    fixed = chain.rescaled_point(rounded)
    assert fixed.dtype == np.float64
    assert chain.violations((fixed,))[0] <= 1e-15
    assert definition3(chain.to_natural(fixed, len(pairs))) <= 1e-15
    assert np.allclose(fixed, x, rtol=1e-6, atol=1e-12)
    assert chain.violations((rounded,), (1e-4,))[0] > 1e-9  # float32 points are read as such


# ---------------------------------------------------------------------- steps stored as runs
def _unpacked(chain):
    """The same chain with its steps one per step (three arrays)."""
    return dataclasses.replace(
        chain, steps=StepArrays(chain.kind.copy(), chain.target_ptr.copy(), chain.source_ptr.copy())
    )


@pytest.mark.parametrize(
    "make",
    [games.farina_fig2, lambda: games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2)],
)
def test_decompose_stores_its_steps_as_runs_that_give_them_back(make):
    chain = correlation_plan(make())
    runs = chain.runs
    assert runs is not None and runs.num_runs < chain.num_steps
    flat = _unpacked(chain)
    assert flat.runs is None and flat.packed().runs is not None
    again = flat.packed()
    for name in ("kind", "target_ptr", "source_ptr"):
        assert np.array_equal(getattr(again, name), getattr(flat, name))
    assert again.runs.num_runs <= runs.num_runs  # DECOMPOSE's runs end at each level's end
    # Each step of a run: its kind, its consecutive entries and source slots.
    for k in range(chain.num_steps):
        r = int(np.searchsorted(runs.ptr, k, side="right")) - 1
        i = k - runs.ptr[r]
        assert chain.kind[k] == runs.run_kind[r]
        assert chain.target_ptr[k] == runs.run_entry[r] + i * runs.run_size[r]
        assert chain.source_ptr[k] == runs.run_source[r] + i * runs.run_nsrc[r]
    assert chain.num_simplex_steps == flat.num_simplex_steps
    assert chain.simplex_entries == int(flat.step_size[flat.kind == SIMPLEX].sum())
    assert chain.widest_step == int(flat.step_size.max())
    flat.validate()
    chain.validate()


def test_malformed_runs_are_refused():
    runs = _chain().packed().runs
    # step 1 (run 0's second step) fills entries 3 and 4 and reads entry 3
    bad_source = _chain(source=np.array([0, 3, 2])).packed()
    with pytest.raises(ChainError, match="step 1 reads an entry that is not filled before it"):
        bad_source.validate()
    gap = dataclasses.replace(runs, run_entry=runs.run_entry + np.array([0, 1, 1]))
    with pytest.raises(ChainError, match="do not follow one another"):
        dataclasses.replace(_chain(), steps=gap).validate()
    with pytest.raises(ChainError, match="only a chain whose steps fill consecutive entries"):
        _chain(target_ptr=np.array([1, 5, 3, 6])).packed()


@pytest.mark.parametrize(
    "make",
    [games.farina_fig2, lambda: games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2)],
)
def test_a_packed_chain_computes_what_its_arrays_compute(make):
    """The run kernels (violations, rescaled point, minimum and vertex) give the per-step
    kernels' numbers bit for bit, on every thread count."""
    chain = correlation_plan(make())
    flat = _unpacked(chain)
    rng = np.random.default_rng(11)
    x = chain.random_point(rng)
    bad = x.copy()
    bad[rng.integers(1, chain.num_entries, size=3)] += [0.01, -0.02, 0.03]
    running = (5.0 * bad).astype(np.float32)
    for threads in range(1, available_threads() + 1):
        cpu = CPUBackend(threads=threads)
        arrays, scales = (x, bad, running), (1.0, 1.0, 0.2)
        assert chain.violations(arrays, scales, backend=cpu) == flat.violations(arrays, scales, backend=cpu)
    assert np.array_equal(chain.rescaled_point(running), flat.rescaled_point(running))
    loss = rng.normal(size=chain.num_entries)
    cpu = CPUBackend(threads=1)
    assert cpu.chain_minimum(chain, loss.copy()) == cpu.chain_minimum(flat, loss.copy())
    value, vertex = cpu.chain_vertex(chain, loss.copy())
    assert (value, vertex.tolist()) == tuple(
        (v, p.tolist()) for v, p in [cpu.chain_vertex(flat, loss.copy())]
    )[0]
    assert value == pytest.approx(float(loss @ vertex), abs=1e-12)
