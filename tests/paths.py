"""Where the tests find the repository and their data files (one home for these paths, so a test
file can move between folders without its paths breaking)."""

from __future__ import annotations

from pathlib import Path

#: The repository root (holds pyproject.toml).
ROOT = Path(__file__).resolve().parents[1]
#: Game files the tests read (``.efg``).
GAME_DATA = ROOT / "tests" / "games" / "data"
#: A small game whose infosets share labels (device-name tests).
TWINS = GAME_DATA / "twins.efg"
