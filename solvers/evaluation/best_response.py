"""Best responses over sequence-form polytopes by backward induction.

``max_{x ∈ X} ⟨u, x⟩`` over the sequence-form polytope ``X`` of one player (the linear
maximization oracle of section 3.2 of Farina, Ling, Fang, Sandholm 2019, specialised to the
chain of section 3.1): bottom-up, ``V(I) = max_a (u[(I, a)] + Σ_{I' below (I, a)} V(I'))``, and
the value is ``u[∅] + Σ_{root infosets} V(I)``.
"""

from __future__ import annotations

import numba
import numpy as np

from efce.games.game import SequenceSpace


def best_response(space: SequenceSpace, utility: np.ndarray) -> tuple[float, np.ndarray]:
    """Value and a pure sequence-form maximizer of ``⟨utility, x⟩`` over player's polytope."""
    utility = np.ascontiguousarray(utility, dtype=np.float64)
    if utility.shape != (space.num_sequences,):
        raise ValueError(f"utility has shape {utility.shape}, expected ({space.num_sequences},)")
    value, x = _best_response(
        space.infoset_first_seq.astype(np.int64),
        space.infoset_num_actions.astype(np.int64),
        space.infoset_parent_seq.astype(np.int64),
        utility,
    )
    return float(value), x


@numba.njit(cache=True)
def _best_response(first, num_actions, parent_seq, utility):
    n_inf = len(first)
    acc = utility.copy()  # acc[σ] = u[σ] + values of the infosets below σ
    choice = np.zeros(n_inf, np.int64)
    for inf in range(n_inf - 1, -1, -1):
        best, arg = -np.inf, 0
        for a in range(num_actions[inf]):
            v = acc[first[inf] + a]
            if v > best:
                best, arg = v, a
        choice[inf] = arg
        acc[parent_seq[inf]] += best
    x = np.zeros(len(utility))
    x[0] = 1.0
    for inf in range(n_inf):  # top-down
        if x[parent_seq[inf]] > 0.0:
            x[first[inf] + choice[inf]] = x[parent_seq[inf]]
    return acc[0], x
