"""Checks on output paths, made before any expensive work so that a long run is never thrown
away because its result cannot be written."""

from __future__ import annotations

import os

from efce.errors import GameError


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
    """Create ``folder`` if needed and make sure a file can be written in it, so that a run's
    results are never lost at the end.  Called after every other check of a run's arguments.

    Raises
    ------
    GameError
        ``cannot write to the output folder '<folder>': <reason>``.
    """
    try:
        os.makedirs(folder, exist_ok=True)
        probe = os.path.join(folder, f".efce-write-check-{os.getpid()}")
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as exc:
        raise GameError(f"cannot write to the output folder '{folder}': {exc.strerror or exc}") from None
