"""The sequence-form polytope of one player as a chain of scaled extensions.

Farina, Ling, Fang, Sandholm 2019, section 3.1: starting from ``x[∅] = 1``, every infoset ``I``
(top-down) splits the value of its parent sequence among its actions,
``(x[(I, a)])_a ∈ x[σ(I)] · Δ_{|A_I|}``, i.e. one step ``◁h Δ_{|A_I|}`` with ``h(x) = x[σ(I)]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from efce.games.game import SequenceSpace

from .chain import SIMPLEX, Chain


def sequence_form(space: SequenceSpace, names: Sequence[str] | Callable[[int], str] | None = None) -> Chain:
    """The chain ``{1} ◁h1 Δ_{|A_I1|} ◁h2 … `` of ``space``, one simplex step per infoset in
    top-down order.  Entries are the sequences themselves (entry ``s`` = sequence ``s``).

    ``names`` optionally labels sequences (a list, e.g. ``game.sequence_labels(p)``, or a
    callable)."""
    k = space.num_infosets
    target_ptr = np.empty(k + 1, dtype=np.int64)
    target_ptr[:k] = space.infoset_first_seq
    target_ptr[k] = space.num_sequences
    describe = (names.__getitem__ if names is not None and not callable(names) else names) or (
        lambda s: "∅" if s == 0 else str(s)
    )
    chain = Chain(
        kind=np.full(k, SIMPLEX, dtype=np.int8),
        target_ptr=target_ptr,
        source_ptr=np.arange(k + 1, dtype=np.int64),
        source=space.infoset_parent_seq.astype(np.int64),
        entry_index=np.arange(space.num_sequences, dtype=np.int64),
        describe_entry=describe,
        name=f"sequence form of player {space.player + 1}",
        known_level=space.infoset_depth.astype(np.int32) + 1,
    )
    return chain
