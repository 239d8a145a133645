"""Extensive-form games as immutable arrays, their sequence spaces, and benchmark generators."""

from .game import CHANCE, TERMINAL, Game, GameError, SequenceSpace
from .kuhn import kuhn

__all__ = ["CHANCE", "TERMINAL", "Game", "GameError", "SequenceSpace", "kuhn"]
