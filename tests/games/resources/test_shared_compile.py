"""Processes compiling into one numba cache at once share the work
(``efce.games.resources.compiled.shared_compile``, ``EFCE_COMPILE_SHARED``): the first to claim
a variant compiles it, another waits until it is written and then loads it, and a claim whose
process was killed is taken over."""

from __future__ import annotations

import json
import subprocess
import sys
import time

#: A process that holds the variant's claim for ``hold`` seconds, recording when its block ran.
PROGRAM = """
import json, sys, time
from efce.games.resources.compiled import shared_compile
folder, name, hold, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
with shared_compile(name, folder):
    began = time.time()
    time.sleep(hold)
    json.dump([began, time.time()], open(out, "w"))
"""


def start(folder, name: str, hold: float, out) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", PROGRAM, str(folder), name, str(hold), str(out)])


def wait_for_claim(folder, name: str) -> None:
    deadline = time.monotonic() + 30
    while not (folder / (name + ".claim")).exists():
        assert time.monotonic() < deadline, "the first process never claimed the variant"
        time.sleep(0.02)


def test_the_second_process_waits_until_the_first_has_written_the_variant(tmp_path):
    first = start(tmp_path, "v", 1.5, tmp_path / "first.json")
    wait_for_claim(tmp_path, "v")
    second = start(tmp_path, "v", 0.0, tmp_path / "second.json")
    assert first.wait(60) == 0 and second.wait(60) == 0
    _, first_ended = json.loads((tmp_path / "first.json").read_text())
    second_began, _ = json.loads((tmp_path / "second.json").read_text())
    assert second_began >= first_ended  # it ran (loading the variant) only once it was written
    assert (tmp_path / "v.done").exists()


def test_other_variants_do_not_wait(tmp_path):
    first = start(tmp_path, "v", 5.0, tmp_path / "first.json")
    wait_for_claim(tmp_path, "v")
    other = start(tmp_path, "w", 0.0, tmp_path / "other.json")
    assert other.wait(60) == 0
    other_began, _ = json.loads((tmp_path / "other.json").read_text())
    first.kill()
    first.wait()
    assert not (tmp_path / "first.json").exists() and other_began > 0


def test_a_killed_claimant_is_taken_over(tmp_path):
    first = start(tmp_path, "v", 60.0, tmp_path / "first.json")
    wait_for_claim(tmp_path, "v")
    second = start(tmp_path, "v", 0.0, tmp_path / "second.json")
    time.sleep(0.5)
    assert second.poll() is None  # waiting for the claimant
    first.kill()
    first.wait()
    assert second.wait(30) == 0  # took the claim over and ran its block
    assert (tmp_path / "second.json").exists() and (tmp_path / "v.done").exists()
