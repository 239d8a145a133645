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
from collections.abc import Callable
from typing import TYPE_CHECKING

from efce.errors import CommandError, EFCEError, ResultWithError
from efce.solvers.result import finite_json

if TYPE_CHECKING:
    from efce.games.game import Game

_COMMANDS: dict[str, tuple[Callable, Callable]] = {}


def command(name: str, configure: Callable[[argparse.ArgumentParser], None]):
    """Register ``run(args) -> (json_dict, text)`` as subcommand ``name``."""

    def register(run):
        _COMMANDS[name] = (configure, run)
        return run

    return register


def load_game(spec: str) -> tuple[Game, float]:
    """The game ``spec`` names (:func:`efce.games.spec.make_game`) and the seconds it took to build."""
    from efce.games.spec import make_game

    started = time.perf_counter()
    game = make_game(spec)
    return game, time.perf_counter() - started


# ----------------------------------------------------------------------------- main
#: What argparse takes for a negative number (a value, not an option) on our parsers: its own
#: default (``-1``, ``-.5``) misses exponents, so ``--welfare-threshold -1e3`` read ``-1e3`` as
#: an unknown option.  No flag of ``efce`` looks like a number, so nothing is shadowed.
NEGATIVE_NUMBER = re.compile(r"^-(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")


def _accept_negative_numbers(parser: argparse.ArgumentParser) -> None:
    if hasattr(parser, "_negative_number_matcher"):
        parser._negative_number_matcher = NEGATIVE_NUMBER


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="efce", description=__doc__.splitlines()[0])
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
    _import_commands()
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    want_json = "--json" in argv
    if want_json:
        # argparse exits with its own text on bad usage; in JSON mode report it as JSON instead.
        def error(message, _parser=parser):
            raise CommandError(message)

        parser.error = error
        for action in parser._subparsers._group_actions:
            for sp_ in action.choices.values():
                sp_.error = error
    failure = output = None
    with stdout_to_stderr(want_json):
        try:
            args = parser.parse_args(argv)
            result, text = args.run(args)
            output = json.dumps(finite_json(result), allow_nan=False) if want_json else text
        except KeyboardInterrupt:
            failure = ("interrupted before any result was computed", 130)
        except ResultWithError as exc:  # the computed result is printed all the same
            failure = (str(exc), 2)
            output = (
                json.dumps(finite_json({**exc.result, "error": str(exc)}), allow_nan=False)
                if want_json
                else exc.text
            )
        except (EFCEError, MemoryError, OSError) as exc:
            # User errors: the library's own refusals (every one derives from EFCEError), and
            # what the machine says (out of memory, a file that cannot be read or written).
            message = str(exc) if not isinstance(exc, MemoryError) else "out of memory"
            failure = (message, 2)
        except Exception as exc:  # a bug (KeyError, TypeError...): one line, and EFCE_DEBUG=1
            if os.environ.get("EFCE_DEBUG"):
                raise
            failure = (f"internal error {type(exc).__name__}: {exc} (set EFCE_DEBUG=1 for the traceback)", 2)
    if failure is not None and output is None:
        return _fail(failure[0], want_json, code=failure[1])
    try:
        print(output)
        if failure is not None:  # a result whose file could not be written
            if not want_json:
                print(f"efce: error: {failure[0]}", file=sys.stderr)
            return failure[1]
    except BrokenPipeError:  # e.g. piped into head
        sys.stderr.close()
    return 0


@contextlib.contextmanager
def stdout_to_stderr(enabled: bool = True):
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
            _flush_c_stdio()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            sys.stdout = python_stdout


def _flush_c_stdio() -> None:
    """``fflush(NULL)``: C libraries' buffered output goes out now, to where fd 1 points."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to reach (not a POSIX libc)
        pass


def _fail(message: str, want_json: bool, code: int = 2) -> int:
    if want_json:
        from efce.games.resources.memory import peak_memory_mib

        print(json.dumps({"error": message, "peak_memory_mib": peak_memory_mib()}))
    else:
        print(f"efce: error: {message}", file=sys.stderr)
    return code


def _import_commands() -> None:
    """Subcommands defined in other modules register themselves on import."""
    import importlib

    for module in (
        "efce.experiments.cmd_info",
        "efce.experiments.cmd_decompose",
        "efce.experiments.cmd_solve",
        "efce.experiments.cmd_compare",
        "efce.experiments.cmd_gap",
        "efce.experiments.cmd_sweep",
    ):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
