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

The recursion runs as a compiled loop with an explicit stack over flat arrays (CSR rows searched
by bisection), so the 111M-pair Battleship instance never touches a Python object per pair.  The
steps are finally grouped by level (a step's level is one more than the deepest step it reads),
which is the order the vectorized regret-minimizer passes consume.
"""

from __future__ import annotations

import numpy as np

from efce.errors import GameError
from efce.games.arrays import find_in_row, lower_bound
from efce.games.game import Game
from efce.games.relevant import RelevantPairs, connected_infosets, relevant_pairs
from efce.games.resources.compiled import compiled
from efce.interrupts import check_stop

from .chain import SIMPLEX, SINGLETON, Chain

_CALL, _STEP3 = 0, 1


def check_decomposable(game: Game) -> None:
    """Raise a :class:`GameError` explaining why DECOMPOSE does not apply, if it does not: the
    game must have exactly two players and no chance moves (Definition 3 and Proposition 2 of
    Farina et al. 2019; perfect recall is already guaranteed by :class:`games.Game`)."""
    if game.num_players != 2:
        raise GameError(
            f"DECOMPOSE needs a two-player game; {game.name} has {game.num_players} players "
            f"(the correlation-plan polytope of von Stengel and Forges, Definition 3, is two-player)"
        )
    if game.has_chance:
        raise GameError(
            f"DECOMPOSE does not apply to {game.name}: it has chance moves. Definition 3 describes "
            f"Ξ only for games without chance, and Proposition 2 (a critical player always exists) "
            f"can fail with chance (Farina et al. 2019, section 4.2)"
        )


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
    if len(pairs) >= 2**31:
        raise GameError(f"{game.name} has {len(pairs):,} relevant pairs; DECOMPOSE indexes them with int32")
    tables = _Tables(game)
    check_stop(f"decomposing {game.name}")  # one compiled call from here (2 s on 26M pairs)
    out = _decompose_kernel(
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
        pairs.indptr,
        pairs.sigma2,
        len(pairs),
    )
    status, bad1, bad2, kind, level, tptr, target, sptr, source, nsteps, nsrc = out
    if status in (2, 3):
        raise AssertionError(f"DECOMPOSE internal error {status} at pair ({bad1}, {bad2}) of {game.name}")
    if status != 0:
        raise GameError(
            f"DECOMPOSE failed at relevant pair ({bad1}, {bad2}) of {game.name}: both players have "
            f"two or more critical infosets, which Proposition 2 rules out for two-player "
            f"perfect-recall games without chance"
        )
    if tptr[nsteps] != len(pairs):
        raise AssertionError(f"DECOMPOSE filled {tptr[nsteps]} entries, expected {len(pairs)}")
    del out
    return _level_sorted_chain(
        game,
        pairs,
        kind[:nsteps],
        level[:nsteps],
        tptr[: nsteps + 1],
        target,
        sptr[: nsteps + 1],
        source[:nsrc],
    )


def _level_sorted_chain(game, pairs, kind, level, tptr, target, sptr, source) -> Chain:
    """Renumber steps by level (stable) and entries in the new fill order."""
    new_kind, new_level, new_tptr, entry_pair, new_sptr, new_source = _reorder_by_level(
        kind, level, tptr, target, sptr, source
    )
    del kind, level, tptr, target, sptr, source
    names = PairNames(game, pairs)
    # Steps are sorted by level already: each level is a range of step numbers, kept as its
    # bounds rather than an int32 per step.
    depth = int(new_level[-1]) if len(new_level) else 0
    level_ptr = np.searchsorted(new_level, np.arange(1, depth + 2)).astype(np.int64)
    del new_level
    return Chain(
        kind=new_kind,
        target_ptr=new_tptr,
        source_ptr=new_sptr,
        source=new_source,
        entry_index=entry_pair,
        describe_entry=names,
        name=f"Ξ of {game.name}",
        level_sorted=True,
        level_ptr=level_ptr,
    )


@compiled(cache=True, nogil=True)
def _reorder_by_level(kind, level, tptr, target, sptr, source):
    """Counting sort of the steps by level (levels are small integers), moving their entries
    and sources along; sources become entry numbers instead of pair positions."""
    num_steps = len(kind)
    num_entries = len(target)
    max_level = 0
    for k in range(num_steps):
        if level[k] > max_level:
            max_level = level[k]
    step_cursor = np.zeros(max_level + 2, np.int64)
    entry_cursor = np.zeros(max_level + 2, np.int64)
    source_cursor = np.zeros(max_level + 2, np.int64)
    for k in range(num_steps):
        step_cursor[level[k] + 1] += 1
        entry_cursor[level[k] + 1] += tptr[k + 1] - tptr[k]
        source_cursor[level[k] + 1] += sptr[k + 1] - sptr[k]
    entry_cursor[0] = 1  # entry 0 stays the constant
    for lv in range(1, max_level + 2):
        step_cursor[lv] += step_cursor[lv - 1]
        entry_cursor[lv] += entry_cursor[lv - 1]
        source_cursor[lv] += source_cursor[lv - 1]
    new_kind = np.empty(num_steps, np.int8)
    new_level = np.empty(num_steps, np.int32)
    new_tptr = np.empty(num_steps + 1, tptr.dtype)
    new_sptr = np.empty(num_steps + 1, sptr.dtype)
    entry_pair = np.empty(num_entries, target.dtype)
    entry_of_pair = np.empty(num_entries, target.dtype)
    new_source = np.empty(len(source), source.dtype)
    entry_pair[0] = target[0]
    entry_of_pair[target[0]] = 0
    for k in range(num_steps):
        lv = level[k]
        nk = step_cursor[lv]
        step_cursor[lv] += 1
        new_kind[nk] = kind[k]
        new_level[nk] = lv
        e = entry_cursor[lv]
        new_tptr[nk] = e
        for i in range(tptr[k], tptr[k + 1]):
            entry_pair[e] = target[i]
            entry_of_pair[target[i]] = e
            e += 1
        entry_cursor[lv] = e
        q = source_cursor[lv]
        new_sptr[nk] = q
        for i in range(sptr[k], sptr[k + 1]):
            new_source[q] = source[i]
            q += 1
        source_cursor[lv] = q
    new_tptr[num_steps] = num_entries
    new_sptr[num_steps] = len(source)
    for i in range(len(new_source)):
        new_source[i] = entry_of_pair[new_source[i]]
    return new_kind, new_level, new_tptr, entry_pair, new_sptr, new_source


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
        pre_pos = [t.position for t in trees]
        self.child_ptr = tuple(t.child_ptr for t in trees)
        self.child_inf = tuple(t.child_infosets for t in trees)
        self.pre_inf = tuple(t.preorder for t in trees)
        self.sub_lo = tuple(t.subtree_lo for t in trees)
        self.sub_hi = tuple(t.subtree_hi for t in trees)
        c1, c2 = (a.astype(np.int64) for a in connected_infosets(game))
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
                np.add.reduceat(new_pair.astype(np.int64), start) if len(start) else np.zeros(0, np.int64)
            )
            counts.append((uniq_keys, distinct, i_sorted[start] if len(start) else np.zeros(0, np.int64)))
        keys = counts[0][0]
        self.crit_n1, self.crit_i1 = counts[0][1], counts[0][2]
        self.crit_n2, self.crit_j2 = counts[1][1], counts[1][2]
        s1 = keys // n2
        self.crit_s2 = keys % n2
        self.crit_ptr = np.zeros(spaces[0].num_sequences + 1, dtype=np.int64)
        np.cumsum(np.bincount(s1, minlength=spaces[0].num_sequences), out=self.crit_ptr[1:])


@compiled(inline="always")
def _connected(conn_ptr, conn_pos, pre_pos_other_of_j, i):
    lo, hi = conn_ptr[i], conn_ptr[i + 1]
    k = lower_bound(conn_pos, lo, hi, pre_pos_other_of_j)
    return k < hi and conn_pos[k] == pre_pos_other_of_j


@compiled(cache=True, nogil=True)
def _grow(arr, needed):
    if needed <= len(arr):
        return arr
    new = np.empty(max(needed, len(arr) + len(arr) // 4), arr.dtype)
    new[: len(arr)] = arr
    return new


@compiled(cache=True, nogil=True)
def _grow_rows(arr, needed):
    if needed <= arr.shape[0]:
        return arr
    new = np.empty((max(needed, 2 * arr.shape[0]), arr.shape[1]), arr.dtype)
    new[: arr.shape[0]] = arr
    return new


@compiled(inline="always")
def _offset(indptr, sigma2, row, col):
    """Offset of column ``col`` inside row ``row``; rows of the sequences of one infoset share
    their column pattern, so this offset is valid for all of them (-1 if not relevant)."""
    k = find_in_row(indptr, sigma2, row, col)
    return k - indptr[row] if k >= 0 else -1


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
    indptr,
    sigma2,
    num_pairs,
):
    """Run DECOMPOSE from (∅, ∅).  Returns (status, σ1, σ2, kind, level, target_ptr, target,
    source_ptr, source, num_steps, num_sources); targets and sources are relevant-pair positions.
    Status 1: Proposition 2 fails at (σ1, σ2); 2/3: internal inconsistency."""
    pos0 = np.empty(len(pre_inf[0]), np.int64)
    pos1 = np.empty(len(pre_inf[1]), np.int64)
    for k in range(len(pre_inf[0])):
        pos0[pre_inf[0][k]] = k
    for k in range(len(pre_inf[1])):
        pos1[pre_inf[1][k]] = k
    pre_pos = (pos0, pos1)

    # Positions and step numbers fit in the index type of the pairs' CSR (int32 below 2³¹ pairs);
    # the step arrays are sized for the worst case, but untouched pages are never resident.
    cap = num_pairs + 1
    kind = np.empty(cap, np.int8)
    level = np.empty(cap, np.int32)
    tptr = np.empty(cap + 1, sigma2.dtype)
    target = np.empty(num_pairs, sigma2.dtype)
    sptr = np.empty(cap + 1, sigma2.dtype)
    source = np.empty(cap, sigma2.dtype)
    entry_level = np.zeros(num_pairs, np.int32)
    target[0] = 0  # ξ[∅, ∅], the constant 1
    tptr[0] = 1
    sptr[0] = 0
    nsteps = 0
    nt = 1
    ns = 0

    # Stack rows: (task, σ1, σ2, critical player, critical infoset or -1).
    stack = np.empty((1024, 5), np.int64)
    stack[0, 0], stack[0, 1], stack[0, 2] = _CALL, 0, 0
    top = 1
    while top > 0:
        top -= 1
        typ, s1, s2 = stack[top, 0], stack[top, 1], stack[top, 2]
        if typ == _CALL:
            # Critical player (Definition 5), looked up by the parent pair (s1, s2).
            n1, i1, n2, j2 = 0, -1, 0, -1
            k = lower_bound(crit_s2, crit_ptr[s1], crit_ptr[s1 + 1], s2)
            if k < crit_ptr[s1 + 1] and crit_s2[k] == s2:
                n1, i1, n2, j2 = crit_n1[k], crit_i1[k], crit_n2[k], crit_j2[k]
            if n1 <= 1:
                c = 0
                star = i1 if n1 == 1 else -1
            elif n2 <= 1:
                c = 1
                star = j2 if n2 == 1 else -1
            else:
                return (1, s1, s2, kind, level, tptr, target, sptr, source, nsteps, ns)
            o = 1 - c
            sc = s1 if c == 0 else s2
            so = s2 if c == 0 else s1
            src = find_in_row(indptr, sigma2, s1, s2)
            # Step 3 runs after every recursive call pushed below (LIFO stack).
            stack = _grow_rows(stack, top + 1)
            stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3], stack[top, 4] = (
                _STEP3,
                s1,
                s2,
                c,
                star,
            )
            top += 1
            jo = seq_infoset[o][so] if so != 0 else -1
            for idx in range(child_ptr[c][sc], child_ptr[c][sc + 1]):
                inf = child_inf[c][idx]
                if so != 0 and not _connected(conn_ptr[c], conn_pos[c], pre_pos[o][jo], inf):
                    continue
                # Split ξ[s1, s2] among ((inf, a), so)_a.
                nacts = num_actions[c][inf]
                first = first_seq[c][inf]
                if nt + nacts > num_pairs:
                    return (2, s1, s2, kind, level, tptr, target, sptr, source, nsteps, ns)
                off = _offset(indptr, sigma2, first, so) if c == 0 else _offset(indptr, sigma2, so, first)
                if off < 0:
                    return (3, s1, s2, kind, level, tptr, target, sptr, source, nsteps, ns)
                lev = entry_level[src] + 1
                kind[nsteps] = SIMPLEX
                level[nsteps] = lev
                source = _grow(source, ns + 1)
                source[ns] = src
                ns += 1
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
                    target[nt] = t
                    entry_level[t] = lev
                    nt += 1
                nsteps += 1
                tptr[nsteps] = nt
                sptr[nsteps] = ns
        else:
            c = stack[top, 3]
            star = stack[top, 4]
            o = 1 - c
            sc = s1 if c == 0 else s2
            so = s2 if c == 0 else s1
            lo_pos, hi_pos = sub_lo[o][so], sub_hi[o][so]
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
                    return (2, s1, s2, kind, level, tptr, target, sptr, source, nsteps, ns)
                # Targets (sc, (j, b))_b.
                toff = _offset(indptr, sigma2, sc, fj) if c == 0 else _offset(indptr, sigma2, fj, sc)
                if toff < 0:
                    return (3, s1, s2, kind, level, tptr, target, sptr, source, nsteps, ns)
                use_sum = star >= 0 and _connected(conn_ptr[c], conn_pos[c], pre_pos[o][j], star)
                if use_sum:
                    # ξ[sc, (j, b)] = Σ_a ξ[(star, a), (j, b)]: one singleton step per b.
                    fs = first_seq[c][star]
                    na = num_actions[c][star]
                    soff = _offset(indptr, sigma2, fs, fj) if c == 0 else _offset(indptr, sigma2, fj, fs)
                    if soff < 0:
                        return (3, s1, s2, kind, level, tptr, target, sptr, source, nsteps, ns)
                    source = _grow(source, ns + nb * na)
                    for b in range(nb):
                        t = indptr[sc] + toff + b if c == 0 else indptr[fj + b] + toff
                        lev = 0
                        for a in range(na):
                            u = indptr[fs + a] + soff + b if c == 0 else indptr[fj + b] + soff + a
                            source[ns] = u
                            ns += 1
                            if entry_level[u] > lev:
                                lev = entry_level[u]
                        lev += 1
                        kind[nsteps] = SINGLETON
                        level[nsteps] = lev
                        target[nt] = t
                        entry_level[t] = lev
                        nt += 1
                        nsteps += 1
                        tptr[nsteps] = nt
                        sptr[nsteps] = ns
                else:
                    # Split ξ[sc, σ(j)] among (sc, (j, b))_b.
                    parent_o = parent_seq[o][j]
                    src = (
                        find_in_row(indptr, sigma2, sc, parent_o)
                        if c == 0
                        else find_in_row(indptr, sigma2, parent_o, sc)
                    )
                    if src < 0:
                        return (3, s1, s2, kind, level, tptr, target, sptr, source, nsteps, ns)
                    source = _grow(source, ns + 1)
                    source[ns] = src
                    ns += 1
                    lev = entry_level[src] + 1
                    kind[nsteps] = SIMPLEX
                    level[nsteps] = lev
                    for b in range(nb):
                        t = indptr[sc] + toff + b if c == 0 else indptr[fj + b] + toff
                        target[nt] = t
                        entry_level[t] = lev
                        nt += 1
                    nsteps += 1
                    tptr[nsteps] = nt
                    sptr[nsteps] = ns
    return (0, -1, -1, kind, level, tptr, target, sptr, source, nsteps, ns)
