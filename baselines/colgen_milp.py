"""The pricing MILP of column generation: maximize a :class:`~baselines.colgen_pricing.PricingPolynomial`
over joint reduced pure plans, on HiGHS.

Variables: each player's binary sequence-form vector ``x_j`` (``Σ_a x_j[(J, a)] = x_j[σ(J)]``,
``x_j[∅] = 1``) and one continuous ``y[k] ∈ [0, 1]`` per *key* ``k`` — one sequence per
player, read as the product ``Π_j x_j[k_j]`` — of two or more nonempty sequences (a key of one
is an ``x``, the empty key the constant 1).  The polynomial's monomials are keys, so the
objective is linear.

The keys and their constraints follow the game tree, the way the correlation plan of the
two-player LPs follows it (relevant sequence pairs and the von Stengel–Forges constraints,
Definition 3), so that the LP relaxation is tight where the sequences are:

* the *reach* of a node ``u`` is the key ``τ(u) = (σ_1(u), …, σ_n(u))``; at a node ``u`` of
  player ``j`` in infoset ``J``, with children ``c_a``::

      Σ_a y[τ(c_a)] = y[τ(u)],

  and for every key and every nonempty factor ``y[k] ≤ x_j[k_j]``.  Both hold for the products
  (the sequence-form flow multiplied by the other factors; a product is at most each factor),
  and at binary ``x`` they force every ``y`` to its product, top-down from the root's constant
  (the child of the action ``x_j`` plays gets the parent's value, the others 0);
* a deviation monomial ``x_i[s_t] r_{-i}(z)`` of trigger ``t`` of player ``i`` is the key
  ``τ_t(z)``: ``τ(z)`` with player ``i``'s sequence replaced by ``s_t``.  The same flows, taken
  over the subtrees below ``t``'s root infoset (the whole tree for NFCCE) at the nodes of the
  other players, with player ``i``'s moves and chance copying their value down, define them; at
  the root infoset's nodes ``v`` they start from a reach key (``τ_t(v)`` is ``τ(v)`` for EFCCE,
  ``τ`` of ``v``'s child by ``â`` for EFCE's ``(Î, â)``, the constant for NFCCE).

Only the triggers whose deviation rows carry nonzero duals (``PricingPolynomial.triggers``)
add their subtrees, and identical rows are written once.  The largest model (every trigger
active) is counted from the tree before anything is built (:func:`milp_size_bounds`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from efce.errors import BackendError, MemoryBudgetExceeded
from efce.games.arrays import concat_ranges
from efce.games.game import Game
from efce.games.resources.memory import gib

from .colgen_master import BYTES_PER_NONZERO, BYTES_PER_ROW_OR_COLUMN
from .colgen_pricing import PricingPolynomial, PricingResult

#: A HiGHS MILP keeps about this many copies of its model (presolved, LP relaxation, search).
MILP_COPIES = 2


def milp_bytes(columns: int, rows: int, nonzeros: int) -> int:
    """Bytes HiGHS needs for a pricing MILP of this size (:data:`MILP_COPIES` copies at the LP
    baselines' rates, :data:`baselines.colgen_master.BYTES_PER_NONZERO`)."""
    return MILP_COPIES * (nonzeros * BYTES_PER_NONZERO + (columns + rows) * BYTES_PER_ROW_OR_COLUMN)


def milp_size_bounds(game: Game, concept: str) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``(columns, rows, nonzeros)`` of the smallest and of the largest pricing MILP of ``game``
    for ``concept``, counted from the tree: every MILP has the reach keys of the nodes and their
    flows (counted exactly); the largest also a copy of the region of every trigger agent
    (the nodes below its root infoset, or the whole tree for NFCCE), counted without merging
    equal keys.  Each key of ``d`` factors has a flow row (``1 +`` its siblings' nonzeros) and
    ``d`` bound rows of two nonzeros.

    Returns
    -------
    tuple
        ``(least, most)``.
    """
    n = game.num_players
    seq = np.stack([np.asarray(game.node_sequences(p), dtype=np.int64) for p in range(n)], axis=1)
    sizes = np.array([game.sequences(p).num_sequences for p in range(n)], dtype=np.int64)
    x = int((sizes - 1).sum())
    x_rows = sum(game.sequences(p).num_infosets for p in range(n))
    x_nonzeros = x + x_rows
    _, first = np.unique(seq @ np.cumprod(np.concatenate([[1], sizes[:-1]])), return_index=True)
    reach = int(((seq[first] > 0).sum(axis=1) >= 2).sum())
    decision = np.flatnonzero(np.asarray(game.player) >= 0)
    kids = int(np.asarray(game.num_children)[decision].sum())
    least = (x + reach, x_rows + len(decision) + n * reach, x_nonzeros + kids + len(decision) + 2 * n * reach)
    # every node's subtree size, for the trigger regions
    size = np.ones(game.num_nodes, dtype=np.int64)
    for lo, hi in reversed(game.levels[1:]):
        np.add.at(size, np.asarray(game.parent[lo:hi]), size[lo:hi])
    region = 0
    for p in range(n):
        mine = np.flatnonzero(np.asarray(game.player) == p)
        if concept == "nfcce":
            region += game.num_nodes if len(mine) else 0
        else:
            per_node = np.asarray(game.num_children)[mine] if concept == "efce" else 1
            region += int((size[mine] * per_node).sum())
    most = (
        least[0] + region,
        least[1] + region * (1 + n),
        least[2] + region * (2 + 2 * n),
    )
    return least, most


class PricingMILP:
    """The game tree arranged for building pricing MILPs of any polynomial of ``game``'s
    sequences (module docstring)."""

    def __init__(self, game: Game):
        self.game = game
        n = game.num_players
        self.spaces = [game.sequences(p) for p in range(n)]
        self.num_sequences = np.array([s.num_sequences for s in self.spaces], dtype=np.int64)
        self.radix = np.ones(n, dtype=np.int64)
        if n > 1:
            self.radix[1:] = np.cumprod(self.num_sequences[:-1])
        if float(np.prod(self.num_sequences, dtype=np.float64)) * max(1, game.num_nodes) >= 2.0**62:
            raise BackendError(
                "HiGHS", f"the pricing MILP of {game.name} has too many sequence tuples to index"
            )
        seq = np.stack([np.asarray(game.node_sequences(p), dtype=np.int64) for p in range(n)], axis=1)
        self.node_seq = seq
        self.node_code = seq @ self.radix
        self.player = np.asarray(game.player, dtype=np.int64)
        self.infoset = np.asarray(game.infoset, dtype=np.int64)
        self.first_child = np.asarray(game.first_child, dtype=np.int64)
        self.num_children = np.asarray(game.num_children, dtype=np.int64)
        # A decision node's infoset numbered over all players (flow rows are written once each).
        self.infoset_offset = np.zeros(n + 1, dtype=np.int64)
        np.cumsum([s.num_infosets for s in self.spaces], out=self.infoset_offset[1:])
        self.first_seq = [s.infoset_first_seq.astype(np.int64) for s in self.spaces]
        self.first_seq_global = np.concatenate([np.zeros(0, np.int64), *self.first_seq])
        self.infoset_nodes = [game.infoset_nodes(p) for p in range(n)]
        self.x_offset = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(self.num_sequences - 1, out=self.x_offset[1:])

    # ------------------------------------------------------------------ regions
    def _regions(self, triggers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The decision nodes of the reach flow (copy 0: every decision node) and of each
        trigger's subtrees (copy ``c + 1``: the nodes of players other than the trigger's below
        its root infoset, or everywhere for root −1) as pairs ``(copy, node)``."""
        copies, nodes = [np.zeros(1, np.int64)], [np.zeros(1, np.int64)]  # the reach flow: the root
        for c, (player, _, root) in enumerate(triggers):
            if root < 0:
                start = np.zeros(1, np.int64)
            else:
                ptr, members = self.infoset_nodes[player]
                start = members[ptr[root] : ptr[root + 1]].astype(np.int64)
            copies.append(np.full(len(start), c + 1, dtype=np.int64))
            nodes.append(start)
        frontier_c, frontier_u = np.concatenate(copies), np.concatenate(nodes)
        out_c, out_u = [], []
        owner = (
            np.concatenate([[-1], np.asarray(triggers[:, 0], dtype=np.int64)])
            if len(triggers)
            else np.array([-1])
        )
        while len(frontier_u):
            k = self.num_children[frontier_u]
            decision = self.player[frontier_u] >= 0
            keep = decision & (self.player[frontier_u] != owner[frontier_c])
            out_c.append(frontier_c[keep])
            out_u.append(frontier_u[keep])
            frontier_c = np.repeat(frontier_c, k)
            frontier_u = concat_ranges(self.first_child[frontier_u], k)
        return np.concatenate(out_c), np.concatenate(out_u)

    def _codes(self, keys: np.ndarray) -> np.ndarray:
        return np.asarray(keys, dtype=np.int64) @ self.radix

    def _decode(self, codes: np.ndarray) -> np.ndarray:
        return (codes[:, None] // self.radix[None, :]) % self.num_sequences[None, :]

    # ------------------------------------------------------------------ the model
    def build(self, poly: PricingPolynomial) -> tuple[Any, int, np.ndarray]:
        """The MILP of ``poly`` as a ``highspy.HighsLp`` and the number of ``x`` columns.

        Returns
        -------
        tuple
            ``(lp, num_x, y_keys)``: the model, its ``x`` columns (player by player, sequences
            1..S_j−1) and the key of each ``y`` column after them.
        """
        from .backends import highs_model

        triggers = np.asarray(poly.triggers, dtype=np.int64).reshape(-1, 3)
        copy, node = self._regions(triggers)
        # parent key of each flow: τ(u), with the trigger's player's sequence set to its firing one
        code = self.node_code[node].copy()
        shifted = copy > 0
        if shifted.any():
            tp = triggers[copy[shifted] - 1]
            code[shifted] += (tp[:, 1] - self.node_seq[node[shifted], tp[:, 0]]) * self.radix[tp[:, 0]]
        j = self.player[node]
        flow_id = self.infoset_offset[j] + self.infoset[node]
        _, first = np.unique(code * int(self.infoset_offset[-1]) + flow_id, return_index=True)
        code, j, flow_id, node = code[first], j[first], flow_id[first], node[first]
        k = self.num_children[node]
        # children keys: the mover's own sequence replaced by (J, a)
        flow_rows = np.repeat(np.arange(len(code)), k)
        child_code = np.repeat(code - self.node_seq[node, j] * self.radix[j], k) + (
            concat_ranges(self.first_seq_global[flow_id], k)
        ) * np.repeat(self.radix[j], k)
        all_codes = np.unique(np.concatenate([code, child_code, self._codes(poly.keys), [0]]))
        keys = self._decode(all_codes)
        degree = (keys > 0).sum(axis=1)
        num_x = int(self.x_offset[-1])
        is_y = degree >= 2
        y_index = np.cumsum(is_y) - 1
        num_y = int(is_y.sum())
        # column of each key: x column for degree 1, y column for ≥ 2, −1 for the constant
        column = np.full(len(all_codes), -1, dtype=np.int64)
        single = degree == 1
        who = np.argmax(keys[single] > 0, axis=1)
        column[single] = self.x_offset[who] + keys[single, who] - 1
        column[is_y] = num_x + y_index[is_y]

        def col(codes: np.ndarray) -> np.ndarray:
            return column[np.searchsorted(all_codes, codes)]

        rows_r, rows_c, rows_v, lower, upper = [], [], [], [], []
        row = 0
        # x flows: Σ_a x[(J, a)] − x[σ(J)] = 0 (= 1 at a root infoset)
        for p, space in enumerate(self.spaces):
            kk = space.infoset_num_actions.astype(np.int64)
            seqs = concat_ranges(self.first_seq[p], kk)
            rows_r.append(row + np.repeat(np.arange(space.num_infosets), kk))
            rows_c.append(self.x_offset[p] + seqs - 1)
            rows_v.append(np.ones(len(seqs)))
            parent = space.infoset_parent_seq.astype(np.int64)
            inner = np.flatnonzero(parent > 0)
            rows_r.append(row + inner)
            rows_c.append(self.x_offset[p] + parent[inner] - 1)
            rows_v.append(-np.ones(len(inner)))
            rhs = np.where(parent > 0, 0.0, 1.0)
            lower.append(rhs)
            upper.append(rhs)
            row += space.num_infosets
        # tree flows: Σ_a y[child_a] − y[parent] = 0, constants to the right-hand side
        parent_col, kid_col = col(code), col(child_code)
        r = np.concatenate([row + flow_rows, row + np.arange(len(code))])
        c = np.concatenate([kid_col, parent_col])
        v = np.concatenate([np.ones(len(kid_col)), -np.ones(len(parent_col))])
        constant = c < 0
        rhs = -np.bincount(r[constant] - row, weights=v[constant], minlength=len(code))
        rows_r.append(r[~constant])
        rows_c.append(c[~constant])
        rows_v.append(v[~constant])
        lower.append(rhs)
        upper.append(rhs)
        row += len(code)
        # y[k] ≤ x_p[k_p] for every nonempty factor
        yk = keys[is_y]
        m, factor = np.nonzero(yk > 0)
        rr = row + np.arange(len(m))
        rows_r += [rr, rr]
        rows_c += [num_x + m, self.x_offset[factor] + yk[m, factor] - 1]
        rows_v += [np.ones(len(m)), -np.ones(len(m))]
        lower.append(np.full(len(m), -np.inf))
        upper.append(np.zeros(len(m)))
        row += len(m)
        A = sp.csc_matrix(
            (np.concatenate(rows_v), (np.concatenate(rows_r), np.concatenate(rows_c))),
            shape=(row, num_x + num_y),
        )
        cost = np.zeros(num_x + num_y)
        pc = col(self._codes(poly.keys))
        np.add.at(cost, pc[pc >= 0], poly.coef[pc >= 0])
        lp = highs_model(
            A,
            cost,
            np.zeros(num_x + num_y),
            np.ones(num_x + num_y),
            np.concatenate(lower),
            np.concatenate(upper),
            offset=poly.constant + float(poly.coef[pc < 0].sum()),
            integer=num_x,
        )
        return lp, num_x, yk

    def solve(
        self,
        poly: PricingPolynomial,
        *,
        start: list[np.ndarray] | None = None,
        time_limit: float | None = None,
        abs_gap: float = 0.0,
        rel_gap: float = 0.0,
        memory_budget: int | None = None,
    ) -> PricingResult:
        """Maximize ``poly`` over joint reduced plans.

        Parameters
        ----------
        poly : PricingPolynomial
        start : list of ndarray, optional
            A joint plan (per player bool ``[1, S_j]``) handed to HiGHS as its first incumbent.
        time_limit : float, optional
            Seconds for the solve.
        abs_gap, rel_gap : float
            HiGHS stops once its incumbent is within these of its dual bound (``mip_abs_gap``,
            ``mip_rel_gap``).
        memory_budget : int, optional
            Bytes: a model whose :func:`milp_bytes` exceed them is refused before HiGHS gets it.

        Returns
        -------
        PricingResult
            Every incumbent HiGHS found, the best last, each evaluated exactly by ``poly`` (none
            when it stopped before finding one); HiGHS's dual bound as ``bound``: an upper bound
            on the polynomial over every joint plan, also when the solve stopped early; and the
            status (a stop request ends the solve at once: ``interrupted``).

        Raises
        ------
        MemoryBudgetExceeded
            The model is larger than ``memory_budget``.
        BackendError
            HiGHS rejected the model or ended it otherwise.
        """
        import highspy

        from .backends import run_highs_stoppably
        from .lp_highs import new_highs

        started = time.perf_counter()
        lp, num_x, y_keys = self.build(poly)
        if lp.num_col_ == 0:  # nobody decides: the one joint plan
            plans = [np.ones((1, 1), dtype=bool) for _ in self.spaces]
            value = float(poly(plans)[0])
            return PricingResult(plans, np.array([value]), value, "optimal", time.perf_counter() - started)
        need = milp_bytes(lp.num_col_, lp.num_row_, len(lp.a_matrix_.value_))
        if memory_budget is not None and need > memory_budget:
            raise MemoryBudgetExceeded(
                f"the pricing MILP of {self.game.name} needs about {gib(need)}, over the memory "
                f"budget of {gib(memory_budget)}"
            )
        h = new_highs()  # HiGHS's banner never reaches stdout (lp_highs.new_highs)
        h.setOptionValue("output_flag", False)
        if time_limit is not None:
            h.setOptionValue("time_limit", max(float(time_limit), 1e-3))
        h.setOptionValue("mip_abs_gap", float(abs_gap))
        h.setOptionValue("mip_rel_gap", float(rel_gap))
        h.setOptionValue("mip_improving_solution_save", True)  # every incumbent: more columns
        if h.passModel(lp) == highspy.HighsStatus.kError:
            raise BackendError("HiGHS", "passModel rejected the pricing MILP")
        if start is not None:
            x = np.concatenate([s[0, 1:] for s in start]).astype(np.float64)
            y = np.ones(len(y_keys), dtype=bool)
            for p, s in enumerate(start):
                y &= s[0, y_keys[:, p]]
            sol = highspy.HighsSolution()
            sol.col_value = np.concatenate([x, y.astype(np.float64)])
            sol.value_valid = True
            h.setSolution(sol)
        interrupted = run_highs_stoppably(h)
        status = h.getModelStatus()
        name = status.name
        if interrupted:
            outcome = "interrupted"
        elif name == "kOptimal":
            outcome = "optimal"
        elif name in ("kTimeLimit", "kInterrupt", "kSolutionLimit", "kIterationLimit"):
            outcome = "time_limit"
        else:
            raise BackendError(
                "HiGHS", f"the pricing MILP ended with status {h.modelStatusToString(status)!r}"
            )
        info = h.getInfo()
        sol = h.getSolution()
        found = [np.asarray(s.col_value)[:num_x] for s in h.getSavedMipSolutions()]
        if sol.value_valid and info.primal_solution_status >= 1:
            found.append(np.asarray(sol.col_value)[:num_x])
        plans = [np.zeros((len(found), space.num_sequences), dtype=bool) for space in self.spaces]
        if found:
            chosen = np.array(found) > 0.5
            for p, plan in enumerate(plans):
                plan[:, 0] = True
                plan[:, 1:] = chosen[:, self.x_offset[p] : self.x_offset[p + 1]]
        values = poly(plans) if found else np.zeros(0)
        return PricingResult(
            plans,
            values,
            float(info.mip_dual_bound),
            outcome,
            time.perf_counter() - started,
            int(info.mip_node_count),
        )
