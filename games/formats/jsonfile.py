"""The one guarded reader of the JSON files the toolkit takes as input: device files (``efce gap
--device``), the run records of a sweep, the result a child ``efce`` process prints.

:func:`read_json` refuses, with one line naming the file and the problem and before Python's own
limits are reached (which would surface as a bare ``RecursionError``, ``OverflowError`` or
``UnicodeDecodeError``):

* a file larger than ``max_bytes`` (checked from its size before it is read);
* bytes that are not UTF-8 text (a byte-order mark is allowed);
* text that is not JSON, or a key given twice in one object (JSON would keep the last value);
* nesting deeper than the interpreter's recursion limit (about a thousand levels; a device file
  nests four), which the decoder reports as a ``RecursionError`` before any harm;
* numbers beyond what a float64 holds: an integer of more than :data:`MAX_INTEGER_DIGITS`
  digits, a decimal that overflows (``1e400``), and ``NaN``/``Infinity``, which are no JSON.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from efce.errors import GameError

#: Largest JSON input read by default (bytes).
MAX_BYTES = 2**30
#: Most digits of a JSON integer (2**63 has 19): more cannot be a count or a probability.
MAX_INTEGER_DIGITS = 20
#: Characters of the user's text quoted in a message.
QUOTE_CHARS = 60


def shorten(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` cut to ``limit`` characters for a message (``...`` and its length after the cut)."""
    text = str(text)
    return text if len(text) <= limit else f"{text[: limit - 3]}... ({len(text):,} characters)"


def read_json(
    source: str | os.PathLike | bytes,
    what: str,
    *,
    max_bytes: int = MAX_BYTES,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
) -> Any:
    """The JSON value in the file ``source`` (a path), or in ``source`` itself when it is bytes.

    Parameters
    ----------
    source : str, os.PathLike or bytes
        A path, or the content.
    what : str
        The file in messages (``"device file 'd.json'"``).
    max_bytes : int
        Largest content accepted.
    object_pairs_hook : callable, optional
        Builds each object from its ``(key, value)`` pairs (as for ``json.loads``); by
        default a key given twice in one object is refused.

    Returns
    -------
    object
        ``dict``, ``list``, ``str``, ``int``, ``float``, ``bool`` or None; every float finite.

    Raises
    ------
    GameError
        ``<what>: <problem>`` for any of the refusals of the module doc, and for a file that
        cannot be read (missing, a folder, permissions).
    """
    if isinstance(source, bytes):
        data = source
        if len(data) > max_bytes:
            raise GameError(f"{what}: {len(data):,} bytes, more than the {max_bytes:,} read")
    else:
        data = _read_bytes(os.fspath(source), what, max_bytes)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise GameError(
            f"{what}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start:,}); save it as UTF-8"
        ) from None
    try:
        return json.loads(
            text,
            parse_int=lambda digits: _integer(digits, what),
            parse_float=lambda digits: _float(digits, what),
            parse_constant=lambda name: _constant(name, what),
            object_pairs_hook=object_pairs_hook or (lambda pairs: _unique(pairs, what)),
        )
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise GameError(f"{what}: not valid JSON ({exc.msg} at {where})") from None
    except RecursionError:
        raise GameError(f"{what}: arrays and objects nested too deeply (about a thousand levels)") from None


def _read_bytes(path: str, what: str, max_bytes: int) -> bytes:
    try:
        size = os.stat(path).st_size
        if os.path.isdir(path):
            raise GameError(f"cannot read {what}: it is a folder, not a file")
        if size > max_bytes:
            raise GameError(f"{what}: {size:,} bytes, more than the {max_bytes:,} read")
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise GameError(f"cannot read {what}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:  # grew, or a special file whose size stat does not know
        raise GameError(f"{what}: more than the {max_bytes:,} bytes read")
    return data


def _integer(digits: str, what: str) -> int:
    if len(digits.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise GameError(
            f"{what}: the number {shorten(digits, 30)} has {len(digits.lstrip('-')):,} digits, more "
            f"than the {MAX_INTEGER_DIGITS} a count or a probability can have"
        )
    return int(digits)


def _float(digits: str, what: str) -> float:
    value = float(digits)
    if value in (float("inf"), float("-inf")):
        raise GameError(f"{what}: the number {shorten(digits, 30)} is out of range (beyond 1.8e308)")
    return value


def _constant(name: str, what: str):
    raise GameError(f"{what}: {name} is not a JSON number (numbers must be finite)")


def _unique(pairs, what: str) -> dict:
    out = {}
    for key, value in pairs:
        if key in out:
            raise GameError(f"{what}: key '{shorten(key)}' appears twice in one object; give it once")
        out[key] = value
    return out
