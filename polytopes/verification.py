"""Verification that a chain of scaled extensions describes exactly the polytope Ξ.

Four independent checks against the explicit von Stengel–Forges system (Definition 3 of Farina,
Ling, Fang, Sandholm 2019):

(a) *inside*: random points of the chain (uniform simplex weights and random vertices) satisfy
    every constraint of Definition 3 and ξ ≥ 0;
(b) *redundancy*: every constraint not used by a step of the chain is listed and shown implied —
    the used rows span the same space as all rows (rank test), and the unused rows vanish on the
    sampled points;
(c) *onto*: vertices of Ξ found by an LP with random objectives are reproduced by the chain
    through a round trip of its simplex coordinates;
(d) *dimension*: the free parameters of the chain, ``Σ_k (|X_k| − 1)`` over simplex steps,
    equal the dimension ``N − rank(C)`` of the affine hull of Ξ.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from efce.errors import ChainError
from efce.games.game import Game

from .chain import SIMPLEX, Chain
from .vsf import VSFConstraints, vsf_constraints


@dataclass
class Check:
    """One check of :func:`verify`: its name, whether it passed, and a one-line detail."""

    name: str
    passed: bool
    detail: str

    def __post_init__(self):
        self.passed = bool(self.passed)

    def to_dict(self) -> dict:
        """``{"passed": ..., "detail": ...}``, as ``efce decompose --json`` reports each check."""
        return {"passed": self.passed, "detail": self.detail}


@dataclass
class VerificationReport:
    """What :func:`verify` found: every :class:`Check` in order, and the von Stengel–Forges
    constraints that no step of the chain used."""

    checks: list[Check] = field(default_factory=list)
    unused_constraints: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def to_dict(self) -> dict:
        return {c.name: c.to_dict() for c in self.checks}

    def __str__(self) -> str:
        lines = [f"{'PASS' if c.passed else 'FAIL'}  {c.name}: {c.detail}" for c in self.checks]
        return "\n".join(lines)


def used_constraint_rows(chain: Chain, constraints: VSFConstraints) -> np.ndarray:
    """The row of Definition 3 that each step of ``chain`` enforces.

    A split of ``ξ[σ(I), σ2]`` among ``(ξ[(I, a), σ2])_a`` enforces the row of ``(I, σ2)``; a sum
    ``ξ[σ1, σ2] = Σ_a ξ[(I*, a), σ2]`` enforces the row of ``(I*, σ2)`` (and symmetrically for
    player 2)."""
    pairs = constraints.pairs
    s1_of, s2_of = pairs.sigma1, pairs.sigma2
    natural = chain.natural_index
    first_target = natural[chain.target_ptr[:-1]]
    first_source = natural[chain.source[chain.source_ptr[:-1]]]
    t1, t2 = s1_of[first_target].astype(np.int64), s2_of[first_target].astype(np.int64)
    u1, u2 = s1_of[first_source].astype(np.int64), s2_of[first_source].astype(np.int64)
    game_spaces = constraints.spaces
    simplex = chain.kind == SIMPLEX
    # Which player's infoset the constraint belongs to, and the fixed opponent sequence.
    player1_split = simplex & (u2 == t2)
    player1_sum = ~simplex & (u2 == t2)
    is_player1 = player1_split | player1_sum
    infoset = np.where(
        player1_split,
        game_spaces[0].seq_infoset[t1],
        np.where(
            player1_sum,
            game_spaces[0].seq_infoset[u1],
            np.where(simplex, game_spaces[1].seq_infoset[t2], game_spaces[1].seq_infoset[u2]),
        ),
    )
    other = np.where(is_player1, t2, t1)
    player = np.where(is_player1, 0, 1)
    return constraints.rows_of(player, infoset, other)


def verify(
    chain: Chain,
    game: Game,
    *,
    samples: int = 4,
    lp_vertices: int = 4,
    seed: int = 0,
    tolerance: float = 1e-12,
    max_dense: int = 3000,
    max_lp: int = 200_000,
    constraints: VSFConstraints | None = None,
) -> VerificationReport:
    """Run checks (a)–(d); see the module docstring.  Sizes above ``max_dense`` entries skip the
    rank computations, above ``max_lp`` the LP vertices (reported as skipped, not passed)."""
    report = VerificationReport()
    constraints = vsf_constraints(game) if constraints is None else constraints
    n = len(constraints.pairs)
    rng = np.random.default_rng(seed)
    rank_cache: list[int] = []

    def rank_of_all() -> int:
        if not rank_cache:
            rank_cache.append(_rank(constraints.matrix))
        return rank_cache[0]

    structure_ok, detail = _check_structure(chain, n)
    report.checks.append(Check("structure", structure_ok, detail))
    if not structure_ok:
        return report

    # (a) random points inside.
    worst = 0.0
    points = []
    for i in range(samples):
        x = chain.random_point(rng, vertex=(i % 2 == 1))
        xi = chain.to_natural(x, n)
        points.append(xi)
        worst = max(worst, constraints.max_violation(xi))
    report.checks.append(
        Check(
            "random_points",
            worst <= tolerance,
            f"{samples} random points (interior and vertices): max violation {worst:.3g} "
            f"(tolerance {tolerance:g})",
        )
    )

    # (b) unused constraints are implied.
    rows = used_constraint_rows(chain, constraints)
    distinct = len(np.unique(rows[rows >= 0]))
    unused = np.setdiff1d(np.arange(1, constraints.num_rows), rows)
    report.unused_constraints = [constraints.describe(int(r), game) for r in unused[:50]]
    residual_unused = max(
        (np.abs(constraints.residual(xi)[unused]).max(initial=0.0) for xi in points), default=0.0
    )
    if np.any(rows < 0) or distinct != chain.num_steps:
        report.checks.append(
            Check(
                "unused_constraints",
                False,
                "a step does not correspond to a distinct constraint of Definition 3",
            )
        )
    elif n <= max_dense:
        import scipy.sparse as sp  # here: importing the package (every solve does) loads no scipy

        used_matrix = sp.vstack([constraints.matrix[[0]], constraints.matrix[rows]])
        rank_used = _rank(used_matrix)
        rank_all = rank_of_all()
        ok = rank_used == rank_all and residual_unused <= tolerance
        report.checks.append(
            Check(
                "unused_constraints",
                ok,
                f"{len(unused)} of {constraints.num_rows} constraints unused; rank of used rows "
                f"{rank_used} = rank of all rows {rank_all}: {'yes' if rank_used == rank_all else 'NO'}; "
                f"unused rows on samples: max residual {residual_unused:.3g}",
            )
        )
    else:
        report.checks.append(
            Check(
                "unused_constraints",
                residual_unused <= tolerance,
                f"{len(unused)} of {constraints.num_rows} constraints unused; max residual on samples "
                f"{residual_unused:.3g} (rank test skipped: {n} entries > {max_dense})",
            )
        )

    # (c) LP vertices reproduced by the chain.
    if n <= max_lp and lp_vertices > 0:
        # Imported here: scipy.optimize adds ~27 MiB to every process that imports polytopes.
        from scipy.optimize import linprog

        worst_round_trip = 0.0
        for _ in range(lp_vertices):
            c = rng.normal(size=n)
            res = linprog(
                -c, A_eq=constraints.matrix, b_eq=constraints.rhs, bounds=(0, None), method="highs-ds"
            )
            if res.status != 0:
                report.checks.append(Check("lp_vertices", False, f"the LP failed: {res.message}"))
                break
            vertex = np.maximum(res.x, 0.0)
            x = chain.from_natural(vertex)
            back = chain.point(chain.weights_of(x))
            worst_round_trip = max(worst_round_trip, float(np.abs(back - x).max()))
        else:
            report.checks.append(
                Check(
                    "lp_vertices",
                    worst_round_trip <= 1e-9,
                    f"{lp_vertices} LP vertices of Ξ (random objectives) reproduced through the chain's "
                    f"simplex coordinates: max error {worst_round_trip:.3g}",
                )
            )
    else:
        report.checks.append(
            Check("lp_vertices", True, f"skipped: {n} entries > {max_lp} (LP too large for a check)")
        )

    # (d) dimension of the affine hull.
    free = int((chain.step_size[chain.kind == SIMPLEX] - 1).sum())
    if n <= max_dense:
        rank_all = rank_of_all()
        ok = free == n - rank_all
        report.checks.append(
            Check(
                "dimension",
                ok,
                f"chain free parameters {free}; N − rank(C) = {n} − {rank_all} = {n - rank_all}",
            )
        )
    else:
        report.checks.append(
            Check(
                "dimension", True, f"chain free parameters {free}; rank skipped ({n} entries > {max_dense})"
            )
        )
    return report


def _check_structure(chain: Chain, n: int) -> tuple[bool, str]:
    try:
        chain.validate()
    except ChainError as exc:
        return False, f"invalid chain: {exc}"
    if chain.num_entries != n:
        return False, f"the chain has {chain.num_entries} entries, Ξ has {n} relevant pairs"
    seen = np.zeros(n, dtype=bool)
    seen[chain.natural_index] = True
    if not seen.all():
        return False, "some relevant pairs are never filled (entries are not a permutation)"
    return True, (
        f"{chain.num_entries} entries = relevant pairs; {chain.num_simplex_steps} simplex and "
        f"{chain.num_singleton_steps} singleton steps, depth {chain.depth}"
    )


def _rank(matrix) -> int:
    dense = matrix.toarray() if hasattr(matrix, "toarray") else np.asarray(matrix)  # sparse or dense
    return int(np.linalg.matrix_rank(dense))
