"""The standard streams of a process running the toolkit, made safe for any environment.

Three things can go wrong with stdin, stdout and stderr that have nothing to do with the work a
command does, and each is handled here, once, for every command:

* **A closed stream** (``efce ... >&-``, ``2>&-``).  Python then sets ``sys.stdout`` (or
  ``sys.stderr``) to None, so the first ``print`` fails, and the file descriptor's number is free:
  the next file the process opens takes it, and whatever is written "to stdout" lands in that
  file (a trace file opened as descriptor 1 would receive the JSON result).
  :func:`ensure_standard_streams` points every closed one of descriptors 0, 1 and 2 at the null
  device and gives Python a stream on it, so output nobody can read is dropped and every file
  asked for is still written.
* **A stream that cannot encode the toolkit's text** (an ASCII locale: ``LC_ALL=C`` with
  Python's UTF-8 mode off).  The text output uses a few symbols (``◁`` in chains, ``≥``, ``—``),
  and a game's own names may be any Unicode.  :func:`ensure_standard_streams` has such a stream
  write what it cannot encode in ASCII instead of raising :class:`UnicodeEncodeError`: the
  toolkit's symbols by their usual ASCII spelling (``◁`` → ``<|``, ``≥`` → ``>=``, ``—`` →
  ``--``, :data:`ASCII_SPELLINGS`), any other character as a ``\\u`` escape (nothing is lost).
* **A C library writing on descriptor 1** (HiGHS prints its banner when its first solver object
  is made, before any option can silence it): :func:`quiet_c_output` sends descriptor 1 to the
  null device for the length of a block, and :func:`flush_c_stdio` empties the C library's
  buffers before a descriptor is moved, so nothing written inside a block comes out after it.

>>> "≥ 0 — x ◁ y".encode("ascii", errors=ASCII_ERRORS)
b'>= 0 -- x <| y'
>>> "é".encode("ascii", errors=ASCII_ERRORS)
b'\\\\xe9'
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import sys
from collections.abc import Iterator

__all__ = [
    "ASCII_ERRORS",
    "ASCII_SPELLINGS",
    "ensure_standard_streams",
    "flush_c_stdio",
    "quiet_c_output",
]

#: How the toolkit's own non-ASCII symbols are written on a stream that cannot encode them.
ASCII_SPELLINGS = {
    "◁": "<|",
    "≥": ">=",
    "≤": "<=",
    "≠": "!=",
    "—": "--",
    "–": "-",
    "→": "->",
    "←": "<-",
    "×": "x",
    "·": "*",
    "…": "...",
    "−": "-",
    "²": "^2",
    "√": "sqrt",
    "∞": "inf",
    "τ": "tau",
    "ε": "eps",
    "ξ": "xi",
    "Ξ": "Xi",
    "Δ": "Delta",
    "Σ": "Sigma",
    "σ": "sigma",
    "λ": "lambda",
    "μ": "mu",
    "Π": "Pi",
    "⊗": "(x)",
    "∅": "{}",
    "∈": "in",
    "±": "+/-",
    "⟨": "<",
    "⟩": ">",
    "ᵀ": "^T",
    "π": "pi",
    "α": "alpha",
    "γ": "gamma",
    "ρ": "rho",
    "φ": "phi",
    "Φ": "Phi",
    "‘": "'",
    "’": "'",
    "“": '"',
    "”": '"',
}

#: The ``errors`` handler name (``codecs.register_error``) that writes a character an encoding
#: cannot hold by its :data:`ASCII_SPELLINGS` entry, else as a backslash escape.
ASCII_ERRORS = "efce-ascii"


def _ascii_spelling(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start : exc.end]
    out = []
    for char in text:
        spelled = ASCII_SPELLINGS.get(char)
        if spelled is None:
            spelled = char.encode("ascii", "backslashreplace").decode("ascii")
        out.append(spelled)
    return "".join(out), exc.end


codecs.register_error(ASCII_ERRORS, _ascii_spelling)


def _encodes_everything(stream: object) -> bool:
    """Whether ``stream`` writes every Unicode character as it is (a UTF encoding)."""
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return True  # not a text stream we can reconfigure (bytes, or a test's capture)
    try:
        return codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        return False


def _null_text_stream(fd: int) -> io.TextIOWrapper:
    """A Python text stream on descriptor ``fd`` (already pointing at the null device)."""
    return open(fd, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115  (kept for the process)


def ensure_standard_streams() -> None:
    """Make stdin, stdout and stderr safe to use (module doc); call it before the process opens
    any file.  Idempotent.

    * Each of descriptors 0, 1 and 2 that is closed is opened on the null device (in order, so
      that each takes its own number), and ``sys.stdout`` / ``sys.stderr`` when None become text
      streams on it: what is printed there is dropped, and no file the process opens later
      can take a standard descriptor's number.
    * ``sys.stdout`` and ``sys.stderr``, when their encoding is not a UTF one, write what they
      cannot encode by :data:`ASCII_ERRORS` instead of raising.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:  # a lower descriptor was open and this one not: take this number
                os.dup2(null, fd)
                os.close(null)
    if sys.stdout is None:
        sys.stdout = _null_text_stream(1)
    if sys.stderr is None:
        sys.stderr = _null_text_stream(2)
    for stream in (sys.stdout, sys.stderr):
        if not _encodes_everything(stream) and hasattr(stream, "reconfigure"):
            with contextlib.suppress(ValueError, io.UnsupportedOperation):
                stream.reconfigure(errors=ASCII_ERRORS)


def flush_c_stdio() -> None:
    """``fflush(NULL)``: what C libraries buffered for their output streams goes out now, to where
    their descriptors point at this moment."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to reach (not a POSIX libc)
        pass


@contextlib.contextmanager
def quiet_c_output(enabled: bool = True) -> Iterator[None]:
    """Within this block, what is written on file descriptor 1 (by C code: a library's banner)
    goes to the null device.  Python's own ``sys.stdout`` is flushed before and keeps working
    after.  ``enabled=False`` (asked to be verbose): nothing changes.

    The descriptor is the process's, so a block should be short: another thread printing on
    stdout meanwhile is silenced too.
    """
    if not enabled:
        yield
        return
    with contextlib.suppress(AttributeError, ValueError, OSError):
        sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no descriptor 1: nothing to protect
        yield
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 1)
        finally:
            os.close(null)
        yield
    finally:
        flush_c_stdio()  # a buffered banner is dropped here, not printed after the block
        os.dup2(saved, 1)
        os.close(saved)
