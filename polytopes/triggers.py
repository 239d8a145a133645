"""The deviator's polytope of the EFCE saddle point, as one chain of scaled extensions.

Farina, Ling, Fang, Sandholm 2019c / 2019 (section 2.1): an EFCE with social welfare ≥ τ solves
``min_{ξ ∈ Ξ} max_{y ∈ Y} ξᵀ A y`` where ``Y`` is the convex hull of the strategy sets of all
*trigger agents*: for player ``i`` and trigger sequence ``σ̂ = (Î, â)`` the agent, when
recommended ``â`` at ``Î``, deviates to any sequence-form strategy ``y_σ̂`` of player ``i``'s
subtree rooted at ``Î``.  A convex hull of sets that each start from ``{1}`` is itself a chain:

    Y = {1} ◁ Δ_K (the mixing weights λ_σ̂) ◁ (for every trigger: its subtree, scaled by λ_σ̂)

so the same compiled engine runs both sides of the saddle point, and Algorithm 1 on this chain is
the regret-circuit construction for the convex hull.  An optional extra weight ``λ_τ`` (no
subtree) carries the welfare constraint.

Entries of ``Y``: 0 is the constant; ``1..K`` the weights ``λ``; then one block per trigger with a
copy of every sequence of the subtree (``entry_trigger``, ``entry_sequence``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from efce.games.arrays import concat_ranges
from efce.games.game import Game, SequenceSpace
from efce.interrupts import check_stop

from .chain import SIMPLEX, Chain, index_dtype, level_order


@dataclass(frozen=True, eq=False)
class TriggerSpace:
    """``chain`` plus what each entry means.

    ``trigger_player[k]``, ``trigger_sequence[k]`` for the K triggers (the welfare weight, if
    any, is trigger ``K-1`` with player -1).  Trigger ``k``'s block holds the entries
    ``block_start[k] .. block_start[k+1]-1``: the sequences of its subtree in depth-first
    preorder, i.e. ``preorder_sequences[player][block_preorder_start[k] + j]`` for the
    ``j``-th entry of the block.  ``entry_trigger[e]`` and ``entry_sequence[e]`` spell this out
    per entry; they are computed on demand because on the large instances they would be the
    largest arrays here."""

    chain: Chain
    trigger_player: np.ndarray  # int8[K]
    trigger_sequence: np.ndarray  # int32[K]
    block_start: np.ndarray  # int64[K + 1]
    block_preorder_start: np.ndarray  # int64[K]
    preorder_sequences: tuple  # per player: int32 sequences in preorder of their infosets
    has_welfare: bool

    @property
    def num_triggers(self) -> int:
        return len(self.trigger_player)

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


def trigger_deviations(game: Game, *, welfare: bool = False) -> TriggerSpace:
    """Build ``Y`` for a two-player game (every nonempty sequence of both players triggers).

    Raises
    ------
    Interrupted
        A stop was requested (checked before each player's triggers).
    """
    blocks = []  # per player: arrays describing its triggers' blocks
    trig_player, trig_seq = [], []
    for i in (0, 1):
        check_stop(f"building the trigger deviations of {game.name}")
        space = game.sequences(i)
        tree = space.tree
        pos, pre, sub_hi = tree.position, tree.preorder, tree.subtree_hi
        k = space.infoset_num_actions.astype(np.int64)
        # Sequences laid out in preorder of their infosets.
        pre_k = k[pre]
        cum = np.zeros(len(pre) + 1, dtype=np.int64)
        np.cumsum(pre_k, out=cum[1:])
        preseq = concat_ranges(space.infoset_first_seq.astype(np.int64)[pre], pre_k)
        where_in_preseq = np.empty(space.num_sequences, dtype=np.int64)
        where_in_preseq[preseq] = np.arange(len(preseq))
        seqs = np.arange(1, space.num_sequences, dtype=np.int64)
        inf = space.seq_infoset[1:].astype(np.int64)
        last = space.infoset_first_seq.astype(np.int64)[inf] + k[inf] - 1
        start_inf = pos[inf]  # preorder range of infosets in Î's subtree
        end_inf = sub_hi[last]
        trig_player.append(np.full(len(seqs), i))
        trig_seq.append(seqs)
        blocks.append(
            dict(
                space=space,
                pre=pre,
                cum=cum,
                preseq=preseq,
                where=where_in_preseq,
                start_inf=start_inf,
                end_inf=end_inf,
                root_inf=inf,
            )
        )
    trigger_player = np.concatenate(trig_player + ([np.array([-1])] if welfare else []))
    trigger_sequence = np.concatenate(trig_seq + ([np.array([-1])] if welfare else []))
    num_triggers = len(trigger_player)

    # Steps: step 0 splits 1 into λ; then per trigger, per infoset of its subtree (preorder).
    step_sizes = [np.array([num_triggers])]
    step_levels = [np.array([1], dtype=np.int32)]
    step_sources = [np.array([0])]
    block_starts, preorder_starts = [], []
    next_entry = 1 + num_triggers
    trigger_base = 0
    for b in blocks:
        space = b["space"]
        n_trig = len(b["start_inf"])
        n_inf = b["end_inf"] - b["start_inf"]
        block_len = b["cum"][b["end_inf"]] - b["cum"][b["start_inf"]]
        block_start = next_entry + np.cumsum(block_len) - block_len
        next_entry += int(block_len.sum())
        # Every (trigger, infoset of its subtree): one simplex step.
        trig_of_step = np.repeat(np.arange(n_trig), n_inf)
        infoset_pos = concat_ranges(b["start_inf"], n_inf)
        infoset = b["pre"][infoset_pos]
        sizes = space.infoset_num_actions.astype(np.int64)[infoset]
        parent = space.infoset_parent_seq.astype(np.int64)[infoset]
        is_root = infoset == b["root_inf"][trig_of_step]
        parent_entry = block_start[trig_of_step] + b["where"][parent] - b["cum"][b["start_inf"]][trig_of_step]
        lam_entry = 1 + trigger_base + trig_of_step
        step_sizes.append(sizes)
        step_sources.append(np.where(is_root, lam_entry, parent_entry))
        # A step reads its parent sequence's entry (or λ at the subtree root): its level is its
        # depth below the trigger's infoset, plus 2 (λ is filled at level 1).
        depth = space.infoset_depth
        step_levels.append((2 + depth[infoset] - depth[b["root_inf"][trig_of_step]]).astype(np.int32))
        block_starts.append(block_start)
        preorder_starts.append(b["cum"][b["start_inf"]])
        trigger_base += n_trig
    sizes = np.concatenate(step_sizes)
    index = index_dtype(next_entry + 1)
    target_ptr = np.empty(len(sizes) + 1, dtype=index)
    target_ptr[0] = 1
    np.cumsum(sizes, out=target_ptr[1:])
    target_ptr[1:] += 1
    # The passes need the steps in level order; kept with the level bounds, it makes a level per
    # step (one int32 each) unnecessary.
    order, level_ptr = level_order(np.concatenate(step_levels))
    chain = Chain(
        kind=np.full(len(sizes), SIMPLEX, dtype=np.int8),
        target_ptr=target_ptr,
        source_ptr=np.arange(len(sizes) + 1, dtype=index_dtype(len(sizes) + 1)),
        source=np.concatenate(step_sources).astype(index),
        entry_index=None,  # entries are their own indices: no arange kept
        describe_entry=str,
        name=f"trigger deviations of {game.name}",
        level_ptr=level_ptr,
        level_order=order,
    )
    # The welfare weight (if any) has an empty block; the last start closes the final block.
    starts = np.concatenate(block_starts + [np.array([next_entry])] * (1 + welfare))
    preorder_start = np.concatenate(preorder_starts + ([np.array([0])] if welfare else []))
    return TriggerSpace(
        chain,
        trigger_player.astype(np.int8),
        trigger_sequence.astype(np.int32),
        starts.astype(np.int64),
        preorder_start.astype(np.int64),
        tuple(b["preseq"].astype(np.int32) for b in blocks),
        welfare,
    )
