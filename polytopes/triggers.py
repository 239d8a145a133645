"""The deviator's polytope of the correlated-equilibrium saddle point, as one chain of scaled
extensions, for each solution concept (:mod:`efce.concepts`).

Farina, Ling, Fang, Sandholm 2019c / 2019 (section 2.1): an EFCE with social welfare ≥ τ solves
``min_{ξ ∈ Ξ} max_{y ∈ Y} ξᵀ A y`` where ``Y`` is the convex hull of the strategy sets of all
*trigger agents*.  A trigger agent of player ``i`` deviates, once triggered, to any sequence-form
strategy ``y`` of a part of player ``i``'s sequence tree, against the correlation ``ξ[r, ·]`` of
the opponent's recommendations with its *recommendation sequence* ``r``:

* EFCE — trigger ``σ̂ = (Î, â)`` (recommended ``â`` at ``Î``): ``r = σ̂``, deviation over the
  subtree rooted at ``Î``;
* EFCCE — trigger ``Î`` (reaching ``Î``, before its recommendation; Celli et al. 2020,
  Definition 3): ``r = σ(Î)``, deviation over the subtree rooted at ``Î``;
* NFCCE — one trigger per player (committing at the root): ``r = ∅``, deviation over the whole
  sequence tree (every root infoset's subtree).

A convex hull of sets that each start from ``{1}`` is itself a chain:

    Y = {1} ◁ Δ_K (the mixing weights λ_t) ◁ (for every trigger t: its deviation tree, scaled by λ_t)

so the same compiled engine runs both sides of the saddle point, and Algorithm 1 on this chain is
the regret-circuit construction for the convex hull.  An optional extra weight ``λ_τ`` (no
subtree) carries the welfare constraint.

Entries of ``Y``: 0 is the constant; ``1..K`` the weights ``λ``; then one block per trigger with a
copy of every sequence of its deviation tree, in depth-first preorder (``entry_trigger``,
``entry_sequence``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from efce.concepts import DEFAULT_CONCEPT, check_concept
from efce.games.arrays import concat_ranges
from efce.games.game import Game, SequenceSpace
from efce.interrupts import check_stop

from .chain import SIMPLEX, Chain, index_dtype, level_order


@dataclass(frozen=True, eq=False)
class TriggerSpace:
    """``Y``: what each entry means, and :attr:`chain`, made on first use.

    ``trigger_player[k]``, ``trigger_sequence[k]`` (the recommendation sequence ``r`` of the
    module docstring) and ``trigger_infoset[k]`` (the root of its deviation tree, -1 for an
    NFCCE trigger, whose tree has every root infoset) for the K triggers (the welfare weight, if
    any, is trigger ``K-1`` with player -1).  Trigger ``k``'s block holds the entries
    ``block_start[k] .. block_start[k+1]-1``: the sequences of its deviation tree in depth-first
    preorder, i.e. ``preorder_sequences[player][block_preorder_start[k] + j]`` for the ``j``-th
    entry of the block.  ``entry_trigger[e]`` and ``entry_sequence[e]`` spell this out per
    entry; they are computed on demand because on the large instances they would be the largest
    arrays here.  So is the chain: its steps are the players' infosets, block by block
    (:func:`trigger_deviations`), which a solver's fused deviator reads from its sequence trees
    without it (:mod:`efce.solvers.backends.cpu.deviator`; ~4.7 bytes per relevant pair on
    the large Battleship instance)."""

    spaces: tuple  # the players' SequenceSpace objects
    trigger_player: np.ndarray  # int8[K]
    trigger_sequence: np.ndarray  # int32[K]
    block_start: np.ndarray  # int32[K + 1] (int64 for a Y of 2³¹ entries or more)
    block_preorder_start: np.ndarray  # int32[K]
    preorder_sequences: tuple  # per player: int32 sequences in preorder of their infosets
    has_welfare: bool
    concept: str = DEFAULT_CONCEPT
    trigger_infoset: np.ndarray | None = None  # int32[K]; None: EFCE's, the infoset of each σ̂
    name: str = "trigger deviations"

    @property
    def num_triggers(self) -> int:
        return len(self.trigger_player)

    @property
    def num_entries(self) -> int:
        """Entries of ``Y``: the constant, the weights λ and every block."""
        return int(self.block_start[-1])

    @cached_property
    def chain(self) -> Chain:
        """``Y`` as a chain: step 0 splits 1 into the weights λ; then per trigger, per infoset of
        its deviation tree in preorder, one simplex step splitting its parent sequence's entry,
        or λ at a tree's root; the steps are read in level order (each step's depth below its
        tree's root, plus 2), kept with the level bounds."""
        return _trigger_chain(self)

    @cached_property
    def entry_trigger(self) -> np.ndarray:
        """Trigger of every entry (-1 for the constant and the weights λ), int32."""
        out = np.full(self.chain.num_entries, -1, dtype=np.int32)
        lengths = np.diff(self.block_start)
        out[self.block_start[0] :] = np.repeat(np.arange(self.num_triggers, dtype=np.int32), lengths)
        return out

    @cached_property
    def entry_sequence(self) -> np.ndarray:
        """Sequence (of the trigger's player) of every entry (-1 for the constant and λ), int32."""
        out = np.full(self.chain.num_entries, -1, dtype=np.int32)
        lengths = np.diff(self.block_start)
        for i in (0, 1):
            mine = np.flatnonzero(self.trigger_player == i)
            if len(mine):
                where = concat_ranges(self.block_preorder_start[mine], lengths[mine])
                out[concat_ranges(self.block_start[mine], lengths[mine])] = self.preorder_sequences[i][where]
        return out


@dataclass(frozen=True, eq=False)
class PlayerTriggers:
    """The triggers of one player for a concept, in their order in ``Y``, and where each sits in
    the player's sequence tree: ``root_infoset`` (-1: the NFCCE trigger, rooted at every root
    infoset), ``sequence`` (the recommendation sequence ``r``), and the preorder range
    ``[start, end)`` of the infosets of its deviation tree (:class:`~games.infoset_tree.InfosetTree`
    positions).  One home for the concepts' trigger agents: ``Y``'s chain and the payoff
    operator's tables (:mod:`solvers.evaluation.payoff_operator`) both read it."""

    root_infoset: np.ndarray  # int64[K_i]
    sequence: np.ndarray  # int64[K_i]
    start: np.ndarray  # int64[K_i]
    end: np.ndarray  # int64[K_i]


def player_triggers(space: SequenceSpace, concept: str = DEFAULT_CONCEPT) -> PlayerTriggers:
    """The triggers of ``space``'s player for ``concept`` (module docstring): per nonempty
    sequence (EFCE), per infoset (EFCCE), or one (NFCCE; none for a player without infosets).

    Raises
    ------
    ValueError
        ``concept`` is not one of :data:`efce.concepts.CONCEPTS`.
    """
    check_concept(concept)
    tree = space.tree
    k = space.infoset_num_actions.astype(np.int64)
    first = space.infoset_first_seq.astype(np.int64)
    # Preorder end of each infoset's subtree: the end of its last action's subtree.
    inf_end = tree.subtree_hi[first + k - 1] if space.num_infosets else np.zeros(0, np.int64)
    if concept == "efce":
        root = space.seq_infoset[1:].astype(np.int64)
        sequence = np.arange(1, space.num_sequences, dtype=np.int64)
    elif concept == "efcce":
        root = np.arange(space.num_infosets, dtype=np.int64)
        sequence = space.infoset_parent_seq.astype(np.int64)
    else:
        n = min(space.num_infosets, 1)
        return PlayerTriggers(
            np.full(n, -1, np.int64),
            np.zeros(n, np.int64),
            np.zeros(n, np.int64),
            np.full(n, space.num_infosets, np.int64),
        )
    # the tree's arrays are int32; these per-trigger tables are int64 whatever the tree's type
    return PlayerTriggers(
        root, sequence, tree.position[root].astype(np.int64), inf_end[root].astype(np.int64)
    )


def triggers_above(space: SequenceSpace) -> np.ndarray:
    """For every infoset ``I`` of a sequence space, ``Σ_{Î ⪯ I} |A_Î|`` over ``I`` and its
    ancestors: the number of triggers ``σ̂ = (Î, â)`` whose subtree holds ``I``.

    The one count of triggers above an infoset, shared by the size estimate of the EFCE solver
    and the EFCE LP baseline.

    Parameters
    ----------
    space : games.game.SequenceSpace
        One player's sequence space (infosets numbered top-down).

    Returns
    -------
    int64[num_infosets]

    Examples
    --------
    >>> from efce.games import kuhn
    >>> triggers_above(kuhn().sequences(0)).tolist()
    [2, 2, 2, 4, 4, 4]
    """
    parent_inf = space.seq_infoset[space.infoset_parent_seq].astype(np.int64)
    actions = space.infoset_num_actions.astype(np.int64)
    cum = actions.copy()
    depth = space.infoset_depth.astype(np.int64)
    # Infosets are numbered top-down, so one sweep per depth level settles every prefix sum.
    for d in range(1, int(depth.max(initial=0)) + 1):
        at = np.flatnonzero(depth == d)
        cum[at] = actions[at] + cum[parent_inf[at]]
    return cum


def trigger_deviations(game: Game, *, welfare: bool = False, concept: str = DEFAULT_CONCEPT) -> TriggerSpace:
    """Build ``Y`` of ``concept`` for a two-player game (module docstring; EFCE: every nonempty
    sequence of both players triggers): its triggers and blocks; its chain is made on first use
    (:attr:`TriggerSpace.chain`).

    Raises
    ------
    Interrupted
        A stop was requested (checked before each player's triggers).
    ValueError
        ``concept`` is not one of :data:`efce.concepts.CONCEPTS`.
    """
    spaces = (game.sequences(0), game.sequences(1))
    trig_player, trig_seq, trig_inf = [], [], []
    block_starts, preorder_starts, preseqs = [], [], []
    mines = []
    for i in (0, 1):
        check_stop(f"building the trigger deviations of {game.name}")
        mine = player_triggers(spaces[i], concept)
        mines.append(mine)
        trig_player.append(np.full(len(mine.sequence), i))
        trig_seq.append(mine.sequence)
        trig_inf.append(mine.root_infoset)
    num_triggers = sum(len(m.sequence) for m in mines) + int(welfare)
    next_entry = 1 + num_triggers
    for space, mine in zip(spaces, mines, strict=True):
        cum, preseq = _preorder_slots(space)
        first_slot = cum[mine.start]
        block_len = cum[mine.end] - first_slot
        block_starts.append(next_entry + np.cumsum(block_len) - block_len)
        next_entry += int(block_len.sum())
        preorder_starts.append(first_slot)
        preseqs.append(preseq)
    # The welfare weight (if any) has an empty block; the last start closes the final block.
    starts = np.concatenate(block_starts + [np.array([next_entry])] * (1 + welfare))
    preorder_start = np.concatenate(preorder_starts + ([np.array([0])] if welfare else []))
    return TriggerSpace(
        spaces,
        np.concatenate(trig_player + ([np.array([-1])] if welfare else [])).astype(np.int8),
        np.concatenate(trig_seq + ([np.array([-1])] if welfare else [])).astype(np.int32),
        starts.astype(index_dtype(next_entry + 1)),  # Y's entries: int32 where they fit
        preorder_start.astype(np.int32),  # positions in a player's preorder: fit int32
        tuple(p.astype(np.int32) for p in preseqs),
        welfare,
        concept,
        np.concatenate(trig_inf + ([np.array([-1])] if welfare else [])).astype(np.int32),
        f"trigger deviations of {game.name}" + ("" if concept == "efce" else f" ({concept.upper()})"),
    )


def _preorder_slots(space: SequenceSpace) -> tuple[np.ndarray, np.ndarray]:
    """``(cum, preseq)``: the sequences of the infoset at preorder position ``q`` are the
    preorder slots ``cum[q] .. cum[q+1]-1``, and slot ``j`` holds sequence ``preseq[j]``."""
    pre = space.tree.preorder
    pre_k = space.infoset_num_actions.astype(np.int64)[pre]
    cum = np.zeros(len(pre) + 1, dtype=np.int64)
    np.cumsum(pre_k, out=cum[1:])
    preseq = concat_ranges(space.infoset_first_seq.astype(np.int64)[pre], pre_k)
    return cum, preseq


def _trigger_chain(y: TriggerSpace) -> Chain:
    """The chain of :attr:`TriggerSpace.chain`."""
    num_triggers = y.num_triggers
    step_sizes = [np.array([num_triggers])]
    step_levels = [np.array([1], dtype=np.int32)]
    step_sources = [np.array([0])]
    trigger_base = 0
    for space in y.spaces:
        mine = player_triggers(space, y.concept)
        cum, preseq = _preorder_slots(space)
        where_in_preseq = np.empty(space.num_sequences, dtype=np.int64)
        where_in_preseq[preseq] = np.arange(len(preseq))
        pre = space.tree.preorder
        n_trig = len(mine.start)
        n_inf = mine.end - mine.start
        first_slot = cum[mine.start]
        block_start = y.block_start[trigger_base : trigger_base + n_trig]
        # Every (trigger, infoset of its deviation tree): one simplex step.
        trig_of_step = np.repeat(np.arange(n_trig), n_inf)
        infoset = pre[concat_ranges(mine.start, n_inf)]
        sizes = space.infoset_num_actions.astype(np.int64)[infoset]
        parent = space.infoset_parent_seq.astype(np.int64)[infoset]
        # A step whose parent sequence lies outside its block (before it in preorder, or ∅)
        # starts the deviation tree: it splits λ; any other splits its parent sequence's entry.
        parent_slot = where_in_preseq[parent] - first_slot[trig_of_step]
        is_root = (parent == 0) | (parent_slot < 0)
        parent_entry = block_start[trig_of_step] + parent_slot
        lam_entry = 1 + trigger_base + trig_of_step
        step_sizes.append(sizes)
        step_sources.append(np.where(is_root, lam_entry, parent_entry))
        # A step reads its parent sequence's entry (or λ at a tree root): its level is its depth
        # below the tree's root, plus 2 (λ is filled at level 1).
        depth = space.infoset_depth
        root_depth = depth[pre[mine.start]] if n_trig else np.zeros(0, np.int32)
        step_levels.append((2 + depth[infoset] - root_depth[trig_of_step]).astype(np.int32))
        trigger_base += n_trig
    sizes = np.concatenate(step_sizes)
    index = index_dtype(y.num_entries + 1)
    target_ptr = np.empty(len(sizes) + 1, dtype=index)
    target_ptr[0] = 1
    np.cumsum(sizes, out=target_ptr[1:])
    target_ptr[1:] += 1
    # The passes need the steps in level order; kept with the level bounds, it makes a level per
    # step (one int32 each) unnecessary.
    order, level_ptr = level_order(np.concatenate(step_levels))
    return Chain(
        kind=np.full(len(sizes), SIMPLEX, dtype=np.int8),
        target_ptr=target_ptr,
        source_ptr=np.arange(len(sizes) + 1, dtype=index_dtype(len(sizes) + 1)),
        source=np.concatenate(step_sources).astype(index),
        entry_index=None,  # entries are their own indices: no arange kept
        describe_entry=str,
        name=y.name,
        level_ptr=level_ptr,
        level_order=order,
    )
