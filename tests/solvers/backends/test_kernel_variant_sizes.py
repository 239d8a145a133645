"""The size classes that choose the CPU backend's kernel variants (``CPUBackend.variant_sizes``)
and the stand-in size a warm-up runs a tiny game under (``solvers.backends.sizing.sized_as``)."""

from __future__ import annotations

import numpy as np
import pytest

from efce.solvers.backends.cpu import CPUBackend
from efce.solvers.backends.cpu.backend import PARALLEL_MIN_ENTRIES
from efce.solvers.backends.sizing import sized_as, state_variant_size, variant_size
from efce.solvers.regret.local import FLOAT32_STATE_MIN_ENTRIES, prediction_dtype, state_dtype

PARALLEL = PARALLEL_MIN_ENTRIES
NARROW = FLOAT32_STATE_MIN_ENTRIES


def test_small_structures_are_one_serial_float64_class():
    assert CPUBackend(threads=1).variant_sizes([1_045, 814]) == [(0, 0)]
    assert CPUBackend(threads=1).variant_sizes([]) == []


def test_each_threshold_reached_is_its_own_class():
    backend = CPUBackend(threads=1)
    assert backend.variant_sizes([PARALLEL + 7]) == [(PARALLEL, PARALLEL)]
    # A chain of 2²⁰ entries or more keeps its state in float32 or float64 (its simplex entries
    # may be fewer): both variants.
    assert backend.variant_sizes([2 * NARROW]) == [(NARROW, 0), (NARROW, NARROW)]


def test_a_range_covers_every_class_it_crosses():
    classes = CPUBackend(threads=1).variant_sizes([(1, 2 * NARROW)])
    assert classes == [(0, 0), (PARALLEL, PARALLEL), (NARROW, 0), (NARROW, NARROW)]
    assert CPUBackend(threads=1).variant_sizes([(PARALLEL, PARALLEL + 1)]) == [(PARALLEL, PARALLEL)]


def test_the_backends_own_parallel_threshold_sets_the_classes():
    assert CPUBackend(threads=1, parallel_min_size=10).variant_sizes([5, 20]) == [(0, 0), (10, 10)]


def test_sized_as_stands_in_inside_the_block_only():
    assert variant_size(3) == 3 and state_dtype(3) == np.float64
    with sized_as(NARROW, 0):
        assert variant_size(3) == NARROW and state_variant_size(3) == 0
        assert state_dtype(3) == np.float64
        with sized_as(NARROW):
            assert state_dtype(3) == np.float32 and prediction_dtype(3) == np.uint16
        assert state_dtype(3) == np.float64
    assert variant_size(3) == 3 and state_variant_size(5) == 5


@pytest.mark.parametrize("bad", [-1, 2.5, True, "7"])
def test_sized_as_refuses_a_size_that_is_not_a_count(bad):
    with pytest.raises(ValueError, match="non-negative integer"), sized_as(bad):
        pass
