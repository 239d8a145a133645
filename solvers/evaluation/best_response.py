"""Best responses over sequence-form polytopes by backward induction.

``max_{x ∈ X} ⟨u, x⟩`` over the sequence-form polytope ``X`` of one player (the linear
maximization oracle of section 3.2 of Farina, Ling, Fang, Sandholm 2019, specialised to the
chain of section 3.1): bottom-up, ``V(I) = max_a (u[(I, a)] + Σ_{I' below (I, a)} V(I'))``, and
the value is ``u[∅] + Σ_{root infosets} V(I)`` (the CPU backend's
:func:`efce.solvers.backends.cpu.gaps.best_response`).
"""

from __future__ import annotations

import numpy as np

from efce.games.game import SequenceSpace
from efce.solvers.backends import ComputeBackend
from efce.solvers.backends.protocol import cpu_backend


def best_response(
    space: SequenceSpace, utility: np.ndarray, backend: ComputeBackend | None = None
) -> tuple[float, np.ndarray]:
    """Value and a pure sequence-form maximizer of ``⟨utility, x⟩`` over player's polytope
    (ties go to the first action), computed on the CPU ``backend`` (default: a new one).

    Raises
    ------
    ValueError
        ``utility`` is not one value per sequence.
    """
    utility = np.ascontiguousarray(utility, dtype=np.float64)
    if utility.shape != (space.num_sequences,):
        raise ValueError(f"utility has shape {utility.shape}, expected ({space.num_sequences},)")
    value, x = cpu_backend(backend).best_response(
        space.infoset_first_seq.astype(np.int64),
        space.infoset_num_actions.astype(np.int64),
        space.infoset_parent_seq.astype(np.int64),
        utility,
    )
    return float(value), x
