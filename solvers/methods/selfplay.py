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
