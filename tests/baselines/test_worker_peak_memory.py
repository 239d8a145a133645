"""The peak memory a run reports counts what its solver held in a worker process: `efce solve
--method lp-pdlp` (and every LP front end under the command line's signal handling) solves in an
:class:`~efce.baselines.backends.IsolatedWorker`, whose memory this process's own high-water mark
does not see."""

import os
import subprocess
import sys

import numpy as np
import pytest

from efce import games
from efce.baselines import solve_lp_pdlp
from efce.baselines.backends import IsolatedWorker
from efce.games.resources import memory
from efce.games.resources.memory import own_peak_rss_bytes, peak_rss_bytes, process_peak_rss_bytes

MIB = 2**20


def test_a_worker_reports_its_peak_before_it_exits(monkeypatch):
    monkeypatch.setattr(memory, "_worker_peak_bytes", 0)
    data = np.ones(100 * MIB // 8)  # unpickled in the worker: 100 MiB resident there
    with IsolatedWorker() as worker:
        assert worker.call(np.linalg.norm, data) == np.sqrt(data.size)
    assert memory._worker_peak_bytes >= 100 * MIB
    assert peak_rss_bytes() >= own_peak_rss_bytes() + 100 * MIB


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS does not tell another process's peak")
def test_a_killed_worker_still_counts_its_peak(monkeypatch):
    """A stop request kills the worker mid-call (:meth:`IsolatedWorker.call`), when it can no
    longer report its peak: the kill reads it from the operating system first."""
    monkeypatch.setattr(memory, "_worker_peak_bytes", 0)
    data = np.ones(100 * MIB // 8)
    worker = IsolatedWorker()
    worker.call(np.linalg.norm, data)  # 100 MiB resident in the worker, then idle
    worker.kill()
    worker.close()
    assert memory._worker_peak_bytes >= 100 * MIB
    assert peak_rss_bytes() >= own_peak_rss_bytes() + 100 * MIB


def test_killing_a_worker_twice_and_closing_it_breaks_nothing(monkeypatch):
    monkeypatch.setattr(memory, "_worker_peak_bytes", 0)
    worker = IsolatedWorker()
    worker.kill()
    worker.kill()
    worker.close()
    assert peak_rss_bytes() == own_peak_rss_bytes() + memory._worker_peak_bytes


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS does not tell another process's peak")
def test_the_peak_of_a_process_read_from_the_system_is_its_own_high_water_mark():
    assert process_peak_rss_bytes(os.getpid()) == pytest.approx(own_peak_rss_bytes(), rel=0.05)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert process_peak_rss_bytes(gone.pid) is None


def test_lp_pdlp_in_a_worker_reports_the_workers_memory_too(monkeypatch):
    monkeypatch.setattr(memory, "_worker_peak_bytes", 0)
    game = games.sheriff(max_bribe=2, max_items=2, rounds=2)
    result = solve_lp_pdlp(game, isolate=True)
    assert result.status == "converged"
    worker = memory._worker_peak_bytes
    assert worker > 50 * MIB  # a Python process with numpy and OR-Tools loaded
    # This process's own peak may have grown by a few pages since the result was made.
    assert result.info["peak_memory_bytes"] - own_peak_rss_bytes() >= worker - 4 * MIB
