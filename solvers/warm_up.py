"""Compilation outside the clock: what every method's warm-up shares.

A numba kernel is compiled — or loaded from numba's on-disk cache — the first time a process
calls it with a new combination of argument types (a *variant*).  Left to the run, that happens
inside its clock: on an empty cache, rm's first iterations on small Sheriff took seconds instead
of milliseconds.  A method's warm-up (:attr:`~efce.solvers.options.Method.warm_up`, run by
:func:`efce.experiments.solve.solve` before the method's run and reported as the result's
``compile_seconds``) therefore calls every variant the run will call, first.

It does so by running the method itself, with the run's options, on a tiny game of the same kind
(:func:`twin_game`: the same number of players, the same kind of chance moves) for
:data:`WARM_UP_ITERATIONS` iterations — the loop, its checkpoint sweeps and the final report, each
with the argument types the real run passes, since the same builders make them — once per
*size class* of the real run's structures: inside :func:`~efce.solvers.backends.sizing.sized_as`
the tiny run chooses the kernel variants (parallel passes and products, float32 state) that
structures of the real size choose (:func:`warm_up_run`).  No kernel is listed twice: the list is
the method's code.  The tiny run also loads the builders' kernels the run's setup calls.

A process warms each method configuration and size class once (``_WARMED``); after that a
warm-up costs nothing.

**A run that need not compile.**  Compiling rm's kernels takes some 40 s on an empty cache; a
game of a few dozen nodes is solved by the same kernels run as Python
(:mod:`efce.games.resources.compiled`) in milliseconds.  :func:`tiered_run` therefore first
attempts a run without a time limit with every kernel run as Python (warm-up included, which
then only warms what is not numba: an LP solver's first call), and keeps it if it ends within
:data:`INTERPRETED_ATTEMPT_SECONDS` of CPU time without calling a kernel on more than
:data:`~efce.games.resources.compiled.INTERPRET_MAX_ELEMENTS` elements.  Otherwise the attempt is
dropped, unseen (its trace rows were held back), and the run is made again compiled, its warm-up
first, exactly as without the attempt: the attempt costs at most those seconds, the compiled run
gives the same iterates, and its clock only ever sees compiled code.  A run with a time limit
(what it reaches in that time is the result: ``efce compare``'s runs) and a run under
``EFCE_KERNELS=compiled`` compile from the start.  The result says which in
``info["kernels"]``: ``"interpreted"`` when some kernel ran as Python, ``"compiled"`` when none
did (a kept attempt whose kernels this process had compiled before ran compiled code), and
``compile_seconds`` includes a dropped attempt.

**A run that warms its own clock** (:attr:`~efce.solvers.options.Method.warms_its_clock`:
``lp-highs`` and ``lp-cvxpy``, whose clock is the solver call alone, and ``lp-pdlp``, which
compiles its stages' evaluation on the zero plan before its clock starts) is made once, with or
without a time limit, in ``auto`` mode: each of its setup's and its report's calls runs as Python
when small and compiles (or loads) where it is made when large.  Nothing Python-run can reach its
clock, so nothing needs dropping; on an empty cache the small Sheriff game's LP so solves in 2 s
instead of compiling 47 kernel variants for 13 s.  ``EFCE_KERNELS=compiled`` compiles it too.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from functools import cache
from typing import TYPE_CHECKING, Any

from efce.errors import InterpretationEnded
from efce.games.resources.compiled import (
    compiled_only,
    current_mode,
    default_mode,
    interpreted_attempt,
    kernel_mode,
    twin_calls,
)
from efce.interrupts import check_stop
from efce.solvers.backends import get_backend
from efce.solvers.backends.sizing import sized_as
from efce.solvers.parallel_compile import compile_together

if TYPE_CHECKING:
    from efce.games.game import Game
    from efce.solvers.options import Method
    from efce.solvers.result import SolveResult, TraceRow

#: Iterations of a warm-up run: the first iteration is a checkpoint and the last ends the run,
#: so the loop's passes, its checkpoint sweeps and the final report all run.
WARM_UP_ITERATIONS = 2

#: The options a warm-up run sets to its own budget (when the method takes them): a short run
#: that neither stops early on its gap nor on the clock.
WARM_UP_BUDGET = {"iterations": WARM_UP_ITERATIONS, "time_limit": None, "target_gap": 0.0}

#: Options that change how long a run lasts, not which kernels it calls.
_BUDGET_OPTIONS = frozenset(WARM_UP_BUDGET) | {"seed"}

#: What this process has warmed up: (runner, options but the budget, players, chance moves,
#: device, kernel mode, stand-in size).
_WARMED: set[tuple] = set()


@cache
def twin_game(players: int, chance: str) -> Game:
    """The tiny game a warm-up runs a method on, of the kind of the real game: two players —
    Sheriff with bribes up to 2, one item and one round (21 nodes) without chance moves,
    Goofspiel with two ranks and random prizes with public ones (every player sees the prize
    drawn: what the two-player LPs and ``rm`` accept), Kuhn poker with private ones; more
    players — Goofspiel with two ranks, prizes revealed in order (no chance moves) or drawn by
    chance.  ``chance`` is the ``kind`` of :func:`efce.games.chance.chance_visibility`
    (``"none"``, ``"public"``, ``"private"``).  Built once per process.

    The two-player game without chance moves has more relevant pairs than trigger entries (63
    against 61), as the games rm solves in practice do: rm's checkpoints then read the gap from
    the saddle point in a buffer the loop leaves idle, and the tiny run calls those kernels; a
    game with more trigger entries evaluates the gap with the evaluator's kernels, which every
    run's final report calls anyway.

    Raises
    ------
    ValueError
        Fewer than two players.
    """
    from efce import games

    if players < 2:
        raise ValueError(f"a warm-up game has at least two players, got {players}")
    if players == 2:
        if chance == "none":
            return games.sheriff(max_bribe=2, max_items=1, rounds=1)
        return games.goofspiel(players=2, ranks=2, prizes="random") if chance == "public" else games.kuhn()
    return games.goofspiel(players=players, ranks=2, prizes="sorted" if chance == "none" else "random")


def warm_up_run(
    run: Callable[..., object],
    game: Game,
    options: Mapping[str, Any],
    *,
    sizes: Iterable[int | tuple[int, int]] = (),
    device: bool = False,
    backend: Any = None,
) -> None:
    """Call every kernel variant that ``run(game, **options)`` calls: run ``run`` on
    :func:`twin_game` of ``game``'s kind with ``options`` but the budget
    (:data:`WARM_UP_BUDGET`), once per size class of ``sizes``.

    Parameters
    ----------
    run : callable
        The method's runner (:attr:`~efce.solvers.options.Method.run`), or a module-level
        function of the same signature that makes the run's kernel calls
        (:func:`~baselines.efce_lp.model_and_report`).
    game : Game
        The game the real run solves; only its number of players and its chance moves are read.
    options : mapping
        The real run's options, validated (every option of the method).
    sizes : iterable of int or (int, int)
        Entries of the real run's chains, rows of its operators, entries of its rules' segment
        sets; a pair ``(lo, hi)`` when only bounds are known
        (:meth:`~efce.solvers.backends.cpu.CPUBackend.variant_sizes`).  Empty: the tiny run's
        own sizes.
    device : bool
        The real run records its distribution (``solve(..., device=True)``).
    backend : ComputeBackend or str, optional
        The backend whose size classes apply (default: the CPU).

    Raises
    ------
    Interrupted
        A stop was requested before or during the warm-up.
    """
    backend = get_backend(backend)
    stand_ins = backend.variant_sizes(sizes) if hasattr(backend, "variant_sizes") else [None]
    settings = {**options, **{k: v for k, v in WARM_UP_BUDGET.items() if k in options}}
    configuration = tuple(sorted((k, repr(v)) for k, v in options.items() if k not in _BUDGET_OPTIONS))
    from efce.games.chance import chance_visibility

    kind = chance_visibility(game).kind
    twin = twin_game(game.num_players, kind)
    extra = {"device": True} if device else {}
    mode = current_mode()

    def key(size: tuple[int, int] | None) -> tuple:
        return (run, configuration, game.num_players, kind, device, mode, size)

    todo = [size for size in stand_ins or [None] if key(size) not in _WARMED]
    on_cpu = backend.name == "cpu" and options.get("backend", "cpu") in (None, "cpu")
    # On an empty cache helper processes compile their share of the variants on the other cores,
    # and the loop below loads them; a warm cache starts none and needs no loop.
    if (
        todo
        and mode == "compiled"
        and on_cpu
        and compile_together(
            run, game.num_players, kind, {**settings, **extra}, todo, threads=options.get("threads")
        )
    ):
        _WARMED.update(key(size) for size in todo)
        todo = []
    for size in todo:
        check_stop("warming up")
        tiny_run(run, twin, {**settings, **extra}, size)
        _WARMED.add(key(size))
    check_stop("warming up")  # a stop the tiny run honoured ends the real one before it starts


def tiny_run(
    run: Callable[..., object], twin: Game, settings: Mapping[str, Any], size: tuple[int, int] | None
) -> None:
    """One tiny run of a warm-up: ``run(twin, **settings)``, inside
    :func:`~efce.solvers.backends.sizing.sized_as` of the stand-in size ``size`` (None: the tiny
    run's own sizes)."""
    with sized_as(*size) if size is not None else nullcontext():
        run(twin, progress=None, **settings)


@contextmanager
def compile_notice(callback: Callable[[], None]) -> Iterator[None]:
    """Inside the block, ``callback()`` is called when numba starts compiling a kernel (an event
    of ``numba.core.event``; loading one from the cache is not compiling), each time: a
    warm-up's progress line says so at once, before the seconds a compilation takes."""
    from numba.core import event

    class Notice(event.Listener):
        def on_start(self, _event) -> None:
            callback()

        def on_end(self, _event) -> None:
            pass

    with event.install_listener("numba:compile", Notice()):
        yield


@contextmanager
def compiling_time() -> Iterator[Callable[[], float]]:
    """Measure the seconds numba spends compiling inside the block: yields a function that
    returns them (0.0 when nothing compiled).

    numba's own :class:`numba.core.event.TimingListener` on its ``numba:compile`` events: a
    kernel compiled while compiling its caller is counted once, and loading one from the cache
    is not compiling (no event).  A setup step that calls kernels (building a model) reports
    these seconds as ``compile_seconds`` rather than as its own: on an empty cache they are
    most of it.
    """
    from numba.core import event

    timer = event.TimingListener()
    with event.install_listener("numba:compile", timer):
        yield lambda: timer.duration if timer.done else 0.0


def segment_size_bound(game: Game) -> int:
    """An upper bound on the entries of any segment set a method over the players' sequences
    keeps a rule's state on (ICFR's and CFR-S's infoset rules, the trigger dynamics' subtrees):
    per player ``|Σ_i| · (depth_i + 1) · max |A|``, the sequences times the triggers above one
    sequence."""
    bound = 0
    for i in range(game.num_players):
        space = game.sequences(i)
        depth = int(space.infoset_depth.max(initial=0)) + 1
        widest = int(space.infoset_num_actions.max(initial=1))
        bound = max(bound, space.num_sequences * depth * widest)
    return bound


def segments_warm_up(
    run: Callable[..., SolveResult], check: Callable[[Game, Mapping[str, Any], bool], None] | None = None
) -> Callable[..., None]:
    """The :attr:`~efce.solvers.options.Method.warm_up` of a method whose rules keep their state
    on segment sets over the players' sequences (ICFR and CFR-S, the trigger dynamics), whose
    runner is ``run``: ``check(game, options, device)`` first (the run's own refusals, so that a
    request the run refuses is refused before any compilation), then :func:`warm_up_run` for
    the segment sizes up to :func:`segment_size_bound`."""

    def warm_up(game: Game, options: Mapping[str, Any], device: bool = False) -> None:
        if check is not None:
            check(game, options, device)
        warm_up_run(run, game, options, sizes=[(1, segment_size_bound(game))], device=device)

    return warm_up


#: CPU seconds :func:`tiered_run` lets a run attempted with its kernels as Python go on before
#: it compiles instead (a tenth or less of what compiling a method's kernels takes on an empty
#: cache; the table command of issue 40 that runs longest as Python, trigger's 200 iterations on
#: three-player Kuhn, takes 3 s).
INTERPRETED_ATTEMPT_SECONDS = 5.0


def attempts_interpreted(options: Mapping[str, Any]) -> bool:
    """Whether :func:`tiered_run` first attempts a run of ``options`` with its kernels run as
    Python: not under ``EFCE_KERNELS=compiled``, without a time limit, on the CPU."""
    return (
        not compiled_only()
        and options.get("time_limit") is None
        and options.get("backend", "cpu") in (None, "cpu")
    )


def tiered_run(
    spec: Method,
    game: Game,
    options: dict[str, Any],
    *,
    device: bool,
    progress: Callable[[TraceRow], None] | None,
    warm_up: Callable[..., float | None],
) -> SolveResult:
    """``spec``'s run of ``game`` with ``options`` after ``warm_up(spec, game, options,
    device=device)``: first attempted with its kernels run as Python where
    :func:`attempts_interpreted`, else (or when the attempt outgrows
    :data:`INTERPRETED_ATTEMPT_SECONDS` or a kernel's input outgrows what runs as Python)
    compiled, warm-up first; made once in ``auto`` mode when it warms its own clock (see the
    module docstring).

    Returns
    -------
    SolveResult
        The run's result; ``info["kernels"]`` is ``"interpreted"`` or ``"compiled"``,
        ``compile_seconds`` the warm-up's seconds plus those of a dropped attempt (None when the
        method has no warm-up and nothing was dropped).

    Raises
    ------
    Whatever the run raises; a stop request during the attempt ends it as it ends any run
    (the rows it recorded are passed on first).
    """
    if spec.warms_its_clock and not compiled_only():
        # No kernel runs as Python inside its clock: small calls run as Python, large ones
        # compile where they are called, with or without a time limit, and nothing is run twice.
        with kernel_mode(default_mode()):
            return _warmed_run(spec, game, options, device, progress, warm_up)
    started = time.perf_counter()
    dropped = 0.0  # the seconds of an attempt that outgrew running as Python
    if attempts_interpreted(options):
        rows: list[TraceRow] = []
        ended = False
        try:
            with interpreted_attempt(INTERPRETED_ATTEMPT_SECONDS):
                return _warmed_run(spec, game, options, device, rows.append, warm_up)
        except InterpretationEnded:
            ended = True
            dropped = time.perf_counter() - started
        finally:
            if not ended and progress is not None:
                for row in rows:  # the attempt's rows, now that it is kept
                    progress(row)
    with kernel_mode("compiled"):
        result = _warmed_run(spec, game, options, device, progress, warm_up)
    if dropped > 0.0 and result.compile_seconds is not None:
        result = dataclasses.replace(result, compile_seconds=result.compile_seconds + dropped)
    elif dropped > 0.0:
        result = dataclasses.replace(result, compile_seconds=dropped)
    return result


def _warmed_run(
    spec: Method,
    game: Game,
    options: dict[str, Any],
    device: bool,
    progress: Callable[[TraceRow], None] | None,
    warm_up: Callable[..., float | None],
) -> SolveResult:
    """The warm-up, then the run, labelled ``kernels: "interpreted"`` when the run called some
    kernel as Python, else ``"compiled"`` (variants compiled earlier in the process run compiled
    in any mode)."""
    compile_seconds = warm_up(spec, game, options, device=device)
    extra = {"device": True} if device else {}
    calls = twin_calls()
    result = spec.run(game, progress=progress, **options, **extra)
    kernels = "compiled" if twin_calls() == calls else "interpreted"
    if compile_seconds is not None:
        result = dataclasses.replace(
            result, compile_seconds=(result.compile_seconds or 0.0) + compile_seconds
        )
    return dataclasses.replace(result, info={**result.info, "kernels": kernels})


__all__ = [
    "INTERPRETED_ATTEMPT_SECONDS",
    "WARM_UP_BUDGET",
    "WARM_UP_ITERATIONS",
    "compile_notice",
    "compiling_time",
    "segment_size_bound",
    "segments_warm_up",
    "tiered_run",
    "tiny_run",
    "attempts_interpreted",
    "twin_game",
    "warm_up_run",
]
