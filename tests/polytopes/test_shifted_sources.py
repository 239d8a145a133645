"""Ξ's sources without the steps that repeat the step before them shifted by one
(:class:`efce.polytopes.chain.ShiftedSources`): they give the source array back, keep only the
steps they must, and a chain whose source array is on disk (:meth:`Chain.source_on_disk`)
computes what it computed before."""

from __future__ import annotations

import numpy as np
import pytest

from efce import games
from efce.errors import ChainError
from efce.polytopes import correlation_plan
from efce.polytopes.chain import MAX_SOURCE_SHIFT, SIMPLEX, SINGLETON, Chain, ShiftedSources, StepRuns
from efce.solvers.backends.cpu import CPUBackend

GAMES = {
    "farina_fig2": games.farina_fig2,
    "battleship_2x2": lambda: games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2),
    "sheriff": lambda: games.sheriff(max_bribe=1, max_items=1, rounds=1),
}


def _brute_shift(chain: Chain) -> np.ndarray:
    """Each step's shift from its definition: 0 for a run's first step, for a step of another
    size of sources, or for one whose sources are not the step before's each plus one; else
    one more than the step before's (capped at MAX_SOURCE_SHIFT, past which a step keeps its own)."""
    sptr, src, runs = chain.source_ptr, chain.source.astype(np.int64), chain.runs
    run_first = set(runs.ptr[:-1].tolist())
    shift = np.zeros(chain.num_steps, dtype=np.int64)
    for k in range(1, chain.num_steps):
        mine, before = src[sptr[k] : sptr[k + 1]], src[sptr[k - 1] : sptr[k]]
        same = len(mine) == len(before) and np.array_equal(mine, before + 1)
        if k not in run_first and same and shift[k - 1] < MAX_SOURCE_SHIFT:
            shift[k] = shift[k - 1] + 1
    return shift


@pytest.mark.parametrize("name", sorted(GAMES))
def test_decompose_chains_keep_only_the_sources_of_unshifted_steps(name):
    chain = correlation_plan(GAMES[name]())
    shifted = chain.shifted_sources
    assert np.array_equal(shifted.shift, _brute_shift(chain))
    kept = np.diff(chain.source_ptr)[shifted.shift == 0].sum()
    assert len(shifted.stored) == kept < len(chain.source)
    assert np.array_equal(shifted.expanded(chain.runs), chain.source)
    assert shifted.stored.dtype == chain.source.dtype and shifted.shift.dtype == np.uint8


def _one_long_run(steps: int) -> Chain:
    """A simplex of ``steps + 1`` entries under the root, then one run of singletons, step ``i``
    reading entry ``1 + i``: every step after the first repeats the one before, shifted."""
    kind = np.array([SIMPLEX] + [SINGLETON] * steps, np.int8)
    target_ptr = np.concatenate([[1, steps + 2], steps + 2 + np.arange(1, steps + 1)])
    source = np.concatenate([[0], 1 + np.arange(steps)]).astype(np.int32)
    runs = StepRuns.from_arrays(kind, target_ptr, np.arange(steps + 2))
    return Chain(steps=runs, source=source, level_sorted=True, level_ptr=np.array([0, 1, steps + 1]))


def test_a_step_past_the_largest_shift_keeps_its_sources():
    chain = _one_long_run(600)
    shift = chain.shifted_sources.shift
    assert shift.max() == MAX_SOURCE_SHIFT
    # the root's simplex, then the singletons 0, 256 and 512 of the run keep theirs
    assert np.flatnonzero(shift == 0).tolist() == [0, 1, 257, 513]
    assert np.array_equal(chain.shifted_sources.expanded(chain.runs), chain.source)
    chain.validate()


def test_runs_whose_source_slots_do_not_follow_one_another_are_refused():
    runs = _one_long_run(4).runs
    with pytest.raises(ChainError, match="do not follow one another"):
        ShiftedSources.of(runs, np.zeros(3, np.int32))  # fewer slots than the runs read


def test_a_chain_with_its_source_on_disk_computes_what_it_did(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.setattr("efce.games.resources.memory.PARK_MIN_BYTES", 0)
    chain = correlation_plan(GAMES["battleship_2x2"]())
    backend = CPUBackend(threads=2, parallel_min_size=1)
    rng = np.random.default_rng(0)
    values = rng.random(chain.num_entries)
    point = chain.rescaled_point(values, backend=backend)
    on_disk = chain.source_on_disk()
    assert on_disk is not chain and on_disk.shifted_sources is chain.shifted_sources
    assert not on_disk.source.flags.writeable and np.array_equal(on_disk.source, chain.source)
    assert on_disk.source_on_disk() is on_disk  # once is enough
    assert chain.source.flags.writeable  # the chain itself is unchanged
    on_disk.validate()
    again = on_disk.rescaled_point(values, backend=backend)
    assert np.array_equal(again, point)
    assert on_disk.violations((again,), backend=backend) == chain.violations((point,), backend=backend)
