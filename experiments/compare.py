"""Compare EFCE methods on one game: each in its own process, under time and memory limits.

Every method runs as ``efce solve GAME --method M --json --trace FILE`` in a child process of
:mod:`experiments.harness` with an address-space limit and a wall-clock limit, so a method that
runs out of memory or time is recorded as such while the others go on.  The arguments are all
checked before the first child starts.  The runner writes

* ``traces.csv`` — every trace row of every method (method, iteration, seconds, gap, infeasibility);
* ``summary.json`` — per method: status, final gap, time to reach 1e-1/1e-2/1e-3, peak memory,
  the seconds spent compiling before the clock, and what "done" means (:func:`run_outcome`);
* ``convergence.png`` — max deviation (log scale) against runtime, as in Figure 3 of Farina,
  Ling, Fang, Sandholm 2019, and the iterates' infeasibility
  (:func:`experiments.figures.plot_convergence`).

``efce compare`` on several games (``--preset``) adds ``figure.png`` in its output folder: the
games' max-deviation panels side by side (:func:`experiments.figures.plot_games`).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

from efce.concepts import CONCEPTS, DEFAULT_CONCEPT, gap_key
from efce.errors import GameError, OptionError
from efce.games.resources.atomic import atomic_open
from efce.games.resources.compiled import SHARED_VARIABLE
from efce.games.spec import check_spec
from efce.interrupts import acknowledge_stop, forget_on_abort, graceful, remove_on_abort, stop_requested
from efce.solvers.options import describe_value, is_real
from efce.solvers.result import TRACE_COLUMNS

from .compile_ahead import CompileAhead
from .harness import MAX_MEMORY_LIMIT_GIB, ChildResult, child_environment, efce_command, run_solve
from .paths import check_outputs, make_output_folder
from .solve import (
    OPTIONS,
    WARM_UP_LINE,
    check_folder_argument,
    check_game_argument,
    check_text_list,
    validate_options,
)

#: Gaps (max deviation) at which the comparison reports each method's time to reach them.
THRESHOLDS = (1e-1, 1e-2, 1e-3)
DEFAULT_METHODS = ("rm", "lp-highs", "lp-pdlp", "subgradient")

#: A compared run is a method or a configuration of one: ``rm[local=rm+,averaging=linear]``.
_ENTRY = re.compile(r"^([A-Za-z0-9+_-]+)(?:\[(.*)\])?$", re.S)


def split_method_list(text: str) -> list[str]:
    """``"rm,rm[local=rm+,averaging=linear],lp-highs"`` → its entries (the commas inside
    brackets belong to their entry); blanks dropped."""
    entries: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        depth += (char == "[") - (char == "]")
        if char == "," and depth == 0:
            entries.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    entries.append("".join(current).strip())
    return [e for e in entries if e]


def split_configuration(entry: str) -> tuple[str, list[tuple[str, str]]]:
    """The method and the ``(option, value text)`` pairs of a compared run, as written:
    ``rm[local=rm+,averaging=linear]`` → ``("rm", [("local", "rm+"), ("averaging", "linear")])``
    (option names as written); a bare method has none.  Only the syntax is checked
    (:func:`method_variant` also checks the options and types the values).

    Raises
    ------
    OptionError
        Not ``METHOD`` or ``METHOD[option=value,...]``, or an item that is not ``option=value``.
    """
    match = _ENTRY.match(entry)
    if match is None:
        raise OptionError(
            f"'{entry}' is not a method or METHOD[option=value,...] (e.g. rm[local=rm+,averaging=linear])"
        )
    method, inside = match.group(1), match.group(2)
    items = []
    for item in [] if inside is None else inside.split(","):
        name, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not name or not value:
            raise OptionError(f"'{item.strip()}' in '{entry}' is not option=value")
        items.append((name, value))
    return method, items


def method_variant(entry: str) -> tuple[str, dict[str, Any]]:
    """The method and options of a compared run: ``rm[local=rm+,averaging=linear]`` →
    ``("rm", {"local": "rm+", "averaging": "linear"})``; a bare method has no options.  Values
    are read by the option's type (``--iterations`` an integer, ``--step-size`` a number).

    Raises
    ------
    OptionError
        Not ``METHOD`` or ``METHOD[option=value,...]``, an unknown option, an option given
        twice, or a value its option cannot take.
    """
    method, items = split_configuration(entry)
    options: dict[str, Any] = {}
    for name, value in items:
        key = name.lstrip("-").replace("-", "_")
        if key not in OPTIONS:
            raise OptionError(f"unknown option '{name}' in '{entry}'; valid: {', '.join(OPTIONS)}")
        if key in options:
            raise OptionError(f"'{entry}' gives {name} twice")
        options[key] = _typed(OPTIONS[key].kind, value, name, entry)
    return method, options


def concept_variant(entry: str, concept: str | None) -> tuple[str, dict[str, Any]]:
    """:func:`method_variant` of ``entry`` with the comparison's ``concept`` added to the options
    of a method that takes one (``efce compare --concept``).

    Raises
    ------
    OptionError
        ``entry`` sets another concept itself, or its method computes EFCE only while
        ``concept`` is another.
    """
    method, variant = method_variant(entry)
    if concept is None:
        return method, variant
    from .solve import METHODS

    takes = method in METHODS and "concept" in METHODS[method].defaults
    if takes:
        if variant.get("concept", concept) != concept:
            raise OptionError(
                f"'{entry}' sets concept={variant['concept']}, and the comparison is of {concept}"
            )
        return method, {**variant, "concept": concept}
    if concept != DEFAULT_CONCEPT:
        raise OptionError(
            f"{method} computes EFCE only; with --concept {concept} compare methods that take "
            f"a concept ({', '.join(m for m, d in METHODS.items() if 'concept' in d.defaults)})"
        )
    return method, variant


def _typed(kind: type, value: str, name: str, entry: str):
    if kind is str:
        return value
    if kind is bool:
        if value.lower() not in ("true", "false"):
            raise OptionError(f"{name} in '{entry}' must be true or false, got '{value}'")
        return value.lower() == "true"
    try:
        return kind(value)
    except ValueError:
        raise OptionError(
            f"{name} in '{entry}' must be {'an integer' if kind is int else 'a number'}, got '{value}'"
        ) from None


@dataclass
class MethodRun:
    method: str
    status: str
    wall_seconds: float
    peak_memory_mib: float | None
    final_gap: float | None = None
    time_to_gap: dict[str, float | None] = field(default_factory=dict)
    feasible_iterates: bool | None = None
    max_infeasibility: float | None = None
    result: dict | None = None
    error: str | None = None
    #: Seconds the run spent compiling or loading compiled kernels before its clock started
    #: (its ``solve --json`` ``compile_seconds``; None when not measured).
    compile_seconds: float | None = None
    #: What "done" means for this run (:func:`run_outcome`): a code and one line saying why.
    outcome: str | None = None
    outcome_detail: str | None = None

    @classmethod
    def from_json(cls, entry: Any, where: str) -> MethodRun:
        """A run as :func:`compare` wrote it into ``summary.json`` (``asdict`` of a run), every
        field checked against its declared type: the guard of ``--replot`` against a damaged or
        hand-edited file.  A field that is missing takes its default (the required ones
        aside).

        Raises
        ------
        GameError
            ``<where>: <field> must be ...``, naming the first field that is wrong.
        """
        if not isinstance(entry, dict):
            raise GameError(f"{where} must be an object of the run's facts, got {describe_value(entry)}")
        values: dict[str, Any] = {}
        for spec in fields(cls):
            if spec.name not in entry:
                if spec.default is MISSING and spec.default_factory is MISSING:
                    raise GameError(f"{where} has no '{spec.name}'")
                continue
            values[spec.name] = _checked_field(spec.name, entry[spec.name], spec.type, where)
        return cls(**values)


def _checked_field(name: str, value: Any, declared: Any, where: str) -> Any:
    """``value`` of field ``name`` of a :class:`MethodRun` (declared type ``declared``, its text
    under ``from __future__ import annotations``), or a :class:`GameError`."""
    text = str(declared)
    if value is None and "None" in text:
        return None
    if text.startswith("str"):
        ok = isinstance(value, str)
        expected = "a string"
    elif text.startswith("float"):
        ok = is_real(value) and math.isfinite(float(value)) and value >= 0
        expected = "a finite number ≥ 0"
    elif text.startswith("bool"):
        ok = isinstance(value, bool)
        expected = "true or false"
    elif text.startswith("dict[str, float"):  # time_to_gap: gap → seconds (or null)
        ok = isinstance(value, dict) and all(
            v is None or (is_real(v) and math.isfinite(float(v)) and v >= 0) for v in value.values()
        )
        expected = "an object of gap → finite seconds ≥ 0 or null"
    else:  # result: the run's own JSON object
        ok = isinstance(value, dict)
        expected = "an object"
    if not ok:
        shown = describe_value(value) if value is not None else "null"
        nullable = " or null" if "None" in text else ""
        raise GameError(f"{where}: '{name}' must be {expected}{nullable}, got {shown}")
    return value


def option_arguments(options: dict) -> list[str]:
    """``{"step_size": 1e-6, "verbose": True}`` → ``["--step-size", "1e-06", "--verbose"]`` (the
    ``efce solve`` flags; a false flag is left out)."""
    args = []
    for name, value in options.items():
        if isinstance(value, bool):  # a flag: given when true
            args += ["--" + name.replace("_", "-")] if value else []
        elif value is not None:
            args += ["--" + name.replace("_", "-"), str(value)]
    return args


def solve_arguments(
    game_spec: str, entry: str, time_limit: float, options: dict | None = None, concept: str | None = None
) -> list[str]:
    """The ``efce solve`` arguments of the compared run ``entry`` (a method or a configuration of
    one, :func:`concept_variant`) with its ``options``, under ``time_limit`` seconds."""
    method, variant = concept_variant(entry, concept)
    return [
        game_spec,
        "--method",
        method,
        "--json",
        "--time-limit",
        str(time_limit),
        *option_arguments({**variant, **(options or {})}),
    ]


def run_method(
    game_spec: str,
    method: str,
    out_dir: str,
    *,
    time_limit: float,
    memory_limit_gib: float | None,
    options: dict | None = None,
    log: Callable[[str], object] | None = None,
    concept: str | None = None,
    environment: dict[str, str] | None = None,
) -> tuple[MethodRun, list[dict]]:
    """Run one method (or configuration, ``rm[local=rm+]``: :func:`method_variant`; of
    ``concept`` when it takes one, :func:`concept_variant`) in a child process
    (:mod:`experiments.harness`); never raises for the method's own failures.  The child's
    warm-up lines (:data:`~efce.experiments.solve.WARM_UP_LINE`) go to ``log``; ``environment``
    is the child's (default: this process's)."""
    label = method
    arguments = solve_arguments(game_spec, label, time_limit, options, concept)
    limit = None if memory_limit_gib is None else int(memory_limit_gib * 2**30)

    def pass_on(line: str) -> None:
        if log is not None and WARM_UP_LINE.match(line):
            log(line)

    try:
        # The trace is read from a folder of this run's own (harness.run_solve): never a file
        # an earlier, killed comparison left in the output folder.
        child, traced = run_solve(
            arguments,
            timeout=child_timeout(time_limit),
            memory_limit_bytes=limit,
            stop_requested=stop_requested,
            on_stderr_line=pass_on,
            env=environment,
        )
    except GameError as exc:  # the child's trace file is malformed
        run = MethodRun(label, "error", 0.0, None, error=str(exc))
        run.time_to_gap = {f"{t:g}": None for t in THRESHOLDS}
        run.outcome, run.outcome_detail = run_outcome(asdict(run), time_limit)
        return run, []
    rows = [{**{k: r[k] for k in TRACE_COLUMNS}, "method": label} for r in traced]
    run = MethodRun(label, "error", child.wall_seconds, child.peak_memory_mib)
    payload = child.payload
    run.status, run.error = child_status(child)
    if run.error is None and payload is not None:  # no error: the child printed its result
        run.result = payload
        run.final_gap = payload.get(gap_key(payload.get("concept") or DEFAULT_CONCEPT))
        run.feasible_iterates = payload.get("feasible_iterates")
        run.compile_seconds = payload.get("compile_seconds")
    if rows:
        run.max_infeasibility = max(r["infeasibility"] for r in rows)
        if run.final_gap is None:
            run.final_gap = rows[-1]["gap"]
        for threshold in THRESHOLDS:
            hit = next((r["seconds"] for r in rows if r["gap"] <= threshold), None)
            run.time_to_gap[f"{threshold:g}"] = hit
    else:
        run.time_to_gap = {f"{t:g}": None for t in THRESHOLDS}
    run.outcome, run.outcome_detail = run_outcome(asdict(run), time_limit)
    return run, rows


def _load_plotting() -> None:
    """Import what :func:`~efce.experiments.figures.plot_convergence` imports."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import figure, text, transforms  # noqa: F401
    from matplotlib.backends import backend_agg  # noqa: F401

    from . import figures  # noqa: F401


#: The files :func:`compare` writes into its output folder.
OUTPUT_FILES = ("traces.csv", "summary.json", "convergence.png")


def child_timeout(time_limit: float | None) -> float | None:
    """Wall-clock seconds after which a child with this solver time limit is killed: model
    building is outside the solver's own limit, so it gets a grace of 60 s + 50 %."""
    return None if time_limit is None else time_limit + 60.0 + 0.5 * time_limit


def child_status(child: ChildResult) -> tuple[str, str | None]:
    """``(status, error)`` of an ``efce solve --json`` child (:class:`~.harness.ChildResult`):
    the solver's own status when it printed a result, else ``time_limit`` (killed by the
    harness), ``out_of_memory`` or ``error``, with the reason."""
    payload = child.payload
    if child.timed_out:
        return "time_limit", child.error
    if payload is not None and payload.get("status") == "interrupted" and "error" in payload:
        return "interrupted", payload["error"]  # stopped before its first result: nothing failed
    if payload is None or "error" in payload:
        lowered = (child.error or "").lower()
        status = "out_of_memory" if ("memory" in lowered or "too large" in lowered) else "error"
        return status, child.error
    return payload.get("status", "error"), None


def check_game(game_spec: str) -> None:
    """:func:`games.spec.check_spec`, and a ``.efg`` file is also parsed: the runs happen in
    child processes, so a file that cannot be read would otherwise fail in every one of them
    after the output folder was written.

    Raises
    ------
    GameError
        Naming the game and what is wrong with it.
    """
    check_spec(game_spec)
    if os.path.isfile(game_spec):
        from efce.games.spec import make_game

        try:
            make_game(game_spec)
        except GameError:
            raise
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise GameError(f"cannot read the game file {game_spec}: {exc}") from None


def check_compare_arguments(
    game_spec: str,
    methods: Sequence[str],
    *,
    time_limit: float,
    memory_limit_gib: float | None,
    out_dir: str,
    options: dict[str, dict] | None = None,
    concept: str | None = None,
) -> None:
    """Every check :func:`compare` makes before it starts a single child process.

    Raises
    ------
    OptionError
        An argument of the wrong type: a game that is not a string, methods that are not a
        list of strings (a bare string is not read letter by letter), a limit that is not a
        number (any numeric type, not bool), an output folder that is not a path.
    GameError
        An unknown or missing game, no method, an unknown method or option, or a limit that is
        not a positive finite number.
    OptionError
        The same configuration listed twice (however its options are written), an output
        folder that cannot be written (:func:`experiments.paths.check_outputs`), an unknown
        ``concept``, or a method that does not compute it.
    """
    game_spec = check_game_argument(game_spec, "the game", allow_game=False)
    if concept is not None and concept not in CONCEPTS:
        raise OptionError(f"--concept must be one of {', '.join(CONCEPTS)}; got {concept!r}")
    methods = check_text_list(methods, "methods", "['rm', 'lp-highs']")
    check_folder_argument(out_dir, "the output folder (out_dir)")
    if options is not None and not isinstance(options, dict):
        raise OptionError(
            f"options must be a dict of method → {{option: value}}, got {describe_value(options)}"
        )
    check_game(game_spec)
    if not methods:
        raise GameError("no method to compare: give at least one with --methods")
    for name, value in (("--time-limit", time_limit), ("--memory-limit", memory_limit_gib)):
        if value is None:
            continue
        if not is_real(value):
            raise OptionError(f"{name} must be a positive number, got {describe_value(value)}")
        if not (math.isfinite(float(value)) and value > 0):
            raise GameError(f"{name} must be a positive number, got {value}")
        if name == "--memory-limit" and value > MAX_MEMORY_LIMIT_GIB:
            raise GameError(
                f"--memory-limit must be at most {MAX_MEMORY_LIMIT_GIB:.0f} GiB (2^63 bytes), got {value:g}"
            )
    configurations: dict[tuple, str] = {}
    for entry in methods:
        method, variant = concept_variant(entry, concept)
        given = (options or {}).get(entry, {})
        values = validate_options(
            method, {**variant, **given} if isinstance(given, dict) and variant else given
        )
        # The same configuration however it is written (option order, defaults spelled out,
        # 1e-3 for 0.001): it would run twice and draw one curve over the other.
        same = (method, tuple(sorted(values.items())))
        if same in configurations:
            first = configurations[same]
            raise OptionError(
                f"methods lists a run twice: '{first}' and '{entry}' are one configuration"
                if first != entry
                else f"methods lists a run twice: '{entry}'"
            )
        configurations[same] = entry
    unknown = sorted(set(options or {}) - set(methods))
    if unknown:
        raise GameError(f"options given for method(s) not compared: {', '.join(unknown)}")
    check_outputs(folders={"output folder (--out)": (out_dir, OUTPUT_FILES)})


def compare(
    game_spec: str,
    methods: Sequence[str] = DEFAULT_METHODS,
    *,
    time_limit: float = 60.0,
    memory_limit_gib: float | None = None,
    out_dir: str = "results",
    options: dict[str, dict] | None = None,
    log: Callable[[str], object] | None = None,
    linear_time: bool = False,
    concept: str | None = None,
) -> dict:
    """Run every method on ``game_spec``, each in its own process, and write ``traces.csv``,
    ``summary.json`` and ``convergence.png`` into ``out_dir``: :func:`compare_games` of one game.

    Parameters
    ----------
    game_spec : str
        A spec string or ``.efg`` path (the children build the game themselves).
    methods : sequence of str
        Keys of :data:`experiments.solve.METHODS`, or configurations of them
        (``rm[local=rm+,averaging=linear]``, :func:`method_variant`), each drawn as its own curve.
    time_limit : float
        Seconds per method for its iterations (or solver call).
    memory_limit_gib : float, optional
        Address-space limit per child.
    out_dir : str
        The output folder.
    options : dict, optional
        Method → its ``efce solve`` options (e.g. ``{"subgradient": {"step_size": 1e-6}}``).
    log : callable, optional
        Called with a line of text before each method.
    linear_time : bool
        Draw ``convergence.png`` on a linear runtime axis (the paper's) instead of a log one.
    concept : str, optional
        The equilibrium every method that takes a concept computes (``efce``, ``efcce``,
        ``nfcce``; :mod:`efce.concepts`); a method that computes EFCE only is refused with
        another.  None: each method's own (EFCE unless a configuration says otherwise).

    Returns
    -------
    dict
        The summary (also written to ``summary.json``); ``"interrupted": true`` when a stop
        request (Ctrl-C, SIGTERM) ended the comparison early — what was computed is kept;
        ``"unsaved"``: one line per file that could not be written (the folder was removed
        during the run, the disk is full), present only then.

    Raises
    ------
    OptionError
        An argument of the wrong type (:func:`check_compare_arguments`).
    GameError
        From :func:`check_compare_arguments`, before anything runs or is written.
    """
    summaries = compare_games(
        [game_spec],
        methods,
        out_dirs=[out_dir],
        time_limit=time_limit,
        memory_limit_gib=memory_limit_gib,
        options=options,
        log=log,
        linear_time=linear_time,
        concept=concept,
    )
    return next(iter(summaries.values()))


def compiles_kernels(entry: str, concept: str | None = None) -> bool:
    """Whether the compared run ``entry`` (a method or a configuration of one) compiles numba
    kernels of its own on an empty cache (:attr:`~efce.solvers.options.Method.compiles_kernels`)."""
    from .solve import METHODS

    method, _ = concept_variant(entry, concept)
    return METHODS[method].compiles_kernels


def compare_games(
    game_specs: Sequence[str],
    methods: Sequence[str] = DEFAULT_METHODS,
    *,
    out_dirs: Sequence[str],
    time_limit: float = 60.0,
    memory_limit_gib: float | None = None,
    options: dict[str, dict] | None = None,
    log: Callable[[str], object] | None = None,
    linear_time: bool = False,
    concept: str | None = None,
) -> dict[str, dict]:
    """Run every method on every game of ``game_specs``, each run in its own process, and write
    each game's ``traces.csv``, ``summary.json`` and ``convergence.png`` into its folder of
    ``out_dirs`` as soon as its last run has ended.

    The runs of methods that compile kernels of their own (:func:`compiles_kernels`: ``rm``, the
    CFR family, ...) start after every other run of every game, and meanwhile one background
    process at the lowest priority compiles their kernels into numba's cache
    (:mod:`efce.experiments.compile_ahead`): on an empty cache their warm-ups then load what
    they would have compiled.  The background is stopped when one of them starts whose kernels
    it has not compiled yet (that run's warm-up compiles them on every core).  Each run is
    measured as it would be alone; only the order in which the runs start differs from the
    order of ``methods`` (the summaries keep that one).

    Parameters
    ----------
    game_specs : sequence of str
        Spec strings or ``.efg`` paths.
    out_dirs : sequence of str
        One output folder per game.
    methods, time_limit, memory_limit_gib, options, log, linear_time, concept
        As for :func:`compare`.

    Returns
    -------
    dict
        Game spec → its summary (:func:`compare`), for every game at least one of whose runs
        ended (all of them unless a stop request ended the comparison early; a single game's
        summary is always there).

    Raises
    ------
    OptionError, GameError
        From :func:`check_compare_arguments` of each game, before anything runs or is written.
    """
    if log is not None and not callable(log):
        raise OptionError(f"log must be a function taking a line of text, or None, got {describe_value(log)}")
    if isinstance(game_specs, str) or not isinstance(game_specs, (list, tuple)):
        raise OptionError(f"game_specs must be a list of games, got {describe_value(game_specs)}")
    if (
        isinstance(out_dirs, str)
        or not isinstance(out_dirs, (list, tuple))
        or len(out_dirs) != len(game_specs)
    ):
        raise OptionError(
            f"out_dirs must be a list of one folder per game ({len(game_specs)}), "
            f"got {describe_value(out_dirs)}"
        )
    for game_spec, out_dir in zip(game_specs, out_dirs, strict=True):
        check_compare_arguments(
            game_spec,
            methods,
            time_limit=time_limit,
            memory_limit_gib=memory_limit_gib,
            out_dir=out_dir,
            options=options,
            concept=concept,
        )
    if not isinstance(linear_time, bool):
        raise OptionError(f"linear_time must be True or False, got {describe_value(linear_time)}")
    # A path object is a file whatever its name (games.spec.path_spec): the children get a text
    # that reads as one.
    specs = [check_game_argument(g, "the game", allow_game=False) for g in game_specs]
    methods, folders = list(methods), [os.fspath(d) for d in out_dirs]
    time_limit = float(time_limit)
    memory_limit_gib = None if memory_limit_gib is None else float(memory_limit_gib)
    for out_dir in folders:
        make_output_folder(out_dir)
    # The figure is drawn after the runs, also after a stop request; matplotlib's import is most
    # of its second, so it is loaded meanwhile (the runs are child processes) and a stopped
    # compare ends within the 2 s of the signal contract.
    threading.Thread(target=_load_plotting, name="efce-load-plotting", daemon=True).start()
    compiling = [compiles_kernels(entry, concept) for entry in methods]
    order = sorted(
        ((g, m) for g in range(len(specs)) for m in range(len(methods))),
        key=lambda gm: (compiling[gm[1]], gm),
    )
    ahead_runs = [(g, m) for g, m in order if compiling[m]]
    ahead_commands = [
        efce_command(
            "solve",
            *solve_arguments(specs[g], methods[m], time_limit, (options or {}).get(methods[m]), concept),
        )
        + ["--compile-only"]
        for g, m in ahead_runs
    ]
    limit = None if memory_limit_gib is None else int(memory_limit_gib * 2**30)
    done: dict[tuple[int, int], tuple[MethodRun, list[dict]]] = {}
    summaries: dict[int, dict] = {}
    ahead: CompileAhead | None = None
    # The runs and the background processes compile each kernel variant once between them
    # (efce.games.resources.compiled.shared_compile): the first runs would otherwise compile the
    # builders' kernels while the background compiles the same.
    shared = tempfile.mkdtemp(prefix="efce-compiles-")
    remove_on_abort(shared)
    environment = {**child_environment(), SHARED_VARIABLE: shared}

    def write(g: int) -> dict:
        runs = [done[g, m] for m in range(len(methods)) if (g, m) in done]
        return _write_comparison(
            specs[g], folders[g], runs, time_limit, memory_limit_gib, linear_time, concept
        )

    with graceful():
        try:
            for g, m in order:
                if stop_requested():
                    acknowledge_stop()  # the runs so far are kept
                    break
                if ahead is None and ahead_commands and not compiling[m]:
                    if log:
                        log(f"compiling the kernels of {len(ahead_commands)} later run(s) meanwhile")
                    ahead = CompileAhead(ahead_commands, limit, environment)
                if compiling[m] and ahead is not None and not _compiled_ahead(ahead, ahead_runs, (g, m)):
                    # What it has not compiled, the run's own warm-up compiles, with helper
                    # processes on every core.  A run whose kernels it has compiled only loads
                    # them: the background goes on with the later runs' meanwhile, niced as
                    # beside the other runs.
                    ahead.stop()
                if log:
                    log(f"running {methods[m]} on {specs[g]} (time limit {time_limit:g} s)")
                done[g, m] = run_method(
                    specs[g],
                    methods[m],
                    folders[g],
                    time_limit=time_limit,
                    memory_limit_gib=memory_limit_gib,
                    options=(options or {}).get(methods[m]),
                    log=log,
                    concept=concept,
                    environment=environment,
                )
                if all((g, k) in done for k in range(len(methods))):
                    summaries[g] = write(g)
        finally:
            if ahead is not None:
                ahead.stop()
            shutil.rmtree(shared, ignore_errors=True)
            forget_on_abort(shared)
        for g in range(len(specs)):  # the games a stop left unfinished, with the runs they have
            if g not in summaries and (len(specs) == 1 or any((g, k) in done for k in range(len(methods)))):
                summaries[g] = write(g)
    return {specs[g]: summaries[g] for g in sorted(summaries)}


def _compiled_ahead(ahead: CompileAhead, ahead_runs: list[tuple[int, int]], run: tuple[int, int]) -> bool:
    """Whether the background ``ahead`` has compiled the kernels of ``run`` (its commands are
    those of ``ahead_runs``, in order)."""
    return run in ahead_runs and ahead.compiled(ahead_runs.index(run))


def _write_comparison(
    game_spec: str,
    out_dir: str,
    done: list[tuple[MethodRun, list[dict]]],
    time_limit: float,
    memory_limit_gib: float | None,
    linear_time: bool,
    concept: str | None,
) -> dict:
    """The summary of one game's runs ``done`` (each with its trace rows, in the comparison's
    order of methods) and its files in ``out_dir`` (:func:`compare`'s Returns)."""
    runs = [run for run, _ in done]
    all_rows = [row for _, rows in done for row in rows]
    by_method = {r.method: asdict(r) for r in runs}
    summary: dict[str, Any] = {
        "game": game_spec,
        "concept": concept,
        "time_limit": time_limit,
        "memory_limit_gib": memory_limit_gib,
        "interrupted": stop_requested(),
        "methods": by_method,
    }
    optimum = objective_comparison(by_method)
    if optimum is not None:
        summary["optimum"] = optimum

    def write_traces(fh):
        writer = csv.DictWriter(fh, fieldnames=["method", "iteration", "seconds", "gap", "infeasibility"])
        writer.writeheader()
        writer.writerows(all_rows)

    # A file that cannot be written (folder removed during the run, disk full) is named in
    # "unsaved"; the summary itself is still returned, so the computed runs are not lost.
    unsaved = []
    for name, write in (
        ("traces.csv", write_traces),
        ("summary.json", lambda fh: json.dump(summary, fh, indent=2)),
        ("convergence.png", None),
    ):
        path = os.path.join(out_dir, name)
        try:
            if write is None:
                from .figures import plot_convergence

                plot_convergence(all_rows, summary, path, linear_time=linear_time)
            else:
                with atomic_open(path, "w", newline="") as fh:
                    write(fh)
        except OSError as exc:
            unsaved.append(f"cannot write '{path}': {exc.strerror or exc}")
    if unsaved:
        summary["unsaved"] = unsaved
    return summary


#: Statuses of a run that count as success for the exit code of ``efce compare``/``sweep``: the
#: method ran and reported (a limit reached, an infeasible LP, or the user's stop request).
SUCCESS_STATUSES = ("converged", "time_limit", "iteration_limit", "infeasible", "interrupted")


def failed_methods(summary: dict) -> list[str]:
    """The methods of a :func:`compare` summary whose status is not in :data:`SUCCESS_STATUSES`
    (``error``, ``out_of_memory``, ...)."""
    return [m for m, run in summary["methods"].items() if run["status"] not in SUCCESS_STATUSES]


def load_comparison(out_dir: str) -> tuple[list[dict], dict]:
    """The trace rows and the summary that :func:`compare` wrote into ``out_dir``, read through
    the guarded readers (:func:`efce.solvers.result.read_trace`,
    :func:`efce.games.formats.jsonfile.read_json`) and checked: every trace row typed and
    finite, the summary a ``game`` and ``methods``, each run's facts of their declared types
    (:meth:`MethodRun.from_json`).

    Returns
    -------
    tuple
        The rows (``method``, ``iteration``, ``seconds``, ``gap``, ``infeasibility``) and the
        summary, each run's entry complete (missing optional facts filled with their defaults).

    Raises
    ------
    GameError
        Naming the file, and the line or the run and field that is wrong; a file that is
        missing or cannot be read.
    """
    from efce.games.formats.jsonfile import read_json, shorten
    from efce.solvers.result import read_trace

    traces = os.path.join(out_dir, "traces.csv")
    rows = [{k: r[k] for k in TRACE_COLUMNS} for r in read_trace(traces, f"'{traces}'")]
    path = os.path.join(out_dir, "summary.json")
    summary = read_json(path, f"'{path}'")
    if not isinstance(summary, dict) or not isinstance(summary.get("game"), str):
        raise GameError(f"'{path}' is not a comparison's summary: it has no 'game' name")
    runs = summary.get("methods")
    if not isinstance(runs, dict):
        raise GameError(f"'{path}': 'methods' must be an object of run → its facts")
    for limit in ("time_limit", "memory_limit_gib"):
        value = summary.get(limit)
        if value is not None and not (is_real(value) and math.isfinite(float(value)) and value > 0):
            raise GameError(f"'{path}': '{limit}' must be a positive finite number or null, got {value!r}")
    summary["methods"] = {
        label: asdict(MethodRun.from_json(entry, f"'{path}', run '{shorten(label)}'"))
        for label, entry in runs.items()
    }
    return rows, summary


#: Codes of :func:`run_outcome`: what "done" means for a compared run.
OUTCOMES = (
    "optimal",
    "converged",
    "time_limit",
    "iteration_limit",
    "infeasible",
    "refused",
    "out_of_memory",
    "interrupted",
    "error",
)

#: The refusal of :func:`games.resources.memory.check_budget`: "... is too large: about 20.3 GiB,
#: over the memory budget of 13.5 GiB ...".
_REFUSAL = re.compile(r"too large: about (?P<need>[^,]+), over the memory budget of (?P<budget>[0-9.]+ \w+)")
#: Longest error text a table line or note repeats.
ERROR_TEXT = 100


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ERROR_TEXT else text[: ERROR_TEXT - 1] + "…"


def run_outcome(run: dict, time_limit: float | None = None) -> tuple[str, str]:
    """What "done" means for one compared run (an entry of a :func:`compare` summary).

    An LP that converged was solved to optimality (``optimal``); an iterative method that
    converged reached its target gap (``converged``).  A run refused before building its model
    (:func:`games.resources.memory.check_budget`) is ``refused``, with the memory it would need
    and the budget; a run the system or the address-space limit stopped is ``out_of_memory``.

    Parameters
    ----------
    run : dict
        ``method``, ``status``, ``error``, ``final_gap`` and ``result`` (the method's
        ``efce solve --json`` object, or None).
    time_limit : float, optional
        The comparison's time limit per method (named when a run timed out).

    Returns
    -------
    tuple of str
        A code of :data:`OUTCOMES` and one line saying why, e.g. ``("optimal", "solved to
        optimality (HiGHS: Optimal)")`` or ``("refused", "refused up front: needs about 20.3 GiB,
        over the memory budget of 13.5 GiB")``.
    """
    method = str(run.get("method", "")).split("[")[0]
    status, error = run.get("status", "error"), run.get("error") or ""
    result = run.get("result") or {}
    lp = method.startswith("lp-")
    refusal = _REFUSAL.search(error)
    if refusal:
        return "refused", (
            f"refused up front: needs about {refusal['need']}, over the memory budget of {refusal['budget']}"
        )
    iterations = result.get("iterations")
    counted = f" after {iterations:,} iterations" if isinstance(iterations, int) and not lp else ""
    interval = result.get("objective_interval")
    if interval is not None:  # column generation: a certified interval around the optimum
        lower, upper = interval
        if status == "converged" and lower is not None and upper is not None:
            return "optimal", f"certified optimal: {result['objective']} in [{lower:.6g}, {upper:.6g}]"
        if status in ("time_limit", "iteration_limit", "interrupted", "out_of_memory") and lower is not None:
            bound = "?" if upper is None else f"{upper:.6g}"
            return status, f"{status.replace('_', ' ')}: {result['objective']} in [{lower:.6g}, {bound}]"
    if status == "converged":
        if not lp:
            return "converged", f"converged: reached its target gap{counted}"
        solver = (
            f"HiGHS: {result['highs_status']}"
            if result.get("highs_status")
            else f"PDLP: gap and violation ≤ {result['tolerance']:g}"
            if result.get("tolerance") is not None
            else f"cvxpy {result['solver']}: {result.get('cvxpy_status')}"
            if result.get("solver")
            else ""
        )
        return "optimal", "solved to optimality" + (f" ({solver})" if solver else "")
    if status == "time_limit":
        limit = result.get("seconds") or time_limit
        spent = f" after {limit:.0f} s" if isinstance(limit, (int, float)) else ""
        if error:  # killed by the harness: the model's setup and the solve overran the wall clock
            return "time_limit", f"timed out: {_short(error)}"
        if lp:
            found = (
                "without a solution"
                if run.get("final_gap") is None
                else f"with an unproven point (gap {run['final_gap']:.1e})"
            )
            return "time_limit", f"timed out{spent} {found}"
        return "time_limit", f"time limit{spent}" + (f", {iterations:,} iterations" if counted else "")
    if status == "iteration_limit":
        return (
            "iteration_limit",
            f"iteration limit: {iterations:,} iterations" if counted else "iteration limit",
        )
    if status == "infeasible":
        return "infeasible", _short(result.get("message") or error or "infeasible")
    if status == "out_of_memory":
        return "out_of_memory", f"out of memory: {_short(error)}" if error else "out of memory"
    if status == "interrupted":
        return "interrupted", "interrupted by a stop request"
    return "error", _short(error) if error else status.replace("_", " ")


def objective_comparison(runs: dict) -> dict | None:
    """The certified optimum of a comparison and the value each run's equilibrium reaches of its
    objective — the *price of dynamics*: the first run whose result holds an
    ``objective_interval`` (``lp-colgen``) gives the objective (``welfare`` or ``playerK``) and
    the interval around its optimum; every run that reports ``utilities`` gets that objective's
    value at its own equilibrium (its welfare, or player K's utility).

    Parameters
    ----------
    runs : dict
        A :func:`compare` summary's ``methods``.

    Returns
    -------
    dict or None
        ``objective``, ``run`` (the certifying run), ``interval`` ``[lower, upper]`` and
        ``values`` (run → value); None when no run has an interval with a lower end.
    """
    certified = [
        (name, run["result"])
        for name, run in runs.items()
        if (run.get("result") or {}).get("objective_interval", [None])[0] is not None
    ]
    if not certified:
        return None
    name, result = certified[0]
    objective = str(result["objective"])
    values = {}
    for label, run in runs.items():
        utilities = (run.get("result") or {}).get("utilities")
        if not utilities:
            continue
        values[label] = (
            float(sum(utilities))
            if objective == "welfare"
            else float(utilities[int(objective[len("player") :]) - 1])
        )
    return {
        "objective": objective,
        "run": name,
        "interval": list(result["objective_interval"]),
        "values": values,
    }


def price_of_dynamics_note(runs: dict) -> str | None:
    """One line for a figure: the certified optimum and each other run's value of its objective
    (:func:`objective_comparison`), or None."""
    optimum = objective_comparison(runs)
    if optimum is None:
        return None
    lower = optimum["interval"][0]
    others = [
        f"{label} {value:.4g} (price {lower - value:.3g})"
        for label, value in optimum["values"].items()
        if label != optimum["run"]
    ]
    head = f"{optimum['objective']}: certified optimum {lower:.4g} ({optimum['run']})"
    return head + ("; " + ", ".join(others) if others else "")


def _decade(value: float) -> str:
    """``0.001`` → ``"1e-3"``."""
    return f"1e{round(math.log10(value))}"


def summary_table(summary: dict) -> str:
    """The comparison as a table: per run the seconds spent compiling before its clock, the
    time to each gap of ``THRESHOLDS`` (1e-1, 1e-2, 1e-3), the final gap, peak memory and what
    "done" means (:func:`run_outcome`)."""
    runs = summary["methods"]
    width = max([len("method"), *map(len, runs)]) + 2
    head = (
        f"{'method':<{width}}{'compile s':>10}"
        + "".join(f"{f't({_decade(t)})':>10}" for t in THRESHOLDS)
        + f"{'final gap':>12}{'peak MiB':>10}  outcome"
    )
    optimum = objective_comparison(runs)
    if optimum is not None:  # the price of dynamics: the optimum minus each run's value
        head = head.replace("  outcome", f"{optimum['objective'][:10]:>11}{'price':>10}  outcome")
    lines = [f"game: {summary['game']}", head, "-" * len(head)]
    for method, run in runs.items():
        compile_seconds = run.get("compile_seconds")
        cells = f"{compile_seconds:>10.2f}" if compile_seconds is not None else f"{'—':>10}"
        for t in THRESHOLDS:
            hit = run["time_to_gap"].get(f"{t:g}")
            cells += f"{hit:>10.2f}" if hit is not None else f"{'—':>10}"
        gap = run["final_gap"]
        cells += f"{gap:>12.3e}" if gap is not None else f"{'—':>12}"
        peak = run["peak_memory_mib"]
        cells += f"{peak:>10.0f}" if peak is not None else f"{'—':>10}"
        if optimum is not None:
            value = optimum["values"].get(method)
            price = None if value is None else optimum["interval"][0] - value
            cells += f"{value:>11.4g}" if value is not None else f"{'—':>11}"
            cells += f"{price:>10.3g}" if price is not None else f"{'—':>10}"
        detail = run.get("outcome_detail") or run_outcome(run, summary.get("time_limit"))[1]
        lines.append(f"{method:<{width}}{cells}  {detail}")
    lines.append(
        "t(gap): seconds from the first iteration until the gap is reached (compiling and model "
        "setup come before; compile s —: not measured apart)"
    )
    if optimum is not None:
        lines.append(
            f"{optimum['objective']}: the value of the run's equilibrium; price: the certified optimum "
            f"({optimum['run']}'s lower bound) minus it"
        )
    return "\n".join(lines)
