"""The signal contract of every command, through real ``efce`` processes: the first SIGINT or
SIGTERM stops it within seconds with status ``interrupted`` (exit 130 and one JSON object when
nothing was computed yet), also while a game is built or read and while ``compare`` or ``sweep``
wait for their children; a closed stdout prints no traceback."""

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tests.experiments.signals import wait_until
from tests.paths import ROOT

EFCE = [sys.executable, "-P", "-m", "efce"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")

#: Seconds from the signal to the exit; the target is 2 s, with room for a loaded test machine.
STOP_SECONDS = 4.0
#: A generator instance that takes 8 to 20 s to build (8.5M nodes) and count.
SLOW_GAME = "goofspiel:ranks=5"


def _signal_after(argv, seconds, sig=signal.SIGTERM, cwd=None):
    """Run ``efce ARGV --json``, send ``sig`` after ``seconds``; (exit code, stdout, stderr,
    seconds from the signal to the exit)."""
    proc = subprocess.Popen(
        [*EFCE, *argv, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=cwd
    )
    try:
        time.sleep(seconds)
        assert proc.poll() is None, proc.communicate()
        sent = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
        return proc.returncode, out, err, time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _one_interrupted_error(out: str, err: str) -> str:
    assert out.count("\n") == 1, out
    printed = json.loads(out)
    assert printed["status"] == "interrupted" and "Traceback" not in err, (printed, err)
    return printed["error"]


def test_sigterm_while_a_generator_builds_the_game_ends_it_as_interrupted():
    code, out, err, took = _signal_after(["info", SLOW_GAME], 3.0)
    assert took < STOP_SECONDS, f"took {took:.1f} s to stop"
    assert code == 130
    # Stopped at a boundary of the build ("interrupted while building goofspiel..."), or, on a
    # machine so loaded that a phase outlasts the grace period, aborted: interrupted either way.
    assert _one_interrupted_error(out, err).startswith("interrupted")


def test_sigterm_while_an_efg_file_is_read_ends_it_as_interrupted(tmp_path):
    from tests.games.deep_chain import deep_chain

    path = tmp_path / "deep.efg"
    path.write_text(deep_chain(300_000))  # several seconds of parsing
    code, out, err, took = _signal_after(["info", str(path)], 2.5)
    assert took < STOP_SECONDS, f"took {took:.1f} s to stop"
    assert code == 130
    assert _one_interrupted_error(out, err).startswith("interrupted")


def test_compare_stops_within_seconds_while_its_child_builds_the_game(tmp_path):
    out_dir = tmp_path / "cmp"
    argv = ["compare", SLOW_GAME, "--methods", "cfr", "--time-limit", "300", "--out", str(out_dir)]
    code, out, err, took = _signal_after(argv, 5.0, sig=signal.SIGINT)
    assert took < STOP_SECONDS, f"took {took:.1f} s to stop"
    assert code == 0, err
    summary = json.loads(out)
    assert summary["interrupted"] is True
    assert summary["methods"]["cfr"]["status"] == "interrupted"  # not a failure of the method
    assert json.loads((out_dir / "summary.json").read_text())["methods"]["cfr"]["status"] == "interrupted"


def test_compare_children_get_one_signal_from_the_runner_not_two_from_the_terminal(tmp_path):
    # A terminal's Ctrl-C goes to the whole foreground process group: the child must not get
    # it directly (the runner forwards it once; a second one would abort it without its result).
    out_dir = tmp_path / "cmp"
    proc = subprocess.Popen(
        [
            *EFCE,
            "compare",
            "kuhn:ranks=13",
            "--methods",
            "cfr+",
            "--time-limit",
            "300",
            "--out",
            str(out_dir),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        start_new_session=True,
    )
    try:
        parent = psutil.Process(proc.pid)
        assert wait_until(lambda: bool(parent.children()))
        child = parent.children()[0]
        assert os.getpgid(child.pid) != os.getpgid(proc.pid)
    finally:
        proc.kill()
        proc.communicate()


def test_sweep_stops_within_seconds_while_a_large_grid_is_submitted(tmp_path):
    grid = tmp_path / "big.sweep.toml"
    grid.write_text('games = ["kuhn"]\nmethods = ["icfr"]\nseeds = 20000\n[limits]\niterations = 10\n')
    out_dir = tmp_path / "out"
    argv = ["sweep", str(grid), "--out", str(out_dir), "--workers", "1"]
    code, out, err, took = _signal_after(argv, 12.0, sig=signal.SIGINT)
    # Closing the local cluster takes a few seconds on a loaded machine.
    assert took < 2 * STOP_SECONDS, f"took {took:.1f} s to stop"
    assert code in (0, 130), err
    assert out.count("\n") == 1 and "Traceback" not in err
    printed = json.loads(out)
    assert printed.get("interrupted") is True or printed.get("status") == "interrupted"


@pytest.mark.parametrize(
    "argv",
    [
        ["info", "kuhn"],
        ["info", "missing.efg"],
        ["info", "kuhn", "--json"],
        ["info", "missing.efg", "--json"],
    ],
)
def test_a_closed_stdout_prints_no_traceback(argv, tmp_path):
    read, write = os.pipe()
    os.close(read)  # nobody reads: the first write fails with EPIPE (`efce ... | true`)
    proc = subprocess.run(
        [*EFCE, *argv], stdout=write, stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp_path
    )
    os.close(write)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 2)


def test_sigterm_to_the_whole_process_group_interrupts_an_lp_solve():
    # `kill -TERM -PGID` (a service manager, a job's end) reaches the solver's worker too: the
    # solve must still end as interrupted, not as "the worker died".
    proc = subprocess.Popen(
        [*EFCE, "solve", "sheriff:max_bribe=3,max_items=3,rounds=3", "--method", "lp-highs", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        start_new_session=True,
    )
    try:
        parent = psutil.Process(proc.pid)
        assert wait_until(lambda: bool(parent.children()))  # the worker runs HiGHS
        time.sleep(0.5)
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert time.monotonic() - sent < STOP_SECONDS
    assert proc.returncode == 0, err
    assert json.loads(out)["status"] == "interrupted"
