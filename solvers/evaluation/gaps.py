"""Exact "max deviation" of a two-player correlation plan ξ (the y-axis of Figure 3 in Farina,
Ling, Fang, Sandholm 2019, and the stopping criterion of the EFCE solvers), for each solution
concept (:mod:`efce.concepts`).

For player ``i`` and trigger sequence ``σ̂ = (Î, â)`` (von Stengel & Forges 2008; Farina et al.
2019c, the saddle-point formulation):

* following value ``F(σ̂) = Σ_{z : σ_i(z) ⪰ σ̂} p_c(z) u_i(z) ξ[σ_1(z), σ_2(z)]``;
* deviation value ``D(σ̂) = max_y Σ_{z ∈ Z(Î)} p_c(z) u_i(z) y[σ_i(z)] ξ[σ̂, σ_{-i}(z)]`` over
  sequence-form strategies ``y`` of player ``i``'s subtree rooted at ``Î`` (the trigger agent
  deviates when recommended ``â`` at ``Î`` and keeps the opponent's correlation with ``σ̂``);

and the max deviation is ``max(0, max_{i, σ̂} D(σ̂) − F(σ̂))`` in raw payoff units.  The coarse
concepts change the trigger agents (Celli, Marchesi, Farina, Gatti 2020, Definitions 3-4): an
EFCCE agent ``Î`` deviates on reaching ``Î``, ``D(Î)`` against ``ξ[σ(Î), σ_{-i}(z)]`` and
``F(Î) = Σ_{z ∈ Z(Î)} p_c(z) u_i(z) ξ[σ(z)]``; an NFCCE agent commits at the root: its gain is
the sum of those of the EFCCE agents at the player's root infosets (``σ(Î) = ∅``; the terminals
below no infoset of the player cancel out), which a best response over the whole tree
factorizes into.  ``D`` is a
best response computed by backward induction over the subtree, for every trigger, in a compute
backend's sweep (:meth:`~efce.solvers.backends.protocol.ComputeBackend.gap_sweeps`; on the CPU
:mod:`efce.solvers.backends.cpu.gaps`) that reads ``ξ[σ̂, σ_{-i}(z)]`` through the trigger tables
of :mod:`solvers.evaluation.payoff_operator`; one evaluation costs
``O(Σ_σ̂ (|subtree(Î)| + |Z(Î)|))``, about one product with ``Aᵀ``.  On the CPU the trigger
infosets are split into ranges of about equal work, one per thread; every gain is computed by one
thread in the serial order, so the report is the same on any thread count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from efce.concepts import DEFAULT_CONCEPT
from efce.games.game import Game
from efce.games.relevant import RelevantPairs, relevant_pairs, require_two_players
from efce.solvers.backends import ComputeBackend, get_backend
from efce.solvers.evaluation.payoff_operator import TriggerTables, trigger_tables


@dataclass
class GapReport:
    """``gap`` = max deviation of the concept; ``gains[i][t]`` per trigger of player ``i`` (EFCE:
    indexed by the trigger sequence, NaN for the empty one; EFCCE: by infoset; NFCCE: one);
    ``utilities`` per player; ``worst`` = (player, trigger) attaining the gap."""

    gap: float
    gains: list[np.ndarray]
    utilities: np.ndarray
    worst: tuple[int, int]
    concept: str = DEFAULT_CONCEPT

    @property
    def welfare(self) -> float:
        return float(self.utilities.sum())


class EFCEGapEvaluator:
    """Precomputes the per-game structures once; call it on any ξ (relevant-pair order).  The
    gaps are those of ``concept`` (default EFCE), the concept of ``tables`` when given.

    The structures are the :class:`solvers.evaluation.payoff_operator.TriggerTables` (terminals in
    preorder and the line table that locates ``ξ[σ̂, σ_{-i}(z)]``); the EFCE solver passes the
    ones its payoff operator already holds (in Ξ's chain-entry order), so nothing per pair is
    built twice.  Calling the evaluator on ξ in relevant-pair order needs ``pairs`` and, for
    tables in entry order, ``entry_of_pair`` (each relevant pair's entry); :meth:`evaluate`, which
    reads values in the tables' own order, needs neither — the solver's loop builds its evaluator
    from the tables alone, so it holds no array per relevant pair.  The sweeps run on ``backend``
    (default: the CPU on every thread numba may use).
    """

    def __init__(
        self,
        game: Game,
        pairs: RelevantPairs | None = None,
        tables: TriggerTables | None = None,
        entry_of_pair: np.ndarray | None = None,
        backend: ComputeBackend | str | None = None,
        concept: str | None = None,
    ):
        require_two_players(game, "the correlation-plan gap")
        self.game = game
        if tables is None:
            pairs = relevant_pairs(game) if pairs is None else pairs
            tables = trigger_tables(game, pairs, concept=concept or DEFAULT_CONCEPT)
        elif concept is not None and concept != tables.concept:
            raise ValueError(f"trigger tables of {tables.concept}, asked for {concept} gaps")
        self.concept = tables.concept
        self.pairs = pairs
        self.tables = tables
        self._entry_of_pair = entry_of_pair
        self.terminal_pair = self.tables.terminal_pair
        self.weighted = self.tables.weighted  # p_c(z) u_i(z)
        self._sweeps = get_backend(backend).gap_sweeps(self.tables)

    def utilities(self, xi: np.ndarray) -> np.ndarray:
        """Expected utility of each player under ξ: ``Σ_z p_c(z) u_i(z) ξ[σ(z)]``."""
        return self.weighted.T @ xi[self.terminal_pair]

    def __call__(self, xi: np.ndarray) -> GapReport:
        """The report of ``ξ`` given in relevant-pair order.

        Raises
        ------
        ValueError
            ``ξ`` is not one value per relevant pair, or the evaluator was built without the
            pairs (or, over entry-order tables, without ``entry_of_pair``): use :meth:`evaluate`.
        """
        if self.pairs is None or (self.tables.entry_order and self._entry_of_pair is None):
            raise ValueError(
                "this evaluator reads ξ in Ξ's chain-entry order only (evaluate); ξ in "
                "relevant-pair order needs the pairs and the pair → entry map"
            )
        xi = np.ascontiguousarray(xi, dtype=np.float64)
        if xi.shape != (len(self.pairs),):
            raise ValueError(f"ξ has shape {xi.shape}, expected ({len(self.pairs)},) relevant pairs")
        if self._entry_of_pair is None:
            return self.evaluate(xi)
        values = np.empty(len(xi))
        values[self._entry_of_pair] = xi
        return self.evaluate(values)

    def evaluate(self, values: np.ndarray, scale: float = 1.0) -> GapReport:
        """The report of ``ξ = scale · values``, with ``values`` in the tables' order (Ξ's chain
        entries when built with its entry map, else relevant pairs): the solver passes its running
        sum of iterates and ``1 / Σ weights``, so the average plan is never materialized.  Gains
        are linear in ξ, so they are computed on ``values`` and scaled."""
        slot_gains, utilities = self._sweeps.gains(values)
        gains = [self._per_trigger(g) for g in slot_gains]
        if scale != 1.0:
            for g in gains:
                g *= scale
        best = [(float(np.nanmax(g)) if np.any(~np.isnan(g)) else -np.inf) for g in gains]
        player = int(np.argmax(best))
        gap = max(0.0, best[player])
        worst = int(np.nanargmax(gains[player])) if np.isfinite(best[player]) else -1
        return GapReport(gap, gains, scale * utilities, (player, worst), self.concept)

    def _per_trigger(self, slot_gains: np.ndarray) -> np.ndarray:
        """A player's gains per trigger from its gains per trigger slot: EFCE's slots are its
        nonempty sequences (NaN first, for ∅); EFCCE's its infosets; NFCCE's slots are its root
        infosets, whose gains add up to the one trigger's."""
        if self.concept == "efce":
            return np.concatenate(([np.nan], slot_gains))
        if self.concept == "nfcce":
            return slot_gains.sum(keepdims=True) if len(slot_gains) else slot_gains
        return slot_gains

    def welfare(self, values: np.ndarray, scale: float = 1.0) -> float:
        """``Σ_z p_c(z) (u_1 + u_2)(z) ξ[σ(z)]`` for ``ξ = scale · values`` in the tables' order
        (as :meth:`evaluate`; one pass over the terminals, no temporary)."""
        return scale * self._sweeps.welfare(values)


def efce_gap(game: Game, xi: np.ndarray, pairs: RelevantPairs | None = None) -> float:
    """Max deviation of the correlation plan ``xi`` (relevant-pair order), raw payoff units."""
    return EFCEGapEvaluator(game, pairs)(xi).gap


def concept_gap(game: Game, xi: np.ndarray, concept: str, pairs: RelevantPairs | None = None) -> float:
    """The ``concept`` gap (:mod:`efce.concepts`) of the correlation plan ``xi`` (relevant-pair
    order), raw payoff units: the largest gain of the concept's trigger agents, clipped at 0."""
    return EFCEGapEvaluator(game, pairs, concept=concept)(xi).gap


def plan_utilities(game: Game, xi: np.ndarray, pairs: RelevantPairs | None = None) -> np.ndarray:
    """Expected utilities of both players under the correlation plan ``xi``."""
    return EFCEGapEvaluator(game, pairs).utilities(xi)
