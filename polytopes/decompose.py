"""``DECOMPOSE``: the correlation-plan polytope Ξ as a chain of scaled extensions.

Farina, Ling, Fang, Sandholm 2019, section 4.3 and Theorem 1.  Starting from ``ξ[∅, ∅] = 1``,
a call on a relevant pair ``(σ1, σ2)``

1. picks a *critical* player — one with at most one infoset ``I`` below its sequence that is
   connected to an infoset below the opponent's sequence (Definition 5; Proposition 2 says one
   exists in two-player perfect-recall games without chance; ties go to player 1);
2. (say player 1 is critical, with critical infoset ``I*`` or none) for each ``I`` with
   ``σ(I) = σ1`` and ``I ⋈ σ2`` splits ``ξ[σ1, σ2]`` into ``(ξ[(I, a), σ2])_a`` (a step
   ``◁ Δ_|A_I|``) and recurses on every ``((I, a), σ2)``;
3. fills ``ξ[σ1, σ2']`` for ``σ2' ≻ σ2``: for every ``J`` with ``σ(J) ⪰ σ2`` and ``σ1 ⋈ J`` in
   top-down order, either sums ``ξ[σ1, (J, b)] = Σ_{a*} ξ[(I*, a*), (J, b)]`` (a step ``◁ {1}``
   per ``b``, when ``I*`` exists and ``J ⇌ I*``) or splits ``ξ[σ1, σ(J)]`` (a step ``◁ Δ_|A_J|``).

**Public chance moves** (Farina & Sandholm 2020: such a game is triangle-free, and its von
Stengel–Forges polytope is the set of correlation plans).  A chance move that both players
observe can put, below one pair ``(σ1, σ2)``, two infosets of each player with one connected pair
in each chance branch, so neither player is critical.  The *critical graph* of the pair — the
infosets ``I`` with ``σ(I) = σ1`` and ``J`` with ``σ(J) = σ2``, joined when connected — then
splits into components that share no relevant pair (an infoset below ``I`` is connected only to
infosets of ``I``'s component), and each component has a critical player: one infoset of one
side joined to all of the other side's.  Steps 2 and 3 run per component: its center is split
and recursed on, and step 3 fills the other side's infosets (and everything below them) from it,
summing over the center's actions where connected, splitting otherwise — the same argument as
Theorem 1's, component by component.  Infosets in no component are split (player 1's) or filled
by splits (player 2's), as when player 1 is critical without a critical infoset.  Without chance
every pair has a critical player and the chain is the one above, step for step.

The recursion runs as a compiled loop with an explicit stack over flat arrays (CSR rows searched
by bisection), so the 111M-pair Battleship instance never touches a Python object per pair.  The
steps are finally grouped by level (a step's level is one more than the deepest step it reads),
which is the order the vectorized regret-minimizer passes consume.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from efce.errors import GameError
from efce.games.arrays import find_in_row, lower_bound
from efce.games.game import Game
from efce.games.relevant import RelevantPairs, connected_infosets, relevant_pairs
from efce.games.resources.compiled import compiled
from efce.interrupts import check_stop

from .chain import SIMPLEX, SINGLETON, Chain, StepRuns

_CALL, _STEP3 = 0, 1


def check_decomposable(game: Game) -> None:
    """Raise a :class:`GameError` explaining why DECOMPOSE does not apply, if it does not: the
    game must have two players and no chance moves or public ones only
    (:func:`games.chance.chance_visibility`).  Without chance Proposition 2 of Farina et al.
    2019 gives a critical player at every relevant pair; with public chance moves the game is
    triangle-free (Farina & Sandholm 2020), the von Stengel–Forges polytope is the set of
    correlation plans, and DECOMPOSE finds a critical player in every component of the
    infosets the chance moves part (module docstring).  Perfect recall is guaranteed by
    :class:`games.Game`."""
    from efce.games.chance import chance_visibility

    if game.num_players != 2:
        raise GameError(
            f"DECOMPOSE needs a two-player game; {game.name} has {game.num_players} players "
            f"(the correlation-plan polytope of von Stengel and Forges, Definition 3, is two-player)"
        )
    visibility = chance_visibility(game)
    if not visibility.public:
        raise GameError(
            f"DECOMPOSE does not apply to {game.name}: {visibility.reason} (private chance), so the "
            f"von Stengel–Forges polytope is only a relaxation of the correlation plans "
            f"(Farina & Sandholm 2020); lp-colgen solves such games exactly"
        )


def pairs_without_critical_player(game: Game) -> int:
    """The pairs of parent sequences ``(σ(I), σ(J))`` of connected infosets at which neither
    player is critical (Definition 5): where DECOMPOSE runs component by component (module
    docstring).  Always 0 without chance moves (Proposition 2); public chance moves can make
    such pairs (Goofspiel's prize draws).

    Raises
    ------
    GameError
        Not two players, or private chance moves (:func:`check_decomposable`).
    """
    check_decomposable(game)
    return len(_Tables(game).multi_rows)


#: Peak bytes per relevant pair of DECOMPOSE with its pairs (``efce decompose``: 772 MiB for
#: battleship 2x3 with a 2-ship and 3 shots, 12.7M pairs, about 250 MiB of which the game).
DECOMPOSE_BYTES_PER_PAIR = 64


def check_correlation_plan_budget(game: Game, memory_budget: int | None = None) -> None:
    """Refuse, before the relevant pairs are built, a game whose correlation plan would not fit:
    the pairs are counted (linear in the tree), at :data:`DECOMPOSE_BYTES_PER_PAIR` each.

    Raises
    ------
    games.resources.memory.MemoryBudgetExceeded
        Naming the game and its number of relevant pairs.
    """
    from efce.games.relevant import count_relevant_pairs
    from efce.games.resources.memory import check_budget

    count = count_relevant_pairs(game)
    check_budget(
        DECOMPOSE_BYTES_PER_PAIR * count,
        f"the correlation plan of {game.name} ({count:,} relevant pairs)",
        memory_budget,
    )


def correlation_plan(game: Game, pairs: RelevantPairs | None = None) -> Chain:
    """The polytope Ξ of extensive-form correlation plans as a chain of scaled extensions.

    Entries are exactly the relevant sequence pairs; ``chain.entry_index[e]`` is the position
    of entry ``e`` in ``relevant_pairs(game)`` (``pairs`` may be passed to avoid recomputing it).
    """
    check_decomposable(game)
    if pairs is None:
        check_correlation_plan_budget(game)
    pairs = relevant_pairs(game) if pairs is None else pairs
    steps, entry_of_pair = correlation_plan_entries(game, pairs)
    entry_index = np.empty_like(entry_of_pair)
    entry_index[entry_of_pair] = np.arange(len(entry_of_pair), dtype=entry_of_pair.dtype)
    return dataclasses.replace(steps, entry_index=entry_index, describe_entry=PairNames(game, pairs))


def correlation_plan_entries(game: Game, pairs: RelevantPairs) -> tuple[Chain, np.ndarray]:
    """Ξ's chain without labels and the chain entry of every relevant pair: what
    :func:`correlation_plan` labels, built without a second copy of anything per pair.

    The chain's steps are numbered by level (each level's in the recursion's order) and filled
    in that order, kept as runs (:class:`~efce.polytopes.chain.StepRuns`) with the level bounds
    ``level_ptr``.  DECOMPOSE runs twice, compiled: once to find each pair's level and each
    level's size, once to write every step, entry and source where the level-sorted chain has
    it.  Holds, besides the pairs, an int16 level and an int32 entry per pair and the chain's
    sources: a third of sorting the steps after one pass, which held them twice.

    Returns
    -------
    (Chain, ndarray)
        The chain (``entry_index`` None) and ``entry_of_pair`` (int32 below 2³¹ pairs): the
        entry of relevant pair ``q`` (its position in ``pairs``).

    Raises
    ------
    GameError
        The game is not decomposable, has 2³¹ pairs or more, or Proposition 2 fails.
    Interrupted
        A stop was requested before the compiled passes.
    """
    check_decomposable(game)
    num_pairs = len(pairs)
    if num_pairs >= 2**31:
        raise GameError(f"{game.name} has {num_pairs:,} relevant pairs; DECOMPOSE indexes them with int32")
    tables = _Tables(game)
    structure = (
        tables.parent_seq,
        tables.first_seq,
        tables.num_actions,
        tables.seq_infoset,
        tables.child_ptr,
        tables.child_inf,
        tables.pre_inf,
        tables.sub_lo,
        tables.sub_hi,
        tables.conn_ptr,
        tables.conn_pos,
        tables.conn_inf,
        tables.crit_ptr,
        tables.crit_s2,
        tables.crit_n1,
        tables.crit_i1,
        tables.crit_n2,
        tables.crit_j2,
        tables.multi_rows,
        tables.multi_ptr,
        tables.multi_i,
        tables.multi_j,
        pairs.indptr,
        pairs.sigma2,
        num_pairs,
    )
    index = pairs.sigma2.dtype
    entry_level = np.empty(num_pairs, np.int16)
    # Every level holds at least one pair, so a game of few pairs needs a tally of few levels (a
    # small table also lets a tiny game's DECOMPOSE run as Python instead of compiling).
    tally = np.zeros((4, min(MAX_LEVELS, num_pairs) + 2), np.int64)

    def outputs(pairs: int, sources: int, runs: int) -> tuple[np.ndarray, ...]:
        """The filling pass's outputs: entry_of_pair, source, run kind, size, sources and count.
        The counting pass gets them empty, of the same types, so that one compiled variant
        serves both passes (a second one cost a first run 10 s more of compiling)."""
        return (np.empty(pairs, index), np.empty(sources, index), np.empty(runs, np.int8)) + tuple(
            np.empty(runs, np.int64) for _ in range(3)
        )

    check_stop(f"decomposing {game.name}")  # two compiled calls from here (2 s each on 26M pairs)
    status, bad1, bad2, depth = _decompose_kernel(*structure, entry_level, tally, *outputs(0, 0, 0))
    _check_status(game, status, bad1, bad2)
    counts = tally[:, 1 : depth + 1].copy()
    # Where each level starts: its steps, entries (entry 0 is the constant), slots and runs.
    tally[:] = 0
    np.cumsum(counts[:, :-1], axis=1, out=tally[:, 2 : depth + 1])
    tally[_ENTRIES, 1 : depth + 1] += 1
    totals = counts.sum(axis=1)
    filled = outputs(num_pairs, int(totals[_SOURCES]), int(totals[_RUNS]))
    entry_of_pair, source, run_kind, run_size, run_nsrc, run_count = filled
    starts = tally[:, 1 : depth + 1].copy()
    status, bad1, bad2, _ = _decompose_kernel(*structure, entry_level, tally, *filled)
    _check_status(game, status, bad1, bad2)
    del entry_level
    if not np.array_equal(tally[:, 1 : depth + 1], starts + counts):
        raise AssertionError(f"DECOMPOSE's two passes over {game.name} disagree")
    level_ptr = np.zeros(depth + 1, dtype=np.int64)
    np.cumsum(counts[_STEPS], out=level_ptr[1:])
    chain = Chain(
        steps=StepRuns.from_counts(run_count, run_kind, run_size, run_nsrc),
        source=source,
        entry_index=None,
        name=f"Ξ of {game.name}",
        level_sorted=True,
        level_ptr=level_ptr,
    )
    return chain, entry_of_pair


def _check_status(game: Game, status: int, bad1: int, bad2: int) -> None:
    """Raise for a failed pass of :func:`_decompose_kernel`."""
    if status == 4:
        raise GameError(f"DECOMPOSE of {game.name} needs more than {MAX_LEVELS} levels")
    if status in (2, 3):
        raise AssertionError(f"DECOMPOSE internal error {status} at pair ({bad1}, {bad2}) of {game.name}")
    if status != 0:
        raise GameError(
            f"DECOMPOSE failed at relevant pair ({bad1}, {bad2}) of {game.name}: a component of the "
            f"infosets below it has two or more critical infosets of each player, which "
            f"Proposition 2 rules out without chance and public chance rules out component by "
            f"component"
        )


class PairNames:
    """``names(q)`` → the ``(σ1, σ2)`` label of relevant-pair position ``q`` (sequence labels
    computed on first use): the ``describe_entry`` of Ξ's chain.  It holds the pairs."""

    def __init__(self, game: Game, pairs: RelevantPairs):
        self._game, self._pairs = game, pairs
        self._names: tuple[list[str], list[str]] | None = None

    def __call__(self, index: int) -> str:
        if self._names is None:
            self._names = (self._game.sequence_labels(0), self._game.sequence_labels(1))
        s1, s2 = int(self._pairs.sigma1[index]), int(self._pairs.sigma2[index])
        return f"({self._names[0][s1]}, {self._names[1][s2]})"


class _Tables:
    """Flat per-player arrays the kernel reads (tuples indexed by player)."""

    def __init__(self, game: Game):
        spaces = [game.sequences(0), game.sequences(1)]
        self.parent_seq = tuple(s.infoset_parent_seq.astype(np.int64) for s in spaces)
        self.first_seq = tuple(s.infoset_first_seq.astype(np.int64) for s in spaces)
        self.num_actions = tuple(s.infoset_num_actions.astype(np.int64) for s in spaces)
        self.seq_infoset = tuple(s.seq_infoset.astype(np.int64) for s in spaces)
        trees = [s.tree for s in spaces]
        # The tables over connected infoset pairs (10.5M on Goofspiel 5) hold int32 infosets and
        # positions (fewer than 2³¹ infosets): int64 copies doubled DECOMPOSE's peak there.
        pre_pos = [t.position.astype(np.int32) for t in trees]
        self.child_ptr = tuple(t.child_ptr for t in trees)
        self.child_inf = tuple(t.child_infosets for t in trees)
        self.pre_inf = tuple(t.preorder for t in trees)
        self.sub_lo = tuple(t.subtree_lo for t in trees)
        self.sub_hi = tuple(t.subtree_hi for t in trees)
        c1, c2 = (a.astype(np.int32, copy=False) for a in connected_infosets(game))
        conn_ptr, conn_pos, conn_inf = [], [], []
        for mine, other, p in ((c1, c2, 0), (c2, c1, 1)):
            o = 1 - p
            order = np.lexsort((pre_pos[o][other], mine))
            ptr = np.zeros(spaces[p].num_infosets + 1, dtype=np.int64)
            np.cumsum(np.bincount(mine, minlength=spaces[p].num_infosets), out=ptr[1:])
            conn_ptr.append(ptr)
            conn_inf.append(other[order])
            conn_pos.append(pre_pos[o][other[order]])
        self.conn_ptr, self.conn_pos, self.conn_inf = tuple(conn_ptr), tuple(conn_pos), tuple(conn_inf)
        self._critical_table(spaces, c1, c2)

    def _critical_table(self, spaces, c1, c2):
        """Per parent pair (σ(I), σ(J)) over connected (I, J): how many distinct I and J, and one
        of each (Definition 5).  CSR by σ1, sorted by σ2 within rows."""
        n2 = spaces[1].num_sequences
        key = self.parent_seq[0][c1] * n2 + self.parent_seq[1][c2]
        counts = []
        for inf in (c1, c2):
            order = np.lexsort((inf, key))
            k_sorted, i_sorted = key[order], inf[order]
            new_pair = np.r_[True, (k_sorted[1:] != k_sorted[:-1]) | (i_sorted[1:] != i_sorted[:-1])]
            uniq_keys, start = np.unique(k_sorted, return_index=True)
            distinct = (
                np.add.reduceat(new_pair, start, dtype=np.int32) if len(start) else np.zeros(0, np.int32)
            )
            counts.append((uniq_keys, distinct, i_sorted[start] if len(start) else np.zeros(0, np.int32)))
            del order, k_sorted, i_sorted, new_pair
        keys = counts[0][0]
        self.crit_n1, self.crit_i1 = counts[0][1], counts[0][2]
        self.crit_n2, self.crit_j2 = counts[1][1], counts[1][2]
        s1 = keys // n2
        self.crit_s2 = (keys % n2).astype(np.int32)
        self.crit_ptr = np.zeros(spaces[0].num_sequences + 1, dtype=np.int64)
        np.cumsum(np.bincount(s1, minlength=spaces[0].num_sequences), out=self.crit_ptr[1:])
        # The parent pairs where neither player is critical (public chance moves only; never
        # without chance, Proposition 2): their connected infoset pairs, the edges of the graph
        # whose components DECOMPOSE treats one by one.  CSR over those pairs' table rows.
        multi = np.flatnonzero((self.crit_n1 >= 2) & (self.crit_n2 >= 2))
        self.multi_rows = multi.astype(np.int64)
        self.multi_ptr = np.zeros(len(multi) + 1, dtype=np.int64)
        if len(multi):
            row_of_key = np.searchsorted(keys, key)
            edge = np.isin(row_of_key, multi)
            order = np.argsort(row_of_key[edge], kind="stable")
            edge_rows = row_of_key[edge][order]
            self.multi_i = c1[edge][order]
            self.multi_j = c2[edge][order]
            per_row = np.bincount(np.searchsorted(multi, edge_rows), minlength=len(multi))
            np.cumsum(per_row, out=self.multi_ptr[1:])
        else:
            self.multi_i = self.multi_j = np.zeros(0, dtype=np.int32)


@compiled(inline="always")
def _connected(conn_ptr, conn_pos, pre_pos_other_of_j, i):
    lo, hi = conn_ptr[i], conn_ptr[i + 1]
    k = lower_bound(conn_pos, lo, hi, pre_pos_other_of_j)
    return k < hi and conn_pos[k] == pre_pos_other_of_j


@compiled(cache=True, nogil=True)
def _grow_rows(arr, needed):
    if needed <= arr.shape[0]:
        return arr
    new = np.empty((max(needed, 2 * arr.shape[0]), arr.shape[1]), arr.dtype)
    # An element loop, not ``new[: len(arr)] = arr``: numba compiles a slice assignment with the
    # string formatting of its shape-mismatch error (34 compile events, 4.1 s of a first run's
    # compiling; docs/results/first_run.md).
    for i in range(arr.shape[0]):
        for j in range(arr.shape[1]):
            new[i, j] = arr[i, j]
    return new


@compiled(inline="always")
def _find(root, v):
    """Union-find root of ``v`` (with path halving)."""
    while root[v] != v:
        root[v] = root[root[v]]
        v = root[v]
    return v


@compiled(inline="always")
def _offset(indptr, sigma2, row, col):
    """Offset of column ``col`` inside row ``row``; rows of the sequences of one infoset share
    their column pattern, so this offset is valid for all of them (-1 if not relevant)."""
    k = find_in_row(indptr, sigma2, row, col)
    return k - indptr[row] if k >= 0 else -1


#: Levels a chain may have: a step's level is stored per relevant pair as an int16.
MAX_LEVELS = 2**15 - 2

#: Rows of the per-level tally of :func:`_decompose_kernel`: steps, entries, source slots, runs.
_STEPS, _ENTRIES, _SOURCES, _RUNS = 0, 1, 2, 3


@compiled(inline="always")
def _new_step(lev, kind, size, nsrc, tally, open_key, open_run, runs, fill):
    """Account a step of ``kind`` filling ``size`` entries from ``nsrc`` sources at level ``lev``:
    it extends the level's open run if it has the same kind, size and sources, else opens one
    (written to ``runs``, the run arrays, on the filling pass)."""
    run_kind, run_size, run_nsrc, run_count = runs
    if open_key[lev, 0] == kind and open_key[lev, 1] == size and open_key[lev, 2] == nsrc:
        if fill:
            run_count[open_run[lev]] += 1
    else:
        open_key[lev, 0], open_key[lev, 1], open_key[lev, 2] = kind, size, nsrc
        if fill:
            r = tally[_RUNS, lev]
            run_kind[r], run_size[r], run_nsrc[r], run_count[r] = kind, size, nsrc, 1
            open_run[lev] = r
        tally[_RUNS, lev] += 1
    tally[_STEPS, lev] += 1


@compiled(inline="always")
def _new_target(lev, t, tally, entry_of_pair, fill):
    """Pair ``t`` is the next entry of level ``lev``."""
    if fill:
        entry_of_pair[t] = tally[_ENTRIES, lev]
    tally[_ENTRIES, lev] += 1


@compiled(inline="always")
def _new_source(lev, u, tally, entry_of_pair, source, fill):
    """Pair ``u`` (filled earlier) is the next source of level ``lev``."""
    if fill:
        source[tally[_SOURCES, lev]] = entry_of_pair[u]
    tally[_SOURCES, lev] += 1


@compiled(cache=True, nogil=True)
def _decompose_kernel(
    parent_seq,
    first_seq,
    num_actions,
    seq_infoset,
    child_ptr,
    child_inf,
    pre_inf,
    sub_lo,
    sub_hi,
    conn_ptr,
    conn_pos,
    conn_inf,
    crit_ptr,
    crit_s2,
    crit_n1,
    crit_i1,
    crit_n2,
    crit_j2,
    multi_rows,
    multi_ptr,
    multi_i,
    multi_j,
    indptr,
    sigma2,
    num_pairs,
    entry_level,
    tally,
    entry_of_pair,
    source,
    run_kind,
    run_size,
    run_nsrc,
    run_count,
):
    """Run DECOMPOSE from (∅, ∅), its steps in the recursion's order, and lay them out by level.

    Counting pass (``entry_of_pair`` empty): ``entry_level`` (int16, per pair) receives each
    pair's level (a step's level is one more than its deepest source's) and ``tally[:, L]`` the
    steps, entries, source slots and runs of level ``L``.  Filling pass: ``tally[:, L]`` holds
    where level ``L``'s steps, entries, slots and runs start in the level-sorted chain (each
    level's steps in the recursion's order: a stable sort by level), and the pass writes
    ``entry_of_pair``, the sources as entries and the runs (kind, size, sources per step, steps)
    there, advancing ``tally``.  Returns (status, σ1, σ2, levels): status 1, a component of the
    critical graph at (σ1, σ2) has no critical player (module docstring); 2/3, internal
    inconsistency; 4, more than :data:`MAX_LEVELS` levels."""
    fill = len(entry_of_pair) > 0
    runs = (run_kind, run_size, run_nsrc, run_count)
    pos0 = np.empty(len(pre_inf[0]), np.int64)
    pos1 = np.empty(len(pre_inf[1]), np.int64)
    for k in range(len(pre_inf[0])):
        pos0[pre_inf[0][k]] = k
    for k in range(len(pre_inf[1])):
        pos1[pre_inf[1][k]] = k
    pre_pos = (pos0, pos1)

    # Per level: the key (kind, size, sources) of its open run, and the run's index.
    open_key = np.full((tally.shape[1], 3), -1, np.int64)
    open_run = np.zeros(tally.shape[1], np.int64)
    entry_level[0] = 0  # ξ[∅, ∅], the constant 1, is entry 0
    if fill:
        entry_of_pair[0] = 0
    nt = 1
    depth = 0

    # Stack rows: (task, σ1, σ2, critical player, critical infoset or -1, and for step 3 the
    # preorder range of the other player's infosets it fills).
    stack = np.empty((1024, 7), np.int64)
    stack[0, 0], stack[0, 1], stack[0, 2] = _CALL, 0, 0
    top = 1
    # The infosets to split at a call: (player, infoset) per row.
    splits = np.empty((16, 2), np.int64)
    # Components of the critical graph (pairs without a critical player only): per infoset, the
    # call that last named it and its local vertex.
    seen = (np.full(len(num_actions[0]), -1, np.int64), np.full(len(num_actions[1]), -1, np.int64))
    vertex = (np.zeros(len(num_actions[0]), np.int64), np.zeros(len(num_actions[1]), np.int64))
    calls = 0
    while top > 0:
        top -= 1
        typ, s1, s2 = stack[top, 0], stack[top, 1], stack[top, 2]
        if typ == _CALL:
            calls += 1
            # Critical player (Definition 5), looked up by the parent pair (s1, s2).
            n1, i1, n2, j2 = 0, -1, 0, -1
            k = lower_bound(crit_s2, crit_ptr[s1], crit_ptr[s1 + 1], s2)
            if k < crit_ptr[s1 + 1] and crit_s2[k] == s2:
                n1, i1, n2, j2 = crit_n1[k], crit_i1[k], crit_n2[k], crit_j2[k]
            src = find_in_row(indptr, sigma2, s1, s2)
            nsplit = 0
            if n1 <= 1 or n2 <= 1:
                if n1 <= 1:
                    c = 0
                    star = i1 if n1 == 1 else -1
                else:
                    c = 1
                    star = j2 if n2 == 1 else -1
                o = 1 - c
                sc = s1 if c == 0 else s2
                so = s2 if c == 0 else s1
                # Step 3 runs after every recursive call pushed below (LIFO stack).
                stack = _grow_rows(stack, top + 1)
                stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3], stack[top, 4] = (
                    _STEP3,
                    s1,
                    s2,
                    c,
                    star,
                )
                stack[top, 5], stack[top, 6] = sub_lo[o][so], sub_hi[o][so]
                top += 1
                jo = seq_infoset[o][so] if so != 0 else -1
                for idx in range(child_ptr[c][sc], child_ptr[c][sc + 1]):
                    inf = child_inf[c][idx]
                    if so != 0 and not _connected(conn_ptr[c], conn_pos[c], pre_pos[o][jo], inf):
                        continue
                    splits = _grow_rows(splits, nsplit + 1)
                    splits[nsplit, 0], splits[nsplit, 1] = c, inf
                    nsplit += 1
            else:
                # Neither player is critical (chance moves part the infosets): the critical graph
                # — infosets I with σ(I) = s1 and J with σ(J) = s2, joined when connected — splits
                # into components without a relevant pair in common, each with a critical player.
                m = lower_bound(multi_rows, 0, len(multi_rows), k)
                if m == len(multi_rows) or multi_rows[m] != k:
                    return 3, s1, s2, depth
                e_lo, e_hi = multi_ptr[m], multi_ptr[m + 1]
                n_v = 0
                for e in range(e_lo, e_hi):
                    for p in range(2):
                        x = multi_i[e] if p == 0 else multi_j[e]
                        if seen[p][x] != calls:
                            seen[p][x] = calls
                            vertex[p][x] = n_v
                            n_v += 1
                root = np.arange(n_v)
                for e in range(e_lo, e_hi):
                    a_root = _find(root, vertex[0][multi_i[e]])
                    b_root = _find(root, vertex[1][multi_j[e]])
                    if a_root != b_root:
                        root[max(a_root, b_root)] = min(a_root, b_root)
                # Per component (at its root vertex): its distinct infosets of each player, one of each.
                count = np.zeros((n_v, 2), np.int64)
                one = np.full((n_v, 2), -1, np.int64)
                for p in range(2):
                    done = np.zeros(n_v, np.bool_)
                    for e in range(e_lo, e_hi):
                        x = multi_i[e] if p == 0 else multi_j[e]
                        v = vertex[p][x]
                        if done[v]:
                            continue
                        done[v] = True
                        r = _find(root, v)
                        count[r, p] += 1
                        one[r, p] = x
                # The component's center is its one infoset of player 1 (ties go to player 1),
                # else its one of player 2; a component with neither has no critical player.
                for v in range(n_v):
                    if _find(root, v) == v and count[v, 0] > 1 and count[v, 1] > 1:
                        return 1, s1, s2, depth
                # Step 3 over each infoset of a component's other side, reading the center; the
                # centers are split.  Outside the components, player 1's infosets are split and
                # player 2's filled by step 3 of player 1 with no critical infoset (as when player
                # 1 is critical without one).
                for p in range(2):
                    done = np.zeros(n_v, np.bool_)
                    for e in range(e_lo, e_hi):
                        x = multi_i[e] if p == 0 else multi_j[e]
                        v = vertex[p][x]
                        if done[v]:
                            continue
                        done[v] = True
                        r = _find(root, v)
                        center = 0 if count[r, 0] == 1 else 1
                        if center == p:
                            splits = _grow_rows(splits, nsplit + 1)
                            splits[nsplit, 0], splits[nsplit, 1] = p, x
                            nsplit += 1
                        else:
                            stack = _grow_rows(stack, top + 1)
                            stack[top, 0], stack[top, 1], stack[top, 2] = _STEP3, s1, s2
                            stack[top, 3], stack[top, 4] = center, one[r, center]
                            stack[top, 5] = pre_pos[p][x]
                            stack[top, 6] = sub_hi[p][first_seq[p][x] + num_actions[p][x] - 1]
                            top += 1
                for p in range(2):
                    sp_ = s1 if p == 0 else s2
                    so_ = s2 if p == 0 else s1
                    jo = seq_infoset[1 - p][so_] if so_ != 0 else -1
                    for idx in range(child_ptr[p][sp_], child_ptr[p][sp_ + 1]):
                        x = child_inf[p][idx]
                        if seen[p][x] == calls:
                            continue  # in a component: done above
                        if so_ != 0 and not _connected(conn_ptr[p], conn_pos[p], pre_pos[1 - p][jo], x):
                            continue
                        if p == 0:
                            splits = _grow_rows(splits, nsplit + 1)
                            splits[nsplit, 0], splits[nsplit, 1] = 0, x
                            nsplit += 1
                        else:
                            stack = _grow_rows(stack, top + 1)
                            stack[top, 0], stack[top, 1], stack[top, 2] = _STEP3, s1, s2
                            stack[top, 3], stack[top, 4] = 0, -1
                            stack[top, 5] = pre_pos[1][x]
                            stack[top, 6] = sub_hi[1][first_seq[1][x] + num_actions[1][x] - 1]
                            top += 1
            for q in range(nsplit):
                c, inf = splits[q, 0], splits[q, 1]
                so = s2 if c == 0 else s1
                # Split ξ[s1, s2] among ((inf, a), so)_a.
                nacts = num_actions[c][inf]
                first = first_seq[c][inf]
                if nt + nacts > num_pairs:
                    return 2, s1, s2, depth
                off = _offset(indptr, sigma2, first, so) if c == 0 else _offset(indptr, sigma2, so, first)
                if off < 0:
                    return 3, s1, s2, depth
                lev = entry_level[src] + 1
                if lev > MAX_LEVELS:
                    return 4, s1, s2, depth
                depth = max(depth, lev)
                _new_step(lev, SIMPLEX, nacts, 1, tally, open_key, open_run, runs, fill)
                _new_source(lev, src, tally, entry_of_pair, source, fill)
                stack = _grow_rows(stack, top + nacts)
                for a in range(nacts):
                    if c == 0:
                        t = indptr[first + a] + off
                        stack[top, 1], stack[top, 2] = first + a, so
                    else:
                        t = indptr[so] + off + a
                        stack[top, 1], stack[top, 2] = so, first + a
                    stack[top, 0] = _CALL
                    top += 1
                    _new_target(lev, t, tally, entry_of_pair, fill)
                    entry_level[t] = lev
                    nt += 1
        else:
            c = stack[top, 3]
            star = stack[top, 4]
            o = 1 - c
            sc = s1 if c == 0 else s2
            so = s2 if c == 0 else s1
            lo_pos, hi_pos = stack[top, 5], stack[top, 6]
            if sc == 0:
                first_j, last_j = lo_pos, hi_pos
            else:
                ic = seq_infoset[c][sc]
                rlo, rhi = conn_ptr[c][ic], conn_ptr[c][ic + 1]
                first_j = lower_bound(conn_pos[c], rlo, rhi, lo_pos)
                last_j = lower_bound(conn_pos[c], rlo, rhi, hi_pos)
            for idx in range(first_j, last_j):
                j = pre_inf[o][idx] if sc == 0 else conn_inf[c][idx]
                nb = num_actions[o][j]
                fj = first_seq[o][j]
                if nt + nb > num_pairs:
                    return 2, s1, s2, depth
                # Targets (sc, (j, b))_b.
                toff = _offset(indptr, sigma2, sc, fj) if c == 0 else _offset(indptr, sigma2, fj, sc)
                if toff < 0:
                    return 3, s1, s2, depth
                use_sum = star >= 0 and _connected(conn_ptr[c], conn_pos[c], pre_pos[o][j], star)
                if use_sum:
                    # ξ[sc, (j, b)] = Σ_a ξ[(star, a), (j, b)]: one singleton step per b.
                    fs = first_seq[c][star]
                    na = num_actions[c][star]
                    soff = _offset(indptr, sigma2, fs, fj) if c == 0 else _offset(indptr, sigma2, fj, fs)
                    if soff < 0:
                        return 3, s1, s2, depth
                    for b in range(nb):
                        t = indptr[sc] + toff + b if c == 0 else indptr[fj + b] + toff
                        lev = 0
                        for a in range(na):
                            u = indptr[fs + a] + soff + b if c == 0 else indptr[fj + b] + soff + a
                            if entry_level[u] > lev:
                                lev = entry_level[u]
                        lev += 1
                        if lev > MAX_LEVELS:
                            return 4, s1, s2, depth
                        depth = max(depth, lev)
                        _new_step(
                            lev,
                            SINGLETON,
                            1,
                            na,
                            tally,
                            open_key,
                            open_run,
                            runs,
                            fill,
                        )
                        for a in range(na):
                            u = indptr[fs + a] + soff + b if c == 0 else indptr[fj + b] + soff + a
                            _new_source(lev, u, tally, entry_of_pair, source, fill)
                        _new_target(lev, t, tally, entry_of_pair, fill)
                        entry_level[t] = lev
                        nt += 1
                else:
                    # Split ξ[sc, σ(j)] among (sc, (j, b))_b.
                    parent_o = parent_seq[o][j]
                    src = (
                        find_in_row(indptr, sigma2, sc, parent_o)
                        if c == 0
                        else find_in_row(indptr, sigma2, parent_o, sc)
                    )
                    if src < 0:
                        return 3, s1, s2, depth
                    lev = entry_level[src] + 1
                    if lev > MAX_LEVELS:
                        return 4, s1, s2, depth
                    depth = max(depth, lev)
                    _new_step(lev, SIMPLEX, nb, 1, tally, open_key, open_run, runs, fill)
                    _new_source(lev, src, tally, entry_of_pair, source, fill)
                    for b in range(nb):
                        t = indptr[sc] + toff + b if c == 0 else indptr[fj + b] + toff
                        _new_target(lev, t, tally, entry_of_pair, fill)
                        entry_level[t] = lev
                        nt += 1
    if nt != num_pairs:
        return 2, -1, -1, depth
    return 0, -1, -1, depth
