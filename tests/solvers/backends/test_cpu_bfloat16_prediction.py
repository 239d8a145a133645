"""PRM+'s prediction in bfloat16 on big chains: the kernels' conversion rounds to nearest with
ties to even (checked against an independent rounding of the significand), and a PRM+ step
stores the last instantaneous regret to bfloat16 precision."""

import math

import numba
import numpy as np
import pytest

from efce.solvers.backends.cpu import rules
from efce.solvers.regret import local
from efce.solvers.regret.local import PredictiveRMPlus, Segments


@numba.njit
def _round_trip(values):
    bits = np.zeros(len(values), np.uint16)
    out = np.empty(len(values))
    for i in range(len(values)):
        bits[i] = rules.narrowed(values[i], bits[i])
        out[i] = rules.widened(bits[i])
    return bits, out


def _bfloat16_reference(value: float) -> float:
    """``value`` rounded to 8 significant bits, ties to even (Python's ``round``)."""
    if value == 0.0:
        return value
    significand, exponent = math.frexp(value)  # value = significand · 2^exponent, |s| in [0.5, 1)
    return math.ldexp(round(significand * 256) / 256, exponent)


def test_conversion_rounds_to_nearest_even_like_the_reference():
    rng = np.random.default_rng(7)
    # float32 inputs (no double rounding), magnitudes over many binades, both signs, and the
    # ties between two bfloat16 neighbours of 1.0
    values = (rng.standard_normal(20_000) * 10.0 ** rng.integers(-20, 20, 20_000)).astype(np.float32)
    values = np.concatenate(
        [values, np.float32([0.0, 1.0, -1.0, 1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 3.0e38])]
    )
    bits, out = _round_trip(values.astype(np.float64))
    reference = np.array([_bfloat16_reference(float(v)) for v in values])
    np.testing.assert_array_equal(out, reference)
    assert out[-7:-1].tolist() == [0.0, 1.0, -1.0, 1.0, 1 + 4 * 2**-8, -1.0]  # ties to even
    assert bits[-7:-1].tolist() == [0x0000, 0x3F80, 0xBF80, 0x3F80, 0x3F82, 0xBF80]
    assert np.all(np.abs(out - values) <= 2.0**-8 * np.abs(values))


def test_float64_state_is_stored_unrounded():
    @numba.njit
    def store(values, like):
        out = np.zeros_like(like)
        for i in range(len(values)):
            out[i] = rules.narrowed(values[i], out[i])
        return out, rules.widened(out[0])

    values = np.array([np.pi, -1e-300])
    out, first = store(values, np.zeros(2))
    np.testing.assert_array_equal(out, values)
    assert first == np.pi


@pytest.mark.parametrize("big", [False, True])
def test_prm_plus_stores_the_instantaneous_regret_as_its_prediction(big, monkeypatch):
    if big:
        monkeypatch.setattr(local, "FLOAT32_STATE_MIN_ENTRIES", 1)
    rule, seg = PredictiveRMPlus(), Segments.from_sizes([3, 2])
    state = rule.init(seg)
    assert state["prediction"].dtype == (np.uint16 if big else np.float64)
    assert state["regret"].dtype == (np.float32 if big else np.float64)
    loss = np.array([0.3, -1.7, 2.9, 1e-3, 5e-3])
    rule.observe(state, loss, seg)
    # uniform play first: v = mean loss of each simplex, instantaneous regret v − ℓ
    expected = np.concatenate([loss[:3].mean() - loss[:3], loss[3:].mean() - loss[3:]])
    stored = (state["prediction"].astype(np.uint32) << 16).view(np.float32) if big else state["prediction"]
    np.testing.assert_allclose(stored, expected, rtol=2.0**-8 if big else 1e-15, atol=0)
    # the next strategy is [R + m]^+ normalized, R = [r]^+ and m = r
    point = rule.recommend(state, seg)
    weights = 2 * np.maximum(expected, 0)
    np.testing.assert_allclose(point[:3], weights[:3] / weights[:3].sum(), rtol=1e-2 if big else 1e-14)
