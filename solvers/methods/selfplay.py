"""Self-play of two regret minimizers on a bilinear saddle point: the one loop body shared by
CFR/CFR+ (two sequence-form chains) and the EFCE saddle point (the correlation-plan chain against
the trigger-deviation chain).

Each player ``i`` observes the loss ``ℓ_i = L_i(z_{-i})`` that the opponent's current point
induces (minimizers observe losses, :mod:`solvers.regret.protocol`):

* **alternating** updates (CFR+, and section 5 of Farina, Ling, Fang, Sandholm 2019): player 1
  answers player 0's freshly updated point; **simultaneous** updates (vanilla CFR) use both
  previous points;
* **linear** averaging weights iteration ``t`` by ``t`` (CFR+), **uniform** by 1, **quadratic**
  by ``t²`` (Brown & Sandholm 2019's DCFR uses ``t^γ``, γ = 2) — in general ``t^power``.

The loop allocates nothing per iteration: each player's buffer receives its loss, is handed to
its engine as work space (``observe(..., overwrite=True)``) and then receives the new point,
which the engine adds into the player's running sum as it writes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from efce.solvers.regret.engine import ChainEngine

#: ``loss(opponent_point, out)`` writes a player's loss into ``out``.
LossOperator = Callable[[np.ndarray, np.ndarray], None]


class SelfPlay:
    """Two :class:`~efce.solvers.regret.engine.ChainEngine` players and their running averages.

    Parameters
    ----------
    engines : pair of ChainEngine
        Their compute backends hold the loop's buffers
        (:attr:`~efce.solvers.regret.engine.ChainEngine.backend`).
    losses : pair of LossOperator
        ``losses[i](z_{1-i}, out)`` writes player ``i``'s loss against the opponent's point.
    alternating : bool
        Alternating (True) or simultaneous updates.
    linear_averaging : bool
        Weights ``t`` (True) or 1 in the averages.
    power : float, optional
        Weights ``t^power`` instead (0 uniform, 1 linear, 2 quadratic); overrides
        ``linear_averaging``.
    averaged : pair of bool
        Which players keep a running sum (a player whose average is never read needs none).
    narrow : bool, optional
        Keep each running sum in its engine's ``sum_dtype`` (float32 on big chains run by the
        compiled passes) instead of float64.  The average is then feasible only to float32
        precision; :meth:`~efce.polytopes.chain.Chain.rescaled_point` of the running sum gives a
        float64 point of the chain.  Points and losses stay float64.

    Attributes
    ----------
    points : list of ndarray
        The current points (overwritten every iteration).
    sums : list of ndarray or None
        ``Σ_t w_t z_t`` per averaged player; the average is ``sums[i] / weight``.
    weight : float
        ``Σ_t w_t``.
    """

    def __init__(
        self,
        engines: tuple[ChainEngine, ChainEngine],
        losses: tuple[LossOperator, LossOperator],
        *,
        alternating: bool = True,
        linear_averaging: bool = True,
        averaged: tuple[bool, bool] = (True, True),
        power: float | None = None,
        narrow: bool = False,
    ):
        self.engines = engines
        self.losses = losses
        self.alternating = alternating
        self.linear_averaging = linear_averaging
        self.power = (1.0 if linear_averaging else 0.0) if power is None else float(power)
        dims = [e.chain.num_entries for e in engines]
        sum_dtypes = [e.sum_dtype if narrow else np.float64 for e in engines]
        # Every buffer is its engine's backend's array (numpy on the CPU).
        self.points = [e.backend.empty(d) for e, d in zip(engines, dims, strict=True)]
        self.sums = [
            e.backend.zeros(d, dtype) if keep else None
            for e, d, dtype, keep in zip(engines, dims, sum_dtypes, averaged, strict=True)
        ]
        # Simultaneous updates need both losses before either point changes.
        self._scratch = (
            None if alternating else [e.backend.empty(d) for e, d in zip(engines, dims, strict=True)]
        )
        self.weight = 0.0
        for engine, point in zip(engines, self.points, strict=True):
            engine.recommend(out=point)

    def step(self, t: int) -> None:
        """Iteration ``t`` (1-based): both players observe and move; the averages take the new
        points with weight ``t`` (linear) or 1."""
        (e0, e1), (loss0, loss1), (z0, z1) = self.engines, self.losses, self.points
        w = float(t) ** self.power
        # Each new point is added into its running sum as the engine writes it (no second pass).
        a0, a1 = ((total, w) if total is not None else None for total in self.sums)
        if self.alternating:
            loss0(z1, z0)
            e0.observe(z0, overwrite=True)
            e0.recommend(out=z0, accumulate=a0)
            loss1(z0, z1)
            e1.observe(z1, overwrite=True)
            e1.recommend(out=z1, accumulate=a1)
        else:
            assert self._scratch is not None  # allocated for simultaneous updates
            b0, b1 = self._scratch
            loss0(z1, b0)
            loss1(z0, b1)
            e0.observe(b0, overwrite=True)
            e1.observe(b1, overwrite=True)
            e0.recommend(out=z0, accumulate=a0)
            e1.recommend(out=z1, accumulate=a1)
        self.weight += w

    def idle_buffer(self, size: int) -> np.ndarray | None:
        """``size`` float64 entries that the next :meth:`step` overwrites before it reads them,
        or None if no such buffer is that long: scratch space between steps without a new
        allocation.  With alternating updates it is player 0's point (the next step writes its
        loss there first), so read that point before writing here; with simultaneous updates,
        a loss buffer."""
        for buffer in self._scratch if self._scratch is not None else [self.points[0]]:
            if buffer.size >= size:
                return buffer[:size]
        return None

    def average(self, player: int) -> np.ndarray:
        """A new array: the player's average point so far.

        Raises
        ------
        ValueError
            The player's running sum is not kept (``averaged`` was False for them).
        """
        total = self.sums[player]
        if total is None:
            raise ValueError(f"player {player}'s average is not kept (averaged=False)")
        return total / self.weight


class Deviator(Protocol):
    """A player whose loss is computed inside its own passes (a compute backend's fused
    deviator, :meth:`~efce.solvers.backends.cpu.backend.CPUBackend.fused_deviator`): it writes
    the opponent's loss ``A y`` for its current point and observes its own loss from the
    opponent's point, never holding its point or loss in full."""

    #: dtype of the running sum of its points a loop may keep (float32 on big ``Y``).
    sum_dtype: type

    def scatter(
        self,
        out: np.ndarray,
        total: np.ndarray | None = None,
        w: float = 0.0,
        point: np.ndarray | None = None,
    ) -> None:
        """The opponent's loss for the current point into ``out`` (``total += w · y`` too)."""

    def observe(self, opponent_point: np.ndarray) -> None:
        """Observe the loss the opponent's point induces."""

    def best_response(self, values: np.ndarray) -> float:
        """``min_y ⟨loss of values, y⟩`` over the player's polytope."""


class DeviatorPlay:
    """:class:`SelfPlay` of a :class:`~efce.solvers.regret.engine.ChainEngine` (player 0, losses
    ``loss(y, out)`` written by player 1) against a :class:`Deviator` (player 1), the same updates
    and averages with the same numbers: the EFCE saddle point's loop with the deviator fused
    with the payoff operator.

    Player 1's point ``y_t`` exists only inside its passes, so its running sum (``averaged[1]``)
    takes ``w_t · y_t`` when ``y_t`` is next computed — at the next step's first pass, or at
    :meth:`flush` — in the same order as :class:`SelfPlay` adds it.

    Attributes are :class:`SelfPlay`'s: ``points`` (player 0's only: ``[x]``), ``sums``
    (``[Σ w x, Σ w y or None]``), ``weight``.
    """

    def __init__(
        self,
        engine: ChainEngine,
        deviator: Deviator,
        *,
        alternating: bool = True,
        average_deviator: bool = False,
        power: float = 1.0,
        narrow: bool = False,
        deviator_entries: int = 0,
    ):
        self.engine, self.deviator = engine, deviator
        self.alternating = alternating
        self.power = float(power)
        n = engine.chain.num_entries
        backend = engine.backend
        self.points = [backend.empty(n)]
        sum_dtypes = (engine.sum_dtype, deviator.sum_dtype) if narrow else (np.float64, np.float64)
        self.sums = [
            backend.zeros(n, sum_dtypes[0]),
            backend.zeros(deviator_entries, sum_dtypes[1]) if average_deviator else None,
        ]
        # Simultaneous updates: player 0's loss goes here while the deviator reads its point.
        self._scratch = None if alternating else backend.empty(n)
        self._pending: float | None = None  # the weight of a point not added into sums[1] yet
        self.weight = 0.0
        engine.recommend(out=self.points[0])

    def step(self, t: int) -> None:
        """Iteration ``t`` (1-based), as :meth:`SelfPlay.step`."""
        engine, deviator, x = self.engine, self.deviator, self.points[0]
        w = float(t) ** self.power
        total, pending = self._take_pending()
        if self.alternating:
            deviator.scatter(x, total, pending)
            engine.observe(x, overwrite=True)
            engine.recommend(out=x, accumulate=(self.sums[0], w))
            deviator.observe(x)
        else:
            assert self._scratch is not None  # allocated for simultaneous updates
            deviator.scatter(self._scratch, total, pending)
            deviator.observe(x)  # the previous point, before it changes
            engine.observe(self._scratch, overwrite=True)
            engine.recommend(out=x, accumulate=(self.sums[0], w))
        self.weight += w
        self._pending = w if self.sums[1] is not None else None

    def _take_pending(self) -> tuple[np.ndarray | None, float]:
        pending, self._pending = self._pending, None
        return (None, 0.0) if pending is None else (self.sums[1], pending)

    def flush(self) -> None:
        """Add the current point into player 1's running sum now (before it is read)."""
        total, pending = self._take_pending()
        if total is not None:
            self.deviator.scatter(_NOTHING, total, pending)

    def idle_buffer(self, size: int) -> np.ndarray | None:
        """As :meth:`SelfPlay.idle_buffer`: player 0's point (alternating; the next step writes
        the loss there first) or the loss scratch (simultaneous), if ``size`` fits."""
        buffer = self._scratch if self._scratch is not None else self.points[0]
        return buffer[:size] if buffer.size >= size else None


_NOTHING = np.zeros(0)
