"""One way to write a result file: atomically, so that a reader (or a crash, a full disk, a
folder removed during the run) never leaves a half-written file behind."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: matplotlib is imported by the figures that use it
    from matplotlib.figure import Figure


@contextlib.contextmanager
def atomic_open(path: str, mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on a clean exit it replaces ``path`` at once
    (``os.replace``), on an error it is removed and ``path`` is left as it was.

    A ``path`` that is a symbolic link is written through, as ``cp`` and a shell's ``>`` do: the
    file it points to gets the new content (its temporary file sits beside that file) and the
    link stays a link.  A file that exists keeps its permission bits; a new one gets those any
    new file gets (``0666`` less the umask).  The temporary file's name is
    ``.<name>.<random>.tmp``, with ``<name>`` shortened so that the whole fits the folder's
    name limit whenever ``path``'s own name does.  Text is UTF-8 unless ``encoding`` is given.

    Parameters
    ----------
    path : str
        The file to write.
    mode : str
        ``"w"`` (text, ``kwargs`` as for ``open()``, e.g. ``newline=""``) or ``"wb"``.

    Yields
    ------
    file object
        Write the whole content to it.

    Raises
    ------
    OSError
        The folder is gone or not writable, the disk is full, ...: ``path`` is untouched.
    """
    from efce.interrupts import forget_on_abort, remove_on_abort

    target = os.path.realpath(path) if os.path.islink(path) else path
    folder = os.path.dirname(os.path.abspath(target))
    name = os.path.basename(target)
    fd, tmp = tempfile.mkstemp(prefix="." + _fitting(name, folder) + ".", suffix=".tmp", dir=folder)
    remove_on_abort(tmp)
    if "b" not in mode:
        kwargs.setdefault("encoding", "utf-8")
    try:
        # mkstemp makes the file private (0600); a result file gets the mode the file it
        # replaces had, or the one any new file gets (0666 less the umask), as open() gives it.
        try:
            bits = stat.S_IMODE(os.stat(target).st_mode)
        except OSError:
            bits = 0o666 & ~current_umask()
        with contextlib.suppress(AttributeError, OSError):  # no fchmod off POSIX
            os.fchmod(fd, bits)
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    finally:
        forget_on_abort(tmp)


#: Characters :func:`atomic_open`'s temporary name adds to the file's own: ``.`` before it, and
#: ``.`` + mkstemp's 8 random characters + ``.tmp`` after it.
_TEMPORARY_CHARACTERS = 14


def _fitting(name: str, folder: str) -> str:
    """``name`` shortened (whole characters, counted in the bytes the file system stores) so
    that a temporary name built on it fits the folder's name limit."""
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # no pathconf, or no answer: the usual limit
        limit = 255
    room = max(1, limit - _TEMPORARY_CHARACTERS)
    while len(os.fsencode(name)) > room:
        name = name[:-1]
    return name


def atomic_savefig(fig: Figure, path: str, **kwargs: Any) -> None:
    """``fig.savefig`` through :func:`atomic_open` (the format from ``path``'s extension)."""
    fmt = kwargs.pop("format", os.path.splitext(path)[1].lstrip(".") or None)
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format=fmt, **kwargs)


def current_umask() -> int:
    """The process's umask (the permission bits new files do not get).  Read from
    ``/proc/self/status`` where Linux shows it, else set and restored at once (``os.umask`` can
    only be read by setting it)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
