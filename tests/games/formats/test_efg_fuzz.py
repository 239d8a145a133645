"""Property-based tests of the .efg reader: whatever the bytes, it returns a valid game or raises
:class:`~games.game.GameError` with ``source:line:`` in front of a one-line message."""

from __future__ import annotations

import os
import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from efce.games import Game, GameError
from efce.games.formats import efg
from tests.paths import GAME_DATA

DATA = GAME_DATA
VALID = {path.name: path.read_bytes() for path in sorted(DATA.glob("*.efg"))}
SOURCE = "fuzz.efg"
LOCATED = re.compile(rf"^{re.escape(SOURCE)}:\d+: \S")

# Fragments that hit the reader's corners when spliced into a valid file.
FRAGMENTS = [
    "{",
    "}",
    ",",
    '"',
    '\\"',
    "#",
    "\n",
    " ",
    "\u00a0",
    "\u2028",
    "\x00",
    "\x85",
    "\ufeff",
    "p",
    "c",
    "t",
    "0",
    "1",
    "2",
    "-1",
    "1/0",
    "1/3",
    "0.5",
    "1e400",
    "1e308",
    "-1e99",
    "1e-999999999",
    "nan",
    "inf",
    "-inf",
    "9" * 30,
    "EFG 2 R",
    '""',
    '"x"',
    "é",
    "\r",
]

# A fixed, reproducible sample in the default suite (a few seconds); set EFG_FUZZ_EXAMPLES=5000
# for a longer random search.
_EXAMPLES = os.environ.get("EFG_FUZZ_EXAMPLES")
SETTINGS = settings(
    max_examples=int(_EXAMPLES or 400),
    deadline=None,
    derandomize=not _EXAMPLES,
    suppress_health_check=[HealthCheck.too_slow],
)


def read(data: bytes):
    """Decode as :func:`games.formats.efg.load` does and parse."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return efg.loads(text, source=SOURCE)


def check(data: bytes) -> None:
    try:
        game = read(data)
    except GameError as exc:
        message = str(exc)
        assert LOCATED.match(message), message
        assert "\n" not in message, message
        return
    assert isinstance(game, Game)
    assert np.all(np.isfinite(game.payoffs))
    assert np.all(np.abs(game.payoffs) <= 1e100)
    # What was read can be written and read back to the same arrays.
    again = efg.loads(efg.dumps(game))
    assert np.array_equal(again.payoffs, game.payoffs)
    assert np.array_equal(again.parent, game.parent)


@st.composite
def mutated(draw):
    data = bytearray(VALID[draw(st.sampled_from(sorted(VALID)))])
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, len(data)))
        stop = min(len(data), start + draw(st.integers(0, 12)))
        kind = draw(st.sampled_from(["delete", "insert", "replace", "duplicate", "bytes"]))
        if kind == "delete":
            del data[start:stop]
        elif kind == "duplicate":
            data[start:start] = data[start:stop]
        elif kind == "bytes":
            data[start:stop] = draw(st.binary(max_size=8))
        else:
            piece = draw(st.sampled_from(FRAGMENTS)).encode("utf-8")
            data[start : stop if kind == "replace" else start] = piece
    return bytes(data)


@SETTINGS
@given(mutated())
def test_mutated_valid_files(data):
    check(data)


@SETTINGS
@given(st.binary(max_size=400))
def test_random_bytes(data):
    check(data)


@SETTINGS
@given(st.binary(max_size=200))
def test_valid_header_then_random_bytes(data):
    check(b'EFG 2 R "g" { "P1" "P2" }\n""\n' + data)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40))
def test_token_soup_after_header(pieces):
    text = " ".join(pieces)
    check(('EFG 2 R "g" { "P1" "P2" }\n""\np "" 1 1 "I" { "a" "b" } 0\n' + text).encode("utf-8"))


def test_valid_files_are_read():
    for name, data in VALID.items():
        assert isinstance(read(data), Game), name
