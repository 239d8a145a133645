"""The tree structure of a player's sequence space: children of every sequence, the depth-first
preorder of the infosets, and the preorder range of every sequence's subtree.

DECOMPOSE (:mod:`polytopes.decompose`), the trigger-deviation chain (:mod:`polytopes.triggers`)
and the payoff operator (:mod:`solvers.evaluation.payoff_operator`) all walk the infosets in this order; it
is built once per space and cached on it (:attr:`games.game.SequenceSpace.tree`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from efce.games.resources.compiled import compiled


@dataclass(frozen=True, eq=False)
class InfosetTree:
    """Parent/child structure and depth-first preorder of one player's infosets.

    Attributes
    ----------
    child_ptr : int32[num_sequences + 1]
        CSR pointers: the infosets whose parent sequence is ``s`` are
        ``child_infosets[child_ptr[s]:child_ptr[s + 1]]``, in increasing infoset order.
    child_infosets : int32[num_infosets]
    position : int32[num_infosets]
        Preorder position of every infoset (an infoset's actions are visited in order, each
        action's child infosets in increasing order).
    preorder : int32[num_infosets]
        The infosets in preorder (the inverse of ``position``).
    subtree_lo, subtree_hi : int32[num_sequences]
        ``preorder[subtree_lo[s]:subtree_hi[s]]`` are the infosets at or below sequence ``s``.

    All are int32, as the sequence space's own arrays are: a space numbers its sequences and
    infosets with int32, so every count and position here fits (int64 trees and Y block starts
    held 0.59 bytes per relevant pair more of large Battleship's peak,
    ``docs/results/memory.md``).
    """

    child_ptr: np.ndarray
    child_infosets: np.ndarray
    position: np.ndarray
    preorder: np.ndarray
    subtree_lo: np.ndarray
    subtree_hi: np.ndarray


def infoset_tree(
    infoset_parent_seq: np.ndarray,
    infoset_first_seq: np.ndarray,
    infoset_num_actions: np.ndarray,
    num_sequences: int,
) -> InfosetTree:
    """Build the :class:`InfosetTree` of a sequence space from its three infoset arrays."""
    child_infosets = np.argsort(infoset_parent_seq, kind="stable").astype(np.int32)
    child_ptr = np.zeros(num_sequences + 1, dtype=np.int32)
    np.cumsum(np.bincount(infoset_parent_seq, minlength=num_sequences), out=child_ptr[1:])
    position, preorder, lo, hi = _preorder(
        child_ptr,
        child_infosets,
        np.ascontiguousarray(infoset_first_seq, dtype=np.int32),
        np.ascontiguousarray(infoset_num_actions, dtype=np.int32),
        num_sequences,
    )
    return InfosetTree(child_ptr, child_infosets, position, preorder, lo, hi)


@compiled(cache=True, nogil=True)
def _preorder(child_ptr, child_inf, first_seq, num_actions, num_sequences):
    """Iterative depth-first walk (explicit stack: trees deeper than Python's recursion limit)."""
    n_inf = len(first_seq)
    pos = np.empty(n_inf, np.int32)
    order = np.empty(n_inf, np.int32)
    sub_lo = np.zeros(num_sequences, np.int32)
    sub_hi = np.zeros(num_sequences, np.int32)
    stack = np.empty(2 * (n_inf + num_sequences) + 2, np.int32)
    kind = np.empty(2 * (n_inf + num_sequences) + 2, np.int8)  # 0 enter seq, 1 exit seq, 2 infoset
    stack[0], kind[0] = 0, 0
    top = 1
    counter = 0
    while top > 0:
        top -= 1
        x, ev = stack[top], kind[top]
        if ev == 0:
            sub_lo[x] = counter
            stack[top], kind[top] = x, 1
            top += 1
            for j in range(child_ptr[x + 1] - 1, child_ptr[x] - 1, -1):
                stack[top], kind[top] = child_inf[j], 2
                top += 1
        elif ev == 1:
            sub_hi[x] = counter
        else:
            order[counter] = x
            pos[x] = counter
            counter += 1
            for a in range(num_actions[x] - 1, -1, -1):
                stack[top], kind[top] = first_seq[x] + a, 0
                top += 1
    return pos, order, sub_lo, sub_hi
