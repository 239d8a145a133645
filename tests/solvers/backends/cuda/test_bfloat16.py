"""PRM+'s bfloat16 predictions on the GPU: the kernels' arithmetic encoding and decoding give the
CPU kernels' bits (which go through the float32's bits) for every kind of value."""

from __future__ import annotations

import numpy as np
import pytest

from efce.solvers.backends.cpu.rules import bfloat16_bits as cpu_bits
from efce.solvers.backends.cpu.rules import bfloat16_value as cpu_value

from .simulator import requires_simulator

pytestmark = requires_simulator
cuda = pytest.importorskip("numba.cuda", reason="numba-cuda is not installed")
from efce.solvers.backends.cuda.kernels import bfloat16_bits, bfloat16_value  # noqa: E402


@cuda.jit
def convert(values, bits, back):
    for i in range(cuda.grid(1), len(values), cuda.gridsize(1)):
        bits[i] = bfloat16_bits(values[i])
        back[i] = bfloat16_value(bits[i])


@cuda.jit
def decode(bits, out):
    for i in range(cuda.grid(1), len(bits), cuda.gridsize(1)):
        out[i] = bfloat16_value(bits[i])


def _values() -> np.ndarray:
    rng = np.random.default_rng(3)
    tiny = np.float64(np.finfo(np.float32).tiny)  # smallest normal float32
    special = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 3.0, 1e-3, -7.25e5, 3.4e38, 3.4028235e38, 1e39, -1e39]
    special += [tiny, -tiny, tiny / 3, tiny * (1 - 2.0**-9), 2.0**-133, 2.0**-134, 3 * 2.0**-135, 1e-46]
    # ties to even at 8 significant bits (and just off them), in float32 and float64
    special += [1 + 2.0**-8, 1 + 3 * 2.0**-8, 1 + 2.0**-8 + 2.0**-30, 1 + 2.0**-8 - 2.0**-40]
    special += [1 + 2.0**-24, 1 + 2.0**-8 + 2.0**-24]  # double rounding: to float32 first
    random = rng.standard_normal(3000) * 10.0 ** rng.integers(-40, 38, 3000)
    return np.concatenate([special, random, -random])


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")  # 1e39 → inf, as on the CPU
def test_bfloat16_bits_and_values_match_the_cpu_kernels():
    values = _values()
    bits = np.zeros(len(values), dtype=np.uint16)
    back = np.zeros(len(values))
    convert[1, 4](values, bits, back)
    expected = np.array([cpu_bits(v) for v in values], dtype=np.uint16)
    assert np.array_equal(bits, expected)
    expected_back = np.array([cpu_value(b) for b in expected])
    assert np.array_equal(back, expected_back) and np.array_equal(np.signbit(back), np.signbit(expected_back))
    # every bit pattern decodes as the CPU decodes it (NaN patterns: NaN)
    every = np.arange(1 << 16, dtype=np.uint16)
    decoded = np.zeros(len(every))
    decode[1, 4](every, decoded)
    cpu = np.array([cpu_value(b) for b in every])
    assert np.array_equal(decoded, cpu, equal_nan=True)
