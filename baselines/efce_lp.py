"""The EFCE linear program of von Stengel and Forges (2008) as one sparse model.

Variables are the correlation plan ξ over the relevant sequence pairs (Farina, Ling, Fang,
Sandholm 2019, Definition 2) with ``ξ ≥ 0, C ξ = b`` (Definition 3, built by
:func:`polytopes.vsf_constraints` — the one constraint builder of the project), plus one free
*value variable* ``v[σ̂, I]`` per trigger sequence ``σ̂ = (Î, â)`` of a player ``i`` and infoset
``I`` of ``i`` in the subtree rooted at ``Î`` (``Î`` included).

Incentive constraints (the saddle-point formulation of Farina et al. 2019c, section 2.1 of the
scaled-extension paper, with the trigger agent's inner maximization dualized by backward
induction):

* for every ``(σ̂, I)`` and action ``a ∈ A_I``::

      v[σ̂, I] ≥ Σ_{z : σ_i(z) = (I, a)} p_c(z) u_i(z) ξ[σ̂, σ_{-i}(z)] + Σ_{I' : σ(I') = (I, a)} v[σ̂, I']

  (the deviation value of the trigger agent that deviates at ``Î`` after being recommended
  ``â``, while the opponent's recommendations stay correlated with ``σ̂``);
* for every ``σ̂``: the following value ``F(σ̂) = Σ_{z : σ_i(z) ⪰ σ̂} p_c(z) u_i(z)
  ξ[σ_1(z), σ_2(z)] ≥ v[σ̂, Î]``.

Objectives: social welfare, one player's utility, or none (feasibility); optionally
``welfare ≥ τ``.  Everything is assembled with array operations (no Python loop per pair or per
terminal); the loops that remain run over tree depth.

Before anything large is allocated, :func:`estimate_efce_lp` counts variables, rows and nonzeros
exactly from the tree and estimates the bytes a solver needs; :func:`build_efce_lp` raises
:class:`ModelTooLarge` (a :class:`games.GameError`) when that exceeds the memory budget (default
60% of ``MemAvailable``), instead of letting the process be killed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from efce.concepts import CONCEPTS, DEFAULT_CONCEPT, check_concept, gap_key
from efce.errors import MemoryBudgetExceeded, ModelTooLarge
from efce.games.game import Game
from efce.games.payoffs import terminal_map
from efce.games.relevant import RelevantPairs, connected_infosets, count_relevant_pairs, relevant_pairs
from efce.games.resources.memory import check_budget, default_memory_budget, gib
from efce.polytopes.decompose import check_decomposable
from efce.polytopes.vsf import VSFConstraints, vsf_constraints
from efce.solvers.options import CONCEPT, EQUILIBRIUM_REPORT, TIME_LIMIT, VERBOSE, WELFARE_THRESHOLD, Option
from efce.solvers.warm_up import compiling_time

#: Bytes per nonzero and per row/column assumed by the estimate: the COO triplets of the build
#: (int64 row + int64 column + float64 value = 24 B), the CSC handed to the solver (12–16 B), the
#: solver's own column- and row-wise copies (~24 B), and a presolved copy (~24 B).  Factorization
#: fill-in (LU for simplex, Cholesky for the interior-point method) is NOT included: the
#: estimate is a lower bound on what the solve needs.
BYTES_PER_NONZERO = 96
BYTES_PER_ROW_OR_COLUMN = 160
#: cvxpy canonicalizes into further copies of the matrices.
CVXPY_FACTOR = 2.5


#: The LP objective option of ``lp-highs``, ``lp-pdlp`` and ``lp-cvxpy`` (:func:`build_efce_lp`'s
#: ``objective``, a player written ``player1``/``player2``).
OBJECTIVE = Option(
    "objective",
    str,
    "LP objective: social welfare, none (feasibility) or one player's utility",
    choices=("welfare", "feasibility", "player1", "player2"),
    default="welfare",
)
#: The options every LP method takes (each module adds its own).
LP_OPTIONS = (TIME_LIMIT, WELFARE_THRESHOLD, OBJECTIVE, CONCEPT, VERBOSE)
#: The payoff-valued numbers of an LP front end's result (:attr:`~efce.solvers.options.Method.payoff_info`).
LP_REPORT = EQUILIBRIUM_REPORT | {"objective_value", "welfare_threshold"}


def lp_arguments(options: dict[str, Any]) -> dict[str, Any]:
    """The keywords ``objective`` (a player as 0/1), ``time_limit``, ``welfare_threshold`` and
    ``concept`` and ``verbose`` of the LP solvers, from validated :data:`LP_OPTIONS`.

    Returns
    -------
    dict
        Keyword arguments of :func:`~baselines.solve_lp_highs` and its siblings.
    """
    return dict(
        objective={"player1": 0, "player2": 1}.get(options["objective"], options["objective"]),
        time_limit=options["time_limit"],
        welfare_threshold=options["welfare_threshold"],
        concept=options["concept"],
        verbose=options["verbose"],
    )


@dataclass(frozen=True)
class ModelSize:
    """Exact counts (nonzeros: before merging duplicate coefficients, an upper bound) and the
    estimated bytes a solver needs (see :data:`BYTES_PER_NONZERO`)."""

    xi_variables: int
    value_variables: int
    equality_rows: int
    inequality_rows: int
    nonzeros: int

    @property
    def variables(self) -> int:
        return self.xi_variables + self.value_variables

    @property
    def rows(self) -> int:
        return self.equality_rows + self.inequality_rows

    @property
    def bytes(self) -> int:
        return self.nonzeros * BYTES_PER_NONZERO + (self.variables + self.rows) * BYTES_PER_ROW_OR_COLUMN

    def describe(self) -> str:
        return (
            f"{self.variables:,} variables ({self.xi_variables:,} relevant pairs ξ + "
            f"{self.value_variables:,} value variables), {self.rows:,} rows, "
            f"{self.nonzeros:,} nonzeros, about {gib(self.bytes)}"
        )

    def as_dict(self) -> dict:
        return dict(
            variables=self.variables,
            xi_variables=self.xi_variables,
            value_variables=self.value_variables,
            rows=self.rows,
            equality_rows=self.equality_rows,
            inequality_rows=self.inequality_rows,
            nonzeros=self.nonzeros,
            estimated_bytes=self.bytes,
        )


# --------------------------------------------------------------------------- per-player tables
@dataclass
class _PlayerTables:
    """Trigger structure of one player.

    ``parent_inf[I]`` is the infoset of σ(I) (-1 at roots); ``cum_actions[I]`` is
    ``Σ_{Î ⪯ I} |A_Î|`` over I and its ancestors, i.e. the number of triggers whose subtree holds I.
    """

    parent_inf: np.ndarray
    cum_actions: np.ndarray
    depth: np.ndarray


def _player_tables(game: Game, i: int) -> _PlayerTables:
    from efce.polytopes.triggers import triggers_above

    space = game.sequences(i)
    parent_inf = space.seq_infoset[space.infoset_parent_seq].astype(np.int64)
    return _PlayerTables(parent_inf, triggers_above(space), space.infoset_depth.astype(np.int64))


def _vsf_counts(game: Game) -> tuple[int, int]:
    """Rows and nonzeros of Definition 3 without building it (mirrors :func:`vsf_constraints`)."""
    s = (game.sequences(0), game.sequences(1))
    c = [a.astype(np.int64) for a in connected_infosets(game)]
    rows, nnz = 1, 1
    for p in (0, 1):
        o = 1 - p
        kp = s[p].infoset_num_actions.astype(np.int64)
        ko = s[o].infoset_num_actions.astype(np.int64)
        rows += s[p].num_infosets + int(ko[c[o]].sum())
        nnz += int((kp + 1).sum()) + int(((kp[c[p]] + 1) * ko[c[o]]).sum())
    return rows, nnz


def estimate_efce_lp(game: Game, *, extra_rows: int = 0, concept: str = DEFAULT_CONCEPT) -> ModelSize:
    """Exact variable/row counts and nonzero upper bound of :func:`build_efce_lp` for
    ``concept``, computed from the tree alone (nothing of the model's size is allocated)."""
    check_decomposable(game)
    check_concept(concept)
    tm_seq = np.stack([game.node_sequences(p)[game.terminal_nodes] for p in (0, 1)], axis=1)
    eq_rows, nnz = _vsf_counts(game)
    values = ineq = 0
    for i in (0, 1):
        space = game.sequences(i)
        t = _player_tables(game, i)
        k = space.infoset_num_actions.astype(np.int64)
        # Per infoset, the triggers whose deviation tree holds it, and the tree roots' variables.
        if concept == "efce":
            cover, triggers = t.cum_actions, space.num_sequences - 1
            roots = triggers
        elif concept == "efcce":
            cover, triggers = t.depth + 1, space.num_infosets
            roots = triggers
        else:
            cover, triggers = np.ones(space.num_infosets, np.int64), min(space.num_infosets, 1)
            roots = int((space.infoset_parent_seq == 0).sum())
        n_val = int(cover.sum())
        n_dev = int((k * cover).sum())
        values += n_val
        ineq += n_dev + triggers
        own = tm_seq[:, i].astype(np.int64)
        own = own[own > 0]
        own_inf = space.seq_infoset[own]
        nnz += n_dev + (n_val - roots)  # v[t, I] and child values
        nnz += int(cover[own_inf].sum())  # ξ[r(t), σ_{-i}(z)] terms
        follows = len(own) if concept == "nfcce" else int((t.depth[own_inf] + 1).sum())
        nnz += follows + roots  # following values and −v at the roots
    n_pairs = count_relevant_pairs(game)
    return ModelSize(n_pairs, values, eq_rows, ineq + extra_rows, nnz + extra_rows * len(tm_seq))


def evaluate_plan(game: Game, model: EFCELP, xi: np.ndarray) -> dict:
    """Welfare, utilities, the EFCE, EFCCE and NFCCE gaps (project evaluator; the model's concept
    is the one its incentive rows enforce, the others are reported beside it) and the
    Definition-3 violation of ξ."""
    from efce.solvers.evaluation.gaps import EFCEGapEvaluator

    gaps = {gap_key(c): float(EFCEGapEvaluator(game, model.pairs, concept=c)(xi).gap) for c in CONCEPTS}
    utilities = model.utility_matrix @ xi
    return dict(
        concept=model.concept,
        **gaps,
        welfare=float(utilities.sum()),
        utilities=[float(u) for u in utilities],
        max_violation=model.vsf.max_violation(xi),
    )


def warm_up_lp(game: Game, options: dict[str, Any], device: bool = False) -> None:
    """Compile (or load from numba's cache) every kernel variant an LP front end's setup, its
    evaluations and its report call on ``game`` (the model's builders, the gap evaluator of
    each concept): :func:`efce.solvers.warm_up.warm_up_run` of :func:`model_and_report`, which
    builds the LP of the tiny game of ``game``'s kind with the run's objective and concept and
    evaluates the zero plan on it, on every core on an empty cache
    (:mod:`efce.solvers.parallel_compile`).  The builders and the evaluator take the same
    argument types on every game of a kind, and nothing is solved here: the solver's own
    first-call costs are paid by the run.  Once per process and configuration.

    Parameters
    ----------
    game : Game
        The game the run solves; only its number of players and its chance moves are read.
    options : dict
        The run's options, validated (:data:`LP_OPTIONS` among them).
    device : bool
        Unused: an LP front end writes no device.
    """
    from efce.solvers.warm_up import warm_up_run

    del device
    warm_up_run(model_and_report, game, options)


def model_and_report(game: Game, *, progress: Any = None, **options: Any) -> None:
    """What an LP front end's run calls numba kernels for, without a solver: the LP of ``game``
    with ``options``' objective and concept (:func:`build_efce_lp`) and the report of the zero
    plan on it (:func:`evaluate_plan`); :func:`warm_up_lp`'s tiny run (``progress`` and the other
    options are unused)."""
    del progress
    model = build_efce_lp(game, objective=lp_arguments(options)["objective"], concept=options["concept"])
    evaluate_plan(game, model, np.zeros(model.num_xi))


def check_memory(
    size: ModelSize, game: Game, budget: int | None, *, factor: float = 1.0, what: str = "the EFCE LP"
) -> int:
    """Refuse a model of ``factor × size.bytes`` over the memory budget before building it
    (:func:`games.resources.memory.check_budget`, the one budget rule).

    Returns
    -------
    int
        The budget used.

    Raises
    ------
    ModelTooLarge
        With the estimate, the budget, and what to use instead.
    """
    budget = default_memory_budget() if budget is None else budget
    detail = size.describe() + (f", ×{factor:g} for this front end" if factor != 1.0 else "")
    try:
        return check_budget(int(size.bytes * factor), f"{what} of {game.name} ({detail})", budget)
    except MemoryBudgetExceeded as exc:
        raise ModelTooLarge(
            f"{exc} Use the scaled-extension regret minimizer instead, or raise memory_budget.", size, budget
        ) from None


# --------------------------------------------------------------------------- the model
@dataclass
class EFCELP:
    """``maximize cᵀx`` s.t. ``row_lower ≤ A x ≤ row_upper``, ``col_lower ≤ x ≤ col_upper``.

    ``x = (ξ, v)``: the first ``num_xi`` columns are ξ in relevant-pair order.  Rows: the
    ``num_eq`` equalities of Definition 3 first (``A_eq x = b_eq``), then the incentive rows
    (``A_ge x ≥ 0``), then the optional welfare row (``≥ τ``).  ``A`` is CSC (for HiGHS);
    ``A_eq`` / ``A_ge`` are CSR views of the same coefficients (for cvxpy).
    """

    game: Game
    pairs: RelevantPairs
    vsf: VSFConstraints
    A: sp.csc_matrix
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    c: np.ndarray
    num_xi: int
    num_eq: int
    objective: str
    utility_matrix: sp.csr_matrix  # 2 × num_xi: player utilities as a function of ξ
    size: ModelSize
    #: Seconds of the build, numba's compiling (:attr:`compile_seconds`) excluded.
    build_seconds: float
    welfare_threshold: float | None = None
    info: dict = field(default_factory=dict)
    #: Seconds numba spent compiling the builders' kernels during the build (0.0 once they are
    #: compiled or cached; a cache load is build time): a front end reports them as its
    #: ``compile_seconds``, not as model setup.
    compile_seconds: float = 0.0

    @property
    def concept(self) -> str:
        """The solution concept whose incentive rows the model holds (:mod:`efce.concepts`)."""
        return str(self.info.get("concept", DEFAULT_CONCEPT))

    @property
    def num_variables(self) -> int:
        return self.A.shape[1]

    @property
    def num_rows(self) -> int:
        return self.A.shape[0]

    @property
    def nonzeros(self) -> int:
        return int(self.A.nnz)

    @property
    def A_eq(self) -> sp.csr_matrix:
        return self.A[: self.num_eq].tocsr()

    @property
    def b_eq(self) -> np.ndarray:
        return self.row_lower[: self.num_eq]

    @property
    def A_ge(self) -> sp.csr_matrix:
        """Rows with ``A_ge x ≥ b_ge`` (incentives and optional welfare)."""
        return self.A[self.num_eq :].tocsr()

    @property
    def b_ge(self) -> np.ndarray:
        return self.row_lower[self.num_eq :]

    def stats(self) -> dict:
        return dict(
            variables=self.num_variables,
            xi_variables=self.num_xi,
            rows=self.num_rows,
            nonzeros=self.nonzeros,
            build_seconds=self.build_seconds,
            estimated_bytes=self.size.bytes,
        )


def _objective_name(objective) -> str:
    if objective in ("welfare", "feasibility"):
        return objective
    if objective in (0, 1, "player1", "player2"):
        return "player1" if objective in (0, "player1") else "player2"
    raise ValueError(
        f"objective must be 'welfare', 'feasibility', 0/'player1' or 1/'player2', not {objective!r}"
    )


def _expand(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(owner, offset)``: item ``j`` repeated ``counts[j]`` times with offsets ``0..counts[j]-1``."""
    counts = np.asarray(counts, dtype=np.int64)
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    start = np.cumsum(counts) - counts
    offset = np.arange(int(counts.sum()), dtype=np.int64) - start[owner]
    return owner, offset


@dataclass
class IncentiveBlock:
    """Incentive rows of one player, local numbering (rows, then value columns)."""

    rows: np.ndarray
    cols_xi: np.ndarray
    vals_xi: np.ndarray
    rows_v: np.ndarray
    cols_v: np.ndarray
    vals_v: np.ndarray
    num_rows: int
    num_values: int
    # Structure reused by the subgradient method (player-local numbering; EFCE):
    var_seq: np.ndarray  # trigger of each value variable (EFCE: its sequence σ̂)
    var_inf: np.ndarray  # infoset I of each value variable
    row_start: np.ndarray  # first deviation row of each value variable (rows of (t, I, a))
    parent_var: np.ndarray  # value variable of (t, parent infoset of I), -1 at a tree root
    parent_row: np.ndarray  # the deviation row in which the variable appears as a child
    root_var: np.ndarray  # per trigger (EFCE: index = σ̂, -1 for ∅): the variable at its root
    num_dev_rows: int  # rows 0..num_dev_rows-1 are deviation rows, then one F row per trigger


def _triggers_of_infosets(space, concept: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The value variables ``(t, I)`` of one player for ``concept``, sorted by ``I`` then
    ``t``: ``(var_trig, var_inf, recommended, num_triggers)`` with ``recommended[t]`` the
    trigger's recommendation sequence (:mod:`polytopes.triggers`).  Trigger ids: EFCE the
    sequence ``σ̂`` (so ``t = σ̂``, 1-based), EFCCE the infoset ``Î``, NFCCE 0.  A variable exists
    for every infoset of the trigger's deviation tree: EFCE and EFCCE the infosets below and at
    ``Î`` (collected by walking up, one step per depth), NFCCE every infoset."""
    n_inf = space.num_infosets
    k = space.infoset_num_actions.astype(np.int64)
    first = space.infoset_first_seq.astype(np.int64)
    parent_inf = space.seq_infoset[space.infoset_parent_seq].astype(np.int64)
    if concept == "nfcce":
        var_inf = np.arange(n_inf, dtype=np.int64)
        return np.zeros(n_inf, np.int64), var_inf, np.zeros(min(n_inf, 1), np.int64), min(n_inf, 1)
    anc_parts, inf_parts = [], []
    cur = np.arange(n_inf, dtype=np.int64)
    owner = np.arange(n_inf, dtype=np.int64)
    while len(cur):
        anc_parts.append(cur)
        inf_parts.append(owner)
        live = parent_inf[cur] >= 0
        cur, owner = parent_inf[cur[live]], owner[live]
    anc = np.concatenate(anc_parts) if anc_parts else np.zeros(0, np.int64)
    inf = np.concatenate(inf_parts) if inf_parts else np.zeros(0, np.int64)
    if concept == "efce":
        which, a_hat = _expand(k[anc])
        var_inf, var_trig = inf[which], first[anc[which]] + a_hat
        recommended = np.arange(space.num_sequences, dtype=np.int64)
        num_triggers = space.num_sequences
    else:
        var_inf, var_trig = inf, anc
        recommended = space.infoset_parent_seq.astype(np.int64)
        num_triggers = n_inf
    order = np.lexsort((var_trig, var_inf))
    return var_trig[order], var_inf[order], recommended, num_triggers


def incentive_block(
    game: Game,
    pairs: RelevantPairs,
    i: int,
    tm_seq: np.ndarray,
    weight: np.ndarray,
    concept: str = DEFAULT_CONCEPT,
) -> IncentiveBlock:
    """The incentive rows of player ``i`` for ``concept`` (module docstring): one deviation row
    per trigger ``t``, infoset ``I`` of its deviation tree and action of ``I``, and one
    following-value row per trigger, over ξ and the value variables ``v[t, I]``.  Shared by
    :func:`build_efce_lp` and the subgradient method (:mod:`baselines.subgradient`, EFCE), which
    reads its structure.

    Parameters
    ----------
    game : Game
        Two players, no chance moves or public ones.
    pairs : RelevantPairs
        The columns of ξ.
    i : int
        The player.
    tm_seq : ndarray
        Per terminal, the two players' sequences (:func:`games.payoffs.terminal_map`).
    weight : ndarray
        Per terminal, ``p_c(z) u_i(z)``.
    concept : str
        ``"efce"`` (triggers ``σ̂``), ``"efcce"`` (triggers ``Î``, reading ``ξ[σ(Î), ·]``) or
        ``"nfcce"`` (one trigger, reading ``ξ[∅, ·]`` over the whole tree).

    Returns
    -------
    IncentiveBlock
        Rows and value columns in the player's local numbering.
    """
    check_concept(concept)
    space = game.sequences(i)
    n_inf = space.num_infosets
    k = space.infoset_num_actions.astype(np.int64)
    var_trig, var_inf, recommended, n_trig = _triggers_of_infosets(space, concept)
    n_val = len(var_inf)
    var_key = var_inf * n_trig + var_trig
    var_ptr = np.zeros(n_inf + 1, dtype=np.int64)
    np.cumsum(np.bincount(var_inf, minlength=n_inf), out=var_ptr[1:])
    # The trigger's root variable: EFCE / EFCCE at Î; NFCCE at every root infoset.
    if concept == "efce":
        is_root = var_inf == space.seq_infoset[var_trig]
    elif concept == "efcce":
        is_root = var_inf == var_trig
    else:
        is_root = space.infoset_parent_seq[var_inf] == 0

    # Deviation rows (t, I, a): row_start[var] + a.
    row_start = np.cumsum(k[var_inf]) - k[var_inf]
    n_dev = int(k[var_inf].sum())
    # +1 · v[t, I] in every row of its block.
    dv_var, dv_a = _expand(k[var_inf])
    rows_v = [row_start[dv_var] + dv_a]
    cols_v = [dv_var]
    vals_v = [np.ones(n_dev)]
    # −1 · v[t, I'] in row (t, parent infoset of I', action of σ(I')).
    child = np.flatnonzero(~is_root)
    pseq = space.infoset_parent_seq[var_inf[child]].astype(np.int64)
    parent_var_of_child = np.searchsorted(
        var_key, space.seq_infoset[pseq].astype(np.int64) * n_trig + var_trig[child]
    )
    parent_row_of_child = row_start[parent_var_of_child] + space.seq_action[pseq]
    rows_v.append(parent_row_of_child)
    cols_v.append(child)
    vals_v.append(-np.ones(len(child)))
    parent_var = np.full(n_val, -1, dtype=np.int64)
    parent_var[child] = parent_var_of_child
    parent_row = np.full(n_val, -1, dtype=np.int64)
    parent_row[child] = parent_row_of_child

    # −p_c u_i(z) ξ[r(t), σ_{-i}(z)] in row (t, I, a) with (I, a) = σ_i(z), for every trigger t
    # whose tree holds I: the value variables of I (a contiguous range).
    own = tm_seq[:, i].astype(np.int64)
    other = tm_seq[:, 1 - i].astype(np.int64)
    zs = np.flatnonzero(own > 0)
    z_inf = space.seq_infoset[own[zs]].astype(np.int64)
    z_act = space.seq_action[own[zs]].astype(np.int64)
    zrep, zoff = _expand(var_ptr[z_inf + 1] - var_ptr[z_inf])
    var = var_ptr[z_inf[zrep]] + zoff
    trig = recommended[var_trig[var]]
    opp = other[zs[zrep]]
    col = pairs.index(trig, opp) if i == 0 else pairs.index(opp, trig)
    rows_x = [row_start[var] + z_act[zrep]]
    cols_x = [col]
    vals_x = [-weight[zs[zrep]]]

    # Following rows: F(t) − v[t, root] ≥ 0 (NFCCE: minus every root infoset's variable), row
    # n_dev + the trigger's row (EFCE: σ̂ − 1).
    follow_row = (lambda t: t - 1) if concept == "efce" else (lambda t: t)
    n_follow = n_trig - 1 if concept == "efce" else n_trig
    roots = np.flatnonzero(is_root)
    rows_v.append(n_dev + follow_row(var_trig[roots]))
    cols_v.append(roots)
    vals_v.append(-np.ones(len(roots)))
    root_var = np.full(n_trig, -1, dtype=np.int64)
    root_var[var_trig[roots]] = roots
    pair_z = pairs.index(tm_seq[zs, 0], tm_seq[zs, 1])
    # The terminals a trigger's following value counts: walking up σ_i(z), EFCE meets each
    # trigger σ̂ ⪯ σ_i(z), EFCCE each infoset on the path, NFCCE its one trigger once.
    anc_seq = own[zs].copy()
    climbing = np.arange(len(zs))  # terminals whose ancestor sequence is not yet the empty one
    while len(climbing):
        s = anc_seq[climbing]
        keep = np.ones(len(s), dtype=bool)
        if concept == "efce":
            t = s
        elif concept == "efcce":
            t = space.seq_infoset[s].astype(np.int64)
        else:
            t = np.zeros(len(s), np.int64)
            keep = space.infoset_parent_seq[space.seq_infoset[s]] == 0
        rows_x.append(n_dev + follow_row(t[keep]))
        cols_x.append(pair_z[climbing[keep]])
        vals_x.append(weight[zs[climbing[keep]]])
        anc_seq[climbing] = space.seq_parent[anc_seq[climbing]]
        climbing = climbing[anc_seq[climbing] > 0]
    return IncentiveBlock(
        np.concatenate(rows_x),
        np.concatenate(cols_x),
        np.concatenate(vals_x),
        np.concatenate(rows_v),
        np.concatenate(cols_v),
        np.concatenate(vals_v),
        n_dev + n_follow,
        n_val,
        var_trig,
        var_inf,
        row_start,
        parent_var,
        parent_row,
        root_var,
        n_dev,
    )


def build_efce_lp(
    game: Game,
    *,
    objective: str | int = "welfare",
    welfare_threshold: float | None = None,
    memory_budget: int | None = None,
    budget_factor: float = 1.0,
    pairs: RelevantPairs | None = None,
    keep_blocks: bool = False,
    concept: str = DEFAULT_CONCEPT,
) -> EFCELP:
    """The LP of ``concept``'s equilibria (EFCE by default: von Stengel and Forges 2008; the
    coarse concepts change only the incentive rows, :func:`incentive_block`) for a two-player game
    without chance moves or with public ones.

    Parameters
    ----------
    objective : ``"welfare"`` (default, Σ_i utilities), ``"feasibility"``, or a player
        (0 / ``"player1"``, 1 / ``"player2"``) whose utility is maximized.
    welfare_threshold : optional τ; adds the row ``welfare ≥ τ``.
    memory_budget : bytes (None = 60% of ``MemAvailable``); a model whose estimate
        (:func:`estimate_efce_lp`, times ``budget_factor``) exceeds it raises
        :class:`ModelTooLarge` before anything is built.
    keep_blocks : also keep the per-player incentive structure (used by the subgradient method)
        in ``info["blocks"]``.

    Returns
    -------
    EFCELP
        The model; ``build_seconds`` its build, and ``compile_seconds`` the part of it numba
        spent compiling the builders' kernels (:func:`efce.solvers.warm_up.compiling_time`),
        which ``build_seconds`` excludes.

    Raises
    ------
    games.GameError
        Not two players, or chance moves (:func:`polytopes.decompose.check_decomposable`).
    ModelTooLarge
        The estimate exceeds the memory budget (before anything large is built).
    """
    name = _objective_name(objective)
    check_decomposable(game)
    check_concept(concept)
    t0 = time.perf_counter()
    with compiling_time() as compiled:
        size = estimate_efce_lp(game, extra_rows=int(welfare_threshold is not None), concept=concept)
        check_memory(size, game, memory_budget, factor=budget_factor, what=f"the {concept.upper()} LP")
        model = _assemble(game, name, size, welfare_threshold, pairs, keep_blocks, concept)
    model.compile_seconds = compiled()
    model.build_seconds = time.perf_counter() - t0 - model.compile_seconds
    return model


def _assemble(
    game: Game,
    name: str,
    size: ModelSize,
    welfare_threshold: float | None,
    pairs: RelevantPairs | None,
    keep_blocks: bool,
    concept: str = DEFAULT_CONCEPT,
) -> EFCELP:
    """The arrays of :func:`build_efce_lp`'s model, once its size passed the budget."""
    pairs = relevant_pairs(game) if pairs is None else pairs
    vsf = vsf_constraints(game, pairs)
    tm = terminal_map(game)
    weights = tm.weighted_payoffs()
    n_xi = len(pairs)
    pair_z = pairs.index(tm.sequences[:, 0], tm.sequences[:, 1])
    utility = sp.csr_matrix(
        (weights.T.ravel(), (np.repeat([0, 1], len(pair_z)), np.tile(pair_z, 2))), shape=(2, n_xi)
    )

    eq = vsf.matrix.tocoo()
    rows, cols, vals = [eq.row.astype(np.int64)], [eq.col.astype(np.int64)], [eq.data]
    row_off, val_off = vsf.num_rows, n_xi
    blocks = []
    for i in (0, 1):
        blk = incentive_block(game, pairs, i, tm.sequences, weights[:, i], concept)
        rows += [blk.rows + row_off, blk.rows_v + row_off]
        cols += [blk.cols_xi, blk.cols_v + val_off]
        vals += [blk.vals_xi, blk.vals_v]
        blocks.append((row_off, val_off, blk))
        row_off += blk.num_rows
        val_off += blk.num_values
    n_rows = row_off + int(welfare_threshold is not None)
    if welfare_threshold is not None:
        w = utility.sum(axis=0).A1
        nz = np.flatnonzero(w)
        rows.append(np.full(len(nz), row_off))
        cols.append(nz)
        vals.append(w[nz])
    index_dtype = np.int32 if max(n_rows, val_off) < 2**31 - 1 else np.int64
    A = sp.coo_matrix(
        (
            np.concatenate(vals),
            (np.concatenate(rows).astype(index_dtype), np.concatenate(cols).astype(index_dtype)),
        ),
        shape=(n_rows, val_off),
    ).tocsc()
    A.sum_duplicates()
    A.eliminate_zeros()
    del rows, cols, vals

    row_lower = np.zeros(n_rows)
    row_upper = np.full(n_rows, np.inf)
    row_lower[: vsf.num_rows] = vsf.rhs
    row_upper[: vsf.num_rows] = vsf.rhs
    if welfare_threshold is not None:
        row_lower[-1] = float(welfare_threshold)
    col_lower = np.full(val_off, -np.inf)
    col_lower[:n_xi] = 0.0
    col_upper = np.full(val_off, np.inf)
    c = np.zeros(val_off)
    if name == "welfare":
        c[:n_xi] = utility.sum(axis=0).A1
    elif name.startswith("player"):
        c[:n_xi] = utility[int(name[-1]) - 1].toarray().ravel()
    info: dict[str, Any] = {"blocks": blocks} if keep_blocks else {}
    info["concept"] = concept
    return EFCELP(
        game,
        pairs,
        vsf,
        A,
        row_lower,
        row_upper,
        col_lower,
        col_upper,
        c,
        n_xi,
        vsf.num_rows,
        name,
        utility,
        size,
        0.0,  # set by build_efce_lp, which times the whole build
        welfare_threshold,
        info,
    )
