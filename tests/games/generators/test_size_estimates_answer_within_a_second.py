"""Every generator's size estimate answers within a second for any parameters it accepts (closed
forms, or counts bounded by a state limit), so that an oversized game is refused at once: on
every corner of each generator's parameter box, on the shapes that made the counts slowest
(many players with raises, fleets of many small ships), and through the command line, where
``efce info leduc:players=64`` took 6-10 s (200,000 betting states counted).

CPU seconds, not wall-clock ones: the suite may share the machine."""

from __future__ import annotations

import gc
import itertools
import resource
import subprocess
import sys
import time

import pytest

from efce.games.spec import GENERATORS, estimate_spec
from tests.paths import ROOT

#: What "answers within a second" allows one estimate.
SECONDS = 1.0


def _corners(name: str) -> list[str]:
    """Spec strings with every integer parameter of ``name`` at its low, middle or high end
    (list and other parameters at their defaults), 3^k of them."""
    ints = {key: p for key, p in GENERATORS[name].parameters.items() if p.kind == "int"}
    values = [sorted({int(p.low), int((p.low + p.high) // 2), int(p.high)}) for p in ints.values()]
    return [
        f"{name}:" + ",".join(f"{key}={value}" for key, value in zip(ints, combo, strict=True))
        for combo in itertools.product(*values)
    ]


SLOW_SHAPES = [
    *(f"leduc:players={n}" for n in (6, 7, 8, 12, 30, 50, 51, 64)),
    "leduc:players=5,raises_per_player=10,max_raises=16",
    "leduc:players=4,raises_per_player=none,max_raises=16",
    "battleship:rows=6,cols=6,ship_sizes=[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],shots=1",
    "battleship:rows=7,cols=7,ship_sizes=[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],shots=10",
    "battleship:rows=2,cols=31,ship_sizes=[1,2,3],shots=63",
    "battleship:rows=7,cols=9,ship_sizes=[2,3,3,4,5],shots=63",
    "battleship:rows=63,cols=63,ship_sizes=[1,1,1,1,1,1,1,1],shots=63",
    "goofspiel:players=16,ranks=62,prizes=random",
    "kuhn:players=1000,ranks=1000",
]


def _cpu_seconds(spec: str) -> float:
    """CPU seconds of one estimate, the garbage of earlier tests collected before and no collection
    during: in the full suite a full collection over the whole process's heap may fall inside
    the estimate and cost it a second that is not its own (1.13 s for leduc:players=7 once)."""
    gc.collect()
    gc.disable()
    try:
        started = time.process_time()
        estimate_spec(spec)
        return time.process_time() - started
    finally:
        gc.enable()


@pytest.mark.parametrize("name", sorted(n for n in GENERATORS if GENERATORS[n].parameters))
def test_every_corner_of_the_parameters_is_estimated_within_a_second(name):
    slow = {}
    for spec in _corners(name):
        try:
            seconds = _cpu_seconds(spec)
        except ValueError:  # parameters that do not go together (a GameError), refused at once
            continue
        if seconds > SECONDS:
            slow[spec] = round(seconds, 2)
    assert not slow, f"estimates over {SECONDS} s: {slow}"


@pytest.mark.parametrize("spec", SLOW_SHAPES)
def test_the_slowest_shapes_are_estimated_within_a_second(spec):
    assert _cpu_seconds(spec) <= SECONDS


def test_the_command_line_refuses_an_oversized_game_within_a_second():
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "efce", "info", "leduc:players=64", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert done.returncode == 2 and "too large" in done.stdout
    assert seconds <= SECONDS, f"efce info took {seconds:.2f} CPU seconds to refuse"
