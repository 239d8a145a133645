"""CFR and CFR+ as regret minimization over sequence-form chains.

Section 3.2 of Farina, Ling, Fang, Sandholm 2019: Algorithm 1 applied to the chain of a player's
sequence-form polytope (section 3.1) with regret matching at every simplex *is* CFR (Zinkevich et
al. 2007); with RM+, alternating updates and linear averaging it is CFR+ (Tammelin et al. 2015).
Both players' chains run in the compiled :class:`~solvers.regret.engine.ChainEngine` (on the CPU
backend, :mod:`efce.solvers.backends`); the utility of a player is the bilinear sequence-form
payoff ``A_i`` against the opponent's current strategy.

Exploitability is NashConv: ``Σ_i max_{x_i'} u_i(x_i', x̄_{-i}) − u_i(x̄)`` of the average
strategies, with exact best responses by backward induction.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from efce.errors import GameError
from efce.games.game import Game
from efce.games.payoffs import sequence_form_payoffs
from efce.polytopes.sequence_form import sequence_form
from efce.solvers.backends import ComputeBackend, get_backend
from efce.solvers.driver import IterationDriver, ProgressCallback
from efce.solvers.evaluation.best_response import best_response
from efce.solvers.methods.selfplay import SelfPlay
from efce.solvers.options import ITERATIONS, LOCAL, TARGET_GAP, THREADS, TIME_LIMIT, Method, defaults
from efce.solvers.regret.engine import ChainEngine, minimizer_factory
from efce.solvers.regret.local import LocalRule, RegretMatching
from efce.solvers.regret.protocol import MinimizerFactory
from efce.solvers.result import SolveResult, TraceRow
from efce.solvers.warm_up import warm_up_run

if TYPE_CHECKING:  # annotations only
    import scipy.sparse as sp

#: The options of ``cfr`` and ``cfr+`` (:data:`SOLVE_METHODS`): type, range and default of each
#: (``local`` None: the variant's own rule, RM for CFR, RM+ for CFR+).
OPTIONS = (ITERATIONS.with_default(1000), TIME_LIMIT, TARGET_GAP, LOCAL, THREADS)
#: Option name → the default of ``cfr`` and ``cfr+`` (:data:`OPTIONS`), :func:`solve_cfr`'s own.
DEFAULTS = defaults(OPTIONS)


def exploitability(
    game: Game,
    strategies: Sequence[np.ndarray],
    payoffs: tuple[sp.csr_matrix, sp.csr_matrix] | None = None,
    backend: ComputeBackend | None = None,
) -> tuple[float, np.ndarray]:
    """NashConv of sequence-form ``strategies = (x1, x2)`` and the players' utilities (best
    responses on the CPU ``backend``, default a new one).

    The utilities ``u_i = x1ᵀ A_i x2`` are exactly rounded sums (``math.fsum``), not BLAS dot
    products: a BLAS picks its kernel by CPU, so ``x1 @ v`` may differ in its last bits from one
    machine to another, and the reported gap with it."""
    a1, a2 = sequence_form_payoffs(game) if payoffs is None else payoffs
    x1, x2 = strategies
    a1x2 = a1 @ x2
    # (fsum of a list: the same exact sum, without a NumPy scalar made per element)
    u = np.array([math.fsum((x1 * a1x2).tolist()), math.fsum((x1 * (a2 @ x2)).tolist())])
    br1, _ = best_response(game.sequences(0), a1x2, backend)
    br2, _ = best_response(game.sequences(1), a2.T @ x1, backend)
    return float(br1 - u[0] + br2 - u[1]), u


def solve_cfr(
    game: Game,
    *,
    iterations: int = DEFAULTS["iterations"],
    variant: str = "cfr+",
    rule: LocalRule | str | None = DEFAULTS["local"],
    minimizer: MinimizerFactory | None = None,
    time_limit: float | None = DEFAULTS["time_limit"],
    target_gap: float | None = DEFAULTS["target_gap"],
    check_every: int | None = None,
    progress: ProgressCallback | None = None,
    threads: int | None = None,
) -> SolveResult:
    """Run CFR (``variant="cfr"``: RM, simultaneous updates, uniform averaging) or CFR+
    (``"cfr+"``: RM+, alternating updates, linear averaging) on a two-player game.

    At the checkpoints of :class:`~solvers.driver.IterationDriver` (every ``check_every``
    iterations, default a geometric schedule) the exploitability of the average strategy is
    recorded; ``target_gap`` stops once it is reached.  The defaults are those of ``cfr`` and
    ``cfr+`` (:data:`OPTIONS`): 1,000 iterations, no target, no time limit.

    ``rule`` (a :class:`~solvers.regret.local.LocalRule` or its name; default RM for CFR, RM+ for CFR+)
    runs at every infoset; ``minimizer`` instead builds each player's regret minimizer from the
    chain of their sequence-form polytope (``polytopes.sequence_form``; points indexed by
    sequence).  Giving both is a ValueError.

    ``threads`` (default ``None``: numba's setting, all cores unless changed) is the CPU
    backend's thread count for the chain passes (:mod:`efce.solvers.backends`); a sequence-form
    chain smaller than the backend's parallel threshold runs the serial passes anyway, and the
    iterates are the same on every count.

    Raises
    ------
    GameError
        Not two players, or an unknown variant.
    ValueError
        A bad rule, minimizer or thread count (:class:`~efce.errors.OptionError`), before
        anything is built.
    """
    started = time.perf_counter()
    if game.num_players != 2:
        raise GameError(
            f"CFR here solves two-player games; {game.name} has {game.num_players} players "
            f"(use --method icfr or cfr-s for n players)"
        )
    if variant not in ("cfr", "cfr+"):
        raise GameError(f"unknown CFR variant '{variant}' (cfr or cfr+)")
    plus = variant == "cfr+"
    backend = get_backend(threads=threads)
    make_minimizer = minimizer_factory(rule, minimizer, RegretMatching(plus=plus), backend)
    payoffs = sequence_form_payoffs(game)
    a1, a2 = payoffs
    a2t = a2.T.tocsr()
    chains = [sequence_form(game.sequences(p)) for p in (0, 1)]
    engines = (
        ChainEngine(chains[0], minimizer=make_minimizer(chains[0])),
        ChainEngine(chains[1], minimizer=make_minimizer(chains[1])),
    )
    # Both players maximize: player 1's loss is −A₁x₂, player 2's is −A₂ᵀx₁.
    play = SelfPlay(
        engines,
        (lambda x2, out: np.negative(a1 @ x2, out=out), lambda x1, out: np.negative(a2t @ x1, out=out)),
        alternating=plus,
        linear_averaging=plus,
    )
    setup = time.perf_counter() - started

    driver = IterationDriver(
        iterations=iterations, time_limit=time_limit, check_every=check_every, progress=progress
    )
    for t in driver:
        play.step(t)
        if driver.checkpoint_due():
            with driver.paused():
                gap, _ = exploitability(game, [play.average(0), play.average(1)], payoffs, backend)
            if driver.record(
                TraceRow(t, driver.elapsed(), gap),
                converged=target_gap is not None and gap <= target_gap,
                aim=(gap, target_gap),
            ):
                break
    avg = [play.average(0), play.average(1)]
    gap, u = exploitability(game, avg, payoffs, backend)
    return SolveResult(
        method=variant,
        point=tuple(avg),
        status=driver.status,
        iterations=driver.iteration,
        setup_seconds=setup,
        seconds=driver.elapsed(),
        trace=driver.trace,
        info={
            "exploitability": gap,
            "value": float(u[0]),
            "utilities": u,
            "welfare": float(u.sum()),
            "iteration_seconds": driver.iteration_seconds,
        },
    )


# ----------------------------------------------------------------------------- declaration
def _run(variant: str, game: Game, *, progress: ProgressCallback | None, **o) -> SolveResult:
    from efce.solvers.regret.registry import make_rule

    return solve_cfr(
        game,
        iterations=o["iterations"],
        variant=variant,
        rule=make_rule(o["local"]) if o["local"] else None,
        time_limit=o["time_limit"],
        target_gap=o["target_gap"],
        progress=progress,
        threads=o["threads"],
    )


def _runner(variant: str):
    # A partial of a module-level function, not a closure: a warm-up's helper processes
    # receive the runner pickled (efce.solvers.parallel_compile).
    return functools.partial(_run, variant)


def _warm_up_of(run):
    def warm_up(game: Game, o: dict, device: bool = False) -> None:
        """Every kernel variant of ``run(game, **o)``, on a tiny game standing in the sizes of
        the players' sequence-form chains (:func:`efce.solvers.warm_up.warm_up_run`)."""
        sizes = [game.sequences(p).num_sequences for p in range(game.num_players)]
        warm_up_run(run, game, o, sizes=sizes, backend=get_backend(threads=o["threads"]))

    return warm_up


def _method(variant: str, description: str) -> Method:
    run = _runner(variant)
    return Method(
        variant,
        description,
        OPTIONS,
        run,
        players=2,
        warm_up=_warm_up_of(run),
        compiles_kernels=True,
        payoff_info=frozenset({"exploitability", "value", "utilities", "welfare"}),
    )


#: ``cfr`` and ``cfr+`` for :func:`efce.solve` (collected by :data:`efce.experiments.solve.METHODS`).
SOLVE_METHODS = (
    _method("cfr", "CFR (Nash equilibrium, two players)"),
    _method("cfr+", "CFR+ (Nash equilibrium, two players)"),
)
