"""What the CUDA backend copies to the GPU, built on the host from the model the CPU engine runs.

A chain ``{1} ◁h1 X1 ◁h2 … ◁hn Xn`` (Farina, Ling, Fang, Sandholm 2019, Definition 4) is run level
by level (section 3.2: the steps of a level read only entries of earlier levels).  On the GPU one
thread runs one step, and a step with more work (entries plus sources) than a block is *wide*: a
whole block runs it with block reductions, since one thread summing Y's root simplex (3.2M
entries on large Battleship) made a prototype's iteration 50× slower.  OBSERVELOSS adds each
step's value ``v_k = ⟨ℓ̃[targets_k], y_k⟩`` into its sources; instead of an atomic add per source
(not deterministic), every destination entry *gathers* its additions in the CPU pass's order
(:func:`chain_layout`'s transposed scatter: the prototype measured it ~5 % slower than atomics).
All of an entry's additions come from deeper levels, so it gathers them at once, just before
its own level runs: one pointer per destination (Ξ: per entry, with no destination list) instead
of a destination and a pointer per destination and level.

The payoff matrix ``A`` (rows Ξ's entries, columns Y's) is stored twice as CSR, ``A`` and
``Aᵀ``, built directly from the trigger tables of
:class:`~solvers.evaluation.payoff_operator.PayoffOperator` (compiled loops, parallel where rows
are disjoint); every row holds its nonzeros
in the order in which the CPU operator adds them, so a row summed by one thread in CSR order
gives the CPU's value bit for bit.  Their values are float32 where every one is (small integer
payoffs, no welfare threshold), read and widened to the same float64.  Rows longer than a block
are summed by block reductions on the GPU (one row of Aᵀ has 498,204 nonzeros on large
Battleship).

Everything here is CPU code (numpy and numba): it imports without numba-cuda, so the size
estimate :func:`estimate_cuda_bytes` can refuse a model before anything is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numba
import numpy as np

from efce.games.game import Game
from efce.games.payoffs import TerminalMap, terminal_map
from efce.games.resources.compiled import compiled
from efce.polytopes.chain import SINGLETON, Chain, index_dtype
from efce.solvers.evaluation.payoff_operator import PayoffOperator, PlayerTriggerTable

if TYPE_CHECKING:  # annotations only: scipy is loaded by the tests that compare with it
    import scipy.sparse as sp

#: A numba-cuda device array (``numba.cuda.device_array``; numba-cuda ships no type information):
#: what the kernels and the device-side objects take.
DeviceArray = Any

#: Threads per block of the GPU kernels (a power of two; the tests force tiny ones).
BLOCK_SIZE = 256
#: A step with more entries than this is *split*: its pieces of :data:`PIECE_ENTRIES` entries run
#: on a block each and their partial sums are combined, so that a simplex of millions of entries
#: (Y's root on large Battleship, 3.2M) is not read and written by one multiprocessor.
SPLIT_ENTRIES = 32768
#: Entries of each piece of a split step (a block's work).
PIECE_ENTRIES = 4096


# ---------------------------------------------------------------------- chains
@dataclass(frozen=True, eq=False)
class ChainLayout:
    """A chain as the GPU passes read it (host arrays; :mod:`.saddle` copies them once).

    Attributes
    ----------
    kind, target_ptr, source_ptr, source : ndarray
        The chain's arrays (``target_ptr`` and ``source_ptr`` in int32 where they fit, else
        shared, not copied): step ``k`` fills entries ``target_ptr[k] : target_ptr[k+1]`` from
        the sum of ``source[source_ptr[k] : source_ptr[k+1]]``.
    order : int[S] or int32[0]
        The steps in level order (:attr:`~polytopes.chain.Chain.step_order`), or empty for a
        chain numbered in level order already (Ξ's: the identity is not stored).
    level_ptr : int64[depth + 1]
        Level ``L`` (from 0) is positions ``level_ptr[L] : level_ptr[L+1]`` of the level order.
    wide_threshold : int
        A step is wide when its entries plus sources exceed this.
    wide_steps : int64[W], wide_ptr : int64[depth + 1]
        The level-order positions of the wide steps (split ones excepted), level ``L``'s at
        ``wide_ptr[L] : wide_ptr[L+1]``.
    split_threshold, piece_size : int
        A step with more entries than ``split_threshold`` is split into pieces of ``piece_size``
        entries (one block each).
    split_steps : int64[P], split_ptr : int64[depth + 1]
        The level-order positions of the split steps, level ``L``'s at ``split_ptr[L] :
        split_ptr[L+1]``.
    piece_ptr : int64[P + 1], piece_step : int32[pieces]
        Split step ``s`` has the pieces ``piece_ptr[s] : piece_ptr[s+1]``; ``piece_step`` maps a
        piece back to its split step.
    gather_dest, gather_ptr, gather_value : ndarray
        The transposed scatter of OBSERVELOSS, by destination: destination ``p`` (the entry
        ``gather_dest[p]``, or the entry ``p`` where ``gather_dest`` is empty) adds, into its
        ``ℓ̃``, the values held at the entries ``gather_value[gather_ptr[p] : gather_ptr[p+1]]``
        (the first target of each adding step, where the up pass leaves ``v_k``), in the order
        in which the CPU's serial pass adds them (steps by descending level-order position, each
        step's sources in order).  Ξ, numbered in level order, has every entry as a destination
        (``gather_dest`` empty: one pointer per entry and no destination list); Y lists the
        entries that receive additions.
    gather_part_ptr : int64[depth + 2]
        Destinations ``gather_part_ptr[0] : gather_part_ptr[1]`` are the entries no step fills
        (the root); ``gather_part_ptr[L+1] : gather_part_ptr[L+2]`` those level ``L`` fills.  All
        the additions into an entry come from steps of deeper levels, so a pass gathers into the
        entries of level ``L`` just before it runs level ``L``, one thread per destination and
        without atomics, and into the root after level 0.
    simplex_entries : int
        Entries filled by simplex steps (the size of the CPU rule's state, which decides its
        dtype: :func:`solvers.regret.local.state_dtype`).
    """

    kind: np.ndarray
    target_ptr: np.ndarray
    source_ptr: np.ndarray
    source: np.ndarray
    order: np.ndarray
    level_ptr: np.ndarray
    wide_threshold: int
    wide_steps: np.ndarray
    wide_ptr: np.ndarray
    split_threshold: int
    piece_size: int
    split_steps: np.ndarray
    split_ptr: np.ndarray
    piece_ptr: np.ndarray
    piece_step: np.ndarray
    gather_dest: np.ndarray
    gather_ptr: np.ndarray
    gather_value: np.ndarray
    gather_part_ptr: np.ndarray
    simplex_entries: int

    @property
    def num_entries(self) -> int:
        return int(self.target_ptr[-1])

    @property
    def num_steps(self) -> int:
        return len(self.kind)

    @property
    def depth(self) -> int:
        return len(self.level_ptr) - 1

    @property
    def all_wide_steps(self) -> np.ndarray:
        """Every wide or split step (step numbers, not level-order positions), for the pass that
        visits the steps in any order and runs each of these on a block (the violations, at
        checkpoints only)."""
        positions = np.sort(np.concatenate([self.wide_steps, self.split_steps]))
        if len(self.order) == 0:
            return positions
        return self.order[positions].astype(np.int64)

    def device_arrays(self) -> dict[str, np.ndarray]:
        """The arrays the GPU holds, by name (the level bounds stay on the host)."""
        return {
            "kind": self.kind,
            "target_ptr": self.target_ptr,
            "source_ptr": self.source_ptr,
            "source": self.source,
            "order": self.order,
            "wide_steps": self.wide_steps,
            "all_wide_steps": self.all_wide_steps,
            "split_steps": self.split_steps,
            "piece_ptr": self.piece_ptr,
            "piece_step": self.piece_step,
            "gather_dest": self.gather_dest,
            "gather_ptr": self.gather_ptr,
            "gather_value": self.gather_value,
        }

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays the GPU holds."""
        return sum(a.nbytes for a in self.device_arrays().values())


def chain_layout(
    chain: Chain,
    wide_threshold: int = BLOCK_SIZE,
    *,
    split_threshold: int | None = None,
    piece_size: int = PIECE_ENTRIES,
) -> ChainLayout:
    """The :class:`ChainLayout` of ``chain``: compiled passes over its own arrays, linear in its
    entries plus sources (no sort).

    Parameters
    ----------
    chain : Chain
        Ξ's chain (numbered in level order) or Y's (read through its ``step_order``).
    wide_threshold : int
        Steps with more entries plus sources than this run on a block each (default: the
        block size).
    split_threshold, piece_size : int
        Steps with more entries than ``split_threshold`` (default :data:`SPLIT_ENTRIES`, at
        least ``wide_threshold``) run as pieces of ``piece_size`` entries, a block each.

    Returns
    -------
    ChainLayout

    Raises
    ------
    ValueError
        ``wide_threshold`` or ``piece_size`` below 1, or ``split_threshold`` below
        ``wide_threshold``.
    """
    if split_threshold is None:
        split_threshold = max(SPLIT_ENTRIES, wide_threshold)
    if wide_threshold < 1 or piece_size < 1 or split_threshold < wide_threshold:
        raise ValueError(
            f"need 1 <= wide_threshold <= split_threshold and piece_size >= 1, got "
            f"{wide_threshold}, {split_threshold}, {piece_size}"
        )
    order = np.zeros(0, dtype=np.int32) if chain.level_sorted else np.ascontiguousarray(chain.step_order)
    level_ptr = _level_ptr(chain)
    kind = chain.kind.astype(np.int8, copy=False)
    # int32 where the entries and slots fit (a chain stored as runs makes its per-step pointers
    # in int64): 8 bytes per step less on the GPU, and the kernels read half the bytes
    tptr = chain.target_ptr.astype(index_dtype(chain.num_entries + 1), copy=False)
    sptr = chain.source_ptr.astype(index_dtype(len(chain.source) + 1), copy=False)
    source = chain.source
    wide_steps, wide_ptr, split_steps, split_ptr = _wide_steps(
        tptr, sptr, order, level_ptr, wide_threshold, split_threshold
    )
    piece_ptr, piece_step = _pieces(tptr, order, split_steps, piece_size)
    dest, ptr, value, gather_part_ptr = _gather_by_destination(chain, order, level_ptr)
    sizes = np.diff(tptr)
    simplex_entries = int(sizes[kind != SINGLETON].sum())
    return ChainLayout(
        kind,
        tptr,
        sptr,
        source,
        order,
        level_ptr,
        int(wide_threshold),
        wide_steps,
        wide_ptr,
        int(split_threshold),
        int(piece_size),
        split_steps,
        split_ptr,
        piece_ptr,
        piece_step,
        dest,
        ptr,
        value,
        gather_part_ptr,
        simplex_entries,
    )


def _level_ptr(chain: Chain) -> np.ndarray:
    """The chain's level bounds (from 0) in its level order, int64."""
    if chain.level_ptr is not None:
        return np.asarray(chain.level_ptr, dtype=np.int64)
    sizes = np.fromiter((len(level) for level in chain.levels), dtype=np.int64, count=len(chain.levels))
    level_ptr = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=level_ptr[1:])
    return level_ptr


@compiled(inline="always")
def _step(order, idx):
    return np.int64(idx) if len(order) == 0 else np.int64(order[idx])


@compiled(inline="always")
def _step_class(tptr, sptr, k, threshold, split):
    """0: a thread's step, 1: a block's (wide), 2: split into pieces."""
    size = tptr[k + 1] - tptr[k]
    if size > split:
        return 2
    return 1 if size + (sptr[k + 1] - sptr[k]) > threshold else 0


@compiled(cache=True, nogil=True)
def _wide_steps(tptr, sptr, order, level_ptr, threshold, split):
    """``(wide_steps, wide_ptr, split_steps, split_ptr)`` of :class:`ChainLayout`."""
    n_levels = len(level_ptr) - 1
    ptr = np.zeros((3, n_levels + 1), np.int64)
    for L in range(n_levels):
        for idx in range(level_ptr[L], level_ptr[L + 1]):
            ptr[_step_class(tptr, sptr, _step(order, idx), threshold, split), L + 1] += 1
    for L in range(n_levels):
        ptr[:, L + 1] += ptr[:, L]
    wide = np.empty(ptr[1, n_levels], np.int64)
    split_steps = np.empty(ptr[2, n_levels], np.int64)
    w = q = 0
    for idx in range(level_ptr[n_levels]):
        c = _step_class(tptr, sptr, _step(order, idx), threshold, split)
        if c == 1:
            wide[w] = idx
            w += 1
        elif c == 2:
            split_steps[q] = idx
            q += 1
    return wide, ptr[1].copy(), split_steps, ptr[2].copy()


@compiled(cache=True, nogil=True)
def _pieces(tptr, order, split_steps, piece_size):
    """``(piece_ptr, piece_step)`` of :class:`ChainLayout`."""
    piece_ptr = np.zeros(len(split_steps) + 1, np.int64)
    for s in range(len(split_steps)):
        k = _step(order, split_steps[s])
        piece_ptr[s + 1] = piece_ptr[s] + (tptr[k + 1] - tptr[k] + piece_size - 1) // piece_size
    piece_step = np.empty(piece_ptr[len(split_steps)], np.int32)
    for s in range(len(split_steps)):
        piece_step[piece_ptr[s] : piece_ptr[s + 1]] = s
    return piece_ptr, piece_step


def _gather_by_destination(
    chain: Chain, order: np.ndarray, level_ptr: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(gather_dest, gather_ptr, gather_value, gather_part_ptr)`` of :class:`ChainLayout`, by
    counting sorts (no comparison sort)."""
    tptr, sptr, source = chain.target_ptr, chain.source_ptr, chain.source
    if len(order) == 0:  # numbered in level order: level L fills a range of entries
        dest = position = np.zeros(0, dtype=source.dtype)
        part_ptr = np.zeros(len(level_ptr) + 1, dtype=np.int64)
        part_ptr[1:] = tptr[level_ptr]
        destinations = chain.num_entries
    else:
        dest, position, part_ptr = _destinations(tptr, sptr, source, order, level_ptr)
        destinations = len(dest)
    ptr = np.zeros(destinations + 1, dtype=index_dtype(len(source) + 1))
    _count_additions(source, position, ptr)
    np.cumsum(ptr, out=ptr)
    value = np.empty(len(source), dtype=source.dtype)
    _fill_additions(tptr, sptr, source, order, position, ptr, value)
    _unshift(ptr)
    return dest, ptr, value, part_ptr


@compiled(cache=True, nogil=True)
def _count_additions(source, position, ptr):
    """``ptr[p + 1]``: the additions into destination ``p`` (``position[e]`` of entry ``e``, or
    ``e`` itself where ``position`` is empty)."""
    for j in range(len(source)):
        e = source[j]
        ptr[(e if len(position) == 0 else position[e]) + 1] += 1


@compiled(cache=True, nogil=True)
def _destinations(tptr, sptr, source, order, level_ptr):
    """The entries that receive additions, grouped by the level that fills them (the root's
    part first), ascending within a part: ``(dest, position, part_ptr)`` with ``position[e]``
    the destination of entry ``e`` (-1 for none)."""
    n_levels = len(level_ptr) - 1
    n = tptr[len(tptr) - 1]
    part = np.zeros(n, np.int32)  # 0: filled by no step; L + 1: by a step of level L
    for L in range(n_levels):
        for idx in range(level_ptr[L], level_ptr[L + 1]):
            k = _step(order, idx)
            for e in range(tptr[k], tptr[k + 1]):
                part[e] = L + 1
    receives = np.zeros(n, np.bool_)
    for j in range(sptr[len(sptr) - 1]):
        receives[source[j]] = True
    part_ptr = np.zeros(n_levels + 2, np.int64)
    for e in range(n):
        if receives[e]:
            part_ptr[part[e] + 1] += 1
    for q in range(n_levels + 1):
        part_ptr[q + 1] += part_ptr[q]
    dest = np.empty(part_ptr[n_levels + 1], source.dtype)
    position = np.full(n, -1, source.dtype)
    cursor = part_ptr[: n_levels + 1].copy()
    for e in range(n):
        if receives[e]:
            p = cursor[part[e]]
            dest[p] = e
            position[e] = p
            cursor[part[e]] = p + 1
    return dest, position, part_ptr


@compiled(cache=True, nogil=True)
def _fill_additions(tptr, sptr, source, order, position, ptr, value):
    """Each destination's additions in the serial order of ``chain_observe`` (steps by
    descending level-order position, each step's sources in order); ``ptr[p]`` is ``p``'s
    cursor, the end of its list afterwards (:func:`_unshift` moves it back)."""
    for idx in range(len(tptr) - 2, -1, -1):
        k = _step(order, idx)
        for j in range(sptr[k], sptr[k + 1]):
            e = source[j]
            p = e if len(position) == 0 else position[e]
            value[ptr[p]] = tptr[k]
            ptr[p] += 1


# ---------------------------------------------------------------------- the payoff matrix
#: Rows with at most this many nonzeros are summed by one thread each on the GPU.
SHORT_ROW = 16
#: Threads that sum one row of medium length (more than SHORT_ROW nonzeros, at most a block).
ROW_GROUP = 32


@dataclass(frozen=True, eq=False)
class CSR:
    """A sparse matrix as CSR (host arrays), each row's nonzeros in the CPU operator's order.

    Rows with at most ``short_threshold`` nonzeros are summed by one thread on the GPU; the
    others are listed, ``medium_rows`` (at most ``long_threshold``) for a group of threads each
    and ``long_rows`` for a block each.  ``tau_position`` is the nonzero holding the welfare
    threshold τ (-1 without one), rewritten when τ moves."""

    ptr: np.ndarray
    col: np.ndarray
    val: np.ndarray
    shape: tuple[int, int]
    short_threshold: int
    long_threshold: int
    medium_rows: np.ndarray
    long_rows: np.ndarray
    tau_position: int

    @property
    def nnz(self) -> int:
        return int(self.ptr[-1])

    def device_arrays(self) -> dict[str, np.ndarray]:
        return {
            "ptr": self.ptr,
            "col": self.col,
            "val": self.val,
            "medium_rows": self.medium_rows,
            "long_rows": self.long_rows,
        }

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.device_arrays().values())

    def to_scipy(self) -> sp.csr_matrix:
        """The matrix as a ``scipy.sparse.csr_matrix`` (tests)."""
        import scipy.sparse as sp

        return sp.csr_matrix((self.val, self.col, self.ptr), shape=self.shape)


@dataclass(frozen=True, eq=False)
class PayoffLayout:
    """``A`` and ``Aᵀ`` as :class:`CSR`, and the per-terminal arrays of the welfare:
    ``welfare_weight[z] = p_c(z)(u_1 + u_2)(z)``, read at Ξ entry ``terminal_row[z]``;
    ``lambda_tau`` is Y's welfare weight entry (-1 without a threshold)."""

    a: CSR
    at: CSR
    terminal_row: np.ndarray
    welfare_weight: np.ndarray
    lambda_tau: int

    def device_arrays(self) -> dict[str, np.ndarray]:
        return {"terminal_row": self.terminal_row, "welfare_weight": self.welfare_weight}

    @property
    def nbytes(self) -> int:
        return self.a.nbytes + self.at.nbytes + self.terminal_row.nbytes + self.welfare_weight.nbytes


def payoff_layout(
    operator: PayoffOperator,
    game: Game,
    *,
    short_threshold: int = SHORT_ROW,
    long_threshold: int = BLOCK_SIZE,
) -> PayoffLayout:
    """``A`` and ``Aᵀ`` of ``operator`` as CSR, from its trigger tables (the matrix-free operator
    is never applied), without the zero payoffs' nonzeros (about two thirds of the tables'
    entries on Battleship: a zero adds nothing to a sum).

    Row ``r`` of ``A`` (a Ξ entry) holds, in order: the following part (for the terminal ``z``
    with ``σ(z) = r``: column ``λ_σ̂`` for every own sequence ``σ̂ ⪯ σ_i(z)`` from the root,
    player 1 then player 2, value ``−p_c(z) u_i(z)``; then ``λ_τ``), τ at ``λ_τ`` for entry 0,
    then the deviation nonzeros of player 1's trigger and of player 2's in the operator's loop
    order.  Row ``c`` of ``Aᵀ`` (a Y entry): for a weight ``λ_σ̂``, the terminals below ``σ̂`` in
    ascending Ξ entry (``λ_τ``: τ at entry 0 first); for an entry of a trigger's block, its
    deviation nonzeros in the tables' line order.  These are the orders in which
    :meth:`~solvers.evaluation.payoff_operator.PayoffOperator.matvec` and ``rmatvec`` add, so a
    row summed in CSR order gives their value (up to the sign of a zero).

    Parameters
    ----------
    operator : PayoffOperator
        The model's operator (tables in Ξ's entry order).
    game : Game
        Its game (the sequence trees).
    short_threshold, long_threshold : int
        Rows with more nonzeros than ``short_threshold`` are listed as medium, with more than
        ``long_threshold`` as long.

    Returns
    -------
    PayoffLayout

    Raises
    ------
    ValueError
        Thresholds below 1 or ``short_threshold > long_threshold``.
    """
    if not 1 <= short_threshold <= long_threshold:
        raise ValueError(
            f"need 1 <= short_threshold <= long_threshold, got {short_threshold} and {long_threshold}"
        )
    tables, triggers = operator.tables, operator.triggers
    rows, columns = operator.shape
    p0, p1 = tables.players
    own = tuple(np.ascontiguousarray(tables.terminal_sequences[:, i], dtype=np.int64) for i in (0, 1))
    parent = tuple(np.ascontiguousarray(game.sequences(i).seq_parent, dtype=np.int64) for i in (0, 1))
    weighted = np.ascontiguousarray(tables.weighted)
    terminal_row = np.ascontiguousarray(tables.terminal_row)
    welfare = operator.tau is not None
    tau = 0.0 if operator.tau is None else float(operator.tau)
    lam_tau = triggers.num_triggers if welfare else -1  # Y's last weight (as PayoffOperator)
    welfare_weight = np.ascontiguousarray(weighted.sum(axis=1))  # the operator's own sum
    trig_base = (0, p0.num_sequences - 1)
    block_start = triggers.block_start
    follow = (own[0], own[1], parent[0], parent[1], weighted, welfare_weight)

    # A: counts per row, then the rows filled in the CPU's order; ptr[r] serves as row r's
    # cursor while filling and is shifted back afterwards (no second array per row).
    counts = np.zeros(rows + 1, dtype=np.int64)
    _count_following_rows(*follow, terminal_row, lam_tau, counts)
    if welfare:
        counts[1] += 1  # τ at (entry 0, λ_τ)
    for t in (p0, p1):
        _count_deviation_rows(*_deviation_args(t), counts)
    nnz = int(counts.sum())
    ptr = counts.astype(index_dtype(nnz + 1))
    del counts
    np.cumsum(ptr, out=ptr)
    col = np.empty(nnz, dtype=index_dtype(columns))
    value_dtype = _value_dtype(weighted, [t.line_weight for t in (p0, p1)], welfare)
    val: np.ndarray = np.empty(nnz, dtype=value_dtype)
    _fill_following_rows(*follow, terminal_row, trig_base[1], lam_tau, ptr, col, val)
    if welfare:
        col[ptr[0]], val[ptr[0]] = lam_tau, tau
        ptr[0] += 1
    for i, t in enumerate((p0, p1)):
        _fill_deviation_rows(*_deviation_args(t), trig_base[i], block_start, ptr, col, val)
    _unshift(ptr)
    a = _csr(
        ptr, col, val, (rows, columns), short_threshold, long_threshold, int(ptr[1]) - 1 if welfare else -1
    )

    # Aᵀ: the λ rows from the terminals in ascending Ξ entry, the block rows slot by slot.
    ptr = np.zeros(columns + 1, dtype=index_dtype(nnz + 1))
    _count_following_columns(*follow, trig_base[1], lam_tau, ptr)
    if welfare:
        ptr[lam_tau + 1] += 1  # τ
    for i, t in enumerate((p0, p1)):
        _count_deviation_columns(*_deviation_args(t), trig_base[i], block_start, ptr)
    np.cumsum(ptr, out=ptr)
    col = np.empty(nnz, dtype=index_dtype(rows))
    val = np.empty(nnz, dtype=value_dtype)
    if welfare:
        col[ptr[lam_tau]], val[ptr[lam_tau]] = 0, tau  # Ξ entry 0: the row's first column
        ptr[lam_tau] += 1
    _fill_following_columns(
        *follow, terminal_row, np.argsort(terminal_row, kind="stable"), trig_base[1], lam_tau, ptr, col, val
    )
    for i, t in enumerate((p0, p1)):
        _fill_deviation_columns(*_deviation_args(t), trig_base[i], block_start, ptr, col, val)
    _unshift(ptr)
    at = _csr(
        ptr, col, val, (columns, rows), short_threshold, long_threshold, int(ptr[lam_tau]) if welfare else -1
    )
    return PayoffLayout(a, at, terminal_row, welfare_weight, lam_tau)


def _value_dtype(weighted: np.ndarray, line_weights: list[np.ndarray], welfare: bool) -> type:
    """float32 for the values of ``A`` and ``Aᵀ`` when every one is a float32 (the terminals'
    ``p_c(z) u_i(z)`` and the trigger tables' line weights: Battleship's and Sheriff's small
    integers) and no welfare threshold τ (any float, rewritten as the bisection moves), else
    float64.  A float32 value read and widened is the same float64, so every product is
    unchanged bit for bit with 4 bytes less per nonzero in each matrix."""
    exact = not welfare and all(w.dtype == np.float32 for w in line_weights)
    return np.float32 if exact and np.array_equal(weighted.astype(np.float32), weighted) else np.float64


# The ten arrays of a player's trigger table that the deviation loops take first (a fixed
# length, so that the loops' calls with them unpacked are checked).
_DeviationArrays = tuple[
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
]


def _deviation_args(t: PlayerTriggerTable) -> _DeviationArrays:
    """The arrays of a :class:`~solvers.evaluation.payoff_operator.PlayerTriggerTable` that the
    deviation loops read, in their order."""
    return (
        t.first,
        t.num_actions,
        t.pos,
        t.end,
        t.cum,
        t.term_ptr,
        t.line_start,
        t.line_weight,
        t.row_start,
        t.rows,
    )


def _unshift(ptr: np.ndarray) -> None:
    """After a fill that used ``ptr[r]`` as row ``r``'s cursor (ending at the next row's start),
    the row starts again."""
    ptr[1:] = ptr[:-1].copy()
    ptr[0] = 0


def _csr(ptr, col, val, shape, short_threshold, long_threshold, tau_position) -> CSR:
    medium, long = _row_classes(ptr, short_threshold, long_threshold)
    return CSR(ptr, col, val, shape, short_threshold, long_threshold, medium, long, tau_position)


@compiled(cache=True, nogil=True)
def _depth(s, parent):
    n = 0
    while s != 0:
        n += 1
        s = parent[s]
    return n


@compiled(inline="always")
def _following_count(z, own0, own1, parent0, parent1, weighted, welfare_weight, lam_tau):
    """Nonzeros of terminal ``z``'s following row: its own sequences of each player whose
    payoff is not 0, and ``λ_τ``."""
    n = 0
    if weighted[z, 0] != 0.0:
        n += _depth(own0[z], parent0)
    if weighted[z, 1] != 0.0:
        n += _depth(own1[z], parent1)
    if lam_tau >= 0 and welfare_weight[z] != 0.0:
        n += 1
    return n


@compiled(cache=True, nogil=True)
def _count_following_rows(
    own0, own1, parent0, parent1, weighted, welfare_weight, terminal_row, lam_tau, counts
):
    for z in range(len(own0)):
        counts[terminal_row[z] + 1] += _following_count(
            z, own0, own1, parent0, parent1, weighted, welfare_weight, lam_tau
        )


@compiled(cache=True, nogil=True)
def _count_deviation_rows(
    first, num_actions, pos, end, cum, term_ptr, line_start, line_w, row_start, rows, counts
):
    for inf in range(len(first)):
        width = line_start[inf + 1] - line_start[inf]
        for a in range(num_actions[inf]):
            rshift = row_start[inf] + a * width - line_start[inf]
            for k in range(line_start[inf], line_start[inf + 1]):
                if line_w[k] != 0.0:
                    counts[rows[rshift + k] + 1] += 1


@compiled(parallel=True, cache=True, nogil=True)
def _fill_following_rows(
    own0, own1, parent0, parent1, weighted, welfare_weight, terminal_row, trig_base1, lam_tau, ptr, col, val
):
    """Row ``σ(z)``'s following nonzeros, root-most sequence first (``_following_matvec``'s
    order); distinct terminals own distinct rows (no chance), so they run in parallel."""
    for z in numba.prange(len(own0)):
        r = terminal_row[z]
        c = ptr[r]
        if weighted[z, 0] != 0.0:
            n = _depth(own0[z], parent0)
            s = own0[z]
            for q in range(n - 1, -1, -1):
                col[c + q], val[c + q] = s, -weighted[z, 0]
                s = parent0[s]
            c += n
        if weighted[z, 1] != 0.0:
            n = _depth(own1[z], parent1)
            s = own1[z]
            for q in range(n - 1, -1, -1):
                col[c + q], val[c + q] = trig_base1 + s, -weighted[z, 1]
                s = parent1[s]
            c += n
        if lam_tau >= 0 and welfare_weight[z] != 0.0:
            col[c], val[c] = lam_tau, -welfare_weight[z]
            c += 1
        ptr[r] = c


@compiled(parallel=True, cache=True, nogil=True)
def _fill_deviation_rows(
    first,
    num_actions,
    pos,
    end,
    cum,
    term_ptr,
    line_start,
    line_w,
    row_start,
    rows,
    trig_base,
    block_start,
    ptr,
    col,
    val,
):
    """One player's deviation nonzeros into their rows, in ``_deviation_matvec``'s loop order;
    a trigger's rows hold its own sequence, so the infosets run in parallel."""
    for inf in numba.prange(len(first)):
        p_lo, p_hi = cum[pos[inf]], cum[end[inf]]
        shift = line_start[inf] - term_ptr[p_lo]
        width = line_start[inf + 1] - line_start[inf]
        for a in range(num_actions[inf]):
            eb = block_start[trig_base + first[inf] + a - 1] - p_lo
            rshift = row_start[inf] + a * width - line_start[inf]
            for p in range(p_lo, p_hi):
                for k in range(term_ptr[p] + shift, term_ptr[p + 1] + shift):
                    w = line_w[k]
                    if w != 0.0:
                        r = rows[rshift + k]
                        c = ptr[r]
                        col[c], val[c] = eb + p, w
                        ptr[r] = c + 1


@compiled(cache=True, nogil=True)
def _count_following_columns(
    own0, own1, parent0, parent1, weighted, welfare_weight, trig_base1, lam_tau, ptr
):
    for z in range(len(own0)):
        if weighted[z, 0] != 0.0:
            s = own0[z]
            while s != 0:
                ptr[s + 1] += 1
                s = parent0[s]
        if weighted[z, 1] != 0.0:
            s = own1[z]
            while s != 0:
                ptr[trig_base1 + s + 1] += 1
                s = parent1[s]
        if lam_tau >= 0 and welfare_weight[z] != 0.0:
            ptr[lam_tau + 1] += 1


@compiled(cache=True, nogil=True)
def _count_deviation_columns(
    first,
    num_actions,
    pos,
    end,
    cum,
    term_ptr,
    line_start,
    line_w,
    row_start,
    rows,
    trig_base,
    block_start,
    ptr,
):
    for inf in range(len(first)):
        p_lo, p_hi = cum[pos[inf]], cum[end[inf]]
        shift = line_start[inf] - term_ptr[p_lo]
        for a in range(num_actions[inf]):
            eb = block_start[trig_base + first[inf] + a - 1] - p_lo
            for p in range(p_lo, p_hi):
                n = 0
                for k in range(term_ptr[p] + shift, term_ptr[p + 1] + shift):
                    if line_w[k] != 0.0:
                        n += 1
                ptr[eb + p + 1] = n


@compiled(parallel=True, cache=True, nogil=True)
def _fill_following_columns(
    own0,
    own1,
    parent0,
    parent1,
    weighted,
    welfare_weight,
    terminal_row,
    term_order,
    trig_base1,
    lam_tau,
    ptr,
    col,
    val,
):
    """The λ rows of ``Aᵀ``: the terminals in ascending Ξ entry (``_following_rmatvec``'s
    order); player 1's rows, then player 2's and ``λ_τ``, as two parallel parts (disjoint rows)."""
    for player in numba.prange(2):
        for q in range(len(term_order)):
            z = term_order[q]
            r = terminal_row[z]
            if player == 0:
                w = -weighted[z, 0]
                s = own0[z] if w != 0.0 else 0
                while s != 0:
                    c = ptr[s]
                    col[c], val[c] = r, w
                    ptr[s] = c + 1
                    s = parent0[s]
            else:
                w = -weighted[z, 1]
                s = own1[z] if w != 0.0 else 0
                while s != 0:
                    e = trig_base1 + s
                    c = ptr[e]
                    col[c], val[c] = r, w
                    ptr[e] = c + 1
                    s = parent1[s]
                if lam_tau >= 0 and welfare_weight[z] != 0.0:
                    c = ptr[lam_tau]
                    col[c], val[c] = r, -welfare_weight[z]
                    ptr[lam_tau] = c + 1


@compiled(parallel=True, cache=True, nogil=True)
def _fill_deviation_columns(
    first,
    num_actions,
    pos,
    end,
    cum,
    term_ptr,
    line_start,
    line_w,
    row_start,
    rows,
    trig_base,
    block_start,
    ptr,
    col,
    val,
):
    """The block rows of ``Aᵀ``: row ``(σ̂, p)`` holds slot ``p``'s line entries in the tables'
    order (``_deviation_rmatvec``'s)."""
    for inf in numba.prange(len(first)):
        p_lo, p_hi = cum[pos[inf]], cum[end[inf]]
        shift = line_start[inf] - term_ptr[p_lo]
        width = line_start[inf + 1] - line_start[inf]
        for a in range(num_actions[inf]):
            eb = block_start[trig_base + first[inf] + a - 1] - p_lo
            rshift = row_start[inf] + a * width - line_start[inf]
            for p in range(p_lo, p_hi):
                c = ptr[eb + p]
                for k in range(term_ptr[p] + shift, term_ptr[p + 1] + shift):
                    w = line_w[k]
                    if w != 0.0:
                        col[c], val[c] = rows[rshift + k], w
                        c += 1
                ptr[eb + p] = c


@compiled(cache=True, nogil=True)
def _row_classes(ptr, short_threshold, long_threshold):
    """``(medium, long)``: the rows with more than ``short_threshold`` nonzeros, at most
    ``long_threshold``, and those with more."""
    n_medium = n_long = 0
    for r in range(len(ptr) - 1):
        n = ptr[r + 1] - ptr[r]
        if n > long_threshold:
            n_long += 1
        elif n > short_threshold:
            n_medium += 1
    medium = np.empty(n_medium, np.int64)
    long = np.empty(n_long, np.int64)
    n_medium = n_long = 0
    for r in range(len(ptr) - 1):
        n = ptr[r + 1] - ptr[r]
        if n > long_threshold:
            long[n_long] = r
            n_long += 1
        elif n > short_threshold:
            medium[n_medium] = r
            n_medium += 1
    return medium, long


# ---------------------------------------------------------------------- device memory
def _itemsize(dtype) -> int:
    return np.dtype(dtype).itemsize


def run_device_bytes(
    xi: ChainLayout,
    y: ChainLayout,
    payoff: PayoffLayout,
    *,
    predictive: bool,
    alternating: bool = True,
    averaged_deviator: bool = False,
    block_size: int = BLOCK_SIZE,
) -> int:
    """The bytes a :class:`~.saddle.CudaSaddlePoint` run allocates on the GPU for these layouts:
    the layouts, per chain the rule's state (:func:`solvers.regret.local.state_dtype` of its
    simplex entries; PRM+'s predictions: ``predictive``), the iterate, the running sums, the
    simultaneous updates' loss buffers, the checkpoints' scalars (their products and minima use
    a buffer of the loop's: :meth:`~.saddle.CudaSaddlePoint.checkpoint`).

    Returns
    -------
    int
    """
    from efce.solvers.regret.local import prediction_dtype, state_dtype

    total = xi.nbytes + y.nbytes + payoff.nbytes
    for chain in (xi, y):
        n = chain.num_entries
        total += n * _itemsize(state_dtype(chain.simplex_entries))
        if predictive:
            total += n * _itemsize(prediction_dtype(chain.simplex_entries))
        total += 8 * n * (1 if alternating else 2)  # the iterate (and the loss buffer)
    total += xi.num_entries * _itemsize(state_dtype(xi.num_entries))  # Σ w x
    if averaged_deviator:
        total += y.num_entries * _itemsize(state_dtype(y.num_entries))
    total += 16 * (len(xi.all_wide_steps) + -(-xi.num_steps // block_size))  # violations per block
    for chain in (xi, y):  # the split steps' scalars and per-piece sums
        total += 32 * max(len(chain.split_steps), 1) + 8 * max(len(chain.piece_step), 1)
    total += 8 * 1024 + 64  # the welfare's per-block sums, the scalars
    return int(total)


def _payoff_nonzeros(game: Game, tm: TerminalMap) -> int:
    """Nonzeros of ``A`` without the welfare column, as :func:`payoff_layout` stores them (zero
    payoffs left out), counted from the terminals (``tm``, the game's
    :func:`~efce.games.payoffs.terminal_map`): a terminal ``z`` with ``p_c(z) u_i(z) ≠ 0`` gives
    one following and one deviation nonzero per trigger above ``σ_i(z)`` (the counts of
    :func:`solvers.methods.efce.saddle_point_sizes`, restricted to those terminals)."""
    from efce.polytopes.triggers import triggers_above

    weighted = tm.weighted_payoffs()
    total = 0
    for i in (0, 1):
        space = game.sequences(i)
        above = np.zeros(space.num_sequences, dtype=np.int64)  # triggers whose subtree holds σ
        depth = np.zeros(space.num_sequences, dtype=np.int64)  # own sequences ⪯ σ
        infoset = space.seq_infoset[1:].astype(np.int64)
        above[1:] = triggers_above(space)[infoset]
        depth[1:] = space.infoset_depth.astype(np.int64)[infoset] + 1
        own = tm.sequences[weighted[:, i] != 0.0, i]
        total += int(above[own].sum()) + int(depth[own].sum())
    return total


def _trigger_chain_counts(game: Game) -> tuple[int, int]:
    """Steps of the EFCE trigger chain Y (one source each) and its gather destinations, counted
    from the sequence trees as the chain is built (:mod:`polytopes.triggers`): the root simplex,
    and a simplex per trigger ``σ̂`` and infoset ``I`` of its subtree (``Σ_I`` triggers above
    ``I``, :func:`~polytopes.triggers.triggers_above`); the entries that are some step's source
    are the root, every trigger's weight and, per trigger, each sequence of its subtree with an
    infoset below it."""
    from efce.polytopes.triggers import triggers_above

    steps = destinations = 1
    for i in (0, 1):
        space = game.sequences(i)
        above = triggers_above(space)
        steps += int(above.sum())
        parents = np.unique(space.infoset_parent_seq)
        parents = parents[parents > 0]
        destinations += space.num_sequences - 1 + int(above[space.seq_infoset[parents]].sum())
    return steps, destinations


def _estimated_value_bytes(game: Game, tm: TerminalMap, welfare: bool) -> int:
    """Bytes of a value of ``A`` as :func:`payoff_layout` stores it (:func:`_value_dtype`, whose
    line weights are the terminals' payoffs here), from the terminals (``tm``): 4 where they are
    float32 and no τ is held.  With chance the trigger tables merge the terminals that share a
    pair of sequences, whose sums need not be float32: 8, an upper bound."""
    if game.has_chance:
        return 8
    return np.dtype(_value_dtype(tm.weighted_payoffs(), [], welfare)).itemsize


#: Ξ's steps and source slots per relevant pair, which only DECOMPOSE gives: the largest of
#: the game families measured, with margin (steps 0.34-0.45 on Battleship, 0.61 on full
#: Sheriff, 0.88-0.90 on Goofspiel 3-5 with random prizes; source slots 1.15-1.23, 1.30 and
#: 1.36-1.50, growing with Goofspiel's ranks).
XI_STEPS_PER_PAIR = 0.93
XI_SOURCES_PER_PAIR = 1.6
#: Allocator slack and the kernels' own memory, beyond the arrays counted.
CUDA_FIXED_BYTES = 64 * 2**20


def estimate_cuda_bytes(
    game: Game, *, predictive: bool = True, alternating: bool = True, welfare: bool = False
) -> int:
    """Estimated GPU bytes of a :class:`~.saddle.CudaSaddlePoint` run on ``game``, from
    :func:`solvers.methods.efce.saddle_point_sizes` (counted without building anything): what
    :func:`run_device_bytes` counts, with Ξ's steps and source slots taken per relevant pair
    (the constants above: only DECOMPOSE knows them), Y's steps and gather destinations and
    ``A``'s nonzeros counted exactly, values in float32 where :func:`payoff_layout` stores them
    so, and int32 or int64 indices as the builders choose them.  Meant to refuse, before any
    build, a model larger than the GPU's free memory.

    Parameters
    ----------
    game : Game
        A two-player game without chance or with public chance.
    predictive : bool
        PRM+ (a prediction per entry besides the regret), the default rule.
    alternating : bool
        Alternating updates (simultaneous ones hold a loss buffer per chain).
    welfare : bool
        With a welfare threshold (the deviator's running sum, one more column of ``A``).

    Returns
    -------
    int
    """
    from efce.solvers.methods.efce import saddle_point_sizes
    from efce.solvers.regret.local import prediction_dtype, state_dtype

    sizes = saddle_point_sizes(game)
    pairs = sizes["relevant_pairs"]
    triggers = sum(game.sequences(i).num_sequences - 1 for i in (0, 1)) + int(welfare)
    y_entries = 1 + triggers + sizes["trigger_entries"]
    terminals = game.num_terminals
    tm = terminal_map(game)  # read once, for the nonzeros and the values' type
    nnz = _payoff_nonzeros(game, tm) + (terminals + 1 if welfare else 0)

    def chain_bytes(entries, steps, sources, destinations, ordered):
        index = _itemsize(index_dtype(max(entries, sources) + 1))
        arrays = steps * (1 + 2 * index + (index if ordered else 0)) + sources * 2 * index
        # the gather: a list of destinations and a pointer each (Y); a pointer per entry (Ξ)
        arrays += destinations * 2 * index if ordered else (entries + 1) * index
        state = entries * (_itemsize(state_dtype(entries // 2)) + 8 * (1 if alternating else 2))
        if predictive:
            state += entries * _itemsize(prediction_dtype(entries // 2))
        return arrays + state

    # the simplex entries (which decide the state's dtype) are taken as half the entries at least
    xi_steps = int(XI_STEPS_PER_PAIR * pairs)
    total = chain_bytes(pairs, xi_steps, int(XI_SOURCES_PER_PAIR * pairs), pairs, False)
    y_steps, y_destinations = _trigger_chain_counts(game)
    total += chain_bytes(y_entries, y_steps, y_steps, y_destinations, True)
    total += pairs * _itemsize(state_dtype(pairs))  # Σ w x
    if welfare:
        total += y_entries * _itemsize(state_dtype(y_entries))
    ptr = _itemsize(index_dtype(nnz + 1))
    value = _estimated_value_bytes(game, tm, welfare)
    total += (pairs + 1 + y_entries + 1) * ptr + nnz * (value + _itemsize(index_dtype(y_entries)))
    total += nnz * (value + _itemsize(index_dtype(pairs)))
    total += terminals * (8 + _itemsize(index_dtype(pairs)))
    total += 16 * xi_steps // 32 + CUDA_FIXED_BYTES
    return int(total)
