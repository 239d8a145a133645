"""Output paths checked before any work starts, so a long run never ends on an unwritable file."""

from __future__ import annotations

import os

from games.game import GameError


def check_writable(path: str) -> None:
    """Raise :class:`games.GameError` unless ``path`` can be created or overwritten as a file."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise GameError(f"cannot write {path}: it is a folder")
    if not os.path.isdir(folder):
        raise GameError(f"cannot write {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise GameError(f"cannot write {path}: permission denied")


def check_output_folder(folder: str) -> None:
    """Raise :class:`games.GameError` unless ``folder`` exists and is writable or can be created."""
    target = os.path.abspath(folder)
    while not os.path.exists(target):
        parent = os.path.dirname(target)
        if parent == target:
            break
        target = parent
    if not os.path.isdir(target):
        raise GameError(f"cannot write to {folder}: {target} is not a folder")
    if not os.access(target, os.W_OK):
        raise GameError(f"cannot write to {folder}: permission denied on {target}")
