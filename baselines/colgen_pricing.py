"""Pricing for column generation: the joint pure plan of largest reduced cost.

Given the master LP's row duals ``y`` (HiGHS's convention: a column's reduced cost is
``c_π − yᵀ a_π``), the reduced cost of a joint plan ``π`` with sequence-form vectors
``x_1, …, x_n`` is, by the columns of :mod:`baselines.colgen_incentives`,

    rc(π) = − y_0 + Σ_z [Σ_j o_j w_j(z) − Σ_i w_i(z) Φ_i(σ_i(z))] Π_j x_j[σ_j(z)]
                  + Σ_{rows r=(t,J,b) of player i} y_r Σ_{z : σ_i(z) = (J,b)} w_i(z) x_i[s_t] r_{-i}(z),

where ``o`` weighs the players' utilities in the objective (welfare: all ones; player ``k``: the
``k``-th unit vector; phase 1: zero) and ``Φ_i(σ)`` sums the incentive rows' duals of the
triggers whose following value counts the terminals at ``σ``.  It is a *multilinear polynomial*
in the players' binary sequence-form vectors: a sum of monomials
``c_m Π_j x_j[k_{m,j}]``, at most one sequence per player (``k = 0``, the empty sequence, is the
constant 1) — :class:`PricingPolynomial`, built from the duals by :class:`PolynomialBuilder`
(rows with a zero dual add nothing, so it is small when the duals are sparse).

Three ways to maximize it over joint reduced plans:

* :class:`baselines.colgen_milp.PricingMILP` (the default of ``lp-colgen``): a MILP on HiGHS
  with binary sequence-form vectors (``Σ_a x[(J, a)] = x[σ(J)]``) and continuous products whose
  rows follow the game tree (that module's docstring).  Its dual bound is an upper bound on the
  largest reduced cost even when it stops before optimality (time limit, gap);
* :func:`price_by_enumeration`: every joint reduced plan of a tiny game (:func:`reduced_plans`),
  exact, and the MILP's test oracle;
* :func:`improve_by_best_responses`: a heuristic — from given joint plans, each player in turn
  plays a best response to the others (the polynomial is linear in one player's vector, so that
  is a backward induction over her treeplex), until nothing improves.  It finds improving
  columns cheaply; only the exact steps bound the optimum.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from efce.games.arrays import concat_ranges
from efce.games.game import SequenceSpace

from .colgen_incentives import Incentives


@dataclass(frozen=True, eq=False)
class PricingPolynomial:
    """``f(x_1, …, x_n) = constant + Σ_m coef[m] Π_j x_j[keys[m, j]]`` (module docstring).

    Attributes
    ----------
    keys : int32[M, n]
        Each monomial's sequence per player (0: the player's factor is the constant 1).
    coef : float64[M]
        Nonzero coefficients; no two monomials share their keys.
    constant : float
    num_sequences : tuple of int
        Each player's sequences (the length of ``x_j``).
    triggers : int32[A, 3]
        ``(player, firing sequence, root infoset)`` of the trigger agents whose deviation rows
        have nonzero duals (the monomials ``x_i[s_t] r_{-i}(z)`` come from them; the MILP's
        formulation follows their subtrees); root −1: every root infoset (NFCCE).
    """

    keys: np.ndarray
    coef: np.ndarray
    constant: float
    num_sequences: tuple[int, ...]
    triggers: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), dtype=np.int32))

    @property
    def num_monomials(self) -> int:
        return len(self.coef)

    @property
    def degrees(self) -> np.ndarray:
        """Players with a factor other than the constant in each monomial."""
        return (self.keys > 0).sum(axis=1)

    def __call__(self, plans: list[np.ndarray]) -> np.ndarray:
        """The polynomial at ``C`` joint plans (per player bool ``[C, S_j]``): float64[C]."""
        together = np.ones((len(plans[0]), self.num_monomials), dtype=bool)
        for j, x in enumerate(plans):
            together &= x[:, self.keys[:, j]]
        return together @ self.coef + self.constant

    def linear_in(self, player: int, plans: list[np.ndarray]) -> np.ndarray:
        """``[C, S_player]``: the polynomial as a linear function of ``player``'s vector, the
        other players' plans fixed at ``plans`` (``player``'s own entry is not read); the
        constant goes to the empty sequence, which every plan plays."""
        others = np.ones((len(plans[0]), self.num_monomials), dtype=bool)
        for j, x in enumerate(plans):
            if j != player:
                others &= x[:, self.keys[:, j]]
        return self.linear_from(player, others)

    def linear_from(self, player: int, others: np.ndarray) -> np.ndarray:
        """:meth:`linear_in` from the products of the other players' factors of every monomial
        (bool ``[C, M]``)."""
        out = np.ascontiguousarray((self._sequence_maps[player] @ others.T.astype(np.float64)).T)
        out[:, 0] += self.constant
        return out

    @cached_property
    def _sequence_maps(self) -> list[sp.csr_matrix]:
        """Per player ``[S_j, M]``: each monomial's coefficient at its sequence of the player."""
        columns = np.arange(self.num_monomials)
        return [
            sp.csr_matrix((self.coef, (self.keys[:, j], columns)), shape=(size, self.num_monomials))
            for j, size in enumerate(self.num_sequences)
        ]


def merge_monomials(
    keys: np.ndarray, coef: np.ndarray, constant: float, num_sequences: tuple[int, ...], drop: float = 0.0
) -> PricingPolynomial:
    """One monomial per distinct key (coefficients summed), those of ``|coef| ≤ drop`` dropped;
    a monomial whose keys are all 0 joins the constant.

    Returns
    -------
    PricingPolynomial
    """
    keys = np.ascontiguousarray(keys, dtype=np.int32).reshape(-1, len(num_sequences))
    coef = np.asarray(coef, dtype=np.float64)
    radix = np.cumprod([1, *num_sequences[:-1]], dtype=object)
    if float(np.prod(num_sequences, dtype=np.float64)) < 2.0**62:
        codes = keys.astype(np.int64) @ np.asarray(radix, dtype=np.int64)
        uniq, inverse = np.unique(codes, return_inverse=True)
        first = np.zeros(len(uniq), dtype=np.int64)
        first[inverse[::-1]] = np.arange(len(codes) - 1, -1, -1)
        merged_keys = keys[first]
    else:
        merged_keys, inverse = np.unique(keys, axis=0, return_inverse=True)
    merged = np.bincount(inverse.ravel(), weights=coef, minlength=len(merged_keys))
    empty = ~(merged_keys > 0).any(axis=1)
    constant = float(constant + merged[empty].sum())
    keep = ~empty & (np.abs(merged) > drop)
    return PricingPolynomial(
        np.ascontiguousarray(merged_keys[keep]), merged[keep], constant, tuple(int(s) for s in num_sequences)
    )


class PolynomialBuilder:
    """Turns the master's row duals into the :class:`PricingPolynomial` of the reduced cost
    (module docstring), for one :class:`~baselines.colgen_incentives.Incentives`."""

    def __init__(self, incentives: Incentives):
        self.incentives = incentives
        td = incentives.terminals
        self.num_sequences = tuple(pl.num_sequences for pl in incentives.players)
        # Per player: the terminals at each sequence (CSR over the sequences).
        self._ptr, self._terminals = [], []
        for p, pl in enumerate(incentives.players):
            order = np.argsort(td.sequences[:, p], kind="stable")
            ptr = np.zeros(pl.num_sequences + 1, dtype=np.int64)
            np.cumsum(np.bincount(td.sequences[:, p], minlength=pl.num_sequences), out=ptr[1:])
            self._ptr.append(ptr)
            self._terminals.append(order.astype(np.int64))

    def __call__(self, duals: np.ndarray, objective: np.ndarray, drop: float = 0.0) -> PricingPolynomial:
        """The reduced cost of every joint plan as a polynomial.

        Parameters
        ----------
        duals : ndarray
            The master's row duals (:attr:`Incentives.num_rows`).
        objective : ndarray
            ``o``: the weight of each player's utility in the master's objective.
        drop : float
            Monomials with ``|coef| ≤ drop`` are left out (0: none).

        Returns
        -------
        PricingPolynomial
        """
        inc = self.incentives
        td = inc.terminals
        term_coef = td.weights @ np.asarray(objective, dtype=np.float64)
        keys, coefs, triggers = [td.sequences], [term_coef], []
        for i, pl in enumerate(inc.players):
            y_inc = duals[inc.incentive_row(i, 0) : inc.incentive_row(i, pl.num_triggers)]
            y_dev = duals[inc.deviation_row(i, 0) : inc.deviation_row(i, pl.num_rows)]
            f = pl.row_follows
            phi = np.bincount(
                pl.row_sequence[f], weights=y_inc[pl.row_trigger[f]], minlength=pl.num_sequences
            )
            term_coef -= td.weights[:, i] * phi[td.sequences[:, i]]
            active = np.flatnonzero(y_dev != 0.0)
            if not len(active):
                continue
            t = np.unique(pl.row_trigger[active])
            triggers.append(np.stack([np.full(len(t), i), pl.trigger_fire[t], pl.trigger_root[t]], axis=1))
            seq = pl.row_sequence[active]
            ptr = self._ptr[i]
            counts = ptr[seq + 1] - ptr[seq]
            z = self._terminals[i][concat_ranges(ptr[seq], counts)]
            rows = np.repeat(active, counts)
            k = td.sequences[z].copy()
            k[:, i] = pl.trigger_fire[pl.row_trigger[rows]]
            keys.append(k)
            coefs.append(y_dev[rows] * td.weights[z, i])
        poly = merge_monomials(
            np.concatenate(keys), np.concatenate(coefs), -float(duals[0]), self.num_sequences, drop
        )
        listed = np.concatenate(triggers).astype(np.int32) if triggers else poly.triggers
        return replace(poly, triggers=listed)

    def count_monomials(self) -> int:
        """Most monomials a polynomial can have before merging: one per terminal, and one per
        terminal and deviation row at its sequence (every dual nonzero)."""
        inc = self.incentives
        total = inc.terminals.num_terminals
        for i, pl in enumerate(inc.players):
            per_seq = np.bincount(pl.row_sequence, minlength=pl.num_sequences)
            total += int(per_seq[inc.terminals.sequences[:, i]].sum())
        return total


# ----------------------------------------------------------------------------- treeplexes
@dataclass(frozen=True)
class _Level:
    """The infosets of one depth of a treeplex, for vectorized backward induction: their first
    sequences and action counts, their parent sequences, their sequences concatenated with
    where each infoset starts in that list (for ``reduceat``), and the infosets ordered by
    parent (``by_parent``) with the distinct parents and where each one's run starts (their
    values are summed into the parent sequence)."""

    first: np.ndarray
    actions: np.ndarray
    parent: np.ndarray
    sequences: np.ndarray
    offsets: np.ndarray
    by_parent: np.ndarray
    parents: np.ndarray
    runs: np.ndarray


class Treeplex:
    """One player's treeplex arranged for batched best responses (backward induction, one
    vectorized step per depth)."""

    def __init__(self, space: SequenceSpace):
        self.num_sequences = space.num_sequences
        depth = space.infoset_depth
        first = space.infoset_first_seq.astype(np.int64)
        k = space.infoset_num_actions.astype(np.int64)
        parent = space.infoset_parent_seq.astype(np.int64)
        self.levels: list[_Level] = []
        for d in range(int(depth.max()) + 1 if space.num_infosets else 0):
            J = np.flatnonzero(depth == d)
            offsets = np.cumsum(k[J]) - k[J]
            by_parent = np.argsort(parent[J], kind="stable")
            parents, runs = np.unique(parent[J][by_parent], return_index=True)
            sequences = concat_ranges(first[J], k[J])
            self.levels.append(
                _Level(first[J], k[J], parent[J], sequences, offsets, by_parent, parents, runs)
            )

    def best_responses(self, values: np.ndarray) -> np.ndarray:
        """The pure plans maximizing ``⟨values[b], x⟩`` over the treeplex, for each row ``b``:
        bool ``[B, S]`` (sequence-form vectors), the first best action on ties."""
        B = values.shape[0]
        acc = np.array(values, dtype=np.float64, copy=True)
        choices = []
        for level in reversed(self.levels):  # deepest first: children before parents
            v = acc[:, level.sequences]
            best = np.maximum.reduceat(v, level.offsets, axis=1)
            ties = v >= np.repeat(best, level.actions, axis=1)
            index = np.where(ties, np.arange(len(level.sequences))[None, :], len(level.sequences))
            choices.append(np.minimum.reduceat(index, level.offsets, axis=1) - level.offsets[None, :])
            acc[:, level.parents] += np.add.reduceat(best[:, level.by_parent], level.runs, axis=1)
        plans = np.zeros((B, self.num_sequences), dtype=bool)
        plans[:, 0] = True
        rows = np.arange(B)[:, None]
        for level, action in zip(self.levels, reversed(choices), strict=True):  # top-down
            plans[rows, level.first[None, :] + action] = plans[:, level.parent]
        return plans


# ----------------------------------------------------------------------------- heuristic
def improve_by_best_responses(
    poly: PricingPolynomial, treeplexes: list[Treeplex], plans: list[np.ndarray], max_sweeps: int = 25
) -> tuple[list[np.ndarray], np.ndarray]:
    """From the joint plans ``plans`` (per player bool ``[B, S_j]``), let each player in turn
    best-respond to the others in ``poly`` until a sweep improves none of them by more than
    1e-12 (or ``max_sweeps``): each step is exact for its player, so the value never falls.

    Equal starts are run once; each sweep runs only the starts the last one improved; each
    player's factors ``x_j[k_{m,j}]`` of every monomial are kept (``[B, M]``) and refreshed when
    the player moves, so a sweep gathers each player's plan once.

    Returns
    -------
    plans : list of ndarray
        The joint plans reached (one per distinct start).
    values : ndarray
        ``poly`` at them.
    """
    joined = np.concatenate([np.asarray(x, dtype=bool) for x in plans], axis=1)
    distinct = np.sort(np.unique(joined, axis=0, return_index=True)[1])
    plans = [np.array(np.asarray(x, dtype=bool)[distinct], copy=True) for x in plans]
    keys = poly.keys
    factors = [x[:, keys[:, j]] for j, x in enumerate(plans)]

    def evaluate(rows: np.ndarray) -> np.ndarray:
        together = factors[0][rows].copy()
        for f in factors[1:]:
            together &= f[rows]
        return together @ poly.coef + poly.constant

    value = evaluate(np.arange(len(distinct)))
    active = np.arange(len(distinct))
    for _ in range(max_sweeps):
        for i, tp in enumerate(treeplexes):
            if tp.num_sequences == 1 or not len(active):
                continue
            others = np.ones((len(active), poly.num_monomials), dtype=bool)
            for j, f in enumerate(factors):
                if j != i:
                    others &= f[active]
            plans[i][active] = tp.best_responses(poly.linear_from(i, others))
            factors[i][active] = plans[i][active][:, keys[:, i]]
        after = evaluate(active)
        improved = after > value[active] + 1e-12
        value[active] = after
        active = active[improved]
        if not len(active):
            break
    return plans, value


# ----------------------------------------------------------------------------- enumeration
def reduced_plans(space: SequenceSpace) -> np.ndarray:
    """Every reduced pure plan of a treeplex as a sequence-form indicator vector: bool ``[K, S]``
    (``K`` = :func:`solvers.methods.trigger.reduced_plan_count`; for tiny games), bottom-up:
    an infoset's options are its actions, each with a plan below it, and the plans below a
    sequence are the products of its child infosets' options."""
    first, k, parent = space.infoset_first_seq, space.infoset_num_actions, space.infoset_parent_seq
    children: list[list[int]] = [[] for _ in range(space.num_sequences)]
    for J in range(space.num_infosets):
        children[int(parent[J])].append(J)
    options: list[list[tuple[int, ...]]] = [[] for _ in range(space.num_infosets)]

    def below(seq: int) -> list[tuple[int, ...]]:
        """The plans below ``seq``: the sequences each plays strictly under it."""
        out: list[tuple[int, ...]] = [()]
        for J in children[seq]:
            out = [a + b for a in out for b in options[J]]
        return out

    # Top-down numbering: an infoset's children come after it, so they are done first.
    for J in range(space.num_infosets - 1, -1, -1):
        options[J] = [
            (s, *rest) for s in range(int(first[J]), int(first[J]) + int(k[J])) for rest in below(s)
        ]
    listed = below(0)
    out = np.zeros((len(listed), space.num_sequences), dtype=bool)
    out[:, 0] = True
    for r, seqs in enumerate(listed):
        out[r, list(seqs)] = True
    return out


@dataclass(frozen=True)
class PricingResult:
    """What one pricing step found.

    Attributes
    ----------
    plans : list of ndarray
        Per player bool ``[C, S_j]``: the joint plans found, best first.
    values : ndarray
        Their reduced costs (the polynomial, evaluated exactly).
    bound : float or None
        An upper bound on the largest reduced cost of any joint plan (exact steps), None for
        the heuristic.
    status : str
        ``"optimal"``, ``"time_limit"``, ``"interrupted"`` (the bound is still valid), or
        ``"heuristic"``.
    seconds : float
    nodes : int
        Branch-and-bound nodes (MILP), joint plans (enumeration) or 0.
    """

    plans: list[np.ndarray]
    values: np.ndarray
    bound: float | None
    status: str
    seconds: float
    nodes: int = 0


def price_by_enumeration(
    poly: PricingPolynomial, player_plans: list[np.ndarray], keep: int = 1
) -> PricingResult:
    """The largest reduced cost over every joint plan, each player's plans given (bool
    ``[K_j, S_j]``, :func:`reduced_plans`): the polynomial at all ``Π_j K_j`` joint plans, the
    players folded in one at a time (memory ``Π_{j<n} K_j · M``).

    Returns
    -------
    PricingResult
        The ``keep`` best joint plans; the bound is the maximum itself.
    """
    started = time.perf_counter()
    n = len(player_plans)
    # factor[j][k, m] = x_j^(k)[keys[m, j]]; fold players 0..n-2 into one joint index.
    counts = [len(x) for x in player_plans]
    # One extra monomial of coefficient 0 keeps every shape nonempty.
    keys = np.vstack([poly.keys, np.zeros((1, n), dtype=poly.keys.dtype)])
    coef = np.append(poly.coef, 0.0)
    joint = player_plans[0][:, keys[:, 0]].astype(np.float64) * coef[None, :]
    for j in range(1, n - 1):
        f = player_plans[j][:, keys[:, j]]
        joint = (joint[:, None, :] * f[None, :, :]).reshape(-1, len(coef))
    last = player_plans[n - 1][:, keys[:, n - 1]].astype(np.float64) if n > 1 else None
    values = (joint @ last.T).ravel() if last is not None else joint.sum(axis=1)
    values = values + poly.constant
    best = np.argsort(-values, kind="stable")[:keep]
    index = np.unravel_index(best, counts)
    plans = [player_plans[j][index[j]] for j in range(n)]
    top = float(values[best[0]])
    return PricingResult(plans, values[best], top, "optimal", time.perf_counter() - started, len(values))
