"""Definition 3 checked without building its matrix.

The explicit system of :func:`polytopes.vsf_constraints` has ~2.5 nonzeros per relevant pair plus
its CSR indices: on the large Battleship instance (111M pairs) it alone would need several GiB.
The same constraints can be read off the relevant-pair CSR (Farina, Ling, Fang, Sandholm 2019,
Definition 3; von Stengel and Forges 2008):

* ``ξ[∅, ∅] = 1`` and ``ξ ≥ 0``;
* player 1, infoset ``I`` with parent sequence ``σ(I)``: the rows of the sequences ``(I, a)``
  share one column pattern (``∅`` and the sequences of every ``J ⇌ I``), so for every column
  ``σ2`` of that pattern ``Σ_a ξ[(I, a), σ2] = ξ[σ(I), σ2]``, with the right-hand side found by
  merging the pattern into the (sorted, larger) row of ``σ(I)``;
* player 2, infoset ``J``: in every row ``σ1`` that holds ``J``'s sequences they are adjacent,
  and ``Σ_b ξ[σ1, (J, b)] = ξ[σ1, σ(J)]`` with ``σ(J)`` found by bisection in the same row.

This reads only the pairs and the two sequence spaces — never the chain — so it remains an
independent check of the chain's iterates, in ``O(#pairs · log)`` time and no extra memory.  The
sweep is the CPU backend's (:func:`efce.solvers.backends.cpu.feasibility.definition3_violations`):
player 1's infosets are split into ranges of about equal pair counts, one per thread; the result
is a maximum, so it is the same on any number of threads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from efce.games.game import Game
from efce.games.relevant import RelevantPairs


class FeasibilityCheck:
    """``check(values, index_map=None, scale=1.0)`` → the largest violation of Definition 3 by
    ``ξ[q] = scale · values[index_map[q]]`` (``values[q]`` without a map), i.e. the same number
    as ``vsf_constraints(game, pairs).max_violation(ξ)``; :meth:`violations` checks several
    plans (e.g. a solver's iterate and its running average) in one pass over the pairs.  The
    sweep runs on the CPU ``backend`` (default: a new one, on every thread numba may use)."""

    def __init__(self, game: Game, pairs: RelevantPairs, backend=None):
        s1, s2 = game.sequences(0), game.sequences(1)
        self.pairs = pairs
        first1 = s1.infoset_first_seq.astype(np.int64)
        nact1 = s1.infoset_num_actions.astype(np.int64)
        #: What the sweep reads besides the plans: the pairs' CSR, player 1's infosets (first
        #: sequence, actions, parent sequence), player 2's sequences' infosets and infosets
        #: (actions, parent sequence).
        self.structure = (
            pairs.indptr,
            pairs.sigma2,
            first1,
            nact1,
            s1.infoset_parent_seq.astype(np.int64),
            s2.seq_infoset.astype(np.int64),
            s2.infoset_num_actions.astype(np.int64),
            s2.infoset_parent_seq.astype(np.int64),
        )
        self._no_map = np.zeros(0, dtype=np.int32)
        # Pairs in the rows of each infoset of player 1, cumulated: the work split among threads.
        indptr = np.asarray(pairs.indptr, dtype=np.int64)
        per_infoset = indptr[first1 + nact1] - indptr[first1]
        self.cum_work = np.concatenate(([0], np.cumsum(per_infoset)))
        self._backend = backend

    def __call__(self, values: np.ndarray, index_map: np.ndarray | None = None, scale: float = 1.0) -> float:
        return self.violations((values,), index_map, (scale,))[0]

    def violations(
        self,
        arrays: Sequence[np.ndarray],
        index_map: np.ndarray | None = None,
        scales: Sequence[float] | None = None,
    ) -> tuple[float, ...]:
        """The violation of each plan ``ξ_r[q] = scales[r] · arrays[r][index_map[q]]`` (all in
        the same order), in one pass: the pairs and the map are read once for all of them.

        Raises
        ------
        ValueError
            Arrays of the wrong length (without a map: not one value per relevant pair).
        AssertionError
            The relevant pairs miss a parent pair of Definition 3 (a broken pair set).
        """
        arrays = tuple(np.ascontiguousarray(a, dtype=np.float64) for a in arrays)
        factors = np.ones(len(arrays)) if scales is None else np.asarray(scales, dtype=np.float64)
        index_map = self._no_map if index_map is None else index_map
        expected = len(self.pairs) if len(index_map) == 0 else len(arrays[0])
        if any(len(a) != expected for a in arrays) or len(factors) != len(arrays):
            raise ValueError(
                f"ξ has {[len(a) for a in arrays]} entries, expected {expected}"
                + (" relevant pairs" if len(index_map) == 0 else "")
            )
        from efce.solvers.backends.protocol import cpu_backend  # the layer above, on first use

        worst, bad = cpu_backend(self._backend).definition3_violations(
            self.structure, self.cum_work, arrays, index_map, factors
        )
        if bad >= 0:
            raise AssertionError(f"row {bad} of the relevant pairs misses a parent pair of Definition 3")
        return tuple(float(w) for w in worst)
