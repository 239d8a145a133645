"""The grid of a sweep: the sweep file (TOML) or dict, checked, expanded into runs."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

from efce.errors import GameError, OptionError, SweepError
from efce.games.formats.jsonfile import shorten
from efce.games.spec import canonical_spec, is_game_file
from efce.solvers.options import describe_value, is_integer, is_real

from ..compare import check_game, option_arguments
from ..harness import MAX_MEMORY_LIMIT_GIB
from ..solve import METHODS, validate_options

#: Top-level keys of a sweep file.
SWEEP_KEYS = ("name", "games", "methods", "seeds", "limits", "options")
#: Keys of a sweep file's ``[limits]`` table: per-run limits.
LIMIT_KEYS = {
    "time": "seconds for the run's iterations (its --time-limit)",
    "memory": "GiB of address space for the run's process",
    "iterations": "iterations of the run (methods that iterate)",
}
#: Most runs a sweep may have: the grid is expanded in memory and every run is a process and a
#: record file, so a larger grid (``seeds = 100000000``) is refused up front with its size.
MAX_RUNS = 100_000
#: The Dask event topic on which workers announce each start of a run (counts attempts).
START_TOPIC = "efce-sweep-start"
#: Seconds between a running task's checks of the sweep's stop event.
STOP_POLL_SECONDS = 0.25


@dataclass
class Run:
    """One run of a sweep: ``efce solve game --method method [--seed seed] [options]``.

    Attributes
    ----------
    key : str
        ``<game slug>-<method>[-s<seed>]-<digest>``, the digest a hash of every parameter below
        (but the label): the name of the run's result file.
    label : str
        The game's name in tables and plots (the sweep file's label, or the spec itself).
    game : str
        The spec or ``.efg`` path as written in the sweep file.
    game_path : str
        What the child is given (a relative ``.efg`` path resolved against the sweep file).
    method : str
    seed : int or None
        None for methods without a seed.
    options : dict
        The options the sweep sets explicitly (validated), the limits' ``iterations`` and
        ``time_limit`` included.
    memory_gib : float or None
    """

    key: str
    label: str
    game: str
    game_path: str
    method: str
    seed: int | None
    options: dict[str, Any] = field(default_factory=dict)
    memory_gib: float | None = None

    def params(self) -> dict[str, Any]:
        """The run's parameters as JSON (what its result file records)."""
        return {
            "key": self.key,
            "label": self.label,
            "game": self.game,
            "method": self.method,
            "seed": self.seed,
            "options": dict(self.options),
            "memory_gib": self.memory_gib,
        }

    def solve_arguments(self) -> list[str]:
        """The arguments of the run's ``efce solve`` (:func:`experiments.harness.run_solve`
        adds its trace file)."""
        options = dict(self.options)
        if self.seed is not None:
            options["seed"] = self.seed
        return [self.game_path, "--method", self.method, "--json", *option_arguments(options)]


@dataclass
class Sweep:
    """A validated sweep: its name and its runs in grid order (games, methods, options, seeds)."""

    name: str
    runs: list[Run]
    source: str | None = None


def slug(text: str, limit: int = 40) -> str:
    """``text`` as a file-name part: runs of other characters than letters, digits and ``+``
    become ``_``, at most ``limit`` characters (``game`` when nothing is left)."""
    return re.sub(r"[^A-Za-z0-9+]+", "_", text).strip("_")[:limit].strip("_") or "game"


def run_key(game: str, method: str, seed: int | None, options: dict, memory_gib: float | None) -> str:
    """The stable key of a run: readable, plus a digest of all its parameters.

    The digest hashes the canonical JSON of ``(game, method, seed, options, memory_gib)``
    (options sorted by name, values as validated), so the same run in another sweep file, in
    another order, has the same key.
    """
    canonical = json.dumps(
        {
            "game": game,
            "method": method,
            "seed": seed,
            "options": {k: options[k] for k in sorted(options)},
            "memory_gib": memory_gib,
        },
        sort_keys=True,
        separators=(",", ":"),
    )
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:12]
    stem = os.path.basename(game)[:-4] if game.lower().endswith(".efg") else game
    seed_part = "" if seed is None else f"-s{seed}"
    return f"{slug(stem)}-{slug(method)}{seed_part}-{digest}"


def load_sweep(spec_or_path: str | os.PathLike | dict) -> Sweep:
    """Read and validate a sweep: a TOML file path, or the same content as a dict.

    Every game spec, method, option value and limit is checked here, before anything runs.

    Parameters
    ----------
    spec_or_path : str, os.PathLike or dict
        A ``.toml`` sweep file, or its parsed content (relative ``.efg`` paths are then relative
        to the working folder).

    Returns
    -------
    Sweep

    Raises
    ------
    SweepError
        A missing or malformed file, an unknown key, a bad game, method, option or limit (the
        message names where), or a grid with the same run twice.
    """
    if not isinstance(spec_or_path, (str, os.PathLike, dict)):
        raise OptionError(
            f"the sweep must be a .toml path or a dict of its content, got {describe_value(spec_or_path)}"
        )
    if isinstance(spec_or_path, dict):
        content, base, source, default_name = spec_or_path, os.getcwd(), None, "sweep"
    else:
        import tomllib

        path = os.fspath(spec_or_path)
        if os.path.isdir(path):
            raise SweepError(f"the sweep file {path} is a folder; give the .toml file in it")
        if not os.path.isfile(path):
            raise SweepError(
                f"no such sweep file: {path}" if not os.path.exists(path) else f"{path} is not a regular file"
            )
        try:
            with open(path, "rb") as fh:
                content = tomllib.load(fh)
        except tomllib.TOMLDecodeError as exc:
            raise SweepError(f"{path}: not valid TOML ({shorten(str(exc), 200)})") from None
        except UnicodeDecodeError as exc:
            raise SweepError(
                f"{path}: not UTF-8 text (byte at offset {exc.start:,}); save it as UTF-8"
            ) from None
        except RecursionError:
            raise SweepError(f"{path}: arrays or tables nested too deeply") from None
        except OSError as exc:
            raise SweepError(f"cannot read the sweep file {path}: {exc.strerror or exc}") from None
        base, source = os.path.dirname(os.path.abspath(path)), path
        default_name = os.path.basename(path).split(".")[0]
    unknown = sorted(set(content) - set(SWEEP_KEYS))
    if unknown:
        raise SweepError(
            f"unknown sweep key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
            f"valid: {', '.join(SWEEP_KEYS)}"
        )
    name = content.get("name", default_name)
    if not isinstance(name, str) or not name:
        raise SweepError(f"name must be a non-empty string, got {name!r}")
    games = _games(content.get("games"), base)
    methods = _methods(content.get("methods"))
    seeds = _seeds(content.get("seeds", [0]))
    limits = _limits(content.get("limits", {}))
    options = content.get("options", {})
    if not isinstance(options, dict):
        raise SweepError("options must be a table of tables: [options.METHOD]")
    stray = sorted(set(options) - set(methods))
    if stray:
        raise SweepError(f"[options] names method(s) not in methods: {', '.join(stray)}")
    # The size of the grid from the axis lengths alone, before any of it is expanded.
    total = 0
    for method in methods:
        axes = options.get(method, {})
        combos = (
            math.prod(len(v) if isinstance(v, list) else 1 for v in axes.values())
            if isinstance(axes, dict)
            else 1
        )
        total += len(games) * combos * (len(seeds) if "seed" in METHODS[method].defaults else 1)
    if total > MAX_RUNS:
        raise SweepError(
            f"the grid has {total:,} runs, more than the {MAX_RUNS:,} a sweep may have "
            f"(games × methods × option values × seeds); split it into smaller sweeps"
        )
    runs: list[Run] = []
    seen: dict[str, dict] = {}  # run key -> the options as the sweep file wrote them
    for label, game, game_path, canonical in games:
        for method in methods:
            for explicit in _option_grid(method, options.get(method, {})):
                uses_seed = "seed" in METHODS[method].defaults
                for seed in seeds if uses_seed else [None]:
                    given = dict(explicit)
                    for option, limit in (("iterations", "iterations"), ("time_limit", "time")):
                        if option in METHODS[method].defaults and limit in limits:
                            given.setdefault(option, limits[limit])
                    try:
                        valid = validate_options(method, {**given, "seed": seed})
                    except OptionError as exc:
                        raise SweepError(f"[options.{method}]: {exc}") from None
                    given = {k: valid[k] for k in given}
                    # The key names the game by its canonical spec: however the sweep file
                    # writes it, one game's run has one key (and --resume finds it).
                    key = run_key(canonical, method, seed, given, limits.get("memory"))
                    if key in seen:  # values that differ only in how they are written
                        raise SweepError(
                            f"the grid has the same run twice: {method} on {shorten(game)!r} with "
                            f"{_describe_options(given)} and with {_describe_options(seen[key])} "
                            f"(equal once read)"
                        )
                    seen[key] = explicit
                    runs.append(Run(key, label, game, game_path, method, seed, given, limits.get("memory")))
    return Sweep(name, runs, source)


def _describe_options(options: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in options.items()) or "no options"


def _games(value, base: str) -> list[tuple[str, str, str, str]]:
    """``(label, game as written, path for the child, canonical spec)`` for every game, each
    spec checked; two entries of one game (however written: :func:`games.spec.canonical_spec`,
    or the same ``.efg`` file by two paths) are refused."""
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = [(g, g) for g in value]
    else:
        raise SweepError("games must be a list of game specs (or .efg paths), or a table label = spec")
    if not items:
        raise SweepError("games is empty: give at least one game")
    out = []
    for label, game in items:
        if not isinstance(game, str) or not game.strip():
            raise SweepError(f"games: expected a spec string or .efg path, got {game!r}")
        game_path = game
        if game.lower().endswith(".efg") and not os.path.isabs(game):
            game_path = os.path.join(base, game)
        try:
            check_game(game_path)  # a .efg file is parsed: not run (and recorded) broken
            canonical = canonical_spec(game)
        except GameError as exc:
            raise SweepError(f"games: {exc}") from None
        out.append((str(label), game, game_path, canonical))
    same_games = [os.path.realpath(p) if is_game_file(p) else c for _, _, p, c in out]
    for i, same in enumerate(same_games):
        if same in same_games[:i]:
            first = out[same_games.index(same)][1]
            both = f"{shorten(first)!r} and {shorten(out[i][1])!r} name" if first != out[i][1] else "lists"
            raise SweepError(f"games: {both} the same game {shorten(out[i][1])!r} twice")
    return out


def _methods(value) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(m, str) for m in value):
        raise SweepError(f"methods must be a non-empty list of method names from: {', '.join(METHODS)}")
    for method in value:
        if method not in METHODS:
            raise SweepError(f"unknown method '{method}'; valid: {', '.join(METHODS)}")
    if len(set(value)) != len(value):
        raise SweepError("methods lists a method twice")
    return value


def _seeds(value) -> list[int]:
    # Integers of any type (NumPy's too, from a dict built in Python); not bools.
    if is_integer(value):
        if value < 1:
            raise SweepError(f"seeds: a count must be at least 1, got {value}")
        if value > MAX_RUNS:
            raise SweepError(
                f"seeds: a count of {int(value):,} seeds is more than the {MAX_RUNS:,} runs a sweep may have"
            )
        return list(range(int(value)))
    if (
        isinstance(value, list)
        and value
        and all(is_integer(s) and s >= 0 for s in value)
        and len(set(map(int, value))) == len(value)
    ):
        return [int(s) for s in value]
    raise SweepError(f"seeds must be a count ≥ 1 or a list of distinct integers ≥ 0, got {value!r}")


def _limits(value) -> dict[str, float]:
    if not isinstance(value, dict):
        raise SweepError("limits must be a table: [limits] with " + ", ".join(LIMIT_KEYS))
    unknown = sorted(set(value) - set(LIMIT_KEYS))
    if unknown:
        raise SweepError(
            f"unknown limit{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; valid: "
            + "; ".join(f"{k} ({v})" for k, v in LIMIT_KEYS.items())
        )
    for name, limit in value.items():
        try:
            finite = is_real(limit) and math.isfinite(float(limit))
        except OverflowError:  # an integer beyond the float range
            finite = False
        if not finite or limit <= 0:
            raise SweepError(f"limits.{name} must be a positive finite number, got {shorten(repr(limit))}")
    if "memory" in value and value["memory"] > MAX_MEMORY_LIMIT_GIB:
        raise SweepError(
            f"limits.memory must be at most {MAX_MEMORY_LIMIT_GIB:.0f} GiB (2^63 "
            f"bytes), got {value['memory']:g}"
        )
    if "iterations" in value and not float(value["iterations"]).is_integer():
        raise SweepError(f"limits.iterations must be an integer, got {value['iterations']!r}")
    return {k: (int(v) if k == "iterations" else float(v)) for k, v in value.items()}


def _option_grid(method: str, axes) -> list[dict[str, Any]]:
    """Every combination of the method's option values (a list is an axis), in file order."""
    if not isinstance(axes, dict):
        raise SweepError(f"[options.{method}] must be a table of option = value or [values]")
    if "seed" in axes:
        raise SweepError(f"[options.{method}]: give seeds with the top-level seeds key, not as an option")
    names, values = list(axes), []
    for name in names:
        value = axes[name]
        value = value if isinstance(value, list) else [value]
        if not value:
            raise SweepError(f"[options.{method}]: {name} is an empty list")
        for i, item in enumerate(value):
            if any(type(item) is type(other) and item == other for other in value[:i]):
                raise SweepError(f"[options.{method}]: {name} lists {shorten(repr(item))} twice")
        values.append(value)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values)]
