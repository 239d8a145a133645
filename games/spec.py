"""Naming games on the command line: ``NAME:key=value,key=value`` or a path to a ``.efg`` file.

Values are integers, floats, booleans (``true``/``false``), strings, or lists written
``[1,2]`` (a bare value where a list is expected is a one-element list).
"""

from __future__ import annotations

import importlib
import inspect
import os
import re

from .game import Game, GameError

#: Generator name → "module:function" (modules are imported on first use).
GENERATORS: dict[str, str] = {
    "kuhn": "games.kuhn:kuhn",
    "leduc": "games.leduc:leduc",
    "goofspiel": "games.goofspiel:goofspiel",
    "battleship": "games.battleship:battleship",
    "sheriff": "games.sheriff:sheriff",
    "farina-fig1": "games.figures:farina_fig1",
    "farina-fig2": "games.figures:farina_fig2",
}

_LIST_PARAMS = {"ship_sizes", "ship_values", "raise_sizes"}


def _generator(name: str):
    module, func = GENERATORS[name].split(":")
    return getattr(importlib.import_module(module), func)


def _parse_scalar(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _parse_value(key: str, text: str):
    text = text.strip()
    if text.startswith("["):
        if not text.endswith("]"):
            raise GameError(f"parameter '{key}': unterminated list '{text}'")
        inner = text[1:-1].strip()
        return [_parse_scalar(t.strip()) for t in inner.split(",")] if inner else []
    value = _parse_scalar(text)
    return [value] if key in _LIST_PARAMS else value


def _split_params(text: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts, depth, current = [], 0, []
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
    """Split ``NAME:key=value,...`` into the generator name and its keyword arguments."""
    name, _, rest = spec.partition(":")
    name = name.strip().lower()
    if name not in GENERATORS:
        raise GameError(f"unknown game '{name}'; valid names: {', '.join(sorted(GENERATORS))} "
                        f"(or a path to a .efg file)")
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
        params[key] = _parse_value(key, value)
    return name, params


def make_game(spec: str) -> Game:
    """Build the game named by ``spec`` (a generator spec string or a ``.efg`` path)."""
    if os.path.exists(spec) or spec.lower().endswith(".efg"):
        from .efg import load
        return load(spec)
    name, params = parse_spec(spec)
    _check_parameters(name, params)
    try:
        return _generator(name)(**params)
    except TypeError as exc:  # e.g. a list where a number is expected
        raise GameError(f"game '{name}': bad parameter value ({exc})") from None


def check_spec(spec: str) -> None:
    """Check that ``spec`` names a game (an existing ``.efg`` file, or a known generator with
    known parameters) without building it.

    Raises
    ------
    GameError
        Naming the problem (missing file, unknown game, unknown parameter).
    """
    if os.path.exists(spec) or spec.lower().endswith(".efg"):
        if not os.path.isfile(spec):
            raise GameError(f"no such file: {spec}")
        if not os.access(spec, os.R_OK):
            raise GameError(f"cannot read {spec}: permission denied")
        return
    _check_parameters(*parse_spec(spec))


def _check_parameters(name: str, params: dict) -> None:
    valid = list(inspect.signature(_generator(name)).parameters)
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise GameError(f"game '{name}': unknown parameter{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(unknown)}; valid parameters: {', '.join(valid) or 'none'}")
