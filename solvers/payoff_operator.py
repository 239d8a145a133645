"""The payoff matrix ``A`` of the EFCE saddle point as one memory-lean operator.

``min_{ξ ∈ Ξ} max_{y ∈ Y} ξᵀ A y`` (Farina, Ling, Fang, Sandholm 2019, section 2.1; see
:mod:`solvers.efce` for the entries of ``A``).  ``A`` has ~1.5–2.5 nonzeros per relevant pair on
the Battleship instances; stored as CSR twice (``A`` and ``Aᵀ``) it was the largest structure of
a run.  Its nonzeros are highly structured, though:

* deviation part: for a trigger ``σ̂ = (Î, â)`` of player ``i``, a terminal ``z`` below ``Î`` and
  the ``Y`` entry of ``σ_i(z)`` in ``σ̂``'s block, the row is the pair ``(σ̂, σ_{-i}(z))``, the
  value ``p_c(z) u_i(z)``.  For player 1 that pair sits at ``indptr[σ̂] + off(Î, σ2(z))``: the
  rows of all sequences of ``Î`` share one column pattern.  For player 2 it sits at
  ``pos(σ1(z), (Ĵ, 0)) + b̂``: the sequences of ``Ĵ`` are adjacent in every row.  So one int32
  per (trigger infoset, terminal below it) — the *line table*, shared by all actions of the
  infoset — locates every nonzero (about 0.3 per relevant pair instead of 2 × 12 bytes per
  nonzero);
* following part (column ``λ_σ̂``, rows ``σ(z)`` for ``σ_i(z) ⪰ σ̂``): a prefix sum of ``λ`` down
  the sequence tree (``A y``) or a subtree sum (``Aᵀ x``) over the terminals;
* the welfare column ``λ_τ``, if any.

``A·y`` and ``Aᵀ·x`` are compiled loops writing into caller-provided buffers, so an iteration of
the saddle-point solver allocates nothing.  :class:`TriggerTables` (the line table and the
per-player preorder layout) is shared with the gap evaluator (:mod:`solvers.gaps`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from games.game import Game
from games.payoffs import terminal_map
from games.relevant import RelevantPairs, pair_positions
from polytopes.decompose import _find, _preorder
from polytopes.triggers import TriggerSpace


@dataclass(frozen=True, eq=False)
class PlayerTriggerTable:
    """Player ``i``'s sequence tree in depth-first preorder and its terminals in that order.

    Infoset ``I`` sits at preorder position ``pos[I]`` (``pre`` is the inverse) and its subtree
    spans positions ``pos[I] .. end[I]-1``; the sequences of the infoset at preorder position
    ``q`` are the preorder-sequence slots ``cum[q] .. cum[q+1]-1``; the terminals whose own
    sequence is in slot ``p`` are ``term_ptr[p] .. term_ptr[p+1]-1`` (terminals with the empty
    own sequence are below no trigger and are left out).  ``line[line_start[I] + j - term_ptr[cum[pos[I]]]]``
    is the line-table entry of terminal slot ``j`` below ``I`` (see the module docstring).
    """

    player: int
    first: np.ndarray          # int64[n_inf]
    num_actions: np.ndarray    # int64[n_inf]
    infoset_parent: np.ndarray  # int64[n_inf]
    pos: np.ndarray            # int64[n_inf]
    pre: np.ndarray            # int64[n_inf]
    end: np.ndarray            # int64[n_inf]
    cum: np.ndarray            # int64[n_inf + 1]
    child_ptr: np.ndarray      # int64[n_seq + 1]
    child_inf: np.ndarray      # int64[...]
    term_ptr: np.ndarray       # int64[n_seq]  (preorder slots, the empty sequence has none)
    term_weight: np.ndarray    # float64[T_i]  p_c(z) u_i(z) in slot order
    line_start: np.ndarray     # int64[n_inf + 1]
    line: np.ndarray           # int32[line_start[-1]]

    @property
    def num_sequences(self) -> int:
        return len(self.child_ptr) - 1

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, f).nbytes for f in self.__dataclass_fields__ if f != "player")


@dataclass(frozen=True, eq=False)
class TriggerTables:
    """Both players' :class:`PlayerTriggerTable` plus per-terminal data in terminal order:
    ``terminal_pair[z]`` (natural relevant-pair position of ``σ(z)``), ``terminal_sequences``
    (int32[T, 2]) and ``weighted`` (``p_c(z) u_i(z)``, float64[T, 2])."""

    players: tuple
    terminal_pair: np.ndarray
    terminal_sequences: np.ndarray
    weighted: np.ndarray

    @property
    def nbytes(self) -> int:
        return (sum(t.nbytes for t in self.players) + self.terminal_pair.nbytes
                + self.terminal_sequences.nbytes + self.weighted.nbytes)


def trigger_tables(game: Game, pairs: RelevantPairs) -> TriggerTables:
    """Build the :class:`TriggerTables` of a two-player game (cost ``O(Σ_I |Z(I)| log)``)."""
    tm = terminal_map(game)
    weighted = tm.weighted_payoffs()
    seqs = tm.sequences
    terminal_pair = pair_positions(pairs, seqs[:, 0], seqs[:, 1])
    players = tuple(_player_table(game, pairs, i, seqs, weighted[:, i]) for i in (0, 1))
    return TriggerTables(players, terminal_pair, seqs, weighted)


def _player_table(game, pairs, i, seqs, w) -> PlayerTriggerTable:
    space = game.sequences(i)
    n_seq = space.num_sequences
    first = space.infoset_first_seq.astype(np.int64)
    num_actions = space.infoset_num_actions.astype(np.int64)
    child_inf = np.argsort(space.infoset_parent_seq, kind="stable").astype(np.int64)
    child_ptr = np.zeros(n_seq + 1, dtype=np.int64)
    np.cumsum(np.bincount(space.infoset_parent_seq, minlength=n_seq), out=child_ptr[1:])
    pos, pre, _, sub_hi = _preorder(child_ptr, child_inf, first, num_actions, n_seq)
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
    return PlayerTriggerTable(i, first, num_actions, space.infoset_parent_seq.astype(np.int64), pos, pre,
                              end, cum, child_ptr, child_inf, term_ptr, np.ascontiguousarray(w[order]),
                              line_start, line)


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
            lo, hi = indptr[row], indptr[row + 1]
            q = _find(sigma2, lo, hi, col)
            if q >= hi or sigma2[q] != col:
                return line, j
            # Player 1: offset inside the row pattern of I; player 2: position of (σ1(z), (J, 0)).
            line[k] = q - lo if player == 0 else q
            k += 1
    return line, -1


class PayoffOperator:
    """``A`` of :mod:`solvers.efce` without storing it: rows are Ξ's chain entries, columns are
    Y's entries.  ``matvec(y, out)`` writes ``A y``; ``rmatvec(x, out, sign)`` writes
    ``sign · Aᵀ x``.  Scratch space is per-sequence (small) and allocated once."""

    def __init__(self, tables: TriggerTables, triggers: TriggerSpace, entry_of_pair: np.ndarray,
                 indptr: np.ndarray, welfare_threshold: float | None = None):
        self.tables = tables
        self.indptr = indptr
        self.triggers = triggers
        self.entry_of_pair = entry_of_pair
        self.tau = None if welfare_threshold is None else float(welfare_threshold)
        self.shape = (len(entry_of_pair), triggers.chain.num_entries)
        self._trigger_base = (0, tables.players[0].num_sequences - 1)
        # The welfare weight is the last trigger: entry 1 + (K - 1).
        self._lambda_tau = triggers.num_triggers if self.tau is not None else -1
        self._welfare_weight = np.ascontiguousarray(tables.weighted.sum(axis=1))
        self._own = tuple(np.ascontiguousarray(tables.terminal_sequences[:, i]) for i in (0, 1))
        self._scratch = tuple(np.zeros(t.num_sequences) for t in tables.players)

    @property
    def nbytes(self) -> int:
        """Bytes held by the operator itself (the shared tables and the entry map included)."""
        return (self.tables.nbytes + self.entry_of_pair.nbytes + self._welfare_weight.nbytes
                + sum(s.nbytes for s in self._scratch))

    def matvec(self, y: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out = A y`` (``out`` has one slot per Ξ entry)."""
        out[:] = 0.0
        for i, t in enumerate(self.tables.players):
            _deviation_matvec(i, t.first, t.num_actions, t.pos, t.end, t.cum, t.term_ptr, t.term_weight,
                              t.line_start, t.line, self.indptr, self._trigger_base[i],
                              self.triggers.block_start, self.entry_of_pair, y, out)
        tau = 0.0 if self.tau is None else self.tau
        _following_matvec(self.tables.players[0].first, self.tables.players[0].num_actions,
                          self.tables.players[0].infoset_parent, self.tables.players[1].first,
                          self.tables.players[1].num_actions, self.tables.players[1].infoset_parent,
                          self._own[0], self._own[1], self.tables.weighted, self._welfare_weight,
                          self.tables.terminal_pair, self.entry_of_pair, self._trigger_base[1],
                          self._lambda_tau, tau, y, self._scratch[0], self._scratch[1], out)
        return out

    def rmatvec(self, x: np.ndarray, out: np.ndarray, sign: float = 1.0) -> np.ndarray:
        """``out = sign · Aᵀ x`` (``out`` has one slot per Y entry)."""
        for i, t in enumerate(self.tables.players):
            _deviation_rmatvec(i, t.first, t.num_actions, t.pos, t.end, t.cum, t.term_ptr, t.term_weight,
                               t.line_start, t.line, self.indptr, self._trigger_base[i],
                               self.triggers.block_start, self.entry_of_pair, x, sign, out)
        tau = 0.0 if self.tau is None else self.tau
        _following_rmatvec(self.tables.players[0].first, self.tables.players[0].num_actions,
                           self.tables.players[0].infoset_parent, self.tables.players[1].first,
                           self.tables.players[1].num_actions, self.tables.players[1].infoset_parent,
                           self._own[0], self._own[1], self.tables.weighted, self._welfare_weight,
                           self.tables.terminal_pair, self.entry_of_pair, self._trigger_base[1],
                           self._lambda_tau, tau, x, sign, self._scratch[0], self._scratch[1], out)
        return out

    def __matmul__(self, y: np.ndarray) -> np.ndarray:
        return self.matvec(np.ascontiguousarray(y, dtype=np.float64), np.empty(self.shape[0]))

    def transpose_matmul(self, x: np.ndarray) -> np.ndarray:
        """``Aᵀ x`` into a new array (tests and one-off evaluations; the solver uses rmatvec)."""
        return self.rmatvec(np.ascontiguousarray(x, dtype=np.float64), np.empty(self.shape[1]))

    def to_sparse(self) -> sp.csr_matrix:
        """``A`` as a scipy CSR matrix, column by column through :meth:`matvec` (small games)."""
        cols = []
        unit = np.zeros(self.shape[1])
        buf = np.empty(self.shape[0])
        for e in range(self.shape[1]):
            unit[e] = 1.0
            cols.append(sp.csc_matrix(self.matvec(unit, buf).reshape(-1, 1)))
            unit[e] = 0.0
        return sp.hstack(cols).tocsr()


def build_payoff_operator(game: Game, pairs: RelevantPairs, triggers: TriggerSpace,
                          entry_of_pair: np.ndarray, welfare_threshold: float | None = None,
                          tables: TriggerTables | None = None) -> PayoffOperator:
    """The operator of ``A`` for Ξ's chain with ``entry_of_pair`` (pair position → chain entry)."""
    tables = trigger_tables(game, pairs) if tables is None else tables
    return PayoffOperator(tables, triggers, entry_of_pair, pairs.indptr, welfare_threshold)


@numba.njit(cache=True)
def _deviation_matvec(player, first, num_actions, pos, end, cum, term_ptr, term_w, line_start, line,
                      indptr, trig_base, block_start, entry_of_pair, y, out):
    for inf in range(len(first)):
        p_lo, p_hi = cum[pos[inf]], cum[end[inf]]
        lbase = line_start[inf] - term_ptr[p_lo]
        for a in range(num_actions[inf]):
            s_hat = first[inf] + a
            eb = block_start[trig_base + s_hat - 1] - p_lo
            rb = indptr[s_hat] if player == 0 else a
            for p in range(p_lo, p_hi):
                v = y[eb + p]
                if v == 0.0:
                    continue
                for j in range(term_ptr[p], term_ptr[p + 1]):
                    out[entry_of_pair[rb + line[lbase + j]]] += term_w[j] * v


@numba.njit(cache=True)
def _deviation_rmatvec(player, first, num_actions, pos, end, cum, term_ptr, term_w, line_start, line,
                       indptr, trig_base, block_start, entry_of_pair, x, sign, out):
    for inf in range(len(first)):
        p_lo, p_hi = cum[pos[inf]], cum[end[inf]]
        lbase = line_start[inf] - term_ptr[p_lo]
        for a in range(num_actions[inf]):
            s_hat = first[inf] + a
            eb = block_start[trig_base + s_hat - 1] - p_lo
            rb = indptr[s_hat] if player == 0 else a
            for p in range(p_lo, p_hi):
                acc = 0.0
                for j in range(term_ptr[p], term_ptr[p + 1]):
                    acc += term_w[j] * x[entry_of_pair[rb + line[lbase + j]]]
                out[eb + p] = sign * acc


@numba.njit(cache=True)
def _following_matvec(first0, nact0, parent0, first1, nact1, parent1, own0, own1, weighted, welfare_w,
                      terminal_pair, entry_of_pair, trig_base1, lam_tau, tau, y, c0, c1, out):
    # c_i[s] = Σ of λ_σ̂ over player i's triggers σ̂ ⪯ s (top-down: infosets are numbered top-down).
    c0[0] = 0.0
    for s in range(1, len(c0)):
        c0[s] = y[1 + s - 1]
    for inf in range(len(first0)):
        for a in range(nact0[inf]):
            c0[first0[inf] + a] += c0[parent0[inf]]
    c1[0] = 0.0
    for s in range(1, len(c1)):
        c1[s] = y[1 + trig_base1 + s - 1]
    for inf in range(len(first1)):
        for a in range(nact1[inf]):
            c1[first1[inf] + a] += c1[parent1[inf]]
    lam = y[lam_tau] if lam_tau >= 0 else 0.0
    for z in range(len(own0)):
        v = -(weighted[z, 0] * c0[own0[z]] + weighted[z, 1] * c1[own1[z]])
        if lam_tau >= 0:
            v -= welfare_w[z] * lam
        out[entry_of_pair[terminal_pair[z]]] += v
    if lam_tau >= 0:
        out[entry_of_pair[0]] += tau * lam


@numba.njit(cache=True)
def _following_rmatvec(first0, nact0, parent0, first1, nact1, parent1, own0, own1, weighted, welfare_w,
                       terminal_pair, entry_of_pair, trig_base1, lam_tau, tau, x, sign, f0, f1, out):
    # f_i[s] = Σ_{z: σ_i(z) ⪰ s} p_c u_i ξ[σ(z)] (bottom-up subtree sums).
    f0[:] = 0.0
    f1[:] = 0.0
    welfare = 0.0
    for z in range(len(own0)):
        v = x[entry_of_pair[terminal_pair[z]]]
        f0[own0[z]] += weighted[z, 0] * v
        f1[own1[z]] += weighted[z, 1] * v
        welfare += welfare_w[z] * v
    for inf in range(len(first0) - 1, -1, -1):
        total = 0.0
        for a in range(nact0[inf]):
            total += f0[first0[inf] + a]
        f0[parent0[inf]] += total
    for inf in range(len(first1) - 1, -1, -1):
        total = 0.0
        for a in range(nact1[inf]):
            total += f1[first1[inf] + a]
        f1[parent1[inf]] += total
    out[0] = 0.0
    for s in range(1, len(f0)):
        out[1 + s - 1] = -sign * f0[s]
    for s in range(1, len(f1)):
        out[1 + trig_base1 + s - 1] = -sign * f1[s]
    if lam_tau >= 0:
        out[lam_tau] = sign * (tau * x[entry_of_pair[0]] - welfare)
