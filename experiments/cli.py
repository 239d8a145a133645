"""The ``efce`` command line: ``info``, ``decompose``, ``solve``, ``gap``, ``compare``, ``sweep``.

With ``--json`` every subcommand prints exactly one JSON object on stdout and exits 0; a failure
prints ``{"error": "..."}`` and exits 2.  While a ``--json`` command runs, file descriptor 1 itself
is pointed at stderr (:func:`stdout_to_stderr`), so whatever a library prints — HiGHS's banner
is written by its C code when a solver object is constructed — lands on stderr, and the one
object is printed after the run.  Without ``--json`` failures print a one-line
``efce: error: ...`` on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn

from efce.errors import CommandError, EFCEError, ResultWithError
from efce.solvers.result import finite_json
from efce.streams import ensure_standard_streams, flush_c_stdio

if TYPE_CHECKING:
    from efce.games.game import Game

_COMMANDS: dict[str, tuple[Callable, Callable]] = {}
# A subcommand's ``run(args) -> (json_dict, text)``.
_CommandRun = Callable[[argparse.Namespace], tuple[Any, str]]


def command(
    name: str, configure: Callable[[argparse.ArgumentParser], None]
) -> Callable[[_CommandRun], _CommandRun]:
    """Register ``run(args) -> (json_dict, text)`` as subcommand ``name``."""

    def register(run: _CommandRun) -> _CommandRun:
        _COMMANDS[name] = (configure, run)
        return run

    return register


def load_game(spec: str) -> tuple[Game, float]:
    """The game ``spec`` names (:func:`efce.games.spec.make_game`) and the seconds it took to build."""
    from efce.games.spec import make_game

    started = time.perf_counter()
    game = make_game(spec)
    return game, time.perf_counter() - started


def integer_argument(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type`` for an integer option of a subcommand: the text must be an integer
    from ``low`` to ``high``, else a one-line usage error naming the range (never a failure
    deep in the command)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got '{text[:40]}'") from None
        if value < low or (high is not None and value > high):
            span = f"from {low} to {high}" if high is not None else f"≥ {low}"
            raise argparse.ArgumentTypeError(f"expected an integer {span}, got {text[:40]}")
        return value

    parse.__name__ = "integer"
    return parse


# ----------------------------------------------------------------------------- main
#: What argparse takes for a negative number (a value, not an option) on our parsers: its own
#: default (``-1``, ``-.5``) misses exponents, so ``--welfare-threshold -1e3`` read ``-1e3`` as
#: an unknown option.  No flag of ``efce`` looks like a number, so nothing is shadowed.
NEGATIVE_NUMBER = re.compile(r"^-(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")


def _accept_negative_numbers(parser: argparse.ArgumentParser) -> None:
    if hasattr(parser, "_negative_number_matcher"):
        parser._negative_number_matcher = NEGATIVE_NUMBER


# What ``efce --help`` says first: plain text, as argparse prints it (the module docstring is
# reStructuredText for the API reference).
_DESCRIPTION = "The efce command line: info, decompose, solve, gap, compare, sweep."


def build_parser() -> argparse.ArgumentParser:
    """The ``efce`` parser: one subparser per registered command, each with ``--json``."""
    parser = argparse.ArgumentParser(prog="efce", description=_DESCRIPTION)
    _accept_negative_numbers(parser)
    parser.add_argument("--version", action="version", version=f"efce {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (configure, run) in _COMMANDS.items():
        p = sub.add_parser(name, help=(run.__doc__ or "").strip().splitlines()[0] if run.__doc__ else None)
        _accept_negative_numbers(p)
        configure(p)
        p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
        p.set_defaults(run=run)
    return parser


def _version() -> str:
    """The installed ``efce-toolkit`` version, else the one in the source tree's pyproject."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("efce-toolkit")
    except PackageNotFoundError:
        import re

        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pyproject.toml")
        try:
            with open(path, encoding="utf-8") as fh:
                found = re.search(r'^version\s*=\s*"([^"]+)"', fh.read(), re.MULTILINE)
        except OSError:
            found = None
        return found.group(1) if found else "unknown"


def main(argv: list[str] | None = None) -> int:
    from efce.errors import Interrupted
    from efce.interrupts import clear_stop, graceful, ignore_signals, stop_on_signals, wrapped_abort

    # First: a closed stdout or stderr (``>&-``) must neither fail the first print nor lend its
    # descriptor to a file the command writes, and an ASCII locale must not fail on a symbol.
    ensure_standard_streams()
    argv = list(sys.argv[1:] if argv is None else argv)
    _import_commands(argv[0] if argv else None)
    parser = build_parser()
    want_json = "--json" in argv
    if want_json:
        # argparse exits with its own text on bad usage; in JSON mode report it as JSON instead.
        def error(message: str) -> NoReturn:
            raise CommandError(message)

        # argparse has no hook for its usage errors but its error method: replaced on purpose.
        parser.error = error  # type: ignore[method-assign]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sp_ in action.choices.values():
                    sp_.error = error
    failure: tuple[str, int] | None = None
    output: str | None = None
    clear_stop()  # a new command (main may be called again in one process)
    # One signal contract for every subcommand (efce.interrupts): the first SIGINT/SIGTERM is a
    # stop request that the running phase honours at its next boundary, a second one aborts;
    # an abort that the main thread cannot take over (it is inside a compiled call) is written
    # by the watchdog, to the stdout this command prints on.
    abort = _AbortWriter(want_json)
    with abort, stop_on_signals(abort), graceful(), stdout_to_stderr(want_json):
        try:
            args = parser.parse_args(argv)
            result, text = args.run(args)
            output = json.dumps(finite_json(result), allow_nan=False) if want_json else text
        except Interrupted as exc:  # a builder stopped between two phases: nothing computed yet
            failure = (f"{exc}: stopped before any result was computed", 130)
        except KeyboardInterrupt:  # a second signal, or a first one not honoured in time
            failure = (_abort_message(), 130)
        except ResultWithError as exc:  # the computed result is printed all the same
            failure = (str(exc), 2)
            output = (
                json.dumps(finite_json({**exc.result, "error": one_line(str(exc))}), allow_nan=False)
                if want_json
                else exc.text
            )
        except (EFCEError, MemoryError, OSError) as exc:
            # User errors: the library's own refusals (every one derives from EFCEError), and
            # what the machine says (out of memory, a file that cannot be read or written).
            message = str(exc) if not isinstance(exc, MemoryError) else "out of memory"
            failure = (message, 2)
        except Exception as exc:  # a bug (KeyError, TypeError...): one line, and EFCE_DEBUG=1
            if wrapped_abort(exc):  # an abort, not a bug (efce.interrupts.wrapped_abort)
                failure = (_abort_message(), 130)
            elif os.environ.get("EFCE_DEBUG"):
                raise
            else:
                failure = (
                    f"internal error {type(exc).__name__}: {exc} (set EFCE_DEBUG=1 for the traceback)",
                    2,
                )
    with ignore_signals():  # the outcome is decided: a late signal must not cut the output short
        if failure is not None and output is None:
            return _fail(failure[0], want_json, code=failure[1])
        assert output is not None  # without a failure, every command returns its text
        if not _print(output):
            return failure[1] if failure is not None else 0
        if failure is not None:  # a result whose file could not be written
            if not want_json:
                _print(f"efce: error: {one_line(failure[0])}", sys.stderr)
            return failure[1]
    return 0


def _abort_message() -> str:
    from efce.interrupts import STOP_GRACE_SECONDS, escalated

    if escalated():
        return (
            f"interrupted: the running phase had no point to stop at within "
            f"{STOP_GRACE_SECONDS:g} s of the signal, so it was aborted without a result"
        )
    return "interrupted by a second signal: aborted at once, without a result"


#: Longest error message printed: a message quoting user text (a label, a file's content) is
#: cut here, whatever its source forgot to shorten.
MAX_MESSAGE_CHARS = 2000


def one_line(message: str) -> str:
    """``message`` as printed: at most :data:`MAX_MESSAGE_CHARS` characters, the rest replaced
    by a note of its length."""
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    return message[: MAX_MESSAGE_CHARS - 40] + f"... ({len(message):,} characters in all)"


def _print(text: str, stream=None) -> bool:
    """Print ``text`` on ``stream`` (stdout by default); False when its reader has gone (a
    closed pipe, ``efce ... | true``): the stream is then pointed at the null device, so that
    neither this print nor Python's last flush at exit prints a traceback."""
    stream = sys.stdout if stream is None else stream
    try:
        print(text, file=stream, flush=True)
        return True
    except BrokenPipeError:
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)
        return False


@contextlib.contextmanager
def stdout_to_stderr(enabled: bool = True) -> Iterator[None]:
    """Within this block everything written to stdout goes to stderr instead, at the level of
    file descriptor 1, so that C libraries (HiGHS prints its banner from ``Highs()``'s
    constructor, before any option can silence it) cannot spoil a ``--json`` object either.

    One mechanism for every subcommand and backend: the real stdout is kept as a duplicate and
    put back at the end (C-level buffers are flushed first, so nothing printed inside the block
    reaches it later); the caller prints its one object after the block.
    """
    if not enabled:
        yield
        return
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no file descriptor 1 at all: nothing to protect
        yield
        return
    python_stdout = sys.stdout
    try:
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        yield
    finally:
        try:
            sys.stderr.flush()
            flush_c_stdio()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            sys.stdout = python_stdout


def _fail(message: str, want_json: bool, code: int = 2) -> int:
    """Print the one error (:func:`_failure_line`) and return ``code``."""
    _print(_failure_line(message, want_json, code), None if want_json else sys.stderr)
    return code


def _failure_line(message: str, want_json: bool, code: int) -> str:
    """The one error a failed command prints: ``{"error": ...}`` under ``--json`` (on stdout),
    else ``efce: error: ...`` (on stderr); exit 130 (interrupted) also gives
    ``"status": "interrupted"``."""
    message = one_line(message)
    if not want_json:
        return f"efce: error: {message}"
    from efce.games.resources.memory import peak_memory_mib

    failure = {"error": message, "peak_memory_mib": peak_memory_mib()}
    if code == 130:
        failure["status"] = "interrupted"
    return json.dumps(failure)


class _AbortWriter:
    """What the signal watchdog (:func:`efce.interrupts.stop_on_signals`) calls to end a command
    whose main thread is inside a compiled call: the one error of an abort, written with
    :func:`os.write` on the command's real stdout (a duplicate kept for the whole command, since
    :func:`stdout_to_stderr` points file descriptor 1 at stderr under ``--json``), or on stderr
    without ``--json``.  A context manager: the duplicate is closed at its end."""

    def __init__(self, want_json: bool):
        self.want_json = want_json
        self.fd: int | None = None

    def __enter__(self) -> _AbortWriter:
        if self.want_json:
            with contextlib.suppress(OSError):  # no file descriptor 1: nothing to print on
                self.fd = os.dup(1)
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __call__(self) -> None:
        fd = self.fd if self.want_json else 2
        if fd is None:
            return
        data = (_failure_line(_abort_message(), self.want_json, 130) + "\n").encode()
        with contextlib.suppress(OSError):  # a closed pipe: nobody reads the error
            while data:
                data = data[os.write(fd, data) :]


#: The module of each subcommand, in ``efce --help``'s order.
COMMAND_MODULES = {
    "info": "efce.experiments.cmd_info",
    "decompose": "efce.experiments.cmd_decompose",
    "solve": "efce.experiments.cmd_solve",
    "compare": "efce.experiments.cmd_compare",
    "gap": "efce.experiments.cmd_gap",
    "sweep": "efce.experiments.cmd_sweep",
}


def _import_commands(name: str | None = None) -> None:
    """Subcommands defined in other modules register themselves on import: the one ``name``d
    (a command reads only its own module: ``efce info`` of an oversized game answers in well
    under a second, without the solvers' and the plots' imports), else all of them."""
    import importlib

    for module in [COMMAND_MODULES[name]] if name in COMMAND_MODULES else COMMAND_MODULES.values():
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
