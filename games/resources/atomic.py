"""One way to write a result file: atomically, so that a reader (or a crash, a full disk, a
folder removed during the run) never leaves a half-written file behind."""

from __future__ import annotations

import contextlib
import os
import tempfile


@contextlib.contextmanager
def atomic_open(path: str, mode: str = "w", **kwargs):
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
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def atomic_savefig(fig, path: str, **kwargs) -> None:
    """``fig.savefig`` through :func:`atomic_open` (the format from ``path``'s extension)."""
    fmt = kwargs.pop("format", os.path.splitext(path)[1].lstrip(".") or None)
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format=fmt, **kwargs)
