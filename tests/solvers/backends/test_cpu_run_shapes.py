"""The run passes' copies for common step shapes (``solvers/backends/cpu/chain_runs.py``:
simplex steps of 2–4 entries from one source under PRM+, singleton steps from 2–7 sources, in
RECOMMEND and in OBSERVELOSS's local updates and scatter) give the iterates of the per-step passes
bit for bit, for every shape, with the copies' rule and with another.

The games of the other backend tests hold only some of these shapes, so the chain here is made
for the purpose: every shape in runs of several steps, next to shapes no copy takes (a simplex of
six entries, a simplex from two sources, a singleton from one or eight), three levels deep."""

from __future__ import annotations

import numpy as np
import pytest

from efce.polytopes.chain import SIMPLEX, SINGLETON, Chain, StepRuns
from efce.solvers.backends.cpu import CPUBackend
from efce.solvers.backends.cpu import backend as cpu_backend
from efce.solvers.regret.engine import ChainEngine
from efce.solvers.regret.local import make_rule

#: (kind, entries, sources) of the runs of each level below the root's simplex: every shape a
#: copy takes (simplex 2, 3, 4 from one source; singletons from 2 to 7) and some none takes.
SHAPES = (
    [(SIMPLEX, n, 1) for n in (2, 3, 4, 6)] + [(SINGLETON, 1, ns) for ns in range(1, 9)] + [(SIMPLEX, 3, 2)]
)


def _chain_of_every_shape(steps_per_run: int = 5, levels: int = 3, seed: int = 0) -> Chain:
    """A chain numbered in fill order (as DECOMPOSE's), stored as runs: a simplex of eight
    entries under the root, then ``levels`` levels, each a run of ``steps_per_run`` steps of
    every shape in :data:`SHAPES`, reading random entries of the level above; a step after the
    first of its run reads, one time in two, the entries of the step before it each plus one
    (as about every second step of DECOMPOSE's runs does), which the run passes read as shifts
    (:class:`~efce.polytopes.chain.ShiftedSources`)."""
    rng = np.random.default_rng(seed)
    kind, target_ptr, source_ptr, source = [SIMPLEX], [1, 9], [0, 1], [0]
    above = np.arange(1, 9)
    level_ptr = [0, 1]
    for _ in range(levels):
        first = target_ptr[-1]
        for k, n, ns in SHAPES:
            for i in range(steps_per_run):
                kind.append(k)
                target_ptr.append(target_ptr[-1] + n)
                before = np.array(source[len(source) - ns :]) + 1
                if i > 0 and before.max() < first and rng.random() < 0.5:
                    source += before.tolist()
                else:
                    source += rng.choice(above, size=ns, replace=False).tolist()
                source_ptr.append(len(source))
        level_ptr.append(len(kind))
        above = np.arange(first, target_ptr[-1])
    runs = StepRuns.from_arrays(np.array(kind, np.int8), np.array(target_ptr), np.array(source_ptr))
    assert len(runs.run_kind) == 1 + levels * len(SHAPES)  # one run per shape and level
    return Chain(
        steps=runs,
        source=np.array(source, np.int32),
        level_sorted=True,
        level_ptr=np.array(level_ptr, np.int64),
        name="every shape",
    )


def _play(
    chain: Chain, rule: str, backend: CPUBackend, iterations: int = 12
) -> tuple[np.ndarray, np.ndarray]:
    """Recommend and observe random losses; the last point and the engine's state."""
    engine = ChainEngine(chain, make_rule(rule), backend=backend)
    rng = np.random.default_rng(1)
    x = np.empty(chain.num_entries)
    for _ in range(iterations):
        engine.recommend(out=x)
        engine.observe(rng.standard_normal(chain.num_entries), overwrite=True)
    engine.recommend(out=x)
    return x, np.concatenate([np.asarray(v, np.float64).ravel() for v in engine.state.values()])


@pytest.mark.parametrize("rule", ["prm+", "rm+"])
def test_every_step_shape_gives_the_per_step_iterates_bit_for_bit(rule, monkeypatch):
    chain = _chain_of_every_shape()
    shift = chain.shifted_sources.shift
    assert (shift == 1).any() and (shift == 2).any()  # steps that repeat the one before, shifted
    per_step = CPUBackend(threads=1, parallel_min_size=2**62)  # chain_passes: no copies
    x0, state0 = _play(chain, rule, per_step)
    monkeypatch.setattr(cpu_backend, "CHUNK_WORK", 8)  # several chunks per level, cut inside runs
    for threads in (1, 2):
        runs = CPUBackend(threads=threads, parallel_min_size=1)
        engine = ChainEngine(chain, make_rule(rule), backend=runs)
        assert engine.minimizer._passes.parallel and chain.runs is not None  # the run passes
        x, state = _play(chain, rule, runs)
        assert np.array_equal(x, x0) and np.array_equal(state, state0), threads
