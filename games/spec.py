"""Naming games on the command line: ``NAME:key=value,key=value`` or a path to a ``.efg`` file.

Every generator parameter has a declared type and range (:data:`PARAMETERS`); values are parsed
by that type, so ``kuhn:ranks=2.5`` is an error naming the game, the parameter and the expected
type, never a silent ``ranks=2``.  Types: integers, finite numbers, booleans (``true``/``false``),
one of a set of words, and lists written ``[1,2]`` (a bare value where a list is expected is a
one-element list).  The grammar is ASCII only and strict: integers are digits ``0-9`` with an
optional sign (no ``1_0``, no non-ASCII digits), numbers are decimals (``2``, ``0.5``,
``1e-3``) of magnitude at most :data:`~efce.games.generators.params.NUMBER_LIMIT`, and every
message names the game, the parameter and the expected form.  Parameters whose default is "none"
(``kuhn``'s ``ranks``, ``leduc``'s caps) accept ``none``.

Before a generator runs, :func:`make_game` estimates the size of the tree from the parameters
(the estimate its module declares beside it; :mod:`games.resources.estimate`) and refuses, with
the estimate, a game that would not fit in the memory budget (:mod:`games.resources.memory`).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import os
import pkgutil
import re
from collections.abc import Mapping

from efce.errors import GameError
from efce.games import generators
from efce.games.generators.params import NUMBER_LIMIT, GameGenerator, Param  # Param: re-exported
from efce.games.resources.estimate import SizeEstimate

from .game import Game


def _declared_games() -> dict[str, GameGenerator]:
    """Every :class:`~games.generators.params.GameGenerator` the modules of
    :mod:`efce.games.generators` declare in their ``GAMES``, by name (so a new game is one new
    module there)."""
    found: dict[str, GameGenerator] = {}
    for info in pkgutil.iter_modules(generators.__path__):
        module = importlib.import_module(f"{generators.__name__}.{info.name}")
        for declared in getattr(module, "GAMES", ()):
            if declared.name in found:  # a programming error of the package, not of the user
                raise RuntimeError(f"two generator modules declare the game '{declared.name}'")
            found[declared.name] = declared
    return found


#: Generator name → its declaration (function, parameters, size estimate), collected from the
#: generators' own modules.
GENERATORS: dict[str, GameGenerator] = _declared_games()


#: Declared parameters of every generator, read from the generator's own module (each declares
#: its ``PARAMETERS`` beside its code; the generators check the same ranges when called from
#: Python, the spec layer checks them first so that sizes can be estimated before building).
PARAMETERS: dict[str, Mapping[str, Param]] = {name: g.parameters for name, g in GENERATORS.items()}


# The one grammar of spec values: ASCII only (Python's int()/float() would also take "1_0",
# non-ASCII digits such as "٣" or "１", "infinity" and "0x10"-like forms through other paths).
_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_FORMS = {
    "int": "written with the digits 0-9, e.g. 3",
    "number": "written as a decimal number, e.g. 2, 0.5 or 1e-3",
}


def _generator(name: str):
    return GENERATORS[name].function


def _scalar(game: str, key: str, param: Param, kind: str, text: str, whole: str | None = None):
    """``text`` parsed as ``kind`` ("int", "number", "bool", "choice") and range-checked;
    ``whole`` is the full list text when ``text`` is one of its items."""

    def bad(reason: str = ""):
        form = f" ({_FORMS[kind]})" if reason == "form" and kind in _FORMS else ""
        item = f" in '{whole}'" if whole is not None else ""
        shown = f"an empty item{item}" if not text else f"'{text}'{item}"
        return GameError(f"game '{game}': parameter '{key}' must be {param.describe()}{form}, got {shown}")

    if kind == "bool":
        if text.lower() not in ("true", "false"):
            raise bad("form")
        return text.lower() == "true"
    if kind == "choice":
        if text not in param.choices:
            raise bad()
        return text
    if not (_INT if kind == "int" else _NUMBER).fullmatch(text):
        raise bad("form")
    value = int(text) if kind == "int" else float(text)
    if kind == "number" and not math.isfinite(value):  # e.g. 1e999
        raise bad()
    low, high = param.low, param.high
    if kind == "number":
        low = -NUMBER_LIMIT if low is None else low
        high = NUMBER_LIMIT if high is None else high
    if value < low if low is not None else False:
        raise bad()
    if value > high if high is not None else False:
        raise bad()
    return value


def _parse_value(game: str, key: str, text: str, param: Param):
    text = text.strip()
    if param.none and text.lower() == "none":
        return None
    if "list" in param.kind:
        if text.startswith("[") or text.endswith("]"):
            if (
                not (text.startswith("[") and text.endswith("]"))
                or text.count("[") != 1
                or text.count("]") != 1
            ):
                raise GameError(
                    f"game '{game}': parameter '{key}' must be {param.describe()}, "
                    f"written [a,b,...] (one pair of brackets), got '{text}'"
                )
            inner = text[1:-1].strip()
            items = [t.strip() for t in inner.split(",")] if inner else []
        else:
            items = [text]
        kind = param.kind.split()[0]
        values = [_scalar(game, key, param, kind, t, whole=text) for t in items]
        if param.length is not None and len(values) != param.length:
            raise GameError(
                f"game '{game}': parameter '{key}' must be {param.describe()}, "
                f"got {len(values)} value{'s' if len(values) != 1 else ''} ('{text}')"
            )
        if not values:
            raise GameError(f"game '{game}': parameter '{key}' must be {param.describe()}, got an empty list")
        return values
    if text.startswith("["):
        raise GameError(f"game '{game}': parameter '{key}' must be {param.describe()}, got the list '{text}'")
    return _scalar(game, key, param, param.kind, text)


def _split_params(text: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p for p in (s.strip() for s in parts) if p]


def parse_spec(spec: str) -> tuple[str, dict]:
    """Split ``NAME:key=value,...`` into the generator name and its keyword arguments, each
    parsed by its declared type and range-checked (:data:`PARAMETERS`).

    Raises
    ------
    GameError
        Unknown game or parameter, malformed item, or a value of the wrong type or out of
        range; the message names the game, the parameter and what is expected."""
    name, _, rest = spec.partition(":")
    name = name.strip().lower()
    if name not in GENERATORS:
        hint = (
            f"; '{spec}' exists, but a path must end in .efg or contain a / (e.g. ./{spec})"
            if os.path.exists(spec)
            else ""
        )
        raise GameError(
            f"unknown game '{name}'; valid names: {', '.join(sorted(GENERATORS))} "
            f"(or a path to a .efg file){hint}"
        )
    declared = GENERATORS[name].parameters
    params = {}
    for item in _split_params(rest):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise GameError(f"game '{name}': expected key=value, got '{item}'")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise GameError(f"game '{name}': invalid parameter name '{key}'")
        if key in params:
            raise GameError(f"game '{name}': parameter '{key}' given twice")
        if key not in declared:
            listed = ", ".join(declared) if declared else "none"
            raise GameError(f"game '{name}': unknown parameter {key}; valid parameters: {listed}")
        params[key] = _parse_value(name, key, value, declared[key])
    return name, params


def _with_defaults(name: str, params: dict) -> dict:
    signature = inspect.signature(_generator(name)).parameters
    full = {key: p.default for key, p in signature.items()}
    full.update(params)
    return full


def estimate_size(name: str, params: dict) -> SizeEstimate | None:
    """Size of generator ``name`` called with ``params`` (every parameter, defaults filled in and
    already checked by :func:`parse_spec`), from the generator's own estimate; None for an
    unknown name or a generator without an estimate."""
    declared = GENERATORS.get(name)
    if declared is None or declared.estimate is None:
        return None
    return declared.estimate(**params)


def estimate_spec(spec: str) -> SizeEstimate | None:
    """The :class:`games.resources.estimate.SizeEstimate` of the game a spec string names (None for a
    ``.efg`` path), computed from the parameters alone, without building anything.

    Raises
    ------
    GameError
        A bad spec, or parameters that do not go together (a generator's ``check_parameters``,
        e.g. Leduc without any raise cap), before the size is estimated."""
    if is_game_file(spec):
        return None
    name, params = parse_spec(spec)
    full = _with_defaults(name, params)
    together = GENERATORS[name].check  # declared beside the generator
    if together is not None:
        together(**full)
    return estimate_size(name, full)


def is_game_file(spec: str) -> bool:
    """Whether ``spec`` is a path rather than a built-in game: it ends in ``.efg`` or contains a
    path separator.  Whatever exists on disk does not matter, so a folder or file named ``kuhn``
    in the working directory never shadows the built-in ``kuhn`` (write ``./kuhn`` for it).

    Raises
    ------
    GameError
        When ``spec`` reads both ways: a path that does not exist whose text also parses as a
        built-in game with parameters (``kuhn:players=3/``).
    """
    separators = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    is_path = spec.lower().endswith(".efg") or any(s in spec for s in separators)
    if is_path and not os.path.exists(spec):
        name = spec.partition(":")[0].strip().lower()
        if name in GENERATORS and ":" in spec:
            raise GameError(
                f"'{spec}' is ambiguous: it reads as a path (no such file) and as "
                f"game '{name}' with parameters; a path must end in .efg or contain a "
                f"/, a built-in game's parameters must not"
            )
    return is_path


def canonical_spec(spec: str) -> str:
    """The one spelling of the game ``spec`` names: two specs of one game (``farina-fig2`` and
    ``FARINA-FIG2``; ``kuhn`` and ``kuhn:players=2,ranks=3``; parameters in another order or
    written otherwise, ``2`` and ``2.0`` for a number) have one canonical spec, which names the
    same game (``make_game`` of it builds what ``make_game(spec)`` builds).

    For a built-in game: the name, then every declared parameter in the order of its module's
    ``PARAMETERS``, defaults filled in and those that depend on other parameters made explicit
    (the ``resolve`` of its :class:`~efce.games.generators.params.GameGenerator`), each value as the spec
    grammar writes it (numbers as Python writes floats, so that the spelling is exact).  For a
    ``.efg`` path: the path, normalized (``./g.efg`` and ``g.efg`` are one).  Nothing is built.

    >>> canonical_spec("KUHN")
    'kuhn:players=2,ranks=3'
    >>> canonical_spec("sheriff:rounds=1, max_items=1,max_bribe=2,item_value=1")
    'sheriff:max_bribe=2,max_items=1,rounds=1,item_value=1.0,item_penalty=2.0,sheriff_penalty=3.0'

    Raises
    ------
    GameError
        A bad spec (as :func:`parse_spec`, and parameters that do not go together).
    """
    if is_game_file(spec):
        return os.path.normpath(spec)
    name, params = parse_spec(spec)
    declared = GENERATORS[name]
    full = _with_defaults(name, params)
    if declared.check is not None:
        declared.check(**full)
    if declared.resolve is not None:
        full = declared.resolve(**full)
    items = [f"{key}={_spec_text(full[key], param)}" for key, param in declared.parameters.items()]
    return name + (":" + ",".join(items) if items else "")


def _spec_text(value, param: Param) -> str:
    """``value`` of a parameter as the spec grammar writes it."""
    if value is None:
        return "none"
    if "list" in param.kind:
        items = value if isinstance(value, (list, tuple)) else [value]
        return (
            "["
            + ",".join(_spec_text(v, dataclasses.replace(param, kind=param.kind.split()[0])) for v in items)
            + "]"
        )
    if param.kind == "bool":
        return "true" if value else "false"
    if param.kind == "number":
        return repr(float(value))
    if param.kind == "int":
        return str(int(value))
    return str(value)


def path_spec(path: str | os.PathLike) -> str:
    """The spec text of a game file given as a path object (:class:`pathlib.Path`), which is
    always read as a file: a name without a folder gets ``./`` in front (a ``Path`` drops the
    ``./`` one typed, and ``mygame`` alone would name a built-in game).

    >>> import pathlib
    >>> path_spec(pathlib.Path("./mygame"))
    './mygame'
    >>> path_spec(pathlib.Path("games/kuhn.efg"))
    'games/kuhn.efg'
    """
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if os.path.isabs(text) or os.path.dirname(text):
        return text
    return os.path.join(os.curdir, text)


def make_game(spec: str | os.PathLike, memory_budget: int | None = None) -> Game:
    """Build the game named by ``spec`` (a generator spec string or a ``.efg`` path).

    Parameters
    ----------
    spec : str or os.PathLike
        A spec string or a ``.efg`` path; a path object is always a file (:func:`path_spec`).
    memory_budget : int, optional
        Bytes the game may take while being built (default: :func:`games.resources.memory.check_budget`'s
        share of the available RAM).  A generated game whose estimated size exceeds it is
        refused before the generator runs.

    Raises
    ------
    GameError
        A bad spec or file; :class:`games.resources.memory.MemoryBudgetExceeded` with the estimate when
        the game is too large.
    """
    if isinstance(spec, os.PathLike):
        spec = path_spec(spec)
    if is_game_file(spec):
        from efce.games.formats.efg import load

        return load(spec)
    name, params = parse_spec(spec)
    estimate = estimate_spec(spec)
    if estimate is not None:
        from efce.games.resources.estimate import check_estimate

        check_estimate(estimate, spec, memory_budget)
    from efce.games.resources.estimate import size_already_checked

    generator = _generator(name)
    try:
        with size_already_checked():
            return generator(**params)
    except TypeError as exc:  # e.g. a list where a number is expected
        raise GameError(f"game '{name}': bad parameter value ({exc})") from None


def check_spec(spec: str, memory_budget: int | None = None) -> None:
    """Check that ``spec`` names a game that can be built, without building it: an existing,
    readable ``.efg`` file, or a known generator with valid parameters whose estimated size fits
    the memory budget.

    Raises
    ------
    GameError
        Naming the problem (missing file, unknown game or parameter, bad value, too large).
    """
    if is_game_file(spec):
        if not os.path.isfile(spec):
            raise GameError(f"no such file: {spec}")
        if not os.access(spec, os.R_OK):
            raise GameError(f"cannot read {spec}: permission denied")
        return
    estimate = estimate_spec(spec)
    if estimate is not None:
        from efce.games.resources.estimate import check_estimate

        check_estimate(estimate, spec, memory_budget)
