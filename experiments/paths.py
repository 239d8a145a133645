"""The one check of a command's output paths, made before any work so that a long run is never
thrown away because its result cannot be written, and never leaves anything behind when refused.

Every command that writes files checks all of them here at once, before it builds or runs
anything: ``efce solve`` its ``--trace`` and ``--device-out`` files, ``efce compare`` its
``--out`` folder (and the files it writes there), ``efce sweep`` its ``--out`` folder and the
run records folder inside it.  :func:`check_outputs` refuses, with one line naming the option
and the path:

* an empty name (``--trace ""`` is an error, not "no trace");
* two outputs naming the same file (their results would overwrite each other);
* a path that is not a regular file or a folder where one is expected: a named pipe (opening it
  to write would wait for a reader forever), a device, a socket, a folder given as a file;
* a folder that does not exist or cannot be written, for a file; for an output folder, one
  that cannot be created (a missing folder is created when the first result is written).

The check only looks (``stat``, ``access``): it creates, opens and removes nothing.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping

from efce.errors import OptionError

#: Kinds of file-system objects that are not regular files, for the messages.
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def check_outputs(
    files: Mapping[str, object] | None = None,
    folders: Mapping[str, tuple[object, Iterable[str]] | object] | None = None,
) -> None:
    """Check every output path of a command before it does any work.

    Parameters
    ----------
    files : mapping, optional
        What each file is (``"trace file"``, ``"device file"``) → its path, or None when the
        option was not given.
    folders : mapping, optional
        What each folder is (``"output folder"``) → its path (None: not given), or ``(path, entries)``
        where ``entries`` are the names the command writes inside it (a trailing ``/`` marks a
        folder): each must be absent, or a writable regular file (a writable folder).

    Raises
    ------
    OptionError
        ``cannot write the <what> '<path>': <reason>`` (``cannot write to the output folder``
        for folders), for the first path that fails; two outputs naming the same file.
    """
    seen: dict[str, str] = {}

    def claim(what: str, path: str) -> None:
        real = os.path.realpath(path)
        if real in seen:
            raise OptionError(
                f"the {_described(seen[real])} and the {_described(what)} are the same file "
                f"'{path}'; give each output its own path"
            )
        seen[real] = what

    for what, value in (files or {}).items():
        if value is None:
            continue
        path = _path_argument(value, what, "file")
        _check_file(path, what)
        claim(what, path)
    for what, value in (folders or {}).items():
        path, entries = value if isinstance(value, tuple) else (value, ())
        if path is None:
            continue
        path = _path_argument(path, what, "folder")
        _check_folder(path, what)
        claim(what, path)
        for entry in entries:
            inside = os.path.join(path, entry.rstrip("/"))
            label = f"{entry.rstrip('/')} in the {_described(what)}"
            if entry.endswith("/"):
                _check_folder(inside, label)
            elif os.path.lexists(inside):
                _check_file(inside, label)
            claim(label, inside)


def _path_argument(value: object, what: str, kind: str) -> str:
    """The path ``value`` of output ``what`` (``"trace file (--trace)"``: the option, when
    named, is how a message calls it)."""
    named = _OPTION.search(what)
    called = named.group(1) if named else f"the {what}"
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise OptionError(f"{called} must be a path (a string), got {type(value).__name__} {value!r}")
    if not value.strip():
        raise OptionError(f"{called} needs a {kind} name, got an empty string")
    if "\x00" in value:
        raise OptionError(f"{called}: a path cannot contain a NUL character")
    return value


def _described(what: str) -> str:
    """``what`` without the option it names: ``"trace file (--trace)"`` → ``"trace file"``."""
    return _OPTION.sub("", what)


#: The option an output's description names, in parentheses at its end.
_OPTION = re.compile(r" \((--[A-Za-z0-9-]+)\)$")


def _kind(mode: int) -> str | None:
    """What a non-regular file is, or None for a regular file."""
    return next((name for test, name in _KINDS if test(mode)), None if stat.S_ISREG(mode) else "not a file")


def _check_file(path: str, what: str) -> None:
    what = _described(what)

    def refuse(reason: str) -> OptionError:
        return OptionError(f"cannot write the {what} '{path}': {reason}")

    # A symbolic link is written through (games.resources.atomic.atomic_open): the file it points
    # to, and the folder that file is in, are what must be writable.
    folder = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(folder):
        raise refuse(f"folder '{folder}' does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise refuse(f"folder '{folder}' is not writable")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            raise refuse("it is a broken symbolic link") from None
        return
    except OSError as exc:
        raise refuse(exc.strerror or str(exc)) from None
    kind = _kind(mode)
    if kind is not None:
        raise refuse(f"it is {kind}, not a regular file")
    if not os.access(path, os.W_OK):
        raise refuse("permission denied")


def _check_folder(path: str, what: str) -> None:
    what = _described(what)

    def refuse(reason: str) -> OptionError:
        return OptionError(f"cannot write to the {what} '{path}': {reason}")

    target = os.path.abspath(path)
    if os.path.lexists(target):
        try:
            mode = os.stat(target).st_mode
        except OSError as exc:
            raise refuse(exc.strerror or str(exc)) from None
        if not stat.S_ISDIR(mode):
            raise refuse(f"it is {_kind(mode) or 'a file'}, not a folder")
        if not os.access(target, os.W_OK | os.X_OK):
            raise refuse("permission denied")
        return
    # Created when the first result is written: its nearest existing ancestor must allow it.
    parent = os.path.dirname(target)
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise refuse(f"'{parent}' is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise refuse(f"cannot create it: '{parent}' is not writable")


def make_output_folder(path: str, what: str = "output folder") -> None:
    """Create the output folder ``path`` (and its parents) if it is missing, after
    :func:`check_outputs` passed it: what only creating it tells (root under ``/proc``, where
    ``access`` says yes and ``mkdir`` no; a read-only mount) is one line too.

    Raises
    ------
    OptionError
        ``cannot create the <what> '<path>': <reason>``.
    """
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise OptionError(f"cannot create the {what} '{path}': {exc.strerror or exc}") from None
