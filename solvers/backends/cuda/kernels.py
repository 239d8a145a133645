"""The CUDA kernels of the EFCE saddle-point loop (``numba.cuda``; they run under numba-cuda's
simulator too, ``NUMBA_ENABLE_CUDASIM=1``).

The two passes of Algorithm 1 unrolled over a chain (Farina, Ling, Fang, Sandholm 2019, section
3.2) run level by level, one launch per level and pass: RECOMMEND top-down, ``x[targets_k] =
h_k(x) · y_k`` with the local rule's strategy fused in and the running sum ``total += w · x``
added as ``x`` is written; OBSERVELOSS bottom-up in two launches per level, (1) every entry the
level fills gathering the values of the deeper steps that read it
(:func:`~.layouts.chain_layout`'s transposed scatter, by destination), in the CPU's order, (2)
every step's local update from the accumulated loss ``ℓ̃[targets_k]`` with ``v_k =
⟨ℓ̃[targets_k], y_k⟩`` left in ``ℓ̃[first target of k]``; the root gathers after level 0.  A step
runs on one thread, a wide one on a block (block reductions).  The local rules are those of
:mod:`efce.solvers.backends.cpu.rules` (RM/RM+/DCFR, Hedge, PRM+ with bfloat16 predictions on big chains)
and the arithmetic of one thread is theirs, operation for operation: a step run by one thread
gives the CPU's value bit for bit (where the compiler contracts no multiply-add into an FMA, as
under the simulator).

The checkpoints' kernels: CSR products (a row per thread, per group of threads or per block);
the chain minimum ``min_{y ∈ chain} ⟨ℓ, y⟩`` bottom-up (a step's smallest accumulated loss into
its sources, the same gather); the chain violations of a point; the welfare dot product.  Every
reduction has a fixed shape (no atomics), so the results are the same from run to run.

The state per entry of the rules is indexed by *entry* (the CPU engine's by a running position
over the simplex steps): a thread finds its step's state without a per-step offset array, at
the cost of unused slots under the singleton steps.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda, float64

from efce.polytopes.chain import SINGLETON
from efce.solvers.backends.protocol import HEDGE, PRM_PLUS

from .layouts import DeviceArray

#: Shared-memory slots of a block reduction: the largest block (CUDA's limit).
MAX_BLOCK = 1024

# ---------------------------------------------------------------------- bfloat16 predictions
# PRM+'s prediction is a bfloat16 on big chains, stored as the uint16 of its bits
# (solvers.regret.local.prediction_dtype).  The CPU kernels convert through the float32's bits;
# numba-cuda has no bit cast that also runs under the simulator, so these write the same
# roundings as arithmetic (frexp/ldexp are exact): float64 → float32 to nearest-even, then to 8
# significant bits to nearest-even; the encodings agree bit for bit, subnormals and overflow
# included (tests/solvers/backends/cuda).


@cuda.jit(device=True, inline="always")
def _round_half_even(v):
    """``v`` (a float64 holding at most 53 bits) rounded to an integer, ties to even."""
    r = math.floor(v)
    d = v - r
    if d > 0.5 or (d == 0.5 and math.fmod(r, 2.0) != 0.0):
        r += 1.0
    return r


@cuda.jit(device=True, inline="always")
def bfloat16_bits(value: float) -> np.uint16:
    """``value`` rounded to float32, then to bfloat16 (both to nearest, ties to even), as the
    uint16 of its bits (:func:`efce.solvers.backends.cpu.rules.bfloat16_bits`)."""
    f = np.float64(np.float32(value))
    sign = 0
    if f < 0.0 or (f == 0.0 and math.copysign(1.0, f) < 0.0):
        sign = 0x8000
        f = -f
    if f == 0.0:
        return np.uint16(sign)
    if f != f:
        return np.uint16(0x7FC0)
    if f == math.inf:
        return np.uint16(sign | 0x7F80)
    if f < 1.1754943508222875e-38:  # a float32 subnormal: bfloat16's step is 2^-133 there
        q = _round_half_even(math.ldexp(f, 133))  # 128 (rounded up to the smallest normal) included
        return np.uint16(sign | np.int64(q))
    m, e = math.frexp(f)  # f = m 2^e, 1/2 <= m < 1
    q = _round_half_even(m * 256.0)  # 8 significant bits
    if q == 256.0:
        q = 128.0
        e += 1
    biased = e + 126
    if biased >= 255:
        return np.uint16(sign | 0x7F80)
    return np.uint16(sign | (biased << 7) | (np.int64(q) - 128))


@cuda.jit(device=True, inline="always")
def bfloat16_value(bits: int | np.uint16) -> float:
    """The float64 value of the bfloat16 with uint16 ``bits``."""
    b = int(bits)
    exponent = (b >> 7) & 0xFF
    mantissa = b & 0x7F
    if exponent == 0xFF:
        v = math.inf if mantissa == 0 else math.nan
    elif exponent == 0:
        v = math.ldexp(np.float64(mantissa), -133)
    else:
        v = math.ldexp(np.float64(mantissa + 128), exponent - 134)
    return -v if b & 0x8000 else v


# ---------------------------------------------------------------------- block reductions
# Tree reductions in shared memory over groups of ``g`` consecutive threads (``g`` a power of two
# dividing the block): fixed shape, so the same result every run.  Every thread of the block
# calls them (they synchronize the block).


@cuda.jit(device=True, inline="always")
def _group_sum(shared, value, g):
    t = cuda.threadIdx.x
    lane = t % g
    shared[t] = value
    cuda.syncthreads()
    s = g // 2
    while s > 0:
        if lane < s:
            shared[t] += shared[t + s]
        cuda.syncthreads()
        s //= 2
    out = shared[t - lane]
    cuda.syncthreads()
    return out


@cuda.jit(device=True, inline="always")
def _block_max(shared, value):
    t = cuda.threadIdx.x
    shared[t] = value
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if t < s and shared[t + s] > shared[t]:
            shared[t] = shared[t + s]
        cuda.syncthreads()
        s //= 2
    out = shared[0]
    cuda.syncthreads()
    return out


@cuda.jit(device=True, inline="always")
def _block_min(shared, value):
    t = cuda.threadIdx.x
    shared[t] = value
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if t < s and shared[t + s] < shared[t]:
            shared[t] = shared[t + s]
        cuda.syncthreads()
        s //= 2
    out = shared[0]
    cuda.syncthreads()
    return out


# ---------------------------------------------------------------------- local rules
# A float32 state value is widened explicitly before any arithmetic: numba computes float32 with
# float64 in float64 anyway, but the simulator's NumPy would round ``python float * float32`` to
# float32 (NEP 50), and the CPU kernels compute in float64.
# One simplex's strategy is ``y_e = raw_e · scale`` (uniform ``1/n`` when ``scale`` is 0):
# RM/RM+/DCFR ``[R]^+``, PRM+ ``[R + m]^+``, Hedge ``exp(−η L − shift)`` with ``shift`` the
# largest ``−η L`` (efce.solvers.backends.cpu.rules.local_strategy).  ``pred16`` holds bfloat16
# predictions (big chains) and ``pred64`` float64 ones; the other is empty.


@cuda.jit(device=True, inline="always")
def _raw(family, eta, shift, a, pred64, pred16, e):
    if family == HEDGE:
        return math.exp(-eta * np.float64(a[e]) - shift)
    w = np.float64(a[e])
    if family == PRM_PLUS:
        w += bfloat16_value(pred16[e]) if len(pred16) > 0 else pred64[e]
    return w if w > 0.0 else 0.0


@cuda.jit(device=True, inline="always")
def _scale(total):
    return 1.0 / total if total > 0.0 else 0.0


@cuda.jit(device=True, inline="always")
def _strategy(family, eta, a, pred64, pred16, lo, hi):
    """``(shift, scale)`` of the simplex ``lo .. hi-1``, by one thread in the CPU's order."""
    shift = 0.0
    if family == HEDGE:
        shift = -math.inf
        for e in range(lo, hi):
            z = -eta * np.float64(a[e])
            if z > shift:
                shift = z
    total = 0.0
    for e in range(lo, hi):
        total += _raw(family, eta, shift, a, pred64, pred16, e)
    return shift, _scale(total)


@cuda.jit(device=True, inline="always")
def _block_strategy(family, eta, a, pred64, pred16, lo, hi, shared):
    """``(shift, scale)`` of a wide simplex, by the whole block."""
    t, nt = cuda.threadIdx.x, cuda.blockDim.x
    shift = 0.0
    if family == HEDGE:
        z = -math.inf
        for e in range(lo + t, hi, nt):
            if -eta * np.float64(a[e]) > z:
                z = -eta * np.float64(a[e])
        shift = _block_max(shared, z)
    total = 0.0
    for e in range(lo + t, hi, nt):
        total += _raw(family, eta, shift, a, pred64, pred16, e)
    return shift, _scale(_group_sum(shared, total, nt))


@cuda.jit(device=True, inline="always")
def _prob(family, eta, shift, scale, a, pred64, pred16, e, n):
    if scale > 0.0:
        return _raw(family, eta, shift, a, pred64, pred16, e) * scale
    return 1.0 / n


@cuda.jit(device=True, inline="always")
def _update(family, plus, pos, neg, a, pred64, pred16, e, loss_e, v):
    """Entry ``e``'s update from its accumulated loss and the step's value ``v`` (pre-update
    strategy): Hedge ``L += ℓ``; PRM+ ``R ← [R + r]^+``, ``m ← r``; RM family ``R ← (R + r) ·
    (pos if > 0 else neg)``, clipped at 0 for RM+; ``r = v − ℓ`` (efce.solvers.backends.cpu.rules)."""
    if family == HEDGE:
        a[e] += loss_e
    elif family == PRM_PLUS:
        inst = v - loss_e
        r = np.float64(a[e]) + inst
        a[e] = r if r > 0.0 else 0.0
        if len(pred16) > 0:
            pred16[e] = bfloat16_bits(inst)
        else:
            pred64[e] = inst
    else:
        r = np.float64(a[e]) + (v - loss_e)
        r = r * (pos if r > 0.0 else neg)
        a[e] = 0.0 if plus and r < 0.0 else r


# ---------------------------------------------------------------------- chain passes
# A step on a thread is one that is neither wide nor split (split steps are wide by size too).
@cuda.jit(device=True, inline="always")
def _step(order, idx):
    """Step at position ``idx`` of the level order (``order`` empty: the identity)."""
    return np.int64(idx) if len(order) == 0 else np.int64(order[idx])


@cuda.jit(device=True, inline="always")
def _is_wide(k, tptr, sptr, threshold):
    return (tptr[k + 1] - tptr[k]) + (sptr[k + 1] - sptr[k]) > threshold


@cuda.jit(cache=True)
def set_root(x: DeviceArray, total: DeviceArray, w: float, accumulate: bool) -> None:
    """``x[0] = 1`` (and its running sum), before RECOMMEND's first level reads it."""
    if cuda.grid(1) == 0:
        x[0] = 1.0
        if accumulate:
            total[0] += w * x[0]


@cuda.jit(cache=True)
def recommend_level(
    kind: DeviceArray,
    tptr: DeviceArray,
    sptr: DeviceArray,
    source: DeviceArray,
    order: DeviceArray,
    lo: int,
    hi: int,
    wide: DeviceArray,
    w_lo: int,
    w_hi: int,
    threshold: int,
    family: int,
    eta: float,
    a: DeviceArray,
    pred64: DeviceArray,
    pred16: DeviceArray,
    x: DeviceArray,
    total: DeviceArray,
    w: float,
    accumulate: bool,
) -> None:
    """RECOMMEND over the level-order positions ``lo .. hi-1``: blocks ``0 .. w_hi-w_lo-1`` run
    the level's wide steps (``wide[w_lo:w_hi]``), the others one step per thread."""
    shared = cuda.shared.array(MAX_BLOCK, float64)
    n_wide = w_hi - w_lo
    b, t, nt = cuda.blockIdx.x, cuda.threadIdx.x, cuda.blockDim.x
    if b < n_wide:
        k = _step(order, wide[w_lo + b])
        acc = 0.0
        for j in range(sptr[k] + t, sptr[k + 1], nt):
            acc += x[source[j]]
        h = _group_sum(shared, acc, nt)
        e_lo, e_hi = tptr[k], tptr[k + 1]
        if kind[k] == SINGLETON:
            if t == 0:
                x[e_lo] = h
                if accumulate:
                    total[e_lo] += w * x[e_lo]
            return
        shift, scale = _block_strategy(family, eta, a, pred64, pred16, e_lo, e_hi, shared)
        for e in range(e_lo + t, e_hi, nt):
            x[e] = h * _prob(family, eta, shift, scale, a, pred64, pred16, e, e_hi - e_lo)
            if accumulate:
                total[e] += w * x[e]
        return
    idx = lo + (b - n_wide) * nt + t
    if idx >= hi:
        return
    k = _step(order, idx)
    if _is_wide(k, tptr, sptr, threshold):
        return
    # chain_recommend's step, operation for operation
    h = 0.0
    for j in range(sptr[k], sptr[k + 1]):
        h += x[source[j]]
    e_lo, e_hi = tptr[k], tptr[k + 1]
    if kind[k] == SINGLETON:
        x[e_lo] = h
    else:
        shift, scale = _strategy(family, eta, a, pred64, pred16, e_lo, e_hi)
        for e in range(e_lo, e_hi):
            x[e] = h * _prob(family, eta, shift, scale, a, pred64, pred16, e, e_hi - e_lo)
    if accumulate:
        for e in range(e_lo, e_hi):
            total[e] += w * x[e]


@cuda.jit(cache=True)
def observe_level(
    kind: DeviceArray,
    tptr: DeviceArray,
    sptr: DeviceArray,
    order: DeviceArray,
    lo: int,
    hi: int,
    wide: DeviceArray,
    w_lo: int,
    w_hi: int,
    threshold: int,
    family: int,
    plus: bool,
    pos: float,
    neg: float,
    eta: float,
    a: DeviceArray,
    pred64: DeviceArray,
    pred16: DeviceArray,
    loss: DeviceArray,
) -> None:
    """OBSERVELOSS's local phase over the level-order positions ``lo .. hi-1`` (blocks as in
    :func:`recommend_level`): every simplex step updates its state from ``ℓ̃[targets]`` and
    leaves ``v_k`` in ``ℓ̃[first target]`` (a singleton's ``v`` is its ``ℓ̃`` already)."""
    shared = cuda.shared.array(MAX_BLOCK, float64)
    n_wide = w_hi - w_lo
    b, t, nt = cuda.blockIdx.x, cuda.threadIdx.x, cuda.blockDim.x
    if b < n_wide:
        k = _step(order, wide[w_lo + b])
        if kind[k] == SINGLETON:
            return
        e_lo, e_hi = tptr[k], tptr[k + 1]
        n = e_hi - e_lo
        shift, scale = _block_strategy(family, eta, a, pred64, pred16, e_lo, e_hi, shared)
        acc = 0.0
        for e in range(e_lo + t, e_hi, nt):
            acc += loss[e] * _prob(family, eta, shift, scale, a, pred64, pred16, e, n)
        v = _group_sum(shared, acc, nt)  # every thread has read its strategy before any update
        for e in range(e_lo + t, e_hi, nt):
            _update(family, plus, pos, neg, a, pred64, pred16, e, loss[e], v)
        cuda.syncthreads()  # ℓ̃[e_lo] is read above
        if t == 0:
            loss[e_lo] = v
        return
    idx = lo + (b - n_wide) * nt + t
    if idx >= hi:
        return
    k = _step(order, idx)
    if kind[k] == SINGLETON or _is_wide(k, tptr, sptr, threshold):
        return
    # chain_observe's step, operation for operation
    e_lo, e_hi = tptr[k], tptr[k + 1]
    n = e_hi - e_lo
    shift, scale = _strategy(family, eta, a, pred64, pred16, e_lo, e_hi)
    v = 0.0
    for e in range(e_lo, e_hi):
        v += loss[e] * _prob(family, eta, shift, scale, a, pred64, pred16, e, n)
    for e in range(e_lo, e_hi):
        _update(family, plus, pos, neg, a, pred64, pred16, e, loss[e], v)
    loss[e_lo] = v


@cuda.jit(cache=True)
def gather_into(
    dest: DeviceArray, ptr: DeviceArray, value: DeviceArray, p_lo: int, p_hi: int, loss: DeviceArray
) -> None:
    """OBSERVELOSS's scatter as a gather: destination ``p`` (entry ``dest[p]``, or ``p`` where
    ``dest`` is empty) adds the values at ``value[ptr[p] : ptr[p+1]]`` into its ``ℓ̃``, one at a
    time in the CPU's order."""
    p = p_lo + cuda.grid(1)
    if p < p_hi:
        lo, hi = ptr[p], ptr[p + 1]
        if hi > lo:
            d = p if len(dest) == 0 else dest[p]
            acc = loss[d]
            for j in range(lo, hi):
                acc += loss[value[j]]
            loss[d] = acc


@cuda.jit(cache=True)
def best_level(
    tptr: DeviceArray,
    sptr: DeviceArray,
    order: DeviceArray,
    lo: int,
    hi: int,
    wide: DeviceArray,
    w_lo: int,
    w_hi: int,
    threshold: int,
    masked: int,
    loss: DeviceArray,
) -> None:
    """The chain minimum's local phase (:func:`efce.solvers.backends.cpu.chain_passes.chain_best_vertex`):
    every step leaves its smallest accumulated loss in ``ℓ̃[first target]``, ignoring the entry
    ``masked`` (-1: none); :func:`gather_into` adds it into the sources."""
    shared = cuda.shared.array(MAX_BLOCK, float64)
    n_wide = w_hi - w_lo
    b, t, nt = cuda.blockIdx.x, cuda.threadIdx.x, cuda.blockDim.x
    if b < n_wide:
        k = _step(order, wide[w_lo + b])
        e_lo, e_hi = tptr[k], tptr[k + 1]
        best = math.inf
        for e in range(e_lo + t, e_hi, nt):
            if e != masked and loss[e] < best:
                best = loss[e]
        best = _block_min(shared, best)
        if t == 0:
            loss[e_lo] = best
        return
    idx = lo + (b - n_wide) * nt + t
    if idx >= hi:
        return
    k = _step(order, idx)
    if _is_wide(k, tptr, sptr, threshold):
        return
    e_lo, e_hi = tptr[k], tptr[k + 1]
    best = math.inf
    for e in range(e_lo, e_hi):
        if e != masked and loss[e] < best:
            best = loss[e]
    loss[e_lo] = best


# ---------------------------------------------------------------------- split steps
# A step with millions of entries runs as pieces, a block each, in phases separated by launches:
# partial sums per piece (``partial[piece]``), combined per step in a fixed order (``scal[s]``:
# 0 the Hedge shift, 1 the scale, 2 h, 3 the step's value), then the pieces write.  Modes of
# the piece kernels: PIECE_SHIFT, PIECE_TOTAL, PIECE_VALUE and PIECE_MIN (partials), PIECE_WRITE
# (RECOMMEND) and PIECE_UPDATE (OBSERVELOSS).
PIECE_SHIFT, PIECE_TOTAL, PIECE_VALUE, PIECE_MIN, PIECE_WRITE, PIECE_UPDATE = 0, 1, 2, 3, 4, 5


@cuda.jit(device=True, inline="always")
def _piece(tptr, order, split, piece_step, piece_ptr, piece_size, p):
    """``(s, k, lo, hi, n)``: piece ``p``'s split step (index ``s``, step ``k`` with ``n``
    entries) and its entries ``lo .. hi-1``."""
    s = piece_step[p]
    k = _step(order, split[s])
    lo = tptr[k] + (p - piece_ptr[s]) * piece_size
    hi = min(lo + piece_size, tptr[k + 1])
    return s, k, lo, hi, tptr[k + 1] - tptr[k]


@cuda.jit(cache=True)
def piece_partials(
    tptr: DeviceArray,
    order: DeviceArray,
    split: DeviceArray,
    piece_step: DeviceArray,
    piece_ptr: DeviceArray,
    piece_size: DeviceArray,
    p_lo: int,
    mode: int,
    masked: int,
    family: int,
    eta: float,
    a: DeviceArray,
    pred64: DeviceArray,
    pred16: DeviceArray,
    loss: DeviceArray,
    scal: DeviceArray,
    partial: DeviceArray,
) -> None:
    """Block ``b`` reduces piece ``p_lo + b``: the largest ``−η L`` (PIECE_SHIFT), ``Σ raw``
    (PIECE_TOTAL), ``Σ ℓ̃_e y_e`` (PIECE_VALUE) or the smallest ``ℓ̃_e``, ``e ≠ masked``
    (PIECE_MIN), into ``partial[p]``."""
    shared = cuda.shared.array(MAX_BLOCK, float64)
    p = p_lo + cuda.blockIdx.x
    t, nt = cuda.threadIdx.x, cuda.blockDim.x
    s, k, lo, hi, n = _piece(tptr, order, split, piece_step, piece_ptr, piece_size, p)
    if mode == PIECE_SHIFT:
        z = -math.inf
        for e in range(lo + t, hi, nt):
            if -eta * np.float64(a[e]) > z:
                z = -eta * np.float64(a[e])
        out = _block_max(shared, z)
    elif mode == PIECE_MIN:
        best = math.inf
        for e in range(lo + t, hi, nt):
            if e != masked and loss[e] < best:
                best = loss[e]
        out = _block_min(shared, best)
    else:
        acc = 0.0
        for e in range(lo + t, hi, nt):
            if mode == PIECE_TOTAL:
                acc += _raw(family, eta, scal[s, 0], a, pred64, pred16, e)
            else:
                acc += loss[e] * _prob(family, eta, scal[s, 0], scal[s, 1], a, pred64, pred16, e, n)
        out = _group_sum(shared, acc, nt)
    if t == 0:
        partial[p] = out


@cuda.jit(cache=True)
def piece_combine(
    tptr: DeviceArray,
    sptr: DeviceArray,
    source: DeviceArray,
    order: DeviceArray,
    split: DeviceArray,
    s_lo: int,
    piece_ptr: DeviceArray,
    mode: int,
    x: DeviceArray,
    partial: DeviceArray,
    scal: DeviceArray,
) -> None:
    """Block ``b`` combines split step ``s_lo + b``'s partials in a fixed order: the shift
    (PIECE_SHIFT), the scale and ``h = Σ x[sources]`` (PIECE_TOTAL), the value ``v``
    (PIECE_VALUE) or the minimum, left in ``x[first target]`` (PIECE_MIN; ``x`` is ℓ̃)."""
    shared = cuda.shared.array(MAX_BLOCK, float64)
    s = s_lo + cuda.blockIdx.x
    t, nt = cuda.threadIdx.x, cuda.blockDim.x
    k = _step(order, split[s])
    if mode in (PIECE_SHIFT, PIECE_MIN):
        best = -math.inf if mode == PIECE_SHIFT else math.inf
        for q in range(piece_ptr[s] + t, piece_ptr[s + 1], nt):
            if (mode == PIECE_SHIFT and partial[q] > best) or (mode == PIECE_MIN and partial[q] < best):
                best = partial[q]
        best = _block_max(shared, best) if mode == PIECE_SHIFT else _block_min(shared, best)
        if t == 0:
            if mode == PIECE_SHIFT:
                scal[s, 0] = best
            else:
                x[tptr[k]] = best
        return
    acc = 0.0
    for q in range(piece_ptr[s] + t, piece_ptr[s + 1], nt):
        acc += partial[q]
    total = _group_sum(shared, acc, nt)
    if mode == PIECE_TOTAL:
        acc = 0.0
        for j in range(sptr[k] + t, sptr[k + 1], nt):
            acc += x[source[j]]
        h = _group_sum(shared, acc, nt)
        if t == 0:
            scal[s, 1] = _scale(total)
            scal[s, 2] = h
    elif t == 0:
        scal[s, 3] = total


@cuda.jit(cache=True)
def piece_apply(
    tptr: DeviceArray,
    order: DeviceArray,
    split: DeviceArray,
    piece_step: DeviceArray,
    piece_ptr: DeviceArray,
    piece_size: DeviceArray,
    p_lo: int,
    mode: int,
    family: int,
    plus: bool,
    pos: float,
    neg: float,
    eta: float,
    a: DeviceArray,
    pred64: DeviceArray,
    pred16: DeviceArray,
    x: DeviceArray,
    total: DeviceArray,
    w: float,
    accumulate: bool,
    scal: DeviceArray,
) -> None:
    """Block ``b`` writes piece ``p_lo + b``: ``x = h · y`` and ``total += w · x``
    (PIECE_WRITE), or the rule's update from ``ℓ̃ = x`` and ``v`` (PIECE_UPDATE)."""
    p = p_lo + cuda.blockIdx.x
    t, nt = cuda.threadIdx.x, cuda.blockDim.x
    s, k, lo, hi, n = _piece(tptr, order, split, piece_step, piece_ptr, piece_size, p)
    for e in range(lo + t, hi, nt):
        if mode == PIECE_WRITE:
            x[e] = scal[s, 2] * _prob(family, eta, scal[s, 0], scal[s, 1], a, pred64, pred16, e, n)
            if accumulate:
                total[e] += w * x[e]
        else:
            _update(family, plus, pos, neg, a, pred64, pred16, e, x[e], scal[s, 3])


@cuda.jit(cache=True)
def piece_values(
    tptr: DeviceArray,
    order: DeviceArray,
    split: DeviceArray,
    s_lo: int,
    s_hi: int,
    scal: DeviceArray,
    loss: DeviceArray,
) -> None:
    """``ℓ̃[first target] = v`` for the split steps ``s_lo .. s_hi-1`` (after their updates,
    which read ``ℓ̃[first target]``)."""
    s = s_lo + cuda.grid(1)
    if s < s_hi:
        loss[tptr[_step(order, split[s])]] = scal[s, 3]


# ---------------------------------------------------------------------- checkpoints
@cuda.jit(device=True, inline="always")
def _step_violation(values, lo, hi, s_lo, s_hi, source):
    """``max(|Σ_{T_k} x − Σ_{S_k} x|, −min(0, min_{T_k} x))``, as the CPU's ``_block_violation``
    (:mod:`~efce.solvers.backends.cpu.feasibility`)."""
    filled = 0.0
    lowest = 0.0
    for e in range(lo, hi):
        v = np.float64(values[e])
        filled += v
        if v < lowest:
            lowest = v
    h = 0.0
    for j in range(s_lo, s_hi):
        h += np.float64(values[source[j]])
    return max(abs(filled - h), -lowest)


@cuda.jit(device=True, inline="always")
def _block_step_violation(values, lo, hi, s_lo, s_hi, source, shared):
    t, nt = cuda.threadIdx.x, cuda.blockDim.x
    filled = 0.0
    lowest = 0.0
    for e in range(lo + t, hi, nt):
        v = np.float64(values[e])
        filled += v
        if v < lowest:
            lowest = v
    h = 0.0
    for j in range(s_lo + t, s_hi, nt):
        h += np.float64(values[source[j]])
    difference = _group_sum(shared, filled - h, nt)
    return max(abs(difference), -_block_min(shared, lowest))


@cuda.jit(cache=True)
def violations(
    tptr: DeviceArray,
    sptr: DeviceArray,
    source: DeviceArray,
    wide: DeviceArray,
    threshold: int,
    x: DeviceArray,
    x_scale: float,
    s: DeviceArray,
    s_scale: float,
    partial: DeviceArray,
) -> None:
    """Per block, the largest step violation of the points ``x_scale · x`` and ``s_scale · s``
    (``partial[0, b]``, ``partial[1, b]``): blocks ``0 .. len(wide)-1`` take the wide steps, the
    others one step per thread in step order (the constraints need no level order)."""
    shared = cuda.shared.array(MAX_BLOCK, float64)
    n_wide = len(wide)
    b, t, nt = cuda.blockIdx.x, cuda.threadIdx.x, cuda.blockDim.x
    dx = 0.0
    ds = 0.0
    if b < n_wide:
        k = wide[b]
        dx = _block_step_violation(x, tptr[k], tptr[k + 1], sptr[k], sptr[k + 1], source, shared) * x_scale
        ds = _block_step_violation(s, tptr[k], tptr[k + 1], sptr[k], sptr[k + 1], source, shared) * s_scale
    else:
        k = (b - n_wide) * nt + t
        if k < len(tptr) - 1 and not _is_wide(k, tptr, sptr, threshold):
            dx = _step_violation(x, tptr[k], tptr[k + 1], sptr[k], sptr[k + 1], source) * x_scale
            ds = _step_violation(s, tptr[k], tptr[k + 1], sptr[k], sptr[k + 1], source) * s_scale
    dx = _block_max(shared, dx)
    ds = _block_max(shared, ds)
    if t == 0:
        partial[0, b] = dx
        partial[1, b] = ds


@cuda.jit(cache=True)
def finish_violations(
    partial: DeviceArray,
    x: DeviceArray,
    x_scale: float,
    s: DeviceArray,
    s_scale: float,
    scalars: DeviceArray,
    slot: int,
) -> None:
    """One block: ``scalars[slot + r]`` = the largest of ``partial[r]`` and ``|scale · p[0] − 1|``
    (entry 0 is the constant 1) for the two points ``p``."""
    shared = cuda.shared.array(MAX_BLOCK, float64)
    t, nt = cuda.threadIdx.x, cuda.blockDim.x
    for r in range(2):
        worst = 0.0
        for b in range(t, partial.shape[1], nt):
            if partial[r, b] > worst:
                worst = partial[r, b]
        worst = _block_max(shared, worst)
        if t == 0:
            first = abs(x_scale * x[0] - 1.0) if r == 0 else abs(s_scale * np.float64(s[0]) - 1.0)
            scalars[slot + r] = max(worst, first)


@cuda.jit(cache=True)
def welfare_partial(
    weight: DeviceArray, rows: DeviceArray, values: DeviceArray, partial: DeviceArray
) -> None:
    """Per block, its share of ``Σ_z weight[z] · values[rows[z]]`` (fixed shares: block ``b``
    takes the terminals ``b, b + grid, …`` through its threads)."""
    shared = cuda.shared.array(MAX_BLOCK, float64)
    acc = 0.0
    for z in range(cuda.grid(1), len(rows), cuda.gridsize(1)):
        acc += weight[z] * values[rows[z]]
    total = _group_sum(shared, acc, cuda.blockDim.x)
    if cuda.threadIdx.x == 0:
        partial[cuda.blockIdx.x] = total


@cuda.jit(cache=True)
def finish_sum(partial: DeviceArray, scalars: DeviceArray, slot: int) -> None:
    """One block: ``scalars[slot] = Σ partial`` (fixed order)."""
    shared = cuda.shared.array(MAX_BLOCK, float64)
    acc = 0.0
    for b in range(cuda.threadIdx.x, len(partial), cuda.blockDim.x):
        acc += partial[b]
    total = _group_sum(shared, acc, cuda.blockDim.x)
    if cuda.threadIdx.x == 0:
        scalars[slot] = total


@cuda.jit(cache=True)
def copy_scalar(values: DeviceArray, entry: int, scalars: DeviceArray, slot: int) -> None:
    """``scalars[slot] = values[entry]`` (a value the passes leave on the GPU)."""
    if cuda.grid(1) == 0:
        scalars[slot] = values[entry]


@cuda.jit(cache=True)
def fill(values: DeviceArray, value: float) -> None:
    """``values[:] = value`` (grid-stride)."""
    for i in range(cuda.grid(1), len(values), cuda.gridsize(1)):
        values[i] = value


@cuda.jit(cache=True)
def set_value(values: DeviceArray, entry: int, value: float) -> None:
    """``values[entry] = value`` (the welfare threshold τ in the CSR values)."""
    if cuda.grid(1) == 0:
        values[entry] = value


# ---------------------------------------------------------------------- products
@cuda.jit(cache=True)
def csr_matvec(
    ptr: DeviceArray,
    col: DeviceArray,
    val: DeviceArray,
    x: DeviceArray,
    out: DeviceArray,
    sign: float,
    short: int,
    long_rows: DeviceArray,
    medium_rows: DeviceArray,
    group: int,
) -> None:
    """``out = sign · M x`` for the CSR matrix ``M``: blocks ``0 .. len(long_rows)-1`` sum a
    long row each, the next ones ``blockDim / group`` medium rows each (a group of threads per
    row), the rest one row of at most ``short`` nonzeros per thread, in CSR order (the CPU
    operator's sum).  Every product is in float64: ``val`` (float32 where exact) times ``x``
    (the running sum may be float32 too) would otherwise be a float32 product."""
    shared = cuda.shared.array(MAX_BLOCK, float64)
    b, t, nt = cuda.blockIdx.x, cuda.threadIdx.x, cuda.blockDim.x
    n_long = len(long_rows)
    if b < n_long:
        r = long_rows[b]
        acc = 0.0
        for j in range(ptr[r] + t, ptr[r + 1], nt):
            acc += float64(val[j]) * x[col[j]]
        total = _group_sum(shared, acc, nt)
        if t == 0:
            out[r] = sign * total
        return
    per_block = nt // group
    n_medium_blocks = (len(medium_rows) + per_block - 1) // per_block
    if b < n_long + n_medium_blocks:
        i = (b - n_long) * per_block + t // group
        lane = t % group
        acc = 0.0
        r = -1
        if i < len(medium_rows):
            r = medium_rows[i]
            for j in range(ptr[r] + lane, ptr[r + 1], group):
                acc += float64(val[j]) * x[col[j]]
        total = _group_sum(shared, acc, group)  # the whole block takes part
        if r >= 0 and lane == 0:
            out[r] = sign * total
        return
    r = (b - n_long - n_medium_blocks) * nt + t
    if r >= len(ptr) - 1 or ptr[r + 1] - ptr[r] > short:
        return
    acc = 0.0
    for j in range(ptr[r], ptr[r + 1]):
        acc += float64(val[j]) * x[col[j]]
    out[r] = sign * acc
