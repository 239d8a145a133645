"""The master LP of column generation (on HiGHS) and the joint plans it holds.

The master maximizes ``Σ_π μ(π) c(π)`` over a distribution ``μ`` of the joint plans added so far,
subject to ``Σ μ = 1`` and the incentive rows of :mod:`baselines.colgen_incentives` (whose value
variables are its first columns).  Phase 1 minimizes instead the slack ``s`` added to every
incentive row (``F_t − D_t + s ≥ 0``): the largest gain of a trigger agent; once ``s = 0`` the
columns hold an equilibrium, ``s`` is fixed at 0 and the objective takes over (phase 2).

HiGHS's dual simplex keeps its basis between solves: new columns enter at 0, so every solve
starts from the last optimum.  Its feasibility tolerances are :data:`MASTER_TOLERANCE` rather
than HiGHS's 1e-7, which would leave the incentive rows violated by as much — the returned
equilibrium's gap.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from efce.errors import BackendError
from efce.games.game import Game
from efce.solvers.evaluation.device_gaps import FactoredDevice

from .colgen_incentives import Incentives

#: HiGHS's primal and dual feasibility tolerances in the master.
MASTER_TOLERANCE = 1e-9
#: Bytes per nonzero and per row or column that HiGHS keeps for an LP (the LP baselines'
#: rates, :data:`baselines.efce_lp.BYTES_PER_NONZERO`).
BYTES_PER_NONZERO = 96
BYTES_PER_ROW_OR_COLUMN = 160


class Master:
    """The master LP (module docstring): the value variables and phase 1's slack ``s`` first,
    then one column per joint plan, in the order added.

    Parameters
    ----------
    incentives : Incentives
    weights : ndarray
        The objective's weight of each player's utility (welfare: all ones).

    Raises
    ------
    BackendError
        HiGHS rejected the model.
    """

    def __init__(self, incentives: Incentives, weights: np.ndarray):
        import highspy

        from .backends import highs_model
        from .lp_highs import new_highs

        self.incentives = incentives
        self.weights = np.asarray(weights, dtype=np.float64)
        fixed = incentives.fixed_columns()
        self.num_fixed = fixed.shape[1]
        self.slack = self.num_fixed - 1
        rows = incentives.num_rows
        cost = np.zeros(self.num_fixed)
        cost[self.slack] = -1.0  # phase 1: minimize the largest gain
        col_lower = np.full(self.num_fixed, -np.inf)
        col_lower[self.slack] = 0.0
        row_lower, row_upper = np.zeros(rows), np.full(rows, np.inf)
        row_lower[0] = row_upper[0] = 1.0
        h = new_highs()  # HiGHS's banner never reaches stdout (lp_highs.new_highs)
        h.setOptionValue("output_flag", False)
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("presolve", "off")  # a basis to start the next solve from
        h.setOptionValue("primal_feasibility_tolerance", MASTER_TOLERANCE)
        h.setOptionValue("dual_feasibility_tolerance", MASTER_TOLERANCE)
        lp = highs_model(fixed, cost, col_lower, np.full(self.num_fixed, np.inf), row_lower, row_upper)
        if h.passModel(lp) == highspy.HighsStatus.kError:
            raise BackendError("HiGHS", "passModel rejected the column-generation master")
        self.highs = h
        self.phase = 1
        self.utilities = np.zeros((0, incentives.num_players))
        self.nonzeros = int(fixed.nnz)

    @property
    def num_columns(self) -> int:
        """Joint plans held."""
        return len(self.utilities)

    def add(self, utilities: np.ndarray, columns: sp.csc_matrix) -> None:
        """Append joint plans' columns (:meth:`~baselines.colgen_incentives.Incentives.columns`),
        costed by the phase.

        Raises
        ------
        BackendError
            HiGHS rejected them.
        """
        import highspy

        C = columns.shape[1]
        if not C:
            return
        cost = utilities @ self.weights if self.phase == 2 else np.zeros(C)
        status = self.highs.addCols(
            C,
            cost,
            np.zeros(C),
            np.full(C, highspy.kHighsInf),
            columns.nnz,
            columns.indptr.astype(np.int32),
            columns.indices.astype(np.int32),
            columns.data,
        )
        if status == highspy.HighsStatus.kError:
            raise BackendError("HiGHS", "addCols rejected the new columns")
        self.utilities = np.vstack([self.utilities, utilities])
        self.nonzeros += int(columns.nnz)

    def start_phase_two(self) -> None:
        """The columns hold an equilibrium: fix ``s = 0`` and maximize the objective."""
        h = self.highs
        h.changeColCost(self.slack, 0.0)
        h.changeColBounds(self.slack, 0.0, 0.0)
        C = self.num_columns
        if C:
            index = np.arange(self.num_fixed, self.num_fixed + C, dtype=np.int32)
            h.changeColsCost(C, index, self.utilities @ self.weights)
        self.phase = 2

    def solve(self, time_limit: float | None) -> tuple[str, float, np.ndarray, np.ndarray, float]:
        """Run the simplex from the last basis.

        Parameters
        ----------
        time_limit : float, optional
            Seconds for this solve (HiGHS's own limit counts every solve of the object).

        Returns
        -------
        status : str
            ``"optimal"``, ``"time_limit"`` or ``"interrupted"`` (a stop request).
        value : float
            The objective (phase 1: ``−s``).
        mu : ndarray
            The distribution over the columns (negative round-off clipped, renormalized).
        duals : ndarray
            The row duals (HiGHS's sign: a column's reduced cost is ``c − dualsᵀ a``).
        slack : float
            ``s``: the largest gain of a trigger agent under ``mu`` (0 in phase 2).

        Raises
        ------
        BackendError
            HiGHS failed, or found the master infeasible or unbounded (which a correct model
            never is: phase 1 is feasible from the first column on, and both phases are bounded).
        """
        from .backends import run_highs_stoppably

        h = self.highs
        # HiGHS compares its time limit with the run time it has accumulated over every solve of
        # this object, not with this solve's: the limit is that total plus the seconds given.
        # (Given alone, the master of a long run stopped with most of the run's time unspent.)
        limit = h.getRunTime() + float(time_limit) if time_limit is not None else np.inf
        h.setOptionValue("time_limit", limit)
        interrupted = run_highs_stoppably(h)
        status = h.getModelStatus()
        if interrupted:
            outcome = "interrupted"
        elif status.name == "kOptimal":
            outcome = "optimal"
        elif status.name in ("kTimeLimit", "kInterrupt"):
            outcome = "time_limit"
        else:
            raise BackendError(
                "HiGHS", f"the column-generation master ended with status {h.modelStatusToString(status)!r}"
            )
        sol = h.getSolution()
        x = np.asarray(sol.col_value)
        mu = np.maximum(x[self.num_fixed :], 0.0)
        if mu.sum() > 0:
            mu = mu / mu.sum()
        value = float(h.getInfo().objective_function_value)
        return outcome, value, mu, np.asarray(sol.row_dual), float(x[self.slack])

    def bytes(self) -> int:
        """HiGHS's memory for the master as it stands (:data:`BYTES_PER_NONZERO`)."""
        size = self.incentives.num_rows + self.num_fixed + self.num_columns
        return self.nonzeros * BYTES_PER_NONZERO + size * BYTES_PER_ROW_OR_COLUMN


class ColumnPool:
    """The joint plans of the master, each once: per player a growing bool matrix of
    sequence-form vectors (row ``k``: column ``k`` of the master)."""

    def __init__(self, game: Game):
        self.game = game
        self.sizes = [game.sequences(p).num_sequences for p in range(game.num_players)]
        self._plans = [np.zeros((64, s), dtype=bool) for s in self.sizes]
        self._count = 0
        self._seen: set[bytes] = set()

    def __len__(self) -> int:
        return self._count

    def fresh(
        self, plans: list[np.ndarray], values: np.ndarray, threshold: float, limit: int
    ) -> list[np.ndarray]:
        """Of the joint plans ``plans`` (per player bool ``[C, S_j]``) with ``values``, the best
        ``limit`` whose value exceeds ``threshold`` and that the pool does not hold yet; they
        are added to it.

        Returns
        -------
        list of ndarray
            Per player bool ``[C', S_j]``, best first.
        """
        keep: list[int] = []
        for k in np.argsort(-values, kind="stable"):
            if values[k] <= threshold or len(keep) == limit:
                break
            key = b"".join(np.packbits(x[k]).tobytes() for x in plans)
            if key not in self._seen:
                self._seen.add(key)
                keep.append(int(k))
        chosen = [np.asarray(x[keep], dtype=bool) for x in plans]
        end = self._count + len(keep)
        if end > len(self._plans[0]):
            grown = max(end, 2 * len(self._plans[0]))
            self._plans = [np.vstack([p, np.zeros((grown - len(p), p.shape[1]), bool)]) for p in self._plans]
        for store, x in zip(self._plans, chosen, strict=True):
            store[self._count : end] = x
        self._count = end
        return chosen

    def plans(self, columns: np.ndarray) -> list[np.ndarray]:
        """Per player bool ``[len(columns), S_j]``: the joint plans of the given columns."""
        return [store[: self._count][columns] for store in self._plans]

    def device(self, columns: np.ndarray, probs: np.ndarray) -> FactoredDevice:
        """The distribution ``probs`` over ``columns`` as a device: per player its distinct plans
        (an action per infoset the plan reaches, −1 elsewhere) and each joint plan's rows."""
        tables, ids = [], []
        for p, x in enumerate(self.plans(columns)):
            space = self.game.sequences(p)
            rows, seqs = np.nonzero(x[:, 1:])
            seqs += 1
            dtype = np.int8 if int(space.infoset_num_actions.max(initial=0)) <= 127 else np.int32
            table = np.full((len(x), space.num_infosets), -1, dtype=dtype)
            table[rows, space.seq_infoset[seqs]] = space.seq_action[seqs]
            if space.num_infosets:
                uniq, inverse = np.unique(table, axis=0, return_inverse=True)
            else:  # a player without decisions has one (empty) plan
                uniq, inverse = table[:1], np.zeros(len(table), dtype=np.int64)
            tables.append(uniq)
            ids.append(inverse.ravel())
        probs = np.asarray(probs, dtype=np.float64)
        return FactoredDevice(tables, np.stack(ids, axis=1).astype(np.int64), probs)
