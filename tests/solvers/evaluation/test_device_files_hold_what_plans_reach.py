"""A device file costs what it holds: each plan names only the infosets it reaches, the file's
size is bounded in bytes before the run (and the bound holds), recording the device keeps memory
bounded by the device's size rather than the iterations, a game whose names a device file cannot
hold is refused before the run, and result files get the mode the umask gives new files."""

import gc
import json
import os
import stat
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import pytest

import efce
from efce.games.spec import make_game
from efce.solvers.evaluation.device import (
    DEVICE_BYTES_LIMIT,
    device_bytes_bound,
    device_from_dict,
    infoset_names,
    plans_reach_infosets,
    write_device,
)
from tests.paths import ROOT

EFCE = [sys.executable, "-P", "-m", "efce"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.mark.parametrize(
    "spec, method, iterations",
    [("goofspiel:ranks=3", "icfr", 200), ("kuhn:players=3,ranks=3", "trigger", 100)],
)
def test_written_plans_name_exactly_the_infosets_they_reach(tmp_path, spec, method, iterations):
    game = make_game(spec)
    result = efce.solve(game, method, iterations=iterations, device=True)
    path = tmp_path / "device.json"
    with open(path, "w") as fh:
        assert write_device(game, result.point, fh) == len(result.point.probs)
    data = json.loads(path.read_text())
    device = device_from_dict(game, data)
    names = [[row["name"] for row in rows] for rows in infoset_names(game)]
    offsets = np.cumsum([0] + [len(n) for n in names])
    written = reached_total = 0
    for p in range(game.num_players):
        block = device.plans[:, offsets[p] : offsets[p + 1]]
        reached = plans_reach_infosets(game, p, block)
        for k, entry in enumerate(data["device"]):
            assert set(entry["plans"][p]) == {names[p][j] for j in np.flatnonzero(reached[k])}
        written += sum(len(entry["plans"][p]) for entry in data["device"])
        reached_total += int(reached.sum())
    assert written == reached_total < device.size * sum(len(n) for n in names)  # fewer than all


@pytest.mark.parametrize(
    "spec, iterations",
    [
        ("kuhn:players=3,ranks=3", 300),
        ("goofspiel:ranks=3", 300),
        ("leduc:ranks=2", 100),
        ("farina-fig1", 50),
    ],
)
def test_the_device_file_is_never_larger_than_its_bound(tmp_path, spec, iterations):
    game = make_game(spec)
    result = efce.solve(game, "icfr", iterations=iterations, device=True)
    path = tmp_path / "device.json"
    with open(path, "w") as fh:
        write_device(game, result.point, fh)
    support = len(result.point.probs)
    size = path.stat().st_size
    assert size <= device_bytes_bound(game, support)
    # The bound counts one largest reduced plan per joint plan: not wildly above the truth.
    assert device_bytes_bound(game, support) < 20 * size


def test_a_device_whose_file_could_exceed_the_limit_is_refused_before_the_run(tmp_path):
    path = tmp_path / "device.json"
    started = time.monotonic()
    proc = subprocess.run(
        [*EFCE, "solve", "goofspiel:ranks=4", "--method", "icfr", "--iterations", "100000000"]
        + ["--device-out", str(path), "--json"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert proc.returncode == 2 and time.monotonic() - started < 60
    message = json.loads(proc.stdout)["error"]
    assert "device file could take" in message and f"{DEVICE_BYTES_LIMIT / 2**20:.1f} MiB" in message
    assert not path.exists()


def _uniform(space) -> np.ndarray:
    x = np.zeros(space.num_sequences)
    x[0] = 1.0
    for j in range(space.num_infosets):  # top-down: the parent sequence is filled first
        share = x[space.infoset_parent_seq[j]] / space.infoset_num_actions[j]
        x[space.infoset_first_seq[j] : space.infoset_first_seq[j] + space.infoset_num_actions[j]] = share
    return x


def test_recording_a_device_takes_memory_bounded_by_the_device_not_the_iterations():
    from efce.solvers.backends import get_backend
    from efce.solvers.methods.trigger import _DeviceRecorder

    game = make_game("farina-fig1")  # 28 joint reduced plans
    xs = [_uniform(game.sequences(p)) for p in range(game.num_players)]
    recorder = _DeviceRecorder(game, get_backend("cpu"))
    tracemalloc.start()
    try:
        grown = []
        for rounds in (2_000, 20_000):
            while rounds > 0:
                recorder.record(xs, 1.0)
                rounds -= 1
            gc.collect()
            grown.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    # Ten times the iterations, the same device: the memory does not grow with them.
    assert grown[1] - grown[0] < 256 * 1024, grown
    assert len(recorder.device().probs) <= 28


BAD_NAMES = """EFG 2 R "bad names" { "P1" "P2" }
""
p "" 1 1 "1:2" { "a" "b" } 0
p "" 1 2 "x" { "c" "d" } 0
t "" 1 "" { 1 0 }
p "" 2 1 "y" { "e" "f" } 0
t "" 2 "" { 0 1 }
t "" 3 "" { 1 1 }
p "" 1 3 "x" { "g" "h" } 0
t "" 4 "" { 2 0 }
t "" 5 "" { 0 2 }
"""


def test_a_game_whose_names_a_device_file_cannot_hold_is_refused_before_the_run(tmp_path):
    # Player 1's second infoset is labelled "x" like the third, and its position "1:2" is the
    # first one's label: it has no name a device file could use.
    game_path = tmp_path / "bad.efg"
    game_path.write_text(BAD_NAMES)
    path = tmp_path / "device.json"
    started = time.monotonic()
    proc = subprocess.run(
        [*EFCE, "solve", str(game_path), "--method", "icfr", "--iterations", "100000000"]
        + ["--device-out", str(path), "--json"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert proc.returncode == 2 and time.monotonic() - started < 60, proc.stdout
    assert "no unambiguous name" in json.loads(proc.stdout)["error"]
    assert not path.exists()


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_result_files_get_the_mode_the_umask_gives(tmp_path, umask):
    trace, device = tmp_path / "trace.csv", tmp_path / "device.json"
    proc = subprocess.run(
        [*EFCE, "solve", "kuhn:players=3,ranks=3", "--method", "icfr", "--iterations", "20"]
        + ["--trace", str(trace), "--device-out", str(device), "--json"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
        umask=umask,
    )
    assert proc.returncode == 0, proc.stderr
    for path in (trace, device):
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
