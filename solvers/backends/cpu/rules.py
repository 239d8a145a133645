"""The local rules' arithmetic — one definition each — and the rules run on their own.

A local rule with a compiled form (:meth:`efce.solvers.regret.local.LocalRule.kernel`, a
:class:`efce.solvers.regret.local.Kernel`) names a *family* below and its parameters; its strategy
(:func:`local_strategy`) and its update (:func:`observe_simplex`: :func:`rm_regret`,
:func:`prm_plus_regret`; Hedge adds the loss) run

* the rule on its own, over every segment of a :class:`~efce.solvers.regret.local.Segments`
  partition (:func:`recommend_segments`, :func:`observe_segments`: what ``LocalRule.recommend``
  / ``observe`` run), and
* the rule fused into the passes of a chain (:mod:`efce.solvers.backends.cpu.chain_passes`).

Local state arrays are float64 or float32 (:func:`efce.solvers.regret.local.state_dtype`), PRM+'s
prediction bfloat16 bits where the state is float32
(:func:`efce.solvers.regret.local.prediction_dtype`): every kernel reads the state, computes in
float64 and rounds only what it stores.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic, overload

from efce.games.arrays import U
from efce.games.resources.compiled import compiled
from efce.solvers.backends.protocol import HEDGE, PRM_PLUS

from .jit import kernel

# The hot kernels index through games.arrays.U (unsigned); every index here is non-negative.


# ---------------------------------------------------------------------- bfloat16 predictions
# On big chains PRM+ keeps its prediction as bfloat16 (the upper half of a float32, stored as
# uint16; see efce.solvers.regret.local.prediction_dtype): the kernels read it through widened()
# and write it through narrowed().  numba has no 16-bit float, so the two
# conversions are written on the float32's bits.


@intrinsic
def _float32_bits(typingctx, value):
    """The bits of a float32 as a uint32 (a bit cast, no conversion)."""
    if value != types.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return types.uint32(types.float32), codegen


@intrinsic
def _bits_float32(typingctx, bits):
    """The float32 whose bits are the low 32 bits of the unsigned integer ``bits`` (numba
    widens unsigned shifts to 64 bits)."""
    if not isinstance(bits, types.Integer) or bits.signed or bits.bitwidth < 32:
        return None

    def codegen(context, builder, signature, args):
        low = args[0] if bits.bitwidth == 32 else builder.trunc(args[0], ir.IntType(32))
        return builder.bitcast(low, ir.FloatType())

    return types.float32(bits), codegen


@compiled(inline="always")
def bfloat16_bits(value: float) -> np.uint16:
    """``value`` rounded to bfloat16 (8 significant bits, float32's range), to nearest with
    ties to even, as the uint16 of its bits."""
    # An intrinsic: numba passes its typing context when it compiles the call.
    bits: np.uint32 = _float32_bits(np.float32(value))  # type: ignore[call-arg]
    bits += np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return np.uint16(bits >> np.uint32(16))


@compiled(inline="always")
def bfloat16_value(bits: int | np.uint16) -> float:
    """The float64 value of the bfloat16 with uint16 ``bits``."""
    # An intrinsic: numba passes its typing context when it compiles the call.
    return np.float64(_bits_float32(np.uint32(bits) << np.uint32(16)))  # type: ignore[call-arg]


def widened(value: float | np.uint16) -> float:
    """A stored state value as float64: float32/float64 as it is, uint16 as bfloat16 bits.
    (This body is the Python twin's, :mod:`efce.games.resources.compiled`; compiled code runs
    the overload below.)"""
    if isinstance(value, np.uint16):
        return float(np.array(np.uint32(value) << np.uint32(16), dtype=np.uint32).view(np.float32)[()])
    return np.float64(value)


def narrowed(value: float, like: float | np.uint16) -> float | np.uint16:
    """``value`` rounded to the type of the stored value ``like`` (uint16: bfloat16 bits, rounded
    as :func:`bfloat16_bits`).  (This body is the Python twin's; compiled code runs the overload
    below.)"""
    if isinstance(like, np.uint16):
        bits = int(np.array(value, dtype=np.float32).view(np.uint32)[()])
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFFFFFF
        return np.uint16(bits >> 16)
    return value


# Both dispatch at compile time on the stored scalar's type, so a kernel compiled for float
# state holds no conversion at all; ``narrowed`` is handed the stored value only for its type
# (the load it reads is dead and removed by the compiler).
@overload(widened, inline="always")
def _widened(value):
    if value == types.uint16:
        return lambda value: bfloat16_value(value)
    return lambda value: np.float64(value)


@overload(narrowed, inline="always")
def _narrowed(value, like):
    if like == types.uint16:
        return lambda value, like: bfloat16_bits(value)
    return lambda value, like: value


# ---------------------------------------------------------------------- the rules' formulas
@kernel()
def discounts(alpha: float, beta: float, t: float) -> tuple[float, float]:
    """DCFR factors ``t^α/(t^α+1)`` and ``t^β/(t^β+1)`` after iteration ``t`` (NaN: no discount,
    factor 1)."""
    pos = 1.0 if np.isnan(alpha) else t**alpha / (t**alpha + 1.0)
    neg = 1.0 if np.isnan(beta) else t**beta / (t**beta + 1.0)
    return pos, neg


@compiled(inline="always")
def local_strategy(
    family: int, eta: float, a: np.ndarray, b: np.ndarray, lo: int, n: int, out: np.ndarray, out_lo: int
) -> None:
    """The strategy of the segment ``a[lo:lo+n]`` (and ``b``) into ``out[out_lo:out_lo+n]``.

    RM / RM+ / DCFR: ``[R]^+`` normalized; PRM+: ``[R + m]^+`` normalized (``m = b``, the
    prediction); both uniform when the positive part is 0 (:func:`regret_strategy`).  Hedge:
    ``exp(-η L)`` normalized with ``L = a`` the cumulative loss (shifted by its maximum for
    stability)."""
    if family == HEDGE:
        total = 0.0
        m = -np.inf
        for e in range(lo, lo + n):
            z = -eta * a[U(e)]
            if z > m:
                m = z
        for e in range(lo, lo + n):
            # math.exp, not np.exp: both compile to the C library's exp, but run as Python
            # (the twin) NumPy's exp is its own SIMD code on CPUs with AVX-512, which differs
            # from the C library's in the last bit for about 5 % of arguments.
            w = math.exp(-eta * a[U(e)] - m)
            out[U(out_lo + e - lo)] = w
            total += w
        normalize(total, n, out, out_lo)
    else:
        regret_strategy(family == PRM_PLUS, a, b, lo, n, out, out_lo)


@compiled(inline="always")
def regret_strategy(
    predictive: bool, a: np.ndarray, b: np.ndarray, lo: int, n: int, out: np.ndarray, out_lo: int
) -> None:
    """The RM family's strategy (:func:`local_strategy`): ``[R]^+``, or ``[R + m]^+`` if
    ``predictive`` (PRM+), normalized; uniform when the positive part is 0.  The chain passes'
    copies for PRM+ (:mod:`.chain_runs`) call it with ``predictive`` a constant."""
    total = 0.0
    for e in range(lo, lo + n):
        # float64 arithmetic whatever the state's dtype (float32 on big chains)
        r = np.float64(a[U(e)]) + widened(b[U(e)]) if predictive else np.float64(a[U(e)])
        w = r if r > 0.0 else 0.0
        out[U(out_lo + e - lo)] = w
        total += w
    normalize(total, n, out, out_lo)


@compiled(inline="always")
def normalize(total: float, n: int, out: np.ndarray, out_lo: int) -> None:
    """``out[out_lo:out_lo+n] /= total`` (as a product with ``1/total``), or uniform if
    ``total`` is 0."""
    if total > 0.0:
        scale = 1.0 / total
        for i in range(n):
            out[U(out_lo + i)] = out[U(out_lo + i)] * scale
    else:
        for i in range(n):
            out[U(out_lo + i)] = 1.0 / n


@compiled(nogil=True)
def rm_regret(r: float, instantaneous: float, plus: bool, pos: float, neg: float) -> float:
    """RM / RM+ / DCFR (Hart & Mas-Colell 2000; Tammelin et al. 2015; Brown & Sandholm 2019):
    ``R ← (R + r)·(pos if > 0 else neg)``, clipped at 0 for RM+."""
    r = r + instantaneous
    r = r * (pos if r > 0.0 else neg)
    return 0.0 if plus and r < 0.0 else r


@compiled(nogil=True)
def prm_plus_regret(r: float, instantaneous: float) -> float:
    """PRM+ (Farina, Kroer, Sandholm 2021): ``R ← [R + r]^+`` (the prediction becomes ``r``)."""
    r = r + instantaneous
    return r if r > 0.0 else 0.0


@compiled(inline="always")
def dot(loss: np.ndarray, loss_lo: int, y: np.ndarray, n: int) -> float:
    """``⟨loss[loss_lo:loss_lo+n], y[:n]⟩``, summed in index order."""
    v = 0.0
    for i in range(n):
        v += loss[U(loss_lo + i)] * y[U(i)]
    return v


@compiled(inline="always")
def observe_simplex(
    family: int,
    plus: bool,
    pos: float,
    neg: float,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    s: int,
    n: int,
    loss: np.ndarray,
    lo: int,
    y: np.ndarray,
) -> float:
    """One simplex observes ``loss[lo:lo+n]``: its state is ``a[s:s+n]`` (and ``b``), ``y`` (at
    least ``n`` slots) receives its strategy before the update, and the return value is ``v =
    ⟨loss, y⟩``, so that ``v − ℓ_e`` is the instantaneous regret of ``e``.  Hedge: ``L ← L + ℓ``;
    PRM+: :func:`prm_plus_regret` and ``m ← v − ℓ``; RM family: :func:`rm_regret`.  The one
    update of the rules on segments and of the chain passes, serial and parallel."""
    local_strategy(family, eta, a, b, s, n, y, 0)
    v = dot(loss, lo, y, n)
    if family == HEDGE:
        for i in range(n):
            a[U(s + i)] += loss[U(lo + i)]
    elif family == PRM_PLUS:
        prm_plus_update(a, b, s, n, loss, lo, v)
    else:
        for i in range(n):
            a[U(s + i)] = rm_regret(a[U(s + i)], v - loss[U(lo + i)], plus, pos, neg)
    return v


@compiled(inline="always")
def prm_plus_observe(
    a: np.ndarray, b: np.ndarray, s: int, n: int, loss: np.ndarray, lo: int, y: np.ndarray
) -> float:
    """:func:`observe_simplex` under PRM+: the strategy into ``y``, ``v = ⟨loss, y⟩``, then
    :func:`prm_plus_regret` and ``m ← v − ℓ``.  The chain passes' copies for PRM+
    (:mod:`.chain_runs`) call it directly."""
    regret_strategy(True, a, b, s, n, y, 0)
    v = dot(loss, lo, y, n)
    prm_plus_update(a, b, s, n, loss, lo, v)
    return v


@compiled(inline="always")
def prm_plus_update(
    a: np.ndarray, b: np.ndarray, s: int, n: int, loss: np.ndarray, lo: int, v: float
) -> None:
    """PRM+'s update of one simplex that played value ``v``: :func:`prm_plus_regret` of each
    entry's instantaneous regret ``v − ℓ``, which becomes its prediction."""
    for i in range(n):
        inst = v - loss[U(lo + i)]
        a[U(s + i)] = prm_plus_regret(a[U(s + i)], inst)
        b[U(s + i)] = narrowed(inst, b[U(s + i)])


@compiled(inline="always")
def observe_simplex_unrolled(
    family: int,
    plus: bool,
    pos: float,
    neg: float,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    s: int,
    n: int,
    loss: np.ndarray,
    lo: int,
    y: np.ndarray,
) -> float:
    """:func:`observe_simplex`, a PRM+ simplex of 3 or 4 entries through a copy of
    :func:`prm_plus_observe` compiled for its size, whose loops the compiler unrolls (the
    deviator's steps, :mod:`.deviator`: most of Battleship's and Sheriff's have 3 or 4 actions).
    The same arithmetic; each copy costs compiling, so other sizes take the general body."""
    if family == PRM_PLUS and n == 3:
        return prm_plus_observe(a, b, s, 3, loss, lo, y)
    if family == PRM_PLUS and n == 4:
        return prm_plus_observe(a, b, s, 4, loss, lo, y)
    return observe_simplex(family, plus, pos, neg, eta, a, b, s, n, loss, lo, y)


@compiled(inline="always")
def local_strategy_unrolled(
    family: int, eta: float, a: np.ndarray, b: np.ndarray, lo: int, n: int, out: np.ndarray, out_lo: int
) -> None:
    """:func:`local_strategy`, a PRM+ simplex of 3 or 4 entries through a copy of
    :func:`regret_strategy` compiled for its size (as :func:`observe_simplex_unrolled`)."""
    if family == PRM_PLUS and n == 3:
        regret_strategy(True, a, b, lo, 3, out, out_lo)
    elif family == PRM_PLUS and n == 4:
        regret_strategy(True, a, b, lo, 4, out, out_lo)
    else:
        local_strategy(family, eta, a, b, lo, n, out, out_lo)


# ---------------------------------------------------------------------- one rule on segments
@kernel()
def recommend_segments(
    family: int, eta: float, a: np.ndarray, b: np.ndarray, ptr: np.ndarray, out: np.ndarray
) -> None:
    """The strategy of every segment ``ptr[s]:ptr[s+1]`` into ``out``."""
    for s in range(len(ptr) - 1):
        local_strategy(family, eta, a, b, ptr[s], ptr[s + 1] - ptr[s], out, ptr[s])


@kernel(shares_bodies=True)
def observe_segments(
    family: int,
    plus: bool,
    alpha: float,
    beta: float,
    eta: float,
    a: np.ndarray,
    b: np.ndarray,
    t: np.ndarray,
    ptr: np.ndarray,
    loss: np.ndarray,
) -> None:
    """Every segment observes its part of ``loss`` (``t[0]`` counts the observations)."""
    t[0] += 1.0
    pos, neg = discounts(alpha, beta, t[0])
    widest = 1
    for s in range(len(ptr) - 1):
        widest = max(widest, ptr[s + 1] - ptr[s])
    y = np.empty(widest)
    for s in range(len(ptr) - 1):
        lo, n = ptr[s], ptr[s + 1] - ptr[s]
        observe_simplex(family, plus, pos, neg, eta, a, b, lo, n, loss, lo, y)
