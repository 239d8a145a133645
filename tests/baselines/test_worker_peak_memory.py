"""The peak memory a run reports counts what its solver held in a worker process: `efce solve
--method lp-pdlp` (and every LP front end under the command line's signal handling) solves in an
:class:`~efce.baselines.backends.IsolatedWorker`, whose memory this process's own high-water mark
does not see."""

import numpy as np

from efce import games
from efce.baselines import solve_lp_pdlp
from efce.baselines.backends import IsolatedWorker
from efce.games.resources import memory
from efce.games.resources.memory import own_peak_rss_bytes, peak_rss_bytes

MIB = 2**20


def test_a_worker_reports_its_peak_before_it_exits(monkeypatch):
    monkeypatch.setattr(memory, "_worker_peak_bytes", 0)
    data = np.ones(100 * MIB // 8)  # unpickled in the worker: 100 MiB resident there
    with IsolatedWorker() as worker:
        assert worker.call(np.linalg.norm, data) == np.sqrt(data.size)
    assert memory._worker_peak_bytes >= 100 * MIB
    assert peak_rss_bytes() >= own_peak_rss_bytes() + 100 * MIB


def test_a_killed_worker_reports_nothing_and_breaks_nothing(monkeypatch):
    monkeypatch.setattr(memory, "_worker_peak_bytes", 0)
    worker = IsolatedWorker()
    worker.kill()
    worker.close()
    assert memory._worker_peak_bytes == 0
    assert peak_rss_bytes() == own_peak_rss_bytes()


def test_lp_pdlp_in_a_worker_reports_the_workers_memory_too(monkeypatch):
    monkeypatch.setattr(memory, "_worker_peak_bytes", 0)
    game = games.sheriff(max_bribe=2, max_items=2, rounds=2)
    result = solve_lp_pdlp(game, isolate=True)
    assert result.status == "converged"
    worker = memory._worker_peak_bytes
    assert worker > 50 * MIB  # a Python process with numpy and OR-Tools loaded
    # This process's own peak may have grown by a few pages since the result was made.
    assert result.info["peak_memory_bytes"] - own_peak_rss_bytes() >= worker - 4 * MIB
