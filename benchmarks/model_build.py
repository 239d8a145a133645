"""Time of the rm model's build (the game, its relevant pairs, DECOMPOSE, the trigger deviations
and the payoff operator: :func:`efce.solvers.methods.efce.build_efce_model`) under the signal
contract as the ``efce`` command runs it (:func:`efce.interrupts.stop_on_signals` and
:func:`~efce.interrupts.graceful`: its watchdog thread included where the checkout has one), and
a SHA-256 digest of every array the build made, to check that two checkouts build the same model
bit for bit.

Each repeat builds the game and the model afresh, after one warm-up build that compiles the
kernels; the result is the median.  Compare two checkouts A B A B (one process at a time, on a
quiet machine), e.g. A = the commit before the nogil kernels and the watchdog:

    git worktree add /tmp/a a1e280b && python3 -m venv /tmp/a/.venv && /tmp/a/.venv/bin/pip install -e /tmp/a
    for side in A B A B; do
      py=.venv/bin/python; [ $side = A ] && py=/tmp/a/.venv/bin/python
      $py benchmarks/model_build.py --repeats 7 --json
    done

The digests of A and B must be equal; the medians within 2 %.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import hashlib
import json
import statistics
import time

import numpy as np

SMALL_BATTLESHIP = "battleship:rows=3,cols=2,ship_sizes=[1],shots=3"


def _arrays(value, prefix: str, out: dict, depth: int = 0) -> None:
    """Every numpy array reachable from ``value`` through attributes, by dotted name."""
    if isinstance(value, np.ndarray):
        out[prefix] = value
        return
    if depth > 4 or value is None or isinstance(value, (int, float, str, bool)):
        return
    if dataclasses.is_dataclass(value):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    elif isinstance(value, (list, tuple)):
        fields = {str(i): v for i, v in enumerate(value)}
    elif hasattr(value, "__dict__"):
        fields = vars(value)
    else:
        return
    for name, child in fields.items():
        if name == "game":  # the game is built by the generator, not by the model's builders
            continue
        _arrays(child, f"{prefix}.{name}", out, depth + 1)


def digest(model) -> str:
    """SHA-256 of the model's arrays (name, dtype, shape and bytes, in name order)."""
    arrays: dict[str, np.ndarray] = {}
    _arrays(model, "model", arrays)
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _build(spec: str):
    from efce.games.spec import make_game
    from efce.solvers.methods.efce import build_efce_model

    try:
        from efce.interrupts import graceful, stop_on_signals
    except ImportError:  # a checkout from before efce.interrupts: the contract lived in the driver
        from efce.solvers.driver import graceful, stop_on_signals

    gc.collect()
    started = time.perf_counter()
    with stop_on_signals(), graceful():
        model = build_efce_model(make_game(spec))
    return time.perf_counter() - started, model


def measure(spec: str, repeats: int) -> dict:
    """Median build time over ``repeats`` and the digest of the model."""
    _, model = _build(spec)  # compile and cache the kernels, import everything
    first = digest(model)
    del model
    seconds = []
    for _ in range(repeats):
        took, model = _build(spec)
        seconds.append(took)
        if digest(model) != first:
            raise SystemExit("two builds of one checkout differ: the build is not deterministic")
        del model
    return {"game": spec, "repeats": repeats, "median_seconds": statistics.median(seconds), "digest": first}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default=SMALL_BATTLESHIP)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = measure(args.game, args.repeats)
    if args.json:
        print(json.dumps(result))
        return
    print(f"{result['game']}: model build {result['median_seconds']:.4f} s (median of {args.repeats})")
    print(f"digest {result['digest']}")


if __name__ == "__main__":
    main()
