"""The EFCE bilinear saddle point solved by regret minimization (Farina, Ling, Fang, Sandholm
2019, sections 2.1, 2.3 and 5).

``min_{ξ ∈ Ξ} max_{y ∈ Y} ξᵀ A y``: ``Ξ`` is the correlation-plan polytope as the chain built by
``DECOMPOSE``; ``Y`` the convex hull of the trigger agents' deviation strategies, also a chain
(:mod:`polytopes.triggers`); ``ξᵀ A y`` is the expected gain of the deviation ``y`` against the
recommendations drawn from ``ξ``:

* for a trigger ``σ̂ = (Î, â)`` of player ``i`` and ``z ∈ Z(Î)``:
  ``A[(σ̂, σ_{-i}(z)), (σ̂, σ_i(z))] += p_c(z) u_i(z)`` (the deviation value);
* for ``z`` with ``σ_i(z) ⪰ σ̂``: ``A[σ(z), λ_σ̂] −= p_c(z) u_i(z)`` (the following value, times
  ``λ_σ̂ = Σ_a y[(Î, a)]``);
* with a welfare threshold τ, one more weight ``λ_τ`` gains ``τ − Σ_z p_c(z)(u_1 + u_2)(z) ξ[σ(z)]``
  (written bilinearly through ``ξ[∅, ∅] = 1``).

Two compiled chain engines with a local rule at every simplex (RM+ in the paper, section 5;
PRM+ by default here, :data:`OPTIONS`), alternating updates and linear averaging give feasible
iterates; the exact max deviation of the average is the stopping rule.
``A`` is never stored as a matrix: :mod:`efce.solvers.evaluation.payoff_operator` applies it and its
transpose from one int32 per nonzero, into buffers allocated once.  Every pass, product and
checkpoint sweep of the loop runs on one compute backend (:mod:`efce.solvers.backends`; the CPU on
``threads`` threads by default); a backend that keeps the whole loop on a device (``cuda``: every
array resident on the GPU, scalars back per checkpoint) runs it as one :class:`SaddlePointRun`
under the same driver, trace and statuses (:func:`solve_efce`).  The iterations hold no array per
relevant pair beyond the chain, the engines and the loop buffers (:func:`pair_arrays_parked`):
the iterates are checked against Ξ's chain at checkpoints, the reported plan against
Definition 3 itself, matrix-free (:mod:`polytopes.feasibility`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard

import numpy as np

from efce.concepts import CONCEPTS, DEFAULT_CONCEPT, check_concept, gap_key
from efce.errors import OptionError
from efce.games.game import Game
from efce.games.relevant import RelevantPairs, count_relevant_pairs, relevant_pairs
from efce.games.resources.memory import ParkedArrays, check_budget, release_free_memory
from efce.polytopes.chain import Chain, index_dtype
from efce.polytopes.decompose import PairNames, check_decomposable, correlation_plan_entries
from efce.polytopes.feasibility import FeasibilityCheck
from efce.polytopes.triggers import TriggerSpace, trigger_deviations
from efce.polytopes.triggers import triggers_above as count_triggers_above
from efce.solvers.backends import BACKENDS, ComputeBackend, get_backend
from efce.solvers.backends.protocol import PRM_PLUS, OperatorProducts
from efce.solvers.driver import IterationDriver, ProgressCallback
from efce.solvers.evaluation.gaps import EFCEGapEvaluator, GapReport
from efce.solvers.evaluation.payoff_operator import PayoffOperator, TriggerTables, build_payoff_operator
from efce.solvers.methods.selfplay import DeviatorPlay, SelfPlay
from efce.solvers.options import (
    CONCEPT,
    EQUILIBRIUM_REPORT,
    ITERATIONS,
    LOCAL,
    TARGET_GAP,
    THREADS,
    TIME_LIMIT,
    WELFARE_THRESHOLD,
    Method,
    Option,
    defaults,
)
from efce.solvers.regret.engine import ChainEngine, RuleMinimizers, chain_minimum, minimizer_factory
from efce.solvers.regret.local import LocalRule, Segments
from efce.solvers.regret.protocol import MinimizerFactory
from efce.solvers.regret.registry import as_rule, make_rule
from efce.solvers.result import SolveResult, TraceRow
from efce.solvers.scaling import caller_payoff
from efce.solvers.warm_up import warm_up_run

#: Weight ``t^p`` of iteration ``t`` in the average plan, per averaging scheme.
AVERAGING = {"uniform": 0.0, "linear": 1.0, "quadratic": 2.0}

#: The options of ``rm`` (:data:`SOLVE_METHODS`): type, range and default of each; the defaults
#: are :func:`solve_efce`'s too.  PRM+ at every simplex, alternating updates and linear averaging
#: are the fastest combination measured that stays monotone below max deviation 1e-3
#: (docs/results/perf_threads.md); the paper's configuration is ``local="rm+"`` with the same
#: updates and averaging.
OPTIONS = (
    ITERATIONS.with_default(10_000),
    TIME_LIMIT,
    TARGET_GAP.with_default(1e-3),
    WELFARE_THRESHOLD,
    CONCEPT,
    Option(
        "objective",
        str,
        "'feasibility': any equilibrium of the concept; 'welfare' bisects the welfare threshold "
        "for an interval around the concept's optimal welfare",
        choices=("feasibility", "welfare"),
        default="feasibility",
    ),
    LOCAL.with_default("prm+"),
    Option(
        "averaging",
        str,
        "weight of iteration t in the average plan: t (linear, the paper's), t² (quadratic) or 1 (uniform)",
        choices=("linear", "quadratic", "uniform"),
        default="linear",
    ),
    Option(
        "updates",
        str,
        "the deviator answers the correlator's fresh point (alternating, the paper's) or both "
        "move from the previous points (simultaneous)",
        choices=("alternating", "simultaneous"),
        default="alternating",
    ),
    THREADS,
    Option(
        "backend",
        str,
        "where the iterations and checkpoints run: cpu (numba) or cuda (an NVIDIA GPU through "
        "numba-cuda, pip install 'efce-toolkit[cuda]'; refused up front where it cannot run)",
        choices=tuple(BACKENDS),
        default="cpu",
    ),
)
#: Option name → ``rm``'s default (:data:`OPTIONS`).
DEFAULTS = defaults(OPTIONS)

#: A saddle-point lower bound above this proves the welfare threshold unreachable.
CERTIFICATE_TOLERANCE = 1e-9


@dataclass
class EFCEModel:
    """Everything the saddle point needs, built once per game.

    ``operator`` is ``A`` (rows: Ξ's chain entries; columns: Y's entries) as a
    :class:`efce.solvers.evaluation.payoff_operator.PayoffOperator`.  ``xi_steps`` is Ξ's chain as
    the engines run it, without natural labels (:meth:`polytopes.chain.Chain.unlabelled`), and
    ``entry_of_pair[q]`` is the chain entry of relevant pair ``q``; :attr:`xi_chain` is the chain
    labelled by the pairs.  ``pairs`` and ``entry_of_pair`` are the only arrays per relevant pair
    that the iterations never read: they are ``None`` while :func:`pair_arrays_parked` holds them
    out of memory."""

    game: Game
    pairs: RelevantPairs | None
    xi_steps: Chain
    triggers: TriggerSpace
    operator: PayoffOperator
    entry_of_pair: np.ndarray | None
    welfare_threshold: float | None

    @property
    def tables(self) -> TriggerTables:
        return self.operator.tables

    @property
    def concept(self) -> str:
        """The solution concept of the deviator's polytope ``Y`` (:mod:`efce.concepts`)."""
        return self.triggers.concept

    @property
    def xi_chain(self) -> Chain:
        """Ξ's chain labelled by the relevant pairs (``natural_entry`` = ``entry_of_pair``, so
        ``to_natural``/``from_natural`` convert between entry and pair order), made on each access
        (it shares every array with ``xi_steps``).

        Raises
        ------
        RuntimeError
            While the pair arrays are parked (:func:`pair_arrays_parked`).
        """
        if self.pairs is None or self.entry_of_pair is None:
            raise RuntimeError("the relevant pairs of the model are parked while it iterates")
        return self.xi_steps.labelled(self.entry_of_pair, PairNames(self.game, self.pairs))


class ParkedPairs:
    """The relevant-pair arrays of a model while :func:`pair_arrays_parked` holds them out of
    memory: each comes back into the model when first asked for, so a caller can have the
    pair → entry map back without the pairs (e.g. to gather the plan in pair order before the
    pairs are needed to check it)."""

    def __init__(
        self, model: EFCEModel, parked: ParkedArrays, indptr: np.ndarray, num_sequences: tuple[int, int]
    ):
        self._model, self._parked = model, parked
        self._indptr, self._num_sequences = indptr, num_sequences

    def entry_of_pair(self) -> np.ndarray:
        """``model.entry_of_pair``, restored if parked."""
        if self._model.entry_of_pair is None:
            self._model.entry_of_pair = self._parked.restore("entry_of_pair")["entry_of_pair"]
        return self._model.entry_of_pair

    def gather(self, values: np.ndarray) -> np.ndarray:
        """``values`` (one per Ξ entry) in relevant-pair order, a new float64 array: through the
        pair → entry map in memory if it is back, else read from its file piece by piece, so
        that the whole map and the two plans are never in memory together."""
        index = self._model.entry_of_pair
        pieces = (
            self._parked.chunks("entry_of_pair", GATHER_CHUNK)
            if index is None
            else (index[lo : lo + GATHER_CHUNK] for lo in range(0, len(index), GATHER_CHUNK))
        )
        return _gather(values, pieces, int(self._indptr[-1]))

    def pairs(self) -> RelevantPairs:
        """``model.pairs``, restored if parked."""
        if self._model.pairs is None:
            sigma2 = self._parked.restore("sigma2")["sigma2"]
            self._model.pairs = RelevantPairs(self._indptr, sigma2, self._num_sequences)
        return self._model.pairs


@contextmanager
def pair_arrays_parked(model: EFCEModel) -> Iterator[ParkedPairs]:
    """Inside the block, ``model`` holds neither the relevant pairs' column array (``σ2`` per pair)
    nor ``entry_of_pair`` (8 bytes per relevant pair with int32 indices): they are written to a
    temporary directory (:class:`games.resources.memory.ParkedArrays`, which keeps small ones in
    memory instead) and ``model.pairs`` and ``model.entry_of_pair`` are ``None`` until the
    :class:`ParkedPairs` yielded brings them back.  On leaving the block, however it ends, the
    model gets back whatever is still parked (new arrays, equal to the old) and the files are
    removed.

    The iterations read neither: the payoff operator and the gap evaluator work in Ξ's entry
    order and the iterates are checked against the chain's own constraints
    (:meth:`polytopes.chain.Chain.violations`).  The memory is only freed if nothing else holds
    those arrays — the model's chain keeps no labels for that reason; a caller that built the
    pairs itself must drop its references before the block.
    """
    pairs = model.pairs
    # A model holds its pairs and map until this block, the one place that drops them.
    assert pairs is not None and model.entry_of_pair is not None, "the model's pairs were parked already"
    indptr, num_sequences = pairs.indptr, pairs.num_sequences
    with ParkedArrays(sigma2=pairs.sigma2, entry_of_pair=model.entry_of_pair) as parked:
        model.pairs = model.entry_of_pair = None
        del pairs
        back = ParkedPairs(model, parked, indptr, num_sequences)
        try:
            yield back
        finally:
            back.entry_of_pair()
            back.pairs()


#: Bytes a saddle-point run holds per unit of each size (benchmarks/bench_memory.py breaks a run
#: down by component; docs/results/memory.md has the measurements this is fitted to):
#: per relevant pair — Ξ's chain (~1.8: steps as runs, its sources shifted, the full source
#: array on disk during the run, :meth:`~efce.polytopes.chain.Chain.source_on_disk`), the Ξ
#: engine's float32 regrets and bfloat16 predictions (~5), the float64 iterate and the float32
#: running sum (12), plus the checkpoints' transient and heap slack (the pair columns and the
#: pair → entry map are parked during the iterations, and the end of a run holds less than the
#: iterations);
#: per entry of Y — the fused deviator's float32 regrets and bfloat16 predictions (6) and its
#: weights, tables and scratch (8.8 in all, measured on medium and large; Y's point, loss and
#: chain are not held, :mod:`efce.solvers.backends.cpu.deviator`), and Y's triggers (~1);
#: per nonzero of A's deviation part — one int32 row; per (trigger infoset, terminal) — one
#: int32; per game node — what the game keeps in memory during the iterations (its sequence
#: spaces and the arrays the model shares; its own node arrays, labels and caches wait on disk,
#: :meth:`~efce.games.game.Game.arrays_on_disk`) and the per-terminal tables; plus the
#: interpreter, numpy and numba (~100 MiB) and the compiled kernels and the pages they touch
#: while compiling (~130 MiB).
#: Measured whole-process peaks of ``efce solve … --method rm --iterations 3`` (default PRM+),
#: since Ξ's sources are shifted: 339.5–340.6 MiB (small), 1,033.4–1,037.5 MiB (medium),
#: 3,940.4–3,940.9 MiB (large); these constants give 362 / 1,124 / 4,199 MiB (6.3–6.6 %,
#: 8.3–8.8 % and 6.6 % above).  Fitted to small and medium alone (7 bytes per Y entry), an
#: earlier fit gave large 5 % below: large has 0.72 Y entries per relevant pair against
#: medium's 0.40.
BYTES_PER_RELEVANT_PAIR = 20
BYTES_PER_TRIGGER_ENTRY = 10
BYTES_PER_NONZERO = 4
BYTES_PER_TRIGGER_TERMINAL = 8
BYTES_PER_GAME_NODE = 35
#: A game with (public) chance moves holds more per node than the Battleship instances the
#: constants above are fitted to (its chance probabilities, the chance-visibility tables, the
#: merged terminal pairs), and its peak comes earlier, while the model is built.  Fitted, not yet
#: broken down by component, to the measured peak of ``goofspiel:players=2,ranks=5,prizes=random``
#: (8.53M nodes, 36.1M pairs, ``--iterations 3``: 2,459.7–2,469.1 MiB when fitted; 2,344.6 MiB
#: before Ξ's sources were shifted and 2,350.3 MiB since, on a warm kernel cache; these constants
#: give 2,459 MiB, 4.6 % above).
BYTES_PER_CHANCE_GAME_NODE = 90
FIXED_BYTES = 225 * 2**20


def saddle_point_sizes(game: Game, concept: str = DEFAULT_CONCEPT) -> dict:
    """Sizes that drive the memory of the saddle point of ``concept``, counted without building
    anything: relevant pairs; the triggers (:mod:`polytopes.triggers`); entries of Y (``Σ_s``
    number of triggers whose deviation tree holds ``s``); nonzeros of ``A``'s deviation part
    (``Σ_z`` trigger slots above ``σ_i(z)``, both players); (trigger infoset, terminal) pairs;
    game nodes.  Per own sequence ``s`` of infoset ``I``: EFCE counts the actions of ``I`` and
    its ancestors (``Σ |A_Î|``, :func:`~polytopes.triggers.triggers_above`), EFCCE the infosets
    (``depth + 1``), NFCCE one (the player's one tree)."""
    from efce.games.payoffs import terminal_map

    check_concept(concept)
    tm = terminal_map(game)
    triggers = y_entries = nonzeros = trigger_terminals = 0
    for i in (0, 1):
        space = game.sequences(i)
        slots_above = np.zeros(space.num_sequences, dtype=np.int64)  # trigger slots above s
        infosets_above = np.zeros(space.num_sequences, dtype=np.int64)  # trigger infosets above s
        inf_of_seq = space.seq_infoset[1:].astype(np.int64)
        depth = space.infoset_depth.astype(np.int64)
        if concept == "efce":
            slots_above[1:] = count_triggers_above(space)[inf_of_seq]
            infosets_above[1:] = depth[inf_of_seq] + 1
            triggers += space.num_sequences - 1
        elif concept == "efcce":
            slots_above[1:] = infosets_above[1:] = depth[inf_of_seq] + 1
            triggers += space.num_infosets
        else:
            slots_above[1:] = infosets_above[1:] = 1
            triggers += min(space.num_infosets, 1)
        own = tm.sequences[:, i]
        y_entries += int(slots_above.sum()) if concept != "nfcce" else space.num_sequences - 1
        nonzeros += int(slots_above[own].sum())
        trigger_terminals += int(infosets_above[own].sum())
    return {
        "relevant_pairs": count_relevant_pairs(game),
        "triggers": triggers,
        "trigger_entries": y_entries,
        "nonzeros": nonzeros,
        "trigger_terminals": trigger_terminals,
        "nodes": game.num_nodes,
    }


def saddle_point_entries(
    game: Game, *, welfare: bool = False, sizes: dict | None = None, concept: str = DEFAULT_CONCEPT
) -> tuple[int, int]:
    """The entries of Ξ's chain (one per relevant pair) and of Y's (the constant, one weight per
    trigger of ``concept`` — :mod:`polytopes.triggers` — and one more for the welfare constraint,
    and per trigger a copy of its deviation tree), counted without building either (``sizes``:
    :func:`saddle_point_sizes` of ``game`` and ``concept`` if already counted): the sizes that
    choose the loop's kernel variants (``_warm_up``)."""
    sizes = saddle_point_sizes(game, concept) if sizes is None else sizes
    return sizes["relevant_pairs"], 1 + sizes["triggers"] + int(welfare) + sizes["trigger_entries"]


def estimate_efce_bytes(game: Game, sizes: dict | None = None, concept: str = DEFAULT_CONCEPT) -> int:
    """Estimated peak memory of :func:`solve_efce` on ``game`` for ``concept`` (see the constants
    above; ``sizes``: :func:`saddle_point_sizes` of ``game`` and ``concept`` if already counted)."""
    n = saddle_point_sizes(game, concept) if sizes is None else sizes
    return int(
        FIXED_BYTES
        + BYTES_PER_RELEVANT_PAIR * n["relevant_pairs"]
        + BYTES_PER_TRIGGER_ENTRY * n["trigger_entries"]
        + BYTES_PER_NONZERO * n["nonzeros"]
        + BYTES_PER_TRIGGER_TERMINAL * n["trigger_terminals"]
        + (BYTES_PER_GAME_NODE + BYTES_PER_CHANCE_GAME_NODE * game.has_chance) * n["nodes"]
    )


def _check_game(game: Game) -> None:
    """The game checks of :func:`build_efce_model`, cheap and before any estimate."""
    check_decomposable(game)
    # No infoset means no trigger agent: the deviator's chain would be empty.
    game.require_decisions("rm (the correlated-equilibrium saddle point)")


def check_efce_model(
    game: Game, memory_budget: int | None = None, sizes: dict | None = None, concept: str = DEFAULT_CONCEPT
) -> None:
    """Refuse, before anything is built, a game :func:`build_efce_model` cannot model: not two
    players, private chance moves, without any decision, or whose estimated peak memory for
    ``concept`` exceeds ``memory_budget`` (bytes; default 60% of the available RAM; ``sizes``:
    :func:`saddle_point_sizes` of ``game`` and ``concept`` if already counted).

    Raises
    ------
    GameError
        Naming the reason (a :class:`~efce.games.resources.memory.MemoryBudgetExceeded` for
        the memory).
    """
    _check_game(game)
    need = estimate_efce_bytes(game, sizes, concept)
    check_budget(need, f"the {concept.upper()} saddle point of {game.name}", memory_budget)


def build_efce_model(
    game: Game,
    welfare_threshold: float | None = None,
    pairs: RelevantPairs | None = None,
    xi_chain: Chain | None = None,
    memory_budget: int | None = None,
    concept: str = DEFAULT_CONCEPT,
) -> EFCEModel:
    """Ξ by DECOMPOSE, Y of ``concept`` by :func:`polytopes.triggers.trigger_deviations`, and the
    payoff operator ``A`` of the module docstring (rows in Ξ's entry order).  ``pairs``/``xi_chain``
    may be passed to reuse ones already built.  A game whose estimated peak memory exceeds
    ``memory_budget`` (bytes; default 60% of the available RAM) is refused before anything
    large is built."""
    check_concept(concept)
    check_efce_model(game, memory_budget, concept=concept)
    release_free_memory()  # what building the game left behind
    pairs = relevant_pairs(game) if pairs is None else pairs
    if xi_chain is None:
        # the chain without labels and the pair → entry map, with no entry → pair map made
        xi_steps, entry_of_pair = correlation_plan_entries(game, pairs)
    else:
        index = index_dtype(len(pairs))
        entry_of_pair = np.empty(len(pairs), dtype=index)
        entry_of_pair[xi_chain.natural_index] = np.arange(len(pairs), dtype=index)
        xi_steps = xi_chain.unlabelled()  # the pair → entry map is kept once, as entry_of_pair
    del xi_chain
    release_free_memory()
    triggers = trigger_deviations(game, welfare=welfare_threshold is not None, concept=concept)
    operator = build_payoff_operator(game, pairs, triggers, entry_of_pair, welfare_threshold)
    release_free_memory()
    return EFCEModel(game, pairs, xi_steps, triggers, operator, entry_of_pair, welfare_threshold)


#: Entries gathered per chunk by ``_gather``.
GATHER_CHUNK = 1 << 20


def _gather(values: np.ndarray, pieces: Iterable[np.ndarray], n: int) -> np.ndarray:
    """``values[index]`` into a new float64 array of ``n`` values, ``index`` given as
    consecutive pieces: one ``np.take`` of the whole int32 index would hold an int64 copy of it
    and (``mode="raise"`` buffers ``out``) a second output array — 16 bytes per relevant pair
    above the result, the run's peak on the Battleship instances."""
    out = np.empty(n)
    lo = 0
    for piece in pieces:
        np.take(values, piece, out=out[lo : lo + len(piece)], mode="clip")  # indices are valid
        lo += len(piece)
    return out


def average_point(
    chain: Chain,
    running_sum: np.ndarray,
    weight: float,
    *,
    in_place: bool = False,
    backend: ComputeBackend | None = None,
) -> np.ndarray:
    """The float64 average ``Σ_t w_t z_t / Σ_t w_t`` of a running sum over ``chain``.

    A float64 sum is divided by ``weight`` (in place with ``in_place``).  A float32 sum (the
    big chains' :attr:`~solvers.regret.engine.ChainEngine.sum_dtype`) is feasible only to float32
    precision, so its :meth:`~polytopes.chain.Chain.rescaled_point` is returned instead: a
    point of the chain to float64 rounding, as the reported plan and the welfare certificate's
    ȳ must be.  ``backend`` is where the running sum lives (default: the CPU); the point comes
    back on the host.

    Returns
    -------
    ndarray
        float64 point in entry order (``running_sum`` itself when divided in place).
    """
    if running_sum.dtype != np.float64:
        return chain.rescaled_point(running_sum, backend=backend)
    if backend is not None:
        running_sum = backend.to_host(running_sum)
    return np.divide(running_sum, weight, out=running_sum if in_place else None)


def set_welfare_threshold(model: EFCEModel, welfare_threshold: float) -> None:
    """Move the welfare threshold τ of a model built with one, in place.

    τ enters ``A`` only as the coefficient of ``ξ[∅, ∅]`` on the weight ``λ_τ`` (module
    docstring), which the payoff operator holds as a scalar, so a bisection over τ reuses one
    model."""
    if model.welfare_threshold is None:
        raise ValueError("the model was built without a welfare threshold; build it with one")
    model.operator.tau = float(welfare_threshold)
    model.welfare_threshold = float(welfare_threshold)


def solve_efce(
    game: Game,
    *,
    iterations: int = DEFAULTS["iterations"],
    time_limit: float | None = DEFAULTS["time_limit"],
    target_gap: float | None = DEFAULTS["target_gap"],
    welfare_threshold: float | None = DEFAULTS["welfare_threshold"],
    rule: LocalRule | str | None = None,
    minimizer: MinimizerFactory | None = None,
    check_every: int | None = None,
    check_feasibility_every_iteration: bool = False,
    progress: ProgressCallback | None = None,
    model: EFCEModel | None = None,
    memory_budget: int | None = None,
    alternating: bool = DEFAULTS["updates"] == "alternating",
    averaging: str = DEFAULTS["averaging"],
    threads: int | None = DEFAULTS["threads"],
    backend: ComputeBackend | str | None = DEFAULTS["backend"],
    concept: str = DEFAULTS["concept"],
) -> SolveResult:
    """Regret minimization on the saddle point of ``concept`` (EFCE by default; EFCCE and NFCCE
    change only the deviator's polytope ``Y``, :mod:`polytopes.triggers`).  Stops at
    ``target_gap`` (the concept's max deviation of the average plan, and welfare within
    ``target_gap`` of the threshold), ``iterations`` or ``time_limit`` seconds.

    The defaults are ``rm``'s (:data:`OPTIONS`, so ``efce.solve(game, "rm")`` runs the same):
    PRM+ at every simplex, alternating updates, linear averaging, 10,000 iterations, target gap
    1e-3 — the fastest combination measured that stays monotone below 1e-3; the paper's
    configuration (Farina et al. 2019, section 5) is ``rule="rm+"``.

    With a welfare threshold above the best EFCE welfare the gap cannot close; if the average
    deviator strategy ȳ proves ``min_ξ ξᵀ A ȳ > 0`` the status is ``"infeasible"`` (no EFCE
    with that welfare exists); otherwise the budget runs out and ``info["threshold_met"]`` is
    False.

    ``rule`` (a :class:`~solvers.regret.local.LocalRule` or its name; None: ``rm``'s ``local``, PRM+)
    runs at every simplex of both chains; ``minimizer`` instead builds each side's regret
    minimizer from its chain (Ξ's, then Y's; points in entry order), e.g.
    ``lambda chain: chain_minimizer(chain, MyRule())`` or a composite of the
    :mod:`solvers.regret.algebra` — see the tutorial, "Write your own regret minimizer".  Giving both is
    a ValueError.

    ``alternating`` (default) lets the deviator answer the correlator's fresh point; False updates
    both from the previous points (simultaneous).  ``averaging`` weights iteration ``t`` of the
    average plan by ``t`` (``"linear"``, default), ``t²`` (``"quadratic"``) or 1 (``"uniform"``).

    On chains of 2²⁰ entries or more (:func:`solvers.regret.local.state_dtype`; the Battleship
    instances) the built-in rules keep their per-entry state in float32 (PRM+'s prediction in
    bfloat16: :func:`solvers.regret.local.prediction_dtype`), and the loop its
    running sum Σ w·x (the engines' ``sum_dtype``); iterates and losses stay float64 (float32
    ones stall the dynamics near max deviation 1e-4 on small Battleship).  The running average
    is then feasible to float32 precision (~1e-8, reported in the trace's violations) and the
    reported plan is the chain point rescaled from the running sum
    (:meth:`~polytopes.chain.Chain.rescaled_point`), feasible to float64 rounding
    (``info["plan_violation"]``, Definition 3).  Smaller chains are float64 throughout.

    ``backend`` (a name or a :class:`~efce.solvers.backends.protocol.ComputeBackend`; default
    ``"cpu"``) runs every pass, product and checkpoint sweep of the loop; ``threads`` (default
    ``None``: numba's setting, all cores unless changed) is the CPU backend's thread count, for
    the chain passes, the payoff operator and the checkpoints; the iterates are bit-identical for
    every count.  A ``minimizer`` factory brings its own backend.

    ``backend="cuda"`` (:class:`~.CUDABackend`) runs the whole iteration and its checkpoints on the
    GPU (:meth:`~.CUDABackend.saddle_point`): the model's arrays are copied once, a checkpoint
    brings back four scalars, and the running sum comes back once, at the end, to be made the plan
    on the host; the final report and the Definition-3 check run on the CPU (``threads`` threads).
    Same options, trace, statuses and ``info``, plus ``info["device"]``; the first launches'
    compilation is ``compile_seconds``, outside ``seconds``.  It runs the built-in rules only
    (``rule``, not ``minimizer``), and is refused before anything is built where it cannot run
    (numba-cuda missing, no GPU: :class:`~efce.errors.OptionError`) or the model would not fit the
    GPU's free memory (:class:`~efce.errors.MemoryBudgetExceeded`).  Its iterates are deterministic
    but not the CPU's bit for bit (sums in another order; regret matching turns one-ulp differences
    into other ties).

    Raises
    ------
    ValueError
        A bad option (averaging, rule, minimizer, threads, backend), checked before the model
        is built; :class:`~efce.errors.OptionError` (a ValueError) for threads and backend.
    MemoryBudgetExceeded
        The model's estimate exceeds the memory budget (the GPU's free memory on ``cuda``).
    """
    started = time.perf_counter()
    if averaging not in AVERAGING:
        raise ValueError(f"averaging must be one of {', '.join(AVERAGING)}, got {averaging!r}")
    concept = check_concept(model.concept if model is not None else concept)
    backend = get_backend(backend, threads=threads)
    if runs_on_device(backend) and concept != "efce":
        raise OptionError(f"--backend {backend.name} runs EFCE only; {concept.upper()} runs on the CPU")
    if runs_on_device(backend):
        local = device_rule(rule, minimizer)
        if model is None:
            check_device_memory(game, backend, local, alternating, welfare_threshold is not None)
    else:
        make_minimizer = minimizer_factory(rule, minimizer, make_rule(DEFAULTS["local"]), backend)
    model = model or build_efce_model(game, welfare_threshold, memory_budget=memory_budget, concept=concept)
    host = getattr(backend, "host", backend)  # where the final report and the plan's check run
    driver = IterationDriver(
        iterations=iterations, time_limit=time_limit, check_every=check_every, progress=progress
    )
    with pair_arrays_parked(model) as parked:
        evaluator = EFCEGapEvaluator(model.game, tables=model.tables, backend=host)  # entry order, no pairs
        dynamics: dict[str, Any] = {
            "alternating": bool(alternating),
            "power": AVERAGING[averaging],
            "average_deviator": welfare_threshold is not None,  # ȳ is needed only for the certificate
        }
        # The iterations read the model's tables, not the game, and the plan's Definition-3
        # check its sequence spaces only: the game's own arrays wait on disk until the report
        # is made, and come back after the plan's check, its peak, is over.
        with model.game.arrays_on_disk():
            if runs_on_device(backend):
                play = backend.saddle_point(model, local, **dynamics)
            else:
                # Ξ's compiled kernels read its shifted sources, never its source array, which
                # waits on disk from here on (Chain.source_on_disk)
                model.xi_steps = model.xi_steps.source_on_disk()
                play = HostSaddlePoint(model, make_minimizer, backend, evaluator, **dynamics)
            run = _iterate(
                play,
                evaluator,
                driver,
                started,
                target_gap=target_gap,
                welfare_threshold=welfare_threshold,
                check_every_iteration=check_feasibility_every_iteration,
            )
            del play  # the host loop's engines are gone already; the device run stays with its backend
            return _result(model.game, parked, run, driver, welfare_threshold, target_gap, backend)


class DeviceBackend(ComputeBackend, Protocol):
    """A compute backend that runs ``rm``'s whole loop itself, its arrays resident on a device
    (``cuda``: :class:`~.CUDABackend`): what :func:`solve_efce` asks of it beyond
    :class:`~efce.solvers.backends.protocol.ComputeBackend`."""

    #: The CPU backend of the work that stays on the host (the final report, Definition 3).
    host: ComputeBackend

    @property
    def device(self) -> str:
        """The device in words (``info["device"]``)."""
        ...

    def check_memory(
        self, game: Game, *, predictive: bool = True, alternating: bool = True, welfare: bool = False
    ) -> int:
        """Refuse, before anything is built, a run over the device's free memory; the estimate."""
        ...

    def saddle_point(
        self,
        model: EFCEModel,
        rule: LocalRule,
        *,
        alternating: bool = True,
        power: float = 1.0,
        average_deviator: bool = False,
    ) -> SaddlePointRun:
        """The run of :func:`solve_efce`'s loop on ``model``, at iteration 0."""
        ...


def runs_on_device(backend: ComputeBackend) -> TypeGuard[DeviceBackend]:
    """Whether ``backend`` runs ``rm``'s whole loop itself, its arrays resident on a device
    (``cuda``: a ``saddle_point`` method, :class:`SaddlePointRun`), rather than kernel by kernel
    for :class:`HostSaddlePoint`."""
    return callable(getattr(backend, "saddle_point", None))


def device_rule(rule: LocalRule | str | None, minimizer: MinimizerFactory | None) -> LocalRule:
    """The local rule a device loop runs (``rm``'s default when ``rule`` is None).

    Raises
    ------
    OptionError
        A ``minimizer`` factory (its minimizers run on the host), or a rule without a compiled
        form (:meth:`~efce.solvers.regret.local.LocalRule.kernel`).
    """
    if minimizer is not None:
        raise OptionError(
            "minimizer= builds regret minimizers that run on the host; a device backend runs a "
            "built-in local rule (rule=) at every simplex"
        )
    local = as_rule(DEFAULTS["local"] if rule is None else rule)
    if local.kernel() is None:
        raise OptionError(
            f"local rule {local.name!r} has no compiled form, so it cannot run on the GPU; "
            f"use one of rm, rm+, hedge, prm+, dcfr"
        )
    return local


def check_device_memory(
    game: Game, backend: DeviceBackend, rule: LocalRule, alternating: bool, welfare: bool
) -> None:
    """Refuse, before anything is built, a run larger than the device's free memory (the game
    checks of :func:`build_efce_model` first, which the estimate assumes).

    Raises
    ------
    GameError
        A game ``rm`` does not solve; :class:`~efce.errors.MemoryBudgetExceeded` (a GameError)
        when the estimate exceeds the device's free memory.
    """
    _check_game(game)
    kernel = rule.kernel()
    predictive = kernel is not None and kernel.family == PRM_PLUS
    backend.check_memory(game, predictive=predictive, alternating=bool(alternating), welfare=welfare)


@dataclass
class _Run:
    """What ``_iterate`` leaves: the average plan in Ξ's entry order (:func:`average_point`
    of the running sum), its gap report, the largest chain violation seen, the certificate's
    lower bound (with a welfare threshold), the setup time and the loop's own warm-up
    (:meth:`SaddlePointRun.warm_up`; None for the host loop)."""

    average: np.ndarray | None
    report: GapReport
    max_violation: float
    lower_bound: float | None
    setup_seconds: float
    compile_seconds: float | None


def saddle_point_play(
    model: EFCEModel,
    make_minimizer: MinimizerFactory,
    *,
    alternating: bool = True,
    power: float = 1.0,
    average_deviator: bool = False,
    products: OperatorProducts | None = None,
) -> SelfPlay | DeviatorPlay:
    """The correlator (an engine on Ξ's chain, observing ``A·y``) against the deviator (on Y,
    observing ``−Aᵀ·x``), each built by ``make_minimizer`` from its chain, with the correlator's
    running average (and the deviator's with ``average_deviator``) under weights ``t^power``:
    the loop of :func:`solve_efce`.  ``products`` are ``A``'s products on the loop's backend
    (:meth:`~.PayoffOperator.products`; default: on the CPU, every thread numba may use).

    When ``make_minimizer`` runs a local rule's kernel on a compute backend
    (:class:`~efce.solvers.regret.engine.RuleMinimizers`), the deviator is that backend's fused
    deviator (:meth:`~efce.solvers.backends.cpu.backend.CPUBackend.fused_deviator`: Y's passes
    with ``A``'s products inside, no point, loss or chain of Y held) in a
    :class:`~efce.solvers.methods.selfplay.DeviatorPlay`, whose iterates are those of the
    :class:`~efce.solvers.methods.selfplay.SelfPlay` of two engines it replaces, bit for bit;
    any other factory gets that :class:`~efce.solvers.methods.selfplay.SelfPlay`, on Y's chain."""
    products = model.operator.products() if products is None else products
    xi_engine = ChainEngine(model.xi_steps, minimizer=make_minimizer(model.xi_steps))
    deviator = _fused_deviator(model, make_minimizer, products)
    if deviator is not None:
        return DeviatorPlay(
            xi_engine,
            deviator,
            alternating=bool(alternating),
            average_deviator=average_deviator,
            power=power,
            narrow=True,
            deviator_entries=model.triggers.num_entries,
        )
    matvec, rmatvec = products.matvec, products.rmatvec
    y_engine = ChainEngine(model.triggers.chain, minimizer=make_minimizer(model.triggers.chain))
    return SelfPlay(
        (xi_engine, y_engine),
        (lambda y, out: matvec(y, out), lambda x, out: rmatvec(x, out, -1.0)),
        averaged=(True, average_deviator),
        alternating=bool(alternating),
        power=power,
        narrow=True,
    )


def _fused_deviator(model: EFCEModel, make_minimizer: MinimizerFactory, products: OperatorProducts):
    """The fused deviator of ``make_minimizer``'s rule on its compute backend, or None (a
    factory of other minimizers, a rule without a kernel, or a backend without one)."""
    if not isinstance(make_minimizer, RuleMinimizers):
        return None
    backend = make_minimizer.compiled_backend()
    kernel = make_minimizer.rule.kernel()
    if backend is None or kernel is None or not hasattr(backend, "fused_deviator"):
        return None
    entries = model.triggers.num_entries - 1  # every entry of Y but the constant is a simplex's
    state = {
        key: backend.to_device(v)
        for key, v in make_minimizer.rule.init(Segments.from_sizes([entries])).items()
    }
    return backend.fused_deviator(products, kernel, state)


def saddle_point_gap(
    model: EFCEModel,
    values: np.ndarray,
    scale: float,
    work: np.ndarray,
    products: OperatorProducts | None = None,
    backend: ComputeBackend | None = None,
) -> float:
    """The max deviation of ``ξ = scale · values`` (Ξ's entry order) read from the saddle point:

    .. math::

        \\max\\Big(0, \\max_{y ∈ Y} ξ^⊤ A y\\Big)
        = \\max\\Big(0, -\\min_{y ∈ Y} \\langle -A^⊤ ξ, y \\rangle\\Big),

    since ``ξᵀ A y`` at the vertex of ``Y`` that triggers ``σ̂`` and plays a deviation is that
    deviation's gain (Farina, Ling, Fang, Sandholm 2019, section 2.3; module docstring), so the
    maximum over ``Y`` is the largest trigger gain — the same number as
    :class:`~solvers.evaluation.gaps.EFCEGapEvaluator`'s, at one product with ``Aᵀ`` and one
    bottom-up pass over ``Y``'s chain (:func:`~solvers.regret.engine.chain_minimum`).

    Parameters
    ----------
    model : EFCEModel
        Built without a welfare threshold (``Y`` holds no welfare weight).
    values : ndarray
        float64 or float32, one per Ξ entry (e.g. the running sum of the iterates).
    scale : float
        Positive factor (``1 / Σ_t w_t`` for a running sum).
    work : ndarray
        float64 work array of one entry per ``Y`` entry, overwritten.
    products : OperatorProducts, optional
        ``A``'s products to use (a loop's, :meth:`~.PayoffOperator.products`; default the
        operator's own), and ``backend`` the chain minimum's (default: the CPU).

    Returns
    -------
    float
        The max deviation, raw payoff units.

    Raises
    ------
    ValueError
        The model has a welfare threshold, or ``values`` / ``work`` have the wrong shape or dtype.
    """
    rows, columns = model.operator.shape
    if model.operator.tau is not None:
        raise ValueError("with a welfare threshold ξᵀ A y is not a deviation gain; use EFCEGapEvaluator")
    if values.shape != (rows,) or values.dtype not in (np.float32, np.float64):
        raise ValueError(f"values: {values.dtype} {values.shape}, expected float32/64 ({rows},)")
    if work.shape != (columns,) or work.dtype != np.float64 or not work.flags.c_contiguous:
        raise ValueError(f"work: {work.dtype} {work.shape}, expected contiguous float64 ({columns},)")
    (model.operator if products is None else products).rmatvec(values, work, -1.0)
    return max(0.0, -scale * chain_minimum(model.triggers.chain, work, donate=True, backend=backend))


@dataclass(frozen=True)
class Checkpoint:
    """What :func:`solve_efce`'s loop records at a checkpoint: the max deviation and welfare of
    the average plan ``ξ̄ = Σ_t w_t x_t / Σ_t w_t``, and the chain violations of the current
    iterate and of ``ξ̄``."""

    gap: float
    welfare: float
    violation_iterate: float
    violation_average: float


class SaddlePointRun(Protocol):
    """One run of :func:`solve_efce`'s loop, wherever its arrays live, as ``_iterate``
    drives it: :class:`HostSaddlePoint` (a backend's kernels one at a time: the CPU) or
    :class:`efce.solvers.backends.cuda.saddle.CudaSaddlePoint` (the whole loop on the GPU)."""

    @property
    def weight(self) -> float:
        """``Σ_t w_t`` of the iterations so far."""
        ...

    def step(self, t: int) -> None:
        """Iteration ``t`` (from 1): both players observe their loss and move; the averages take
        the new points with weight ``t^power``."""

    def synchronize(self) -> None:
        """Wait for the iterations' work to end (a device's launches return before it does)."""

    def checkpoint(self) -> Checkpoint:
        """The checkpoint's scalars (the average's max deviation read from the saddle point, or
        the evaluator's with a welfare threshold; its welfare; the violations)."""

    def iterate_violation(self) -> float:
        """The chain violation of the current iterate."""

    def deviation_bound(self) -> float:
        """``min_ξ ξᵀ A ȳ`` for the deviator's average ȳ: above 0 no EFCE reaches the welfare
        threshold (the run keeps ȳ only with ``average_deviator``)."""

    def warm_up(self) -> float | None:
        """Compile the loop's kernels before the clock starts; their seconds (None: nothing
        to warm up here)."""

    def average(self) -> np.ndarray:
        """The average plan in Ξ's entry order (float64, a chain point), on the host."""


class HostSaddlePoint:
    """:func:`solve_efce`'s loop on a backend's kernels, one at a time (the CPU's): the
    :class:`~efce.solvers.methods.selfplay.SelfPlay` of :func:`saddle_point_play`, ``A``'s
    products on ``backend``, the checkpoint sweeps and ``evaluator``'s (a
    :class:`SaddlePointRun`).  The engines, iterates and losses are its own: :meth:`average`
    drops them before the plan is made."""

    def __init__(
        self,
        model: EFCEModel,
        make_minimizer: MinimizerFactory,
        backend: ComputeBackend,
        evaluator: EFCEGapEvaluator,
        *,
        alternating: bool = True,
        power: float = 1.0,
        average_deviator: bool = False,
    ):
        self.model, self.backend, self.evaluator = model, backend, evaluator
        self.products = model.operator.products(backend)
        self.play: SelfPlay | DeviatorPlay = saddle_point_play(
            model,
            make_minimizer,
            alternating=alternating,
            power=power,
            average_deviator=average_deviator,
            products=self.products,
        )
        # The checkpoints read the gap from the saddle point (saddle_point_gap: about half the
        # evaluator's cost; a fused deviator's best response holds no array of Y) into a buffer
        # the loop leaves idle between steps; the final report still comes from the evaluator.
        fused = isinstance(self.play, DeviatorPlay)
        self._work = (
            self.play.idle_buffer(model.triggers.num_entries)
            if model.operator.tau is None and not fused
            else None
        )

    @property
    def weight(self) -> float:
        return self.play.weight

    def step(self, t: int) -> None:
        self.play.step(t)

    def synchronize(self) -> None:
        """Nothing to wait for: the kernels return when done."""

    def warm_up(self) -> None:
        """Nothing here: the CPU kernels are warmed by ``rm``'s declaration (``Method.warm_up``)
        or compile on first use."""
        return None

    def iterate_violation(self) -> float:
        return self.model.xi_steps.violations((self.play.points[0],), backend=self.backend)[0]

    def checkpoint(self) -> Checkpoint:
        x, sum_x, scale = self.play.points[0], self.play.sums[0], 1.0 / self.play.weight
        assert sum_x is not None  # Ξ's player is always averaged
        # before work overwrites x
        violations = self.model.xi_steps.violations((x, sum_x), (1.0, scale), backend=self.backend)
        play = self.play
        if isinstance(play, DeviatorPlay) and self.model.operator.tau is None:
            # saddle_point_gap's number, Y's blocks one by one
            gap = max(0.0, -scale * play.deviator.best_response(sum_x))
            welfare = self.evaluator.welfare(sum_x, scale)
        elif self._work is None:
            report = self.evaluator.evaluate(sum_x, scale)
            gap, welfare = report.gap, report.welfare
        else:
            gap = saddle_point_gap(self.model, sum_x, scale, self._work, self.products, self.backend)
            welfare = self.evaluator.welfare(sum_x, scale)
        return Checkpoint(gap, welfare, *violations)

    def deviation_bound(self) -> float:
        backend, model = self.backend, self.model
        if isinstance(self.play, DeviatorPlay):
            self.play.flush()  # the last point into the running sum
        sum_y = self.play.sums[1]
        assert sum_y is not None, "the deviator is averaged only with average_deviator"
        y_bar = average_point(model.triggers.chain, sum_y, self.play.weight, backend=backend)
        loss = self.products.matvec(
            backend.to_device(np.ascontiguousarray(y_bar)), backend.empty(model.operator.shape[0])
        )
        return chain_minimum(model.xi_steps, loss, donate=True, backend=backend)

    def average(self) -> np.ndarray:
        """The average plan; ends the run (its engines and buffers are dropped first)."""
        weight, sum_x = self.play.weight, self.play.sums[0]
        assert sum_x is not None  # Ξ's player is always averaged
        # The engines, the iterates and ȳ go, and their heap pages back, before the plan is made.
        del self.play
        self._work = None
        release_free_memory()
        return average_point(self.model.xi_steps, sum_x, weight, in_place=True, backend=self.backend)


def _iterate(
    play: SaddlePointRun,
    evaluator: EFCEGapEvaluator,
    driver: IterationDriver,
    started: float,
    *,
    target_gap: float | None,
    welfare_threshold: float | None,
    check_every_iteration: bool,
) -> _Run:
    """The iterations of :func:`solve_efce` under ``driver``, on ``play`` (which reads nothing
    per relevant pair but the chain and the operator); the final report by ``evaluator``."""
    release_free_memory()  # what building the engines' layouts left behind
    compile_seconds = play.warm_up()
    setup = time.perf_counter() - started - (compile_seconds or 0.0)
    max_violation = 0.0
    for t in driver:
        play.step(t)
        if check_every_iteration:
            with driver.paused():
                max_violation = max(max_violation, play.iterate_violation())
        if not driver.checkpoint_due():
            continue
        play.synchronize()  # a device's iterations end inside the iterations' time
        with driver.paused():
            check = play.checkpoint()
            violations = (check.violation_iterate, check.violation_average)
            max_violation = max(max_violation, *violations)
            shortfall = 0.0 if welfare_threshold is None else max(0.0, welfare_threshold - check.welfare)
            certified = (
                welfare_threshold is not None
                and shortfall > 0
                and play.deviation_bound() > CERTIFICATE_TOLERANCE
            )  # stop early
        row = TraceRow(
            t,
            driver.elapsed(),
            check.gap,
            max(violations),
            {
                "welfare": check.welfare,
                "welfare_shortfall": shortfall,
                "violation_iterate": violations[0],
                "violation_average": violations[1],
            },
        )
        converged = target_gap is not None and check.gap <= target_gap and shortfall <= target_gap
        if driver.record(row, converged=converged, aim=(check.gap, target_gap)):
            break
        if certified:
            driver.status = "infeasible"
            break
    lower_bound = play.deviation_bound() if welfare_threshold is not None else None
    average = play.average()
    return _Run(average, evaluator.evaluate(average), max_violation, lower_bound, setup, compile_seconds)


def _result(
    game: Game,
    parked: ParkedPairs,
    run: _Run,
    driver: IterationDriver,
    welfare_threshold: float | None,
    target_gap: float | None,
    backend: ComputeBackend,
) -> SolveResult:
    """The average plan in relevant-pair order, checked against Definition 3 independently of
    the chain (on the CPU, ``backend``'s threads when it is the CPU's), and the run's report.
    The plan is gathered through the parked pair → entry map
    read piece by piece, the pairs come back once the plan in entry order is freed, and the map
    when the parking block ends: this stage then holds less than the iterations."""
    assert run.average is not None  # _iterate's plan, dropped only here
    xbar = parked.gather(run.average)
    run.average = None
    # The Definition-3 sweep is the CPU's: on the loop's backend if that is the CPU, else on
    # the CPU backend the device backend runs its host work on.
    host = getattr(backend, "host", backend)
    check_on = host if hasattr(host, "definition3_violations") else None
    plan_violation = FeasibilityCheck(game, parked.pairs(), check_on)(xbar)
    max_violation = max(run.max_violation, plan_violation)
    report, status = run.report, driver.status
    concept = report.concept
    info = {
        "concept": concept,
        **{gap_key(c): (report.gap if c == concept else None) for c in CONCEPTS},
        "welfare": report.welfare,
        "utilities": report.utilities,
        "max_violation": max_violation,
        "feasible_iterates": max_violation <= 1e-9,
        "plan_violation": plan_violation,
        "iteration_seconds": driver.iteration_seconds,
        "backend": backend.name,
    }
    if runs_on_device(backend):
        info["device"] = backend.device
    if welfare_threshold is not None:
        lower_bound = run.lower_bound
        assert lower_bound is not None  # _iterate computes it whenever there is a threshold
        info.update(
            {
                "welfare_threshold": welfare_threshold,
                "threshold_met": report.welfare >= welfare_threshold - (target_gap or 0.0),
                "saddle_value_lower_bound": lower_bound,
            }
        )
        # Quoted in the caller's payoff units (the run may be on scaled payoffs, solvers.scaling).
        threshold = caller_payoff(welfare_threshold)
        if lower_bound > CERTIFICATE_TOLERANCE and status != "converged":
            status = "infeasible"
            info["message"] = (
                f"no {concept.upper()} has welfare ≥ {threshold:g}: the average deviation "
                f"certifies a saddle-point value ≥ {caller_payoff(lower_bound):.6g} > 0"
            )
        elif status != "converged":
            info["message"] = f"no {concept.upper()} with welfare ≥ {threshold:g} found within the budget"
    return SolveResult(
        method="rm",
        point=xbar,
        status=status,
        iterations=driver.iteration,
        setup_seconds=run.setup_seconds,
        seconds=driver.elapsed(),
        trace=driver.trace,
        info=info,
        compile_seconds=run.compile_seconds,
    )


# ----------------------------------------------------------------------------- declaration
def _check(o: dict) -> None:
    if o["objective"] == "welfare" and o["welfare_threshold"] is not None:
        raise OptionError("rm --objective welfare searches the threshold itself; drop --welfare-threshold")
    if o["backend"] != "cpu" and o["concept"] != "efce":
        raise OptionError(f"--backend {o['backend']} runs EFCE only; {o['concept'].upper()} runs on the CPU")
    # A backend that cannot run here (numba-cuda missing, no GPU) is refused in one line now,
    # before any game is built.
    get_backend(o["backend"], threads=o["threads"])


def _unused(o: dict) -> dict[str, str]:
    if o["objective"] == "welfare":
        from efce.solvers.methods.welfare import WELFARE_INTERVAL_WIDTH

        return {
            "target_gap": f"--objective welfare stops when its welfare interval is "
            f"{WELFARE_INTERVAL_WIDTH:g} wide (each step aims at a tenth of that as its gap)"
        }
    return {}


def _run(game: Game, *, progress: ProgressCallback | None, **o) -> SolveResult:
    if o["objective"] == "welfare":
        from efce.solvers.methods.welfare import WELFARE_INTERVAL_WIDTH, solve_optimal_welfare

        # Each bisection step is one rm run, so --iterations caps a step (as it caps a plain run);
        # the bisection itself ends at the interval width, the time limit, or when no step decides.
        return solve_optimal_welfare(
            game,
            tolerance=WELFARE_INTERVAL_WIDTH,
            time_limit=o["time_limit"],
            step_iterations=o["iterations"],
            rule=o["local"],
            averaging=o["averaging"],
            alternating=o["updates"] == "alternating",
            threads=o["threads"],
            backend=o["backend"],
            concept=o["concept"],
            progress=progress,
        )
    return solve_efce(
        game,
        iterations=o["iterations"],
        time_limit=o["time_limit"],
        target_gap=o["target_gap"],
        welfare_threshold=o["welfare_threshold"],
        rule=make_rule(o["local"]),
        progress=progress,
        threads=o["threads"],
        averaging=o["averaging"],
        alternating=o["updates"] == "alternating",
        backend=o["backend"],
        concept=o["concept"],
    )


def _warm_up(game: Game, o: dict, device: bool = False) -> None:
    """Every kernel variant of ``_run(game, **o)``, on a tiny game standing in Ξ's and Y's sizes
    (:func:`efce.solvers.warm_up.warm_up_run`)."""
    sizes = saddle_point_sizes(game, o["concept"])
    # a game the run refuses is refused before the warm-up
    check_efce_model(game, sizes=sizes, concept=o["concept"])
    if o["backend"] != "cpu":
        # A device run builds its model with the CPU's kernels (DECOMPOSE, the operator's
        # tables, the device layouts) and reports with them; its loop compiles its device
        # kernels (SaddlePointRun.warm_up).  The twin run on the same backend calls them all
        # with the run's argument types, before the clock: left to the run, DECOMPOSE's
        # compilation (30 s on an empty cache) fell in its setup, where no stop is honoured.
        # The CPU's size classes do not apply to a device loop.
        warm_up_run(_run, game, o)
        return
    welfare = o["welfare_threshold"] is not None or o["objective"] == "welfare"
    entries = saddle_point_entries(game, welfare=welfare, sizes=sizes, concept=o["concept"])
    warm_up_run(_run, game, o, sizes=entries, backend=get_backend(threads=o["threads"]))


#: ``rm`` for :func:`efce.solve` (collected by :data:`efce.experiments.solve.METHODS`).
SOLVE_METHODS = (
    Method(
        "rm",
        "regret minimization on the saddle point of the concept's equilibria "
        "(Farina et al. 2019, Algorithm 1)",
        OPTIONS,
        _run,
        players=2,
        chance="public",
        check=_check,
        unused=_unused,
        warm_up=_warm_up,
        compiles_kernels=True,
        # With a threshold and --objective welfare (the bisection's interval, its steps and
        # their trace columns) too.
        payoff_info=EQUILIBRIUM_REPORT
        | {
            "welfare_threshold",
            "saddle_value_lower_bound",
            "welfare_shortfall",
            "welfare_interval",
            "interval_width",
            "gap_tolerance",
            "tolerance",
            "threshold",
            "lower",
            "upper",
        },
    ),
)
