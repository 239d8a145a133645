"""The payoff matrix ``A`` of the EFCE saddle point as one memory-lean operator.

``min_{ξ ∈ Ξ} max_{y ∈ Y} ξᵀ A y`` (Farina, Ling, Fang, Sandholm 2019, section 2.1; see
:mod:`solvers.methods.efce` for the entries of ``A``).  ``A`` has ~1.5–2.5 nonzeros per relevant pair on
the Battleship instances; stored as CSR twice (``A`` and ``Aᵀ``, 12 bytes per nonzero each, plus
int64 COO temporaries while building) it was the largest structure of a run.  Its nonzeros are
structured, and this module keeps only what cannot be recomputed:

* deviation part: for a trigger of player ``i`` with recommendation sequence ``r`` and deviation
  tree rooted at ``Î`` (EFCE: ``r = σ̂ = (Î, â)``; EFCCE: ``r = σ(Î)``; NFCCE: ``r = ∅`` at every
  root infoset — :mod:`polytopes.triggers`), a terminal ``z`` below ``Î`` and the ``Y`` entry of
  ``σ_i(z)`` in the trigger's block, the row is the pair ``(r, σ_{-i}(z))`` and the value
  ``p_c(z) u_i(z)``.  Values are per terminal, the ``Y`` entry follows from the block layout
  of :mod:`polytopes.triggers`, so one int32 per nonzero — the Ξ chain entry of the row — is all
  that is stored (``rows``), plus per (trigger infoset, terminal) the terminal's value
  (``line_weight``, float32 where every value is a float32, as on Battleship and Sheriff).
  Rows are located once, at build time, through the relevant-pair CSR: for
  player 1 the pair sits at ``indptr[σ̂] + off(Î, σ2(z))`` (all sequences of ``Î`` share one
  row pattern), for player 2 at ``pos(σ1(z), (Ĵ, 0)) + b̂`` (``Ĵ``'s sequences are adjacent);
* following part (column ``λ_t``, rows ``σ(z)`` for the terminals ``z`` the trigger ``t`` fires
  on: ``σ_i(z) ⪰ σ̂`` for EFCE, ``z`` below ``Î`` for EFCCE, every ``z`` with ``σ_i(z) ≠ ∅`` for
  NFCCE): walks up each terminal's own sequences, each naming the trigger it counts for
  (``follow_trigger``), nothing else stored;
* the welfare column ``λ_τ``, if any.

``A·y`` and ``Aᵀ·x`` are a compute backend's kernels (:mod:`efce.solvers.backends.cpu.operator`
on the CPU) writing into caller-provided buffers, so an iteration of the saddle-point solver
allocates nothing.  Every sum runs in the order of a CSR product with the explicit matrix
(ascending column for ``A y``, ascending Ξ entry for ``Aᵀ x``): regret matching
breaks ties exactly (a regret of 1e-17 instead of 0 changes the strategy), so this keeps the
iterates bit-identical to the explicit-matrix computation.  :class:`TriggerTables` is shared with
the gap evaluator (:mod:`efce.solvers.evaluation.gaps`).

Terminals with the same pair of sequences — behind different outcomes of a public chance move —
are one nonzero of the sequence-form payoff matrix: the tables merge them (their ``p_c(z) u_i(z)``
summed), so that every row ``σ(z)`` belongs to one terminal, as without chance.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from efce.concepts import DEFAULT_CONCEPT, check_concept
from efce.games.arrays import find_in_row
from efce.games.game import Game, SequenceSpace
from efce.games.payoffs import terminal_map
from efce.games.relevant import RelevantPairs, pair_positions
from efce.games.resources.compiled import compiled
from efce.interrupts import check_stop
from efce.polytopes.chain import index_dtype
from efce.polytopes.triggers import TriggerSpace
from efce.solvers.backends import ComputeBackend, OperatorProducts, get_backend

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
    ``k`` holds its terminal's value ``p_c(z) u_i(z)`` (``line_weight[k]``), and for the
    trigger ``(I, a)`` the position of
    ``ξ[σ̂, σ_{-i}(z)]`` it reads is ``rows[row_start[I] + a · width(I) + k - line_start[I]]``
    (a Ξ chain entry when the tables were built with the chain's entry map, else a relevant-pair
    position).  That is EFCE's layout, where infoset ``I`` hosts one trigger per action; in
    general ``I`` hosts ``trig_count[I]`` trigger *slots* ``trig_slot[I] + a`` (EFCE: ``|A_I|``,
    the slot of ``(I, a)`` being ``first[I] + a - 1``; EFCCE: one, reading ``ξ[σ(I), ·]``;
    NFCCE: one at every root infoset, reading ``ξ[∅, ·]``, none elsewhere), ``slot_trigger``
    names the player's trigger each slot belongs to (NFCCE: all its slots are one trigger), and
    ``follow_trigger[σ]`` the trigger whose following value counts the terminals at or below
    ``σ`` there (-1: none), so that walking up a terminal's own sequences meets each trigger that
    fires on it once.  One int32 per nonzero of ``A``'s deviation part: reading ``x[rows[k]]`` costs one
    random access, where locating the pair from the line table and then its entry would cost two.
    Within the terminals of one sequence slot, the entries are sorted by the Ξ entry they read
    (when the chain's entry map is given), so that every sum runs in the same order as a CSR
    product with the explicit matrix would — regret matching breaks ties exactly, and this keeps
    its iterates identical to the explicit-matrix computation.
    """

    player: int
    first: np.ndarray  # int32[n_inf]
    num_actions: np.ndarray  # int32[n_inf]
    infoset_parent: np.ndarray  # int32[n_inf]
    pos: np.ndarray  # int32[n_inf]
    pre: np.ndarray  # int32[n_inf]
    end: np.ndarray  # int32[n_inf]
    cum: np.ndarray  # int32[n_inf + 1]
    child_ptr: np.ndarray  # int32[n_seq + 1]
    child_inf: np.ndarray  # int32[...]
    term_ptr: np.ndarray  # int32[n_seq]  (preorder slots, the empty sequence has none)
    line_start: np.ndarray  # int64[n_inf + 1]
    line_weight: np.ndarray  # float32 or float64[line_start[-1]]  p_c(z) u_i(z) of each line entry
    row_start: np.ndarray  # int64[n_inf + 1]
    rows: np.ndarray  # int32[row_start[-1]]  the Ξ position read, per (trigger, line entry)
    trig_count: np.ndarray  # int32[n_inf]  trigger slots at each infoset
    trig_slot: np.ndarray  # int32[n_inf + 1]  first slot of each infoset
    slot_trigger: np.ndarray  # int32[n_slots]  the player's trigger of each slot
    follow_trigger: np.ndarray  # int32[n_seq]  the trigger counting σ in its following value
    concept: str = DEFAULT_CONCEPT

    @property
    def num_sequences(self) -> int:
        return len(self.child_ptr) - 1

    @property
    def num_slots(self) -> int:
        return int(self.trig_slot[-1])

    @property
    def num_triggers(self) -> int:
        """The player's triggers (the slots but for NFCCE, whose slots form one trigger)."""
        return int(self.slot_trigger.max(initial=-1)) + 1

    @property
    def nbytes(self) -> int:
        return sum(
            getattr(self, f).nbytes for f in self.__dataclass_fields__ if f not in ("player", "concept")
        )


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
    def concept(self) -> str:
        """The solution concept whose triggers the tables hold (:mod:`efce.concepts`)."""
        return self.players[0].concept

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
    game: Game,
    pairs: RelevantPairs,
    entry_of_pair: np.ndarray | None = None,
    concept: str = DEFAULT_CONCEPT,
) -> TriggerTables:
    """Build the :class:`TriggerTables` of ``concept``'s triggers in a two-player game (cost
    ``O(Σ_I |Z(I)| log)``).

    With ``entry_of_pair`` (relevant pair → Ξ chain entry) the entries of every slot are sorted
    by the Ξ entry they read; ``sum_order`` says whether that order is the same for all actions
    of every trigger infoset (then the operator reproduces the explicit-matrix sums bit for bit)."""
    check_concept(concept)
    check_stop(f"building the trigger tables of {game.name}")
    tm = terminal_map(game)
    weighted = tm.weighted_payoffs()
    seqs = tm.sequences
    if game.has_chance:
        seqs, weighted = _merged_terminals(seqs, weighted, game.sequences(1).num_sequences)
    # Column-major: each player's column is contiguous, so the operator reads it without a copy.
    seqs = np.asfortranarray(seqs)
    del tm
    terminal_pair = pair_positions(pairs, seqs[:, 0], seqs[:, 1]).astype(index_dtype(len(pairs)))
    eop = np.zeros(0, dtype=np.int32) if entry_of_pair is None else entry_of_pair
    built = []
    for i in (0, 1):
        check_stop(f"building the trigger tables of {game.name}")
        built.append(_player_table(game, pairs, i, seqs, weighted[:, i], eop, concept))
    consistent = entry_of_pair is not None and all(ok for _, ok in built)
    players = _narrowest_weights(tuple(t for t, _ in built))
    terminal_row = terminal_pair if entry_of_pair is None else entry_of_pair[terminal_pair]
    return TriggerTables(
        players,
        terminal_pair,
        terminal_row,
        seqs,
        weighted,
        entry_of_pair is not None,
        consistent,
    )


def _narrowest_weights(players: tuple) -> tuple:
    """The tables with their line weights in float32 when every weight of both players is a
    float32 (Battleship's and Sheriff's payoffs: small integers), else as built (float64).

    Why: the deviation products read one weight per nonzero of ``A``, and a float32 weight read
    and widened is the same float64, so the sums are unchanged bit for bit with half the bytes
    read.  One dtype for both players, so that a game compiles one variant of each kernel."""
    narrow = [t.line_weight.astype(np.float32) for t in players]
    if not all(np.array_equal(n, t.line_weight) for n, t in zip(narrow, players, strict=True)):
        return players
    return tuple(replace(t, line_weight=n) for t, n in zip(players, narrow, strict=True))


def _merged_terminals(seqs: np.ndarray, weighted: np.ndarray, n_seq2: int) -> tuple[np.ndarray, np.ndarray]:
    """One row per distinct pair of sequences, its ``p_c(z) u_i(z)`` summed over the terminals
    that share it (module docstring), in increasing pair order."""
    keys = seqs[:, 0].astype(np.int64) * n_seq2 + seqs[:, 1]
    unique, inverse = np.unique(keys, return_inverse=True)
    merged = np.stack(
        [
            np.bincount(inverse, weights=weighted[:, i], minlength=len(unique))
            for i in range(weighted.shape[1])
        ],
        axis=1,
    )
    pairs = np.stack([unique // n_seq2, unique % n_seq2], axis=1).astype(seqs.dtype)
    return pairs, merged


def trigger_slots(
    space: SequenceSpace, concept: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(trig_count, trig_slot, slot_trigger, follow_trigger)`` of a player's triggers for
    ``concept`` (:class:`PlayerTriggerTable`), in the order of
    :func:`polytopes.triggers.player_triggers` (so slot ``k``'s trigger is ``Y``'s ``k``-th of the
    player, the NFCCE's one trigger aside)."""
    # Counts of infosets, sequences and slots fit int32 (a game's sequence arrays are int32).
    k = space.infoset_num_actions
    n_inf, n_seq = space.num_infosets, space.num_sequences
    follow = np.full(n_seq, -1, dtype=np.int32)
    if concept == "efce":
        count = k.astype(np.int32)  # a writable array whatever the space's (see _readonly_int32)
        follow[1:] = np.arange(n_seq - 1)
    elif concept == "efcce":
        count = np.ones(n_inf, dtype=np.int32)
        follow[1:] = space.seq_infoset[1:]
    else:
        count = (space.infoset_parent_seq == 0).astype(np.int32)
        follow[1:] = np.where(space.infoset_parent_seq[space.seq_infoset[1:]] == 0, 0, -1)
    slot = np.zeros(n_inf + 1, dtype=np.int32)
    np.cumsum(count, out=slot[1:])
    slot_trigger = (
        np.zeros(int(slot[-1]), np.int32) if concept == "nfcce" else np.arange(int(slot[-1]), dtype=np.int32)
    )
    return count, slot, slot_trigger, follow


def _readonly_int32(a: np.ndarray) -> np.ndarray:
    """``a`` as a read-only int32 array, a view of ``a`` itself where it is int32 already (no
    copy).  Read-only whatever ``a`` is, so that every game's tables have the same array types
    and a kernel reading them compiles one variant: a variant compiled for one game's read-only
    arrays would not match another's writable copies, and that call would compile (or run as
    Python) inside a clock (issue 40)."""
    out = a.astype(np.int32, copy=False).view()
    out.flags.writeable = False
    return out


def _player_table(game, pairs, i, seqs, w, entry_of_pair, concept):
    space = game.sequences(i)
    n_seq = space.num_sequences
    # The per-infoset and per-sequence tables are int32, the space's own arrays where it has
    # them (no copies): counts of infosets, sequences, slots and terminals fit; the line and row
    # offsets (``line_start``, ``row_start``) count nonzeros and stay int64.
    first = _readonly_int32(space.infoset_first_seq)
    num_actions = _readonly_int32(space.infoset_num_actions)
    parent_seq = _readonly_int32(space.infoset_parent_seq)
    tree = space.tree
    pos, pre, sub_hi = tree.position, tree.preorder, tree.subtree_hi
    end = sub_hi[first + num_actions - 1].astype(np.int32) if len(first) else np.zeros(0, np.int32)
    cum = np.zeros(len(pre) + 1, dtype=np.int32)
    np.cumsum(num_actions[pre], out=cum[1:])
    trig_count, trig_slot, slot_trigger, follow_trigger = trigger_slots(space, concept)
    # Preorder slot of every nonempty sequence: slot cum[pos[I]] + a for (I, a).
    slot = np.full(n_seq, -1, dtype=np.int64)
    seq_inf = space.seq_infoset[1:].astype(np.int64)
    slot[1:] = cum[pos[seq_inf]] + (np.arange(1, n_seq) - first[seq_inf])
    own = seqs[:, i].astype(np.int64)
    below = np.flatnonzero(own > 0)
    order = below[np.argsort(slot[own[below]], kind="stable")]
    term_ptr = np.zeros(n_seq, dtype=np.int32)  # n_seq - 1 slots
    np.cumsum(np.bincount(slot[own[order]], minlength=n_seq - 1), out=term_ptr[1:])
    z_lo = term_ptr[cum[pos]].astype(np.int64) if len(pos) else np.zeros(0, np.int64)
    z_hi = term_ptr[cum[end]].astype(np.int64) if len(pos) else np.zeros(0, np.int64)
    z_hi = np.where(trig_count > 0, z_hi, z_lo)  # an infoset hosting no trigger has no line
    line_start = np.zeros(len(first) + 1, dtype=np.int64)
    np.cumsum(z_hi - z_lo, out=line_start[1:])
    other = seqs[order, 1 - i].astype(np.int32)
    coarse = concept != "efce"
    # A coarse trigger reads ξ[σ(I), ·]; the line then holds the pair's position itself.
    recommended = parent_seq if coarse else first
    line, bad = _line_table(i, recommended, z_lo, z_hi, line_start, other, pairs.indptr, pairs.sigma2, coarse)
    if bad >= 0:
        raise AssertionError(f"terminal slot {bad} of player {i + 1} meets a pair that is not relevant")
    line_term = np.empty(len(line), dtype=np.int32)
    consistent = _sort_lines(
        i,
        first,
        trig_count,
        pos,
        end,
        cum,
        term_ptr,
        line_start,
        line,
        line_term,
        pairs.indptr,
        entry_of_pair,
        coarse,
    )
    row_start = np.zeros(len(first) + 1, dtype=np.int64)
    np.cumsum(trig_count.astype(np.int64) * np.diff(line_start), out=row_start[1:])
    rows = _rows(
        i,
        first,
        trig_count,
        line_start,
        line,
        row_start,
        pairs.indptr,
        entry_of_pair,
        np.empty(row_start[-1], dtype=index_dtype(len(pairs))),
        coarse,
    )
    del line
    table = PlayerTriggerTable(
        i,
        first,
        num_actions,
        parent_seq,
        pos,
        pre,
        end,
        cum,
        tree.child_ptr,
        tree.child_infosets,
        term_ptr,
        line_start,
        # each line entry's own weight: the products read it in line order, where reading it
        # through its terminal would cost a second, dependent load per nonzero
        w[order[line_term]],
        row_start,
        rows,
        trig_count,
        trig_slot,
        slot_trigger,
        follow_trigger,
        concept,
    )
    return table, consistent


@compiled(cache=True, nogil=True)
def _rows(player, first, trig_count, line_start, line, row_start, indptr, entry_of_pair, rows, coarse):
    mapped = len(entry_of_pair) > 0
    for inf in range(len(first)):
        width = line_start[inf + 1] - line_start[inf]
        for a in range(trig_count[inf]):
            rb = 0 if coarse else (indptr[first[inf] + a] if player == 0 else a)
            out = row_start[inf] + a * width
            for k in range(line_start[inf], line_start[inf + 1]):
                q = rb + line[k]
                rows[out + k - line_start[inf]] = entry_of_pair[q] if mapped else q
    return rows


@compiled(cache=True, nogil=True)
def _sort_lines(
    player,
    first,
    trig_count,
    pos,
    end,
    cum,
    term_ptr,
    line_start,
    line,
    line_term,
    indptr,
    entry_of_pair,
    coarse,
):
    """Fill ``line_term`` and, given the entry map, sort each slot's entries by the Ξ entry read
    for the infoset's first trigger; True if every other trigger reads them in ascending order
    too."""
    consistent = True
    mapped = len(entry_of_pair) > 0
    for inf in range(len(first)):
        if trig_count[inf] == 0:
            continue
        p_lo, p_hi = cum[pos[inf]], cum[end[inf]]
        shift = line_start[inf] - term_ptr[p_lo]
        for p in range(p_lo, p_hi):
            lo, hi = term_ptr[p] + shift, term_ptr[p + 1] + shift
            for k in range(lo, hi):
                line_term[k] = k - shift
            if not mapped or hi - lo < 2:
                continue
            rb = 0 if coarse else (indptr[first[inf]] if player == 0 else 0)
            keys = np.empty(hi - lo, np.int64)
            for k in range(lo, hi):
                keys[k - lo] = entry_of_pair[rb + line[k]]
            perm = np.argsort(keys, kind="mergesort")
            old_line = line[lo:hi].copy()
            for r in range(hi - lo):
                line[lo + r] = old_line[perm[r]]
                line_term[lo + r] = lo + perm[r] - shift
            for a in range(1, trig_count[inf]):
                rb = indptr[first[inf] + a] if player == 0 else a
                for k in range(lo + 1, hi):
                    if entry_of_pair[rb + line[k]] < entry_of_pair[rb + line[k - 1]]:
                        consistent = False
    return consistent


@compiled(cache=True, nogil=True)
def _line_table(player, recommended, z_lo, z_hi, line_start, other, indptr, sigma2, coarse):
    """Per trigger infoset and terminal below it: where the pair ``(r, σ_{-i}(z))`` is read.
    EFCE (``recommended`` = each infoset's first sequence): for player 1 its offset in the row
    pattern of ``I``, shared by all of ``I``'s sequences; for player 2 the position of
    ``(σ1(z), (J, 0))``, the sequences of ``J`` being adjacent.  Coarse triggers
    (``recommended`` = the parent sequence): the pair's position itself."""
    line = np.empty(line_start[-1], np.int32)
    for inf in range(len(recommended)):
        k = line_start[inf]
        for j in range(z_lo[inf], z_hi[inf]):
            if player == 0:
                row, col = recommended[inf], other[j]
            else:
                row, col = other[j], recommended[inf]
            q = find_in_row(indptr, sigma2, row, col)
            if q < 0:
                return line, j
            # Player 1: offset inside the row pattern of I; player 2: position of (σ1(z), (J, 0)).
            line[k] = q if (coarse or player == 1) else q - indptr[row]
            k += 1
    return line, -1


class PayoffOperator:
    """``A`` of :mod:`solvers.methods.efce` without storing it: rows are Ξ's chain entries, columns are
    Y's entries.  ``matvec(y, out)`` writes ``A y``; ``rmatvec(x, out, sign)`` writes
    ``sign · Aᵀ x``; both run on the CPU backend on every thread numba may use, and
    :meth:`products` gives them on any backend (a solver's loop prepares its own).

    The operator is data: the tables, per terminal the players' own sequences and (with a welfare
    threshold) the welfare weight, the sequences' parents, the terminals in ascending Ξ entry, per
    player and trigger slot the Y entry of preorder slot 0 of its block (:attr:`slot_base`: the
    slot's deviation entries are ``slot_base + p``), and the scalars ``τ`` (:attr:`tau`, moved by
    a welfare bisection), the number of triggers before each player's (:attr:`trigger_base`) and
    the Y entry of ``λ_τ`` (:attr:`lambda_tau`, -1 without a threshold).

    Raises
    ------
    ValueError
        Tables without Ξ's entry map, or of another concept than ``triggers``.
    """

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
        if tables.concept != triggers.concept:
            raise ValueError(f"trigger tables of {tables.concept} for the {triggers.concept} deviations")
        self.tables = tables
        self.triggers = triggers
        #: The welfare scalar ``τ`` (None without a welfare threshold), moved by a welfare bisection.
        self.tau = None if welfare_threshold is None else float(welfare_threshold)
        self.shape = (num_rows, triggers.num_entries)
        self.max_depth = max_depth
        #: The triggers before each player's: player ``i``'s trigger ``t`` has the weight
        #: ``λ`` at Y entry ``1 + trigger_base[i] + t``.
        self.trigger_base = (0, tables.players[0].num_triggers)
        #: Per player and trigger slot: the Y entry of its block's preorder slot 0 (int32 where
        #: Y's entries allow, as ``rows`` for Ξ's).
        self.slot_base = tuple(
            (triggers.block_start[g] - triggers.block_preorder_start[g]).astype(
                index_dtype(triggers.num_entries)
            )
            for g in (
                base + t.slot_trigger for base, t in zip(self.trigger_base, tables.players, strict=True)
            )
        )
        # The welfare weight is the last trigger: entry 1 + (K - 1).
        #: The Y entry of the welfare weight ``λ_τ``; -1 without a welfare threshold.
        self.lambda_tau = triggers.num_triggers if self.tau is not None else -1
        # Read by the kernels only with a threshold (λ_τ ≥ 0), which a model keeps for good.
        self.welfare_weight = (
            np.ascontiguousarray(tables.weighted.sum(axis=1)) if self.tau is not None else np.zeros(0)
        )
        # Views: the tables keep the terminals' sequences column-major.
        self.own_sequences = tuple(np.ascontiguousarray(tables.terminal_sequences[:, i]) for i in (0, 1))
        self.seq_parents = tuple(np.ascontiguousarray(p) for p in seq_parents)
        # Terminals in ascending Ξ entry of σ(z): the order of the rows of the explicit matrix.
        index = index_dtype(len(tables.terminal_pair) + 1)
        self.term_order = np.argsort(tables.terminal_row, kind="stable").astype(index)
        self._default_products: OperatorProducts | None = None

    @property
    def nbytes(self) -> int:
        """Bytes held by the operator itself (the shared tables and the entry map included)."""
        return (
            self.tables.nbytes
            + self.welfare_weight.nbytes
            + self.term_order.nbytes
            + sum(p.nbytes for p in self.seq_parents)
            + sum(b.nbytes for b in self.slot_base)
        )

    def products(self, backend: ComputeBackend | str | None = None) -> OperatorProducts:
        """``A y`` and ``sign · Aᵀ x`` on ``backend`` (default: the CPU on every thread numba may
        use), prepared once: what a solver's loop calls
        (:meth:`~efce.solvers.backends.protocol.ComputeBackend.payoff_products`)."""
        return get_backend(backend).payoff_products(self)

    def _products(self) -> OperatorProducts:
        if self._default_products is None:
            self._default_products = self.products()
        return self._default_products

    def matvec(self, y: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out = A y`` (``out`` has one slot per Ξ entry)."""
        return self._products().matvec(y, out)

    def rmatvec(self, x: np.ndarray, out: np.ndarray, sign: float = 1.0) -> np.ndarray:
        """``out = sign · Aᵀ x`` (``out`` has one slot per Y entry)."""
        return self._products().rmatvec(x, out, sign)

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
    """The operator of ``A`` for Ξ's chain with ``entry_of_pair`` (pair position → chain entry),
    for the concept of ``triggers``."""
    tables = trigger_tables(game, pairs, entry_of_pair, triggers.concept) if tables is None else tables
    spaces = (game.sequences(0), game.sequences(1))
    max_depth = max(int(sp_.infoset_depth.max(initial=0)) for sp_ in spaces) + 1
    return PayoffOperator(
        tables, triggers, len(pairs), tuple(sp_.seq_parent for sp_ in spaces), max_depth, welfare_threshold
    )
