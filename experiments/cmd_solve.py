"""``efce solve GAME --method M``: a thin layer over :func:`experiments.solve.solve`."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from typing import Any

from efce.errors import CommandError, ResultWithError
from efce.games.resources.memory import peak_memory_mib

from .cli import command
from .paths import check_outputs
from .progress import Progress
from .solve import METHODS, OPTIONS, device_methods, solve


def _configure(p):
    p.add_argument("game", help="a .efg path or a spec such as sheriff:max_bribe=2,max_items=2,rounds=2")
    p.add_argument(
        "--method",
        required=True,
        choices=list(METHODS),
        help="; ".join(f"{m.name}: {m.description}" for m in METHODS.values()),
    )
    for option in OPTIONS.values():  # the help names the methods that take the option
        if option.kind is bool:  # a flag: given is True, absent is the method's default
            p.add_argument(option.flag, dest=option.name, default=None, action="store_true", help=option.help)
            continue
        p.add_argument(
            option.flag,
            dest=option.name,
            default=None,
            type=_cli_type(option.kind),
            choices=option.choices,
            help=option.help,
        )
    p.add_argument(
        "--compile-only",
        action="store_true",
        help="compile (or load from numba's cache) the kernels this run would call, and exit "
        "without running it: prepares a machine, e.g. a cluster's workers",
    )
    p.add_argument("--trace", default=None, help="write the trace as CSV to this file")
    p.add_argument(
        "--device-out",
        default=None,
        help="write the correlated distribution found (icfr, cfr-s, trigger, "
        "coarse-trigger) as a device JSON file that efce gap --device reads, each plan "
        "reduced to the infosets it reaches; refused before the run when the file could "
        "exceed solvers.evaluation.device.DEVICE_BYTES_LIMIT bytes",
    )


def _cli_type(kind):
    """Parse a flag's text by the option's type, with an error naming the expected type."""

    def parse(text):
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'an integer' if kind is int else 'a number'}, got '{text}'"
            ) from None

    parse.__name__ = kind.__name__
    return parse if kind in (int, float) else str


@command("solve", _configure)
def run_solve(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """Solve a game with one method and report gaps, welfare and feasibility."""
    from efce.games.spec import make_game

    from .solve import validate_options

    options = {name: getattr(args, name) for name in OPTIONS}
    iterations = validate_options(args.method, options).get("iterations")
    if args.device_out is not None and not METHODS[args.method].writes_device:
        raise CommandError(
            f"{args.method} has no correlated distribution to write; "
            f"--device-out is an option of {', '.join(device_methods())}"
        )
    if args.compile_only and args.trace is not None:
        raise CommandError("--compile-only runs nothing, so --trace would stay empty; drop it")
    check_outputs({"trace file (--trace)": args.trace, "device file (--device-out)": args.device_out})
    if options.get("backend") == "cuda":
        from efce.solvers.backends import cuda_simulator_enabled

        if cuda_simulator_enabled():  # never silently: the user set it, and may not mean it
            print(
                "efce: --backend cuda runs under numba-cuda's simulator (NUMBA_ENABLE_CUDASIM=1 is "
                "set): the GPU kernels as Python on the CPU, for tests; unset it to use a GPU",
                file=sys.stderr,
                flush=True,
            )
    from efce.solvers.warm_up import compiling_time

    started = time.perf_counter()
    with compiling_time() as compiled:  # a generator's kernels, compiled on an empty cache
        game = make_game(args.game)
    game_compile_seconds = compiled()
    build_seconds = time.perf_counter() - started - game_compile_seconds
    if args.compile_only:
        return _compile_only(args, game, options, build_seconds, game_compile_seconds)
    bar = Progress(
        f"{args.method} on {game.name}", total=iterations, enabled=None if not args.json else False
    )
    try:
        result = solve(game, args.method, progress=bar, device=args.device_out is not None, **options)
    except MemoryError:
        raise CommandError(f"{args.method} ran out of memory on {game.name}") from None
    finally:
        bar.close()
    compile_seconds = result.compile_seconds
    if game_compile_seconds > 0:  # None (not measured apart) stays None when nothing compiled
        compile_seconds = (compile_seconds or 0.0) + game_compile_seconds
    result = dataclasses.replace(
        result, setup_seconds=result.setup_seconds + build_seconds, compile_seconds=compile_seconds
    )
    if result.info.get("non_finite") or result.info.get("diverged"):  # no result to print or write
        raise CommandError(result.info["message"])
    out = {"game": game.name, **result.to_json(), "peak_memory_mib": peak_memory_mib()}
    device_out = args.device_out if result.point is not None else None
    if device_out:
        out.update(device_out=device_out, device_support=len(result.point.probs))
    for key in ("efce_gap", "iteration_seconds"):
        out.setdefault(key, None)
    lines = [
        f"{args.method} on {game.name}: {result.status} after {result.iterations:,} iterations",
        f"  setup {result.setup_seconds:.2f} s, "
        + (f"compile {result.compile_seconds:.2f} s, " if result.compile_seconds is not None else "")
        + f"solve {result.seconds:.2f} s",
    ]
    for key in ("efce_gap", "efcce_gap", "nfcce_gap", "exploitability", "value", "welfare", "max_violation"):
        value = result.info.get(key)
        if isinstance(value, (int, float)):
            lines.append(f"  {key:<15} {value:.6g}")
    if "utilities" in result.info:
        lines.append("  utilities       " + ", ".join(f"{u:.6g}" for u in result.info["utilities"]))
    if result.info.get("welfare_interval"):
        lines.append("  welfare_interval [{:.6g}, {:.6g}]".format(*result.info["welfare_interval"]))
    if result.info.get("device"):
        lines.append(f"  device          {result.info['device']}")
    if result.info.get("message"):
        lines.append("  " + result.info["message"])
    if device_out:
        lines.append(f"  device          {out['device_support']:,} joint plans written to {device_out}")
    writes = (
        (args.trace, "trace file", result.write_trace),
        (device_out, "device file", lambda path: _write_device(game, result.point, path)),
    )
    for path, what, write in writes:
        if not path:
            continue
        try:
            write(path)
        except OSError as exc:  # checked before the run, gone since: keep the computed result
            raise ResultWithError(
                f"cannot write the {what} '{path}': {exc.strerror or exc}", out, "\n".join(lines)
            ) from None
    return out, "\n".join(lines)


def _compile_only(
    args: argparse.Namespace, game, options: dict[str, Any], build_seconds: float, game_compile_seconds: float
) -> tuple[dict[str, Any], str]:
    """``--compile-only``: the run's warm-up alone (:func:`~.solve.compile_kernels`)."""
    from .solve import compile_kernels

    seconds = compile_kernels(game, args.method, device=args.device_out is not None, **options)
    out = {
        "game": game.name,
        "method": args.method,
        "status": "compiled",
        "setup_seconds": build_seconds,
        "compile_seconds": seconds + game_compile_seconds,
        "peak_memory_mib": peak_memory_mib(),
    }
    return out, f"{args.method} on {game.name}: kernels ready in {out['compile_seconds']:.2f} s (nothing run)"


def _write_device(game, point, path: str) -> int:
    """Write the distribution ``point`` (a FactoredDevice) as device JSON, one joint plan at a
    time (its size was bounded before the run); returns its support."""
    from efce.games.resources.atomic import atomic_open
    from efce.solvers.evaluation.device import write_device

    with atomic_open(path) as fh:
        return write_device(game, point, fh)
