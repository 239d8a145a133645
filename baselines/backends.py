"""What every LP front end checks before calling its backend, and how backends that cannot share
one process are kept apart.

* :func:`check_lp_inputs` refuses a game or threshold the LP cannot represent (payoffs of
  magnitude 1e308 overflow the welfare row; a NaN threshold makes every comparison false) with
  one line, before any model is built or any backend is called.
* :class:`BackendError` is the one-line failure of a backend (HiGHS rejecting a model, a cvxpy
  solver error): the backend's name and its status, never a raw solver object.
* highspy and OR-Tools both contain HiGHS.  Whether the two can share one process depends on
  how each release links it: up to highspy 1.15 both shipped a ``libhighs.so.1`` (different
  versions, one soname), the dynamic loader kept whichever came first and the other extension
  failed to load; from highspy 1.16 HiGHS is linked into highspy's own extension and the two
  coexist.  :func:`must_isolate` decides by behaviour, not by file names: when the other
  package's extension is already loaded here, it asks :func:`highs_copies_coexist`, which loads
  both packages in both orders in a child process (once per process), and the callers run the
  backend in a fresh worker process (:class:`IsolatedWorker`) only when they cannot coexist.
"""

from __future__ import annotations

import functools
import math

from efce.games.game import Game, GameError

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


#: For each package that contains HiGHS, the modules whose import loads its copy of HiGHS.
HIGHS_MODULES = {"highspy": ("highspy",),
                 "ortools": ("ortools.linear_solver.pywraplp", "ortools.pdlp.python.pdlp")}


def extension_loaded(package: str) -> bool:
    """True when a compiled extension module of ``package`` is imported in this process."""
    import importlib.machinery
    import sys
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return any(name.partition(".")[0] == package and str(getattr(module, "__file__", "")).endswith(suffixes)
               for name, module in list(sys.modules.items()))


@functools.cache
def highs_copies_coexist() -> bool:
    """True when highspy and OR-Tools load into one process in either order.

    Tried in a child process per order (importing the modules of :data:`HIGHS_MODULES`); a
    child that fails, crashes or hangs for a minute counts as "they cannot coexist", the safe
    answer (the backend then runs in a worker).  The answer is cached for this process.
    """
    import subprocess
    import sys
    probe = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)"
    highspy, ortools = HIGHS_MODULES["highspy"], HIGHS_MODULES["ortools"]
    for order in (highspy + ortools, ortools + highspy):
        try:
            child = subprocess.run([sys.executable, "-P", "-c", probe, *order], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return False
        if child.returncode != 0:
            return False
    return True


def must_isolate(package: str) -> bool:
    """True when ``package``'s HiGHS (``"highspy"`` or ``"ortools"``) cannot be loaded in this
    process because the other package's is loaded here already and the two copies clash."""
    other = {"highspy": "ortools", "ortools": "highspy"}[package]
    return extension_loaded(other) and not highs_copies_coexist()


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
        self.proc = subprocess.Popen([sys.executable, "-m", "efce.baselines._worker"], stdin=subprocess.PIPE,
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

