"""What every LP front end checks before calling its backend, and how backends that cannot share
one process are kept apart.

* :func:`check_lp_inputs` refuses a game or threshold the LP cannot represent (payoffs of
  magnitude 1e308 overflow the welfare row; a NaN threshold makes every comparison false) with
  one line, before any model is built or any backend is called.
* :class:`BackendError` is the one-line failure of a backend (HiGHS rejecting a model, a cvxpy
  solver error): the backend's name and its status, never a raw solver object.
* highspy and OR-Tools each ship their own ``libhighs.so.1`` (different HiGHS versions, one
  soname).  The dynamic loader keeps whichever is loaded first, so after ``import highspy`` the
  OR-Tools extension fails to load, and vice versa.  :func:`libhighs_conflict` reads the
  process's memory map to tell whether the other copy is loaded; the callers then run the
  backend in a fresh worker process (:class:`IsolatedWorker`).
"""

from __future__ import annotations

import math

from games.game import Game, GameError

#: Payoffs beyond this magnitude make sums over terminals overflow or lose every digit of the
#: other payoffs (the LP's welfare row adds all of them); such a game is refused up front.
MAX_ABS_PAYOFF = 1e12


class BackendError(GameError):
    """An LP backend failed; the message is one line naming the backend and its status."""

    def __init__(self, backend: str, status: str):
        super().__init__(f"{backend} failed: {status}")
        self.backend = backend
        self.status = status


def check_lp_inputs(game: Game, welfare_threshold: float | None = None) -> None:
    """Raise :class:`games.GameError` (one line) for payoffs or a threshold the LP cannot take."""
    import numpy as np
    payoffs = np.asarray(game.payoffs)
    if payoffs.size:
        worst = float(np.abs(payoffs).max())
        if not math.isfinite(worst) or worst > MAX_ABS_PAYOFF:
            raise GameError(f"payoffs of {game.name} reach {worst:g} in magnitude; the EFCE LP needs "
                            f"finite payoffs of at most {MAX_ABS_PAYOFF:g} (rescale the game)")
    if welfare_threshold is not None:
        try:
            tau = float(welfare_threshold)
        except (TypeError, ValueError):
            raise GameError(f"welfare threshold must be a number, not {welfare_threshold!r}") from None
        if not math.isfinite(tau):
            raise GameError(f"welfare threshold must be a finite number, not {tau}")


def loaded_libhighs() -> str | None:
    """Path of the ``libhighs`` mapped into this process, or None."""
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                if "libhighs.so" in line:
                    return line.split()[-1]
    except OSError:
        pass
    return None


def libhighs_conflict(package: str) -> bool:
    """True when a ``libhighs`` other than ``package``'s own (``"highspy"`` or ``"ortools"``) is
    loaded, so importing ``package``'s extension here would fail."""
    path = loaded_libhighs()
    return path is not None and f"/{package}/" not in path


class IsolatedWorker:
    """A fresh Python process (``python -m baselines._worker``) that runs module-level functions
    sent to it (pickled by reference, arguments by value) one at a time, for a backend whose
    library clashes with one already loaded here.  Unlike ``multiprocessing``'s spawn it never
    re-imports the caller's main script.  Use as a context manager or call :meth:`close`."""

    def __init__(self):
        import os
        import subprocess
        import sys
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen([sys.executable, "-m", "baselines._worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, cwd=root)

    def call(self, fn, *args):
        """``fn(*args)`` in the worker; its exception is re-raised here."""
        import pickle
        pickle.dump((fn, args), self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.flush()
        try:
            ok, value = pickle.load(self.proc.stdout)
        except EOFError:
            raise BackendError("isolated worker", f"exited with code {self.proc.wait()}") from None
        if not ok:
            raise value
        return value

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

