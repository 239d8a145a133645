"""The payoff matrix ``A`` of the EFCE saddle point as one memory-lean operator.

``min_{ξ ∈ Ξ} max_{y ∈ Y} ξᵀ A y`` (Farina, Ling, Fang, Sandholm 2019, section 2.1; see
:mod:`solvers.efce` for the entries of ``A``).  ``A`` has ~1.5–2.5 nonzeros per relevant pair on
the Battleship instances; stored as CSR twice (``A`` and ``Aᵀ``, 12 bytes per nonzero each, plus
int64 COO temporaries while building) it was the largest structure of a run.  Its nonzeros are
structured, and this module keeps only what cannot be recomputed:

* deviation part: for a trigger ``σ̂ = (Î, â)`` of player ``i``, a terminal ``z`` below ``Î`` and
  the ``Y`` entry of ``σ_i(z)`` in ``σ̂``'s block, the row is the pair ``(σ̂, σ_{-i}(z))`` and the
  value ``p_c(z) u_i(z)``.  Values are per terminal, the ``Y`` entry follows from the block layout
  of :mod:`polytopes.triggers`, so one int32 per nonzero — the Ξ chain entry of the row — is all
  that is stored (``rows``), plus one int32 per (trigger infoset, terminal) giving the terminal
  (``line_term``).  Rows are located once, at build time, through the relevant-pair CSR: for
  player 1 the pair sits at ``indptr[σ̂] + off(Î, σ2(z))`` (all sequences of ``Î`` share one
  row pattern), for player 2 at ``pos(σ1(z), (Ĵ, 0)) + b̂`` (``Ĵ``'s sequences are adjacent);
* following part (column ``λ_σ̂``, rows ``σ(z)`` for ``σ_i(z) ⪰ σ̂``): walks up each terminal's
  own sequences, nothing stored;
* the welfare column ``λ_τ``, if any.

``A·y`` and ``Aᵀ·x`` are compiled loops writing into caller-provided buffers, so an iteration of
the saddle-point solver allocates nothing.  Every sum runs in the order of a CSR product with the
explicit matrix (ascending column for ``A y``, ascending Ξ entry for ``Aᵀ x``): regret matching
breaks ties exactly (a regret of 1e-17 instead of 0 changes the strategy), so this keeps the
iterates bit-identical to the explicit-matrix computation.  :class:`TriggerTables` is shared with
the gap evaluator (:mod:`solvers.gaps`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numba
import numpy as np

from efce.games.arrays import U, find_in_row, thread_rows
from efce.games.game import Game
from efce.games.payoffs import terminal_map
from efce.games.relevant import RelevantPairs, pair_positions
from efce.polytopes.chain import index_dtype
from efce.polytopes.triggers import TriggerSpace

if TYPE_CHECKING:  # annotations only: importing scipy here would load it for every solve
    import scipy.sparse as sp


@dataclass(frozen=True, eq=False)
class PlayerTriggerTable:
    """Player ``i``'s sequence tree in depth-first preorder and its terminals in that order.

    Infoset ``I`` sits at preorder position ``pos[I]`` (``pre`` is the inverse) and its subtree
    spans positions ``pos[I] .. end[I]-1``; the sequences of the infoset at preorder position
    ``q`` are the preorder-sequence slots ``cum[q] .. cum[q+1]-1``; the terminals whose own
    sequence is in slot ``p`` are ``term_ptr[p] .. term_ptr[p+1]-1`` (terminals with the empty
    own sequence are below no trigger and are left out).  The terminals below ``I`` own the
    line entries ``line_start[I] + (j - term_ptr[cum[pos[I]]])``, ``j`` over their slots; entry
    ``k`` holds terminal slot ``line_term[k]``, and for the trigger ``(I, a)`` the position of
    ``ξ[σ̂, σ_{-i}(z)]`` it reads is ``rows[row_start[I] + a · width(I) + k - line_start[I]]``
    (a Ξ chain entry when the tables were built with the chain's entry map, else a relevant-pair
    position).  One int32 per nonzero of ``A``'s deviation part: reading ``x[rows[k]]`` costs one
    random access, where locating the pair from the line table and then its entry would cost two.
    Within the terminals of one sequence slot, the entries are sorted by the Ξ entry they read
    (when the chain's entry map is given), so that every sum runs in the same order as a CSR
    product with the explicit matrix would — regret matching breaks ties exactly, and this keeps
    its iterates identical to the explicit-matrix computation.
    """

    player: int
    first: np.ndarray  # int64[n_inf]
    num_actions: np.ndarray  # int64[n_inf]
    infoset_parent: np.ndarray  # int64[n_inf]
    pos: np.ndarray  # int64[n_inf]
    pre: np.ndarray  # int64[n_inf]
    end: np.ndarray  # int64[n_inf]
    cum: np.ndarray  # int64[n_inf + 1]
    child_ptr: np.ndarray  # int64[n_seq + 1]
    child_inf: np.ndarray  # int64[...]
    term_ptr: np.ndarray  # int64[n_seq]  (preorder slots, the empty sequence has none)
    term_weight: np.ndarray  # float64[T_i]  p_c(z) u_i(z) in slot order
    line_start: np.ndarray  # int64[n_inf + 1]
    line_term: np.ndarray  # int32[line_start[-1]]  terminal slot of each line entry
    row_start: np.ndarray  # int64[n_inf + 1]
    rows: np.ndarray  # int32[row_start[-1]]  the Ξ position read, per (trigger, line entry)

    @property
    def num_sequences(self) -> int:
        return len(self.child_ptr) - 1

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, f).nbytes for f in self.__dataclass_fields__ if f != "player")


@dataclass(frozen=True, eq=False)
class TriggerTables:
    """Both players' :class:`PlayerTriggerTable` plus per-terminal data in terminal order:
    ``terminal_pair[z]`` (natural relevant-pair position of ``σ(z)``, int32 below 2³¹ pairs),
    ``terminal_sequences`` (int32[T, 2], column-major) and ``weighted`` (``p_c(z) u_i(z)``,
    float64[T, 2]; the game's own payoff array when there is no chance move)."""

    players: tuple
    terminal_pair: np.ndarray
    terminal_row: np.ndarray  # position read for σ(z): the Ξ entry, or terminal_pair
    terminal_sequences: np.ndarray
    weighted: np.ndarray
    entry_order: bool  # rows are Ξ chain entries (built with the entry map)
    sum_order: bool = False  # line entries sorted by Ξ entry for every action (see above)

    @property
    def nbytes(self) -> int:
        return (
            sum(t.nbytes for t in self.players)
            + self.terminal_pair.nbytes
            + self.terminal_row.nbytes
            + self.terminal_sequences.nbytes
            + self.weighted.nbytes
        )


def trigger_tables(
    game: Game, pairs: RelevantPairs, entry_of_pair: np.ndarray | None = None
) -> TriggerTables:
    """Build the :class:`TriggerTables` of a two-player game (cost ``O(Σ_I |Z(I)| log)``).

    With ``entry_of_pair`` (relevant pair → Ξ chain entry) the entries of every slot are sorted
    by the Ξ entry they read; ``sum_order`` says whether that order is the same for all actions
    of every trigger infoset (then the operator reproduces the explicit-matrix sums bit for bit)."""
    tm = terminal_map(game)
    weighted = tm.weighted_payoffs()
    # Column-major: each player's column is contiguous, so the operator reads it without a copy.
    seqs = np.asfortranarray(tm.sequences)
    del tm
    terminal_pair = pair_positions(pairs, seqs[:, 0], seqs[:, 1]).astype(index_dtype(len(pairs)))
    eop = np.zeros(0, dtype=np.int32) if entry_of_pair is None else entry_of_pair
    built = [_player_table(game, pairs, i, seqs, weighted[:, i], eop) for i in (0, 1)]
    consistent = entry_of_pair is not None and all(ok for _, ok in built)
    terminal_row = terminal_pair if entry_of_pair is None else entry_of_pair[terminal_pair]
    return TriggerTables(
        tuple(t for t, _ in built),
        terminal_pair,
        terminal_row,
        seqs,
        weighted,
        entry_of_pair is not None,
        consistent,
    )


def _player_table(game, pairs, i, seqs, w, entry_of_pair):
    space = game.sequences(i)
    n_seq = space.num_sequences
    first = space.infoset_first_seq.astype(np.int64)
    num_actions = space.infoset_num_actions.astype(np.int64)
    tree = space.tree
    pos, pre, sub_hi = tree.position, tree.preorder, tree.subtree_hi
    end = sub_hi[first + num_actions - 1] if len(first) else np.zeros(0, np.int64)
    cum = np.zeros(len(pre) + 1, dtype=np.int64)
    np.cumsum(num_actions[pre], out=cum[1:])
    # Preorder slot of every nonempty sequence: slot cum[pos[I]] + a for (I, a).
    slot = np.full(n_seq, -1, dtype=np.int64)
    seq_inf = space.seq_infoset[1:].astype(np.int64)
    slot[1:] = cum[pos[seq_inf]] + (np.arange(1, n_seq) - first[seq_inf])
    own = seqs[:, i].astype(np.int64)
    below = np.flatnonzero(own > 0)
    order = below[np.argsort(slot[own[below]], kind="stable")]
    term_ptr = np.zeros(n_seq, dtype=np.int64)  # n_seq - 1 slots
    np.cumsum(np.bincount(slot[own[order]], minlength=n_seq - 1), out=term_ptr[1:])
    z_lo = term_ptr[cum[pos]] if len(pos) else np.zeros(0, np.int64)
    z_hi = term_ptr[cum[end]] if len(pos) else np.zeros(0, np.int64)
    line_start = np.zeros(len(first) + 1, dtype=np.int64)
    np.cumsum(z_hi - z_lo, out=line_start[1:])
    other = seqs[order, 1 - i].astype(np.int32)
    line, bad = _line_table(i, first, z_lo, z_hi, line_start, other, pairs.indptr, pairs.sigma2)
    if bad >= 0:
        raise AssertionError(f"terminal slot {bad} of player {i + 1} meets a pair that is not relevant")
    line_term = np.empty(len(line), dtype=np.int32)
    consistent = _sort_lines(
        i,
        first,
        num_actions,
        pos,
        end,
        cum,
        term_ptr,
        line_start,
        line,
        line_term,
        pairs.indptr,
        entry_of_pair,
    )
    row_start = np.zeros(len(first) + 1, dtype=np.int64)
    np.cumsum(num_actions * np.diff(line_start), out=row_start[1:])
    rows = _rows(
        i,
        first,
        num_actions,
        line_start,
        line,
        row_start,
        pairs.indptr,
        entry_of_pair,
        np.empty(row_start[-1], dtype=index_dtype(len(pairs))),
    )
    del line
    table = PlayerTriggerTable(
        i,
        first,
        num_actions,
        space.infoset_parent_seq.astype(np.int64),
        pos,
        pre,
        end,
        cum,
        tree.child_ptr,
        tree.child_infosets,
        term_ptr,
        np.ascontiguousarray(w[order]),
        line_start,
        line_term,
        row_start,
        rows,
    )
    return table, consistent


@numba.njit(cache=True)
def _rows(player, first, num_actions, line_start, line, row_start, indptr, entry_of_pair, rows):
    mapped = len(entry_of_pair) > 0
    for inf in range(len(first)):
        width = line_start[inf + 1] - line_start[inf]
        for a in range(num_actions[inf]):
            rb = indptr[first[inf] + a] if player == 0 else a
            out = row_start[inf] + a * width
            for k in range(line_start[inf], line_start[inf + 1]):
                q = rb + line[k]
                rows[out + k - line_start[inf]] = entry_of_pair[q] if mapped else q
    return rows


@numba.njit(cache=True)
def _sort_lines(
    player, first, num_actions, pos, end, cum, term_ptr, line_start, line, line_term, indptr, entry_of_pair
):
    """Fill ``line_term`` and, given the entry map, sort each slot's entries by the Ξ entry read
    for the infoset's first action; True if every other action reads them in ascending order too."""
    consistent = True
    mapped = len(entry_of_pair) > 0
    for inf in range(len(first)):
        p_lo, p_hi = cum[pos[inf]], cum[end[inf]]
        shift = line_start[inf] - term_ptr[p_lo]
        for p in range(p_lo, p_hi):
            lo, hi = term_ptr[p] + shift, term_ptr[p + 1] + shift
            for k in range(lo, hi):
                line_term[k] = k - shift
            if not mapped or hi - lo < 2:
                continue
            rb = indptr[first[inf]] if player == 0 else 0
            keys = np.empty(hi - lo, np.int64)
            for k in range(lo, hi):
                keys[k - lo] = entry_of_pair[rb + line[k]]
            perm = np.argsort(keys, kind="mergesort")
            old_line = line[lo:hi].copy()
            for r in range(hi - lo):
                line[lo + r] = old_line[perm[r]]
                line_term[lo + r] = lo + perm[r] - shift
            for a in range(1, num_actions[inf]):
                rb = indptr[first[inf] + a] if player == 0 else a
                for k in range(lo + 1, hi):
                    if entry_of_pair[rb + line[k]] < entry_of_pair[rb + line[k - 1]]:
                        consistent = False
    return consistent


@numba.njit(cache=True)
def _line_table(player, first, z_lo, z_hi, line_start, other, indptr, sigma2):
    line = np.empty(line_start[-1], np.int32)
    for inf in range(len(first)):
        k = line_start[inf]
        for j in range(z_lo[inf], z_hi[inf]):
            if player == 0:
                row, col = first[inf], other[j]
            else:
                row, col = other[j], first[inf]
            q = find_in_row(indptr, sigma2, row, col)
            if q < 0:
                return line, j
            lo = indptr[row]
            # Player 1: offset inside the row pattern of I; player 2: position of (σ1(z), (J, 0)).
            line[k] = q - lo if player == 0 else q
            k += 1
    return line, -1


#: Operators with fewer rows run the serial kernels whatever the thread count (the threads'
#: fork/join costs more than it saves there); the parallel kernels are bit-identical anyway.
PARALLEL_MIN_ROWS = 50_000

#: The parallel deviation kernels cut the triggers into this many blocks per thread and deal
#: them out in turn (block ``b`` to thread ``b mod threads``).  Equal nominal work is not equal
#: time: ``A y`` skips the zero entries of ``y`` and the rows of some triggers lie farther apart
#: in memory.  Medium Battleship, player 1, two halves of equal nonzeros: 5.6 and 18.7 ms;
#: dealt in blocks, both threads finish together (``A y`` 54 → 41 ms, ``Aᵀ x`` 65 → 51 ms).
BLOCKS_PER_THREAD = 32


class PayoffOperator:
    """``A`` of :mod:`solvers.efce` without storing it: rows are Ξ's chain entries, columns are
    Y's entries.  ``matvec(y, out)`` writes ``A y``; ``rmatvec(x, out, sign)`` writes
    ``sign · Aᵀ x``.  Scratch space is per-sequence (small) and allocated once."""

    def __init__(
        self,
        tables: TriggerTables,
        triggers: TriggerSpace,
        num_rows: int,
        seq_parents: tuple,
        max_depth: int,
        welfare_threshold: float | None = None,
    ):
        if not tables.entry_order:
            raise ValueError("the payoff operator needs trigger tables built with Ξ's entry map")
        self.tables = tables
        self.triggers = triggers
        self.tau = None if welfare_threshold is None else float(welfare_threshold)
        self.shape = (num_rows, triggers.chain.num_entries)
        self._trigger_base = (0, tables.players[0].num_sequences - 1)
        # The welfare weight is the last trigger: entry 1 + (K - 1).
        self._lambda_tau = triggers.num_triggers if self.tau is not None else -1
        # Read by the kernels only with a threshold (λ_τ ≥ 0), which a model keeps for good.
        self._welfare_weight = (
            np.ascontiguousarray(tables.weighted.sum(axis=1)) if self.tau is not None else np.zeros(0)
        )
        # Views: the tables keep the terminals' sequences column-major.
        self._own = tuple(np.ascontiguousarray(tables.terminal_sequences[:, i]) for i in (0, 1))
        self._seq_parent = tuple(np.ascontiguousarray(p) for p in seq_parents)
        # Terminals in ascending Ξ entry of σ(z): the order of the rows of the explicit matrix.
        index = index_dtype(len(tables.terminal_pair) + 1)
        self._term_order = np.argsort(tables.terminal_row, kind="stable").astype(index)
        self._stack = np.empty(max_depth + 2, dtype=np.int64)
        # Parallel kernels (bit-identical to the serial ones) for big operators on > 1 thread:
        # per player the infoset of each trigger sequence and the running work, and one stack
        # per thread (rows two cache lines apart: the following pass writes them per terminal).
        self._parallel = num_rows >= PARALLEL_MIN_ROWS
        if self._parallel:
            self._trigger_work = tuple(
                _trigger_work(t.first, t.num_actions, t.line_start, t.num_sequences) for t in tables.players
            )
            self._stacks = thread_rows(max_depth + 2, np.int64)

    @property
    def nbytes(self) -> int:
        """Bytes held by the operator itself (the shared tables and the entry map included)."""
        return (
            self.tables.nbytes
            + self._welfare_weight.nbytes
            + self._term_order.nbytes
            + sum(p.nbytes for p in self._seq_parent)
        )

    def _parts(self) -> int:
        """Threads the next product runs on (1: the serial kernels)."""
        return numba.get_num_threads() if self._parallel else 1

    def matvec(self, y: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out = A y`` (``out`` has one slot per Ξ entry)."""
        parts = self._parts()
        if parts > 1:
            return self._matvec_parallel(y, out, parts)
        out[:] = 0.0
        self._following(y, out)
        for i, t in enumerate(self.tables.players):
            _deviation_matvec(
                t.first,
                t.num_actions,
                t.pos,
                t.end,
                t.cum,
                t.term_ptr,
                t.term_weight,
                t.line_start,
                t.line_term,
                t.row_start,
                t.rows,
                self._trigger_base[i],
                self.triggers.block_start,
                y,
                out,
            )
        return out

    def _following(self, y, out):
        tau = 0.0 if self.tau is None else self.tau
        _following_matvec(
            self._seq_parent[0],
            self._seq_parent[1],
            self._own[0],
            self._own[1],
            self.tables.weighted,
            self._welfare_weight,
            self.tables.terminal_row,
            self._trigger_base[1],
            self._lambda_tau,
            tau,
            y,
            self._stack,
            out,
        )

    def _matvec_parallel(self, y, out, parts):
        tau = 0.0 if self.tau is None else self.tau
        # The following pass zeroes ``out`` and writes every terminal row.
        _following_matvec_parallel(
            self._seq_parent[0],
            self._seq_parent[1],
            self._own[0],
            self._own[1],
            self.tables.weighted,
            self._welfare_weight,
            self.tables.terminal_row,
            self._trigger_base[1],
            self._lambda_tau,
            tau,
            y,
            self._stacks,
            out,
            parts,
        )
        for i, t in enumerate(self.tables.players):
            seq_inf, cum_work = self._trigger_work[i]
            _deviation_matvec_parallel(
                seq_inf,
                cum_work,
                t.first,
                t.pos,
                t.end,
                t.cum,
                t.term_ptr,
                t.term_weight,
                t.line_start,
                t.line_term,
                t.row_start,
                t.rows,
                self._trigger_base[i],
                self.triggers.block_start,
                y,
                out,
                parts,
            )
        return out

    def rmatvec(self, x: np.ndarray, out: np.ndarray, sign: float = 1.0) -> np.ndarray:
        """``out = sign · Aᵀ x`` (``out`` has one slot per Y entry)."""
        parts = self._parts()
        if parts > 1:
            for i, t in enumerate(self.tables.players):
                seq_inf, cum_work = self._trigger_work[i]
                _deviation_rmatvec_parallel(
                    seq_inf,
                    cum_work,
                    t.first,
                    t.pos,
                    t.end,
                    t.cum,
                    t.term_ptr,
                    t.term_weight,
                    t.line_start,
                    t.line_term,
                    t.row_start,
                    t.rows,
                    self._trigger_base[i],
                    self.triggers.block_start,
                    x,
                    sign,
                    out,
                    parts,
                )
            tau = 0.0 if self.tau is None else self.tau
            _following_rmatvec_parallel(
                self._seq_parent[0],
                self._seq_parent[1],
                self._own[0],
                self._own[1],
                self.tables.weighted,
                self._welfare_weight,
                self.tables.terminal_row,
                self._term_order,
                self._trigger_base[1],
                self.triggers.num_triggers,
                self._lambda_tau,
                tau,
                x,
                sign,
                out,
            )
            return out
        for i, t in enumerate(self.tables.players):
            _deviation_rmatvec(
                t.first,
                t.num_actions,
                t.pos,
                t.end,
                t.cum,
                t.term_ptr,
                t.term_weight,
                t.line_start,
                t.line_term,
                t.row_start,
                t.rows,
                self._trigger_base[i],
                self.triggers.block_start,
                x,
                sign,
                out,
            )
        tau = 0.0 if self.tau is None else self.tau
        _following_rmatvec(
            self._seq_parent[0],
            self._seq_parent[1],
            self._own[0],
            self._own[1],
            self.tables.weighted,
            self._welfare_weight,
            self.tables.terminal_row,
            self._term_order,
            self._trigger_base[1],
            self.triggers.num_triggers,
            self._lambda_tau,
            tau,
            x,
            sign,
            out,
        )
        return out

    def __matmul__(self, y: np.ndarray) -> np.ndarray:
        return self.matvec(np.ascontiguousarray(y, dtype=np.float64), np.empty(self.shape[0]))

    def transpose_matmul(self, x: np.ndarray) -> np.ndarray:
        """``Aᵀ x`` into a new array (tests and one-off evaluations; the solver uses rmatvec)."""
        return self.rmatvec(np.ascontiguousarray(x, dtype=np.float64), np.empty(self.shape[1]))

    def to_sparse(self) -> sp.csr_matrix:
        """``A`` as a scipy CSR matrix, column by column through :meth:`matvec` (small games)."""
        import scipy.sparse as sp  # here: the solver never needs scipy

        cols = []
        unit = np.zeros(self.shape[1])
        buf = np.empty(self.shape[0])
        for e in range(self.shape[1]):
            unit[e] = 1.0
            cols.append(sp.csc_matrix(self.matvec(unit, buf).reshape(-1, 1)))
            unit[e] = 0.0
        return sp.hstack(cols).tocsr()


def build_payoff_operator(
    game: Game,
    pairs: RelevantPairs,
    triggers: TriggerSpace,
    entry_of_pair: np.ndarray,
    welfare_threshold: float | None = None,
    tables: TriggerTables | None = None,
) -> PayoffOperator:
    """The operator of ``A`` for Ξ's chain with ``entry_of_pair`` (pair position → chain entry)."""
    tables = trigger_tables(game, pairs, entry_of_pair) if tables is None else tables
    spaces = (game.sequences(0), game.sequences(1))
    max_depth = max(int(sp_.infoset_depth.max(initial=0)) for sp_ in spaces) + 1
    return PayoffOperator(
        tables, triggers, len(pairs), tuple(sp_.seq_parent for sp_ in spaces), max_depth, welfare_threshold
    )


# The kernels below index through games.arrays.U (unsigned); every index here is non-negative.
@numba.njit(cache=True)
def _deviation_matvec(
    first,
    num_actions,
    pos,
    end,
    cum,
    term_ptr,
    term_w,
    line_start,
    line_term,
    row_start,
    rows,
    trig_base,
    block_start,
    y,
    out,
):
    for inf in range(len(first)):
        p_lo, p_hi = cum[U(pos[U(inf)])], cum[U(end[U(inf)])]
        shift = line_start[U(inf)] - term_ptr[U(p_lo)]
        width = line_start[U(inf + 1)] - line_start[U(inf)]
        for a in range(num_actions[U(inf)]):
            s_hat = first[U(inf)] + a
            eb = block_start[U(trig_base + s_hat - 1)] - p_lo
            rshift = row_start[U(inf)] + a * width - line_start[U(inf)]
            for p in range(p_lo, p_hi):
                v = y[U(eb + p)]
                if v == 0.0:
                    continue
                for k in range(term_ptr[U(p)] + shift, term_ptr[U(p + 1)] + shift):
                    out[U(rows[U(rshift + k)])] += term_w[U(line_term[U(k)])] * v


@numba.njit(cache=True)
def _deviation_rmatvec(
    first,
    num_actions,
    pos,
    end,
    cum,
    term_ptr,
    term_w,
    line_start,
    line_term,
    row_start,
    rows,
    trig_base,
    block_start,
    x,
    sign,
    out,
):
    for inf in range(len(first)):
        p_lo, p_hi = cum[U(pos[U(inf)])], cum[U(end[U(inf)])]
        shift = line_start[U(inf)] - term_ptr[U(p_lo)]
        width = line_start[U(inf + 1)] - line_start[U(inf)]
        for a in range(num_actions[U(inf)]):
            s_hat = first[U(inf)] + a
            eb = block_start[U(trig_base + s_hat - 1)] - p_lo
            rshift = row_start[U(inf)] + a * width - line_start[U(inf)]
            for p in range(p_lo, p_hi):
                acc = 0.0
                for k in range(term_ptr[U(p)] + shift, term_ptr[U(p + 1)] + shift):
                    acc += term_w[U(line_term[U(k)])] * x[U(rows[U(rshift + k)])]
                out[U(eb + p)] = sign * acc


@numba.njit(cache=True)
def _following_matvec(
    seq_parent0,
    seq_parent1,
    own0,
    own1,
    weighted,
    welfare_w,
    terminal_row,
    trig_base1,
    lam_tau,
    tau,
    y,
    stack,
    out,
):
    """Columns ``λ`` (and ``λ_τ``) of ``A y``: row ``σ(z)`` gets ``−p_c u_i(z) λ_σ̂`` for every
    own sequence ``σ̂ ⪯ σ_i(z)`` of either player, added in ascending column order (the order
    of a CSR row of the explicit matrix).  Rows of distinct terminals are distinct (no chance),
    so this pass writes each of them once, before the deviation part adds to them."""
    for z in range(len(own0)):
        acc = 0.0
        n = 0
        s = own0[U(z)]
        while s != 0:
            stack[U(n)] = s
            n += 1
            s = seq_parent0[U(s)]
        w = -weighted[z, 0]
        for q in range(n - 1, -1, -1):
            acc += w * y[U(stack[U(q)])]  # λ of player 1's trigger σ̂ is entry σ̂
        n = 0
        s = own1[U(z)]
        while s != 0:
            stack[U(n)] = s
            n += 1
            s = seq_parent1[U(s)]
        w = -weighted[z, 1]
        for q in range(n - 1, -1, -1):
            acc += w * y[U(trig_base1 + stack[U(q)])]
        if lam_tau >= 0:
            acc += -welfare_w[U(z)] * y[U(lam_tau)]
        out[U(terminal_row[U(z)])] = acc
    if lam_tau >= 0:
        out[0] += tau * y[lam_tau]  # (∅, ∅) is Ξ's entry 0


@numba.njit(cache=True)
def _following_rmatvec(
    seq_parent0,
    seq_parent1,
    own0,
    own1,
    weighted,
    welfare_w,
    terminal_row,
    term_order,
    trig_base1,
    num_lambda,
    lam_tau,
    tau,
    x,
    sign,
    out,
):
    """Entries ``λ`` (and ``λ_τ``) of ``sign · Aᵀ x``: minus the following values, summed over
    the terminals in ascending Ξ-entry order (the order of a CSR row of the explicit ``Aᵀ``)."""
    for e in range(num_lambda + 1):
        out[e] = 0.0
    if lam_tau >= 0:
        out[lam_tau] = tau * x[0]  # row (∅, ∅) is Ξ's entry 0, the first
    for q in range(len(term_order)):
        z = term_order[U(q)]
        v = x[U(terminal_row[U(z)])]
        w = -weighted[z, 0]
        s = own0[U(z)]
        while s != 0:
            out[U(s)] += w * v
            s = seq_parent0[U(s)]
        w = -weighted[z, 1]
        s = own1[U(z)]
        while s != 0:
            out[U(trig_base1 + s)] += w * v
            s = seq_parent1[U(s)]
        if lam_tau >= 0:
            out[U(lam_tau)] += -welfare_w[U(z)] * v
    for e in range(1, num_lambda + 1):
        out[e] = sign * out[e]


# ---------------------------------------------------------------------- parallel kernels
# The same sums as the kernels above, in the same order, split among numba's threads so that
# every output entry is written by one thread only — the results are bit-identical to the
# serial kernels for any thread count:
#
# * deviation part of ``A y``: the rows of trigger ``σ̂`` are the pairs holding ``σ̂`` as its
#   player's sequence, so distinct triggers write distinct rows; the triggers (sequences) are
#   cut into ``parts · BLOCKS_PER_THREAD`` ranges of about equal work (``cum_work``), dealt to
#   the parts in turn;
# * deviation part of ``Aᵀ x``: output ``(σ̂, p)`` is one sum, split the same way;
# * following part of ``A y``: one row per terminal, terminals split evenly;
# * following part of ``Aᵀ x``: player 1's λ entries, player 2's and λ_τ are disjoint, so two
#   parts each walk all terminals in the serial order but write only their player's entries.


@numba.njit(cache=True)
def _trigger_work(first, num_actions, line_start, n_seq):
    """``(seq_inf, cum_work)``: the infoset of each sequence and the running sum over the
    sequences ``1..s`` of their trigger's deviation nonzeros (``cum_work[0] = 0``)."""
    seq_inf = np.zeros(n_seq, np.int64)
    work = np.zeros(n_seq, np.int64)
    for inf in range(len(first)):
        width = line_start[inf + 1] - line_start[inf]
        for a in range(num_actions[inf]):
            seq_inf[first[inf] + a] = inf
            work[first[inf] + a] = width + 1
    return seq_inf, np.cumsum(work)


@numba.njit(inline="always")
def _work_part(cum_work, p, parts):
    """Sequences ``[lo, hi)`` of part ``p`` of ``parts``: equal shares of the total work."""
    total = cum_work[-1]
    lo = 1 if p == 0 else np.searchsorted(cum_work, (total * p) // parts, side="right")
    hi = (
        len(cum_work)
        if p == parts - 1
        else np.searchsorted(cum_work, (total * (p + 1)) // parts, side="right")
    )
    return max(lo, 1), max(hi, 1)


@numba.njit(parallel=True, cache=True)
def _deviation_matvec_parallel(
    seq_inf,
    cum_work,
    first,
    pos,
    end,
    cum,
    term_ptr,
    term_w,
    line_start,
    line_term,
    row_start,
    rows,
    trig_base,
    block_start,
    y,
    out,
    parts,
):
    blocks = parts * BLOCKS_PER_THREAD
    for part in numba.prange(parts):
        for block in range(part, blocks, parts):
            s_lo, s_hi = _work_part(cum_work, block, blocks)
            for s_hat in range(s_lo, s_hi):
                inf = seq_inf[U(s_hat)]
                a = s_hat - first[U(inf)]
                p_lo, p_hi = cum[U(pos[U(inf)])], cum[U(end[U(inf)])]
                shift = line_start[U(inf)] - term_ptr[U(p_lo)]
                width = line_start[U(inf + 1)] - line_start[U(inf)]
                eb = block_start[U(trig_base + s_hat - 1)] - p_lo
                rshift = row_start[U(inf)] + a * width - line_start[U(inf)]
                for p in range(p_lo, p_hi):
                    v = y[U(eb + p)]
                    if v == 0.0:
                        continue
                    for k in range(term_ptr[U(p)] + shift, term_ptr[U(p + 1)] + shift):
                        out[U(rows[U(rshift + k)])] += term_w[U(line_term[U(k)])] * v


@numba.njit(parallel=True, cache=True)
def _deviation_rmatvec_parallel(
    seq_inf,
    cum_work,
    first,
    pos,
    end,
    cum,
    term_ptr,
    term_w,
    line_start,
    line_term,
    row_start,
    rows,
    trig_base,
    block_start,
    x,
    sign,
    out,
    parts,
):
    blocks = parts * BLOCKS_PER_THREAD
    for part in numba.prange(parts):
        for block in range(part, blocks, parts):
            s_lo, s_hi = _work_part(cum_work, block, blocks)
            for s_hat in range(s_lo, s_hi):
                inf = seq_inf[U(s_hat)]
                a = s_hat - first[U(inf)]
                p_lo, p_hi = cum[U(pos[U(inf)])], cum[U(end[U(inf)])]
                shift = line_start[U(inf)] - term_ptr[U(p_lo)]
                width = line_start[U(inf + 1)] - line_start[U(inf)]
                eb = block_start[U(trig_base + s_hat - 1)] - p_lo
                rshift = row_start[U(inf)] + a * width - line_start[U(inf)]
                for p in range(p_lo, p_hi):
                    acc = 0.0
                    for k in range(term_ptr[U(p)] + shift, term_ptr[U(p + 1)] + shift):
                        acc += term_w[U(line_term[U(k)])] * x[U(rows[U(rshift + k)])]
                    out[U(eb + p)] = sign * acc


@numba.njit(parallel=True, cache=True)
def _following_matvec_parallel(
    seq_parent0,
    seq_parent1,
    own0,
    own1,
    weighted,
    welfare_w,
    terminal_row,
    trig_base1,
    lam_tau,
    tau,
    y,
    stacks,
    out,
    parts,
):
    """``out = 0``, then :func:`_following_matvec` with the terminals in ``parts`` ranges
    (``stacks``: one row per part).  The zeroing runs on the threads too: alone it is ~10 % of
    the product (medium Battleship: 6 ms of ``A y``'s 41 on two threads)."""
    n_out = len(out)
    for part in numba.prange(parts):
        out[(n_out * part) // parts : (n_out * (part + 1)) // parts] = 0.0
    n_z = len(own0)
    for part in numba.prange(parts):
        stack = stacks[part]
        for z in range((n_z * part) // parts, (n_z * (part + 1)) // parts):
            acc = 0.0
            n = 0
            s = own0[U(z)]
            while s != 0:
                stack[U(n)] = s
                n += 1
                s = seq_parent0[U(s)]
            w = -weighted[z, 0]
            for q in range(n - 1, -1, -1):
                acc += w * y[U(stack[U(q)])]
            n = 0
            s = own1[U(z)]
            while s != 0:
                stack[U(n)] = s
                n += 1
                s = seq_parent1[U(s)]
            w = -weighted[z, 1]
            for q in range(n - 1, -1, -1):
                acc += w * y[U(trig_base1 + stack[U(q)])]
            if lam_tau >= 0:
                acc += -welfare_w[U(z)] * y[U(lam_tau)]
            out[U(terminal_row[U(z)])] = acc
    if lam_tau >= 0:
        out[0] += tau * y[lam_tau]


@numba.njit(parallel=True, cache=True)
def _following_rmatvec_parallel(
    seq_parent0,
    seq_parent1,
    own0,
    own1,
    weighted,
    welfare_w,
    terminal_row,
    term_order,
    trig_base1,
    num_lambda,
    lam_tau,
    tau,
    x,
    sign,
    out,
):
    """:func:`_following_rmatvec` as two parts: player 1's λ entries, then player 2's and λ_τ;
    each walks all terminals in the serial order and writes only its own entries."""
    for e in range(num_lambda + 1):
        out[e] = 0.0
    if lam_tau >= 0:
        out[lam_tau] = tau * x[0]
    for player in numba.prange(2):
        if player == 0:
            for q in range(len(term_order)):
                z = term_order[U(q)]
                v = x[U(terminal_row[U(z)])]
                w = -weighted[z, 0]
                s = own0[U(z)]
                while s != 0:
                    out[U(s)] += w * v
                    s = seq_parent0[U(s)]
        else:
            for q in range(len(term_order)):
                z = term_order[U(q)]
                v = x[U(terminal_row[U(z)])]
                w = -weighted[z, 1]
                s = own1[U(z)]
                while s != 0:
                    out[U(trig_base1 + s)] += w * v
                    s = seq_parent1[U(s)]
                if lam_tau >= 0:
                    out[U(lam_tau)] += -welfare_w[U(z)] * v
    for e in range(1, num_lambda + 1):
        out[e] = sign * out[e]
