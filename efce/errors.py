"""The toolkit's errors: one root, :class:`~efce.errors.EFCEError`, and one class per kind of refusal.

Every error the library raises on purpose — a malformed game, a bad option, a failed LP backend,
a model over the memory budget — derives from :class:`EFCEError`; its message is one line meant
for the user.  Anything else that escapes the library (``KeyError``, ``TypeError``, ...) is a bug,
and the ``efce`` command line reports it as an internal error.

Every exception class of the toolkit is defined here.  The hierarchy::

    EFCEError
    ├── GameError              a game is malformed or outside an algorithm's scope
    │   └── MemoryBudgetExceeded   a model of the game was refused up front: its estimated size
    │       │                      exceeds the memory budget (the game is out of scope here)
    │       └── ModelTooLarge      the EFCE LP's estimate (with the estimate and the budget)
    ├── OptionError            an option is unknown, of the wrong type or out of range
    │   └── SweepError         a sweep file or argument is invalid, or the cluster unreachable
    ├── BackendError           an LP backend failed
    ├── ChainError             a chain of scaled extensions is malformed
    ├── CommandError           a subcommand of ``efce`` cannot do what it was asked
    │   └── ResultWithError    it computed its result, but a part failed (the result is printed)
    └── CountLimitReached      a size estimate's exact count hit its state limit (caught where
                               raised: the estimate falls back to a bound; never escapes)
    Interrupted                not an error: a stop request (Ctrl-C, SIGTERM) ended a build or
                               a solver call early (control flow between the code that honours
                               the request and the command that reports it)
    InterpretationEnded        not an error: a run attempted as Python outgrew it (control flow
                               between a kernel call and ``efce.solve``, which compiles instead)

Every class except the root, :class:`CommandError`, :class:`ResultWithError`,
:class:`Interrupted`, :class:`InterpretationEnded` and :class:`CountLimitReached` is also a
:class:`ValueError`, as it always was, so ``except ValueError`` written against earlier versions
still catches them.
:class:`ModelTooLarge` is also exported by :mod:`efce.baselines`, its documented home before
this module held every class.

>>> issubclass(OptionError, GameError)
False
>>> issubclass(SweepError, OptionError) and issubclass(SweepError, EFCEError)
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from efce.baselines.efce_lp import ModelSize

__all__ = [
    "EFCEError",
    "GameError",
    "OptionError",
    "SweepError",
    "BackendError",
    "MemoryBudgetExceeded",
    "ModelTooLarge",
    "ChainError",
    "CommandError",
    "ResultWithError",
    "Interrupted",
    "CountLimitReached",
    "InterpretationEnded",
]


class EFCEError(Exception):
    """Root of every error the toolkit raises on purpose; the message is meant for the user."""


class GameError(EFCEError, ValueError):
    """A game (file, generator call, or array description) is malformed or outside an
    algorithm's scope.  The message names the problem; it is meant to be shown to the user."""


class OptionError(EFCEError, ValueError):
    """An option is unknown, of the wrong type, out of range, or not used by the method."""


class SweepError(OptionError):
    """A sweep file or sweep argument is invalid, or the cluster cannot be reached (an
    :class:`OptionError`, so ``except OptionError`` catches every refusal of the three entries
    ``solve``, ``compare`` and ``sweep``)."""


class BackendError(EFCEError, ValueError):
    """An LP backend failed; the message is one line naming the backend and its status."""

    def __init__(self, backend: str, status: str):
        super().__init__(f"{backend} failed: {status}")
        self.backend = backend
        self.status = status


class MemoryBudgetExceeded(GameError):
    """A model was refused up front because its estimated size exceeds the memory budget (a
    :class:`GameError`: the game is too large for that algorithm on this machine)."""


class ChainError(EFCEError, ValueError):
    """A chain is malformed (a step reads an entry that is not yet filled, sizes disagree...)."""


class ModelTooLarge(MemoryBudgetExceeded):
    """The EFCE LP's estimated size exceeds the memory budget
    (:func:`efce.baselines.efce_lp.check_memory`); ``estimate`` (a
    :class:`~efce.baselines.efce_lp.ModelSize`) and ``budget`` (bytes) say by how much."""

    def __init__(self, message: str, estimate: ModelSize, budget: int):
        super().__init__(message)
        self.estimate = estimate
        self.budget = budget


class CommandError(EFCEError):
    """A user-facing failure of an ``efce`` subcommand (bad arguments, a file it cannot write,
    ...); the command line prints the message as one line (``{"error": ...}`` with ``--json``)."""


class ResultWithError(CommandError):
    """The command computed its result but did not fully succeed — a file of the result could
    not be written, or a run of ``compare``/``sweep`` failed: the result is still printed (with
    ``"error"`` under ``--json``) and the exit code is 2.

    Attributes
    ----------
    result : dict
        The command's JSON object.
    text : str
        Its text form (without ``--json``).
    """

    def __init__(self, message: str, result: dict[str, Any], text: str):
        super().__init__(message)
        self.result = result
        self.text = text


class Interrupted(Exception):
    """A stop request (:func:`efce.interrupts.request_stop`: the first Ctrl-C or SIGTERM under
    :func:`efce.interrupts.stop_on_signals`) ended a build or a solver call before it finished.

    Control flow, not an error of the user: the code that honours the request raises it (a
    builder between two of its phases, :func:`efce.interrupts.check_stop`; an LP backend whose
    worker was killed), and the caller either keeps what it computed before (the LP front ends
    return status ``interrupted``) or, with nothing computed yet, the command line reports
    ``interrupted`` with exit status 130.  Deliberately not an :class:`EFCEError`, so that no
    ``except EFCEError`` taking user errors swallows it."""


class CountLimitReached(EFCEError):
    """An exact count of a game's size visited more states than its limit (the estimators of
    :mod:`efce.games.generators`): raised and caught inside the estimate, which then falls back
    to a bound.  It never reaches a caller."""


class InterpretationEnded(BaseException):
    """A run that :func:`efce.solve` attempted with its kernels run as Python
    (:func:`efce.games.resources.compiled.interpreted_attempt`) outgrew that: a kernel was called
    on more elements than are run as Python, or the attempt's seconds were spent.  Raised by the
    kernel call and caught by :func:`efce.solvers.warm_up.tiered_run`, which compiles and runs
    again.  A ``BaseException``, like ``KeyboardInterrupt``, so that no ``except Exception`` in
    between takes it for the run's own failure."""
