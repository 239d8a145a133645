"""One way to write a result file: atomically, so that a reader (or a crash, a full disk, a
folder removed during the run) never leaves a half-written file behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: matplotlib is imported by the figures that use it
    from matplotlib.figure import Figure


@contextlib.contextmanager
def atomic_open(path: str, mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on a clean exit it replaces ``path`` at once
    (``os.replace``), on an error it is removed and ``path`` is left as it was.

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

    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    remove_on_abort(tmp)
    try:
        # mkstemp makes the file private (0600); a result file gets the mode any new file gets
        # (0666 less the umask), as open() would have given it.
        with contextlib.suppress(AttributeError, OSError):  # no fchmod off POSIX
            os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    finally:
        forget_on_abort(tmp)


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
