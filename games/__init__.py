"""Extensive-form games as immutable arrays, their sequence spaces, and benchmark generators.

Generators: :func:`~efce.games.generators.kuhn.kuhn`, :func:`~efce.games.generators.leduc.leduc`,
:func:`~efce.games.generators.goofspiel.goofspiel`,
:func:`~efce.games.generators.battleship.battleship`, :func:`~efce.games.generators.sheriff.sheriff`,
:func:`~efce.games.generators.figures.farina_fig1`, :func:`~efce.games.generators.figures.farina_fig2`;
files: :func:`load`, :func:`save` (Gambit ``.efg``); :func:`~efce.games.spec.make_game` builds a
game from a spec string such as ``kuhn:players=3,ranks=3``.
"""

# First: decides numba's cache location before any kernel compiles.
import os
from typing import Any

from .resources import numba_cache  # noqa: F401

# isort: split
from efce.errors import GameError
from efce.games.generators.battleship import battleship
from efce.games.generators.figures import farina_fig1, farina_fig2
from efce.games.generators.goofspiel import goofspiel
from efce.games.generators.kuhn import kuhn
from efce.games.generators.leduc import leduc
from efce.games.generators.sheriff import sheriff

from .game import CHANCE, TERMINAL, ExplicitLabels, Game, Labels, SequenceSpace
from .relevant import connected_infosets, count_relevant_pairs, relevant_pairs
from .spec import make_game


def load(path: str | os.PathLike) -> Game:
    """Read a Gambit ``.efg`` file (see :mod:`games.formats.efg`)."""
    from efce.games.formats.efg import load as _load

    return _load(path)


def save(game: Game, path: str | os.PathLike) -> None:
    """Write ``game`` as a Gambit ``.efg`` file (see :mod:`games.formats.efg`)."""
    from efce.games.formats.efg import save as _save

    return _save(game, path)


def from_openspiel(game_or_name: Any, **params: Any) -> Game:
    """Convert an OpenSpiel game (needs the optional ``open_spiel`` package)."""
    from efce.games.formats.openspiel import from_openspiel as _convert

    return _convert(game_or_name, **params)


__all__ = [
    "CHANCE",
    "TERMINAL",
    "ExplicitLabels",
    "Game",
    "Labels",
    "GameError",
    "SequenceSpace",
    "battleship",
    "connected_infosets",
    "count_relevant_pairs",
    "farina_fig1",
    "farina_fig2",
    "from_openspiel",
    "goofspiel",
    "kuhn",
    "leduc",
    "load",
    "make_game",
    "relevant_pairs",
    "save",
    "sheriff",
]
