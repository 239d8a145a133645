"""polytopes/chain.py on its own: validation, levels, points, natural order, immutability."""

import dataclasses

import numpy as np
import pytest

from efce.errors import ChainError, EFCEError
from efce.polytopes.chain import SIMPLEX, SINGLETON, Chain


def _chain(**changes):
    # {1} ◁ Δ2 (entries 1, 2) ◁_{x1} Δ2 (entries 3, 4) ◁_{x2} {1} (entry 5)
    fields = dict(kind=np.array([SIMPLEX, SIMPLEX, SINGLETON], dtype=np.int8),
                  target_ptr=np.array([1, 3, 5, 6]), source_ptr=np.array([0, 1, 2, 3]),
                  source=np.array([0, 1, 2]), entry_index=np.arange(6), name="tiny")
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


@pytest.mark.parametrize("changes, message", [
    (dict(target_ptr=np.array([0, 3, 5, 6])), "target_ptr\\[0\\] must be 1"),
    (dict(source=np.array([0, 3, 2])), "reads an entry that is not filled before it"),
    (dict(kind=np.array([SIMPLEX, SINGLETON, SINGLETON], dtype=np.int8)), "singleton step"),
    (dict(entry_index=np.arange(5)), "entry_index must label every entry"),
])
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
