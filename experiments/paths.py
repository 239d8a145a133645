"""Checks on output paths, made before any expensive work so that a long run is never thrown
away because its result cannot be written."""

from __future__ import annotations

import os

from games.game import GameError


def check_writable(path: str, what: str = "output file") -> None:
    """Raise :class:`~games.game.GameError` naming ``path`` unless a file can be written there.

    The folder must exist and accept a new file, and an existing ``path`` must be a writable
    regular file.  Nothing is left behind: the check creates and removes a probe file only when
    ``path`` does not exist yet.

    Raises
    ------
    GameError
        ``cannot write the <what> '<path>': <reason>``.
    """
    def refuse(reason: str) -> GameError:
        return GameError(f"cannot write the {what} '{path}': {reason}")

    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise refuse(f"folder '{folder}' does not exist")
    if os.path.isdir(path):
        raise refuse("it is a folder")
    if os.path.exists(path):
        try:
            with open(path, "a"):
                pass
        except OSError as exc:
            raise refuse(exc.strerror or str(exc)) from None
        return
    try:
        with open(path, "x"):
            pass
    except OSError as exc:
        raise refuse(exc.strerror or str(exc)) from None
    os.remove(path)


def check_output_folder(folder: str) -> None:
    """Raise :class:`~games.game.GameError` unless ``folder`` is a writable folder or can be
    created (its nearest existing ancestor is a writable folder)."""
    target = os.path.abspath(folder)
    while not os.path.exists(target):
        parent = os.path.dirname(target)
        if parent == target:
            break
        target = parent
    if not os.path.isdir(target):
        raise GameError(f"cannot write to the output folder '{folder}': '{target}' is not a folder")
    if not os.access(target, os.W_OK):
        raise GameError(f"cannot write to the output folder '{folder}': permission denied on '{target}'")
