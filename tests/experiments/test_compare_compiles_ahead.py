"""``efce compare`` starts the runs that compile kernels of their own after every other run of
every game, and compiles their kernels meanwhile in a background process at the lowest priority
(``efce solve --compile-only``, :mod:`efce.experiments.compile_ahead`); the summaries keep the
order of the methods given; it goes on through a compiling run whose kernels it has compiled.
And ``--compile-only`` fills numba's cache with every kernel the run then loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from efce.experiments import compare as compare_module
from efce.experiments.cli import main
from efce.experiments.compile_ahead import NICENESS, CompileAhead
from efce.experiments.solve import METHODS

GAMES = ["sheriff:max_bribe=1,max_items=1,rounds=1", "sheriff:max_bribe=2,max_items=1,rounds=1"]
METHODS_GIVEN = ["rm", "lp-highs", "cfr+", "subgradient"]


class RecordedAhead:
    """Stands in for :class:`CompileAhead`: records its commands and when it was stopped."""

    made: list[RecordedAhead] = []
    #: The runs started so far (the test's fake run_method appends to it).
    started: list[tuple[str, str]] = []

    def __init__(self, commands, memory_limit_bytes=None, environment=None):
        self.commands = commands
        self.stopped_before: int | None = None
        RecordedAhead.made.append(self)

    def stop(self):
        if self.stopped_before is None:
            self.stopped_before = len(RecordedAhead.started)

    #: The commands (by index) the fake has compiled, whenever asked.
    compiled_commands: frozenset[int] = frozenset()

    def compiled(self, index):
        return index in self.compiled_commands


def _recorded_runs(monkeypatch) -> list[tuple[str, str]]:
    """Compare's runs and background replaced by fakes that record them: returns the list of
    the runs started, (game, method), in order."""
    started: list[tuple[str, str]] = []

    def fake_run(game_spec, method, out_dir, **kwargs):
        started.append((game_spec, method))
        run = compare_module.MethodRun(method, "converged", 0.1, 1.0)
        run.time_to_gap = {f"{t:g}": None for t in compare_module.THRESHOLDS}
        return run, []

    RecordedAhead.started = started
    RecordedAhead.made.clear()
    monkeypatch.setattr(compare_module, "run_method", fake_run)
    monkeypatch.setattr(compare_module, "CompileAhead", RecordedAhead)
    return started


def test_compiling_runs_start_last_with_their_kernels_compiled_ahead(tmp_path, monkeypatch):
    started = _recorded_runs(monkeypatch)
    folders = [str(tmp_path / "a"), str(tmp_path / "b")]
    summaries = compare_module.compare_games(GAMES, METHODS_GIVEN, out_dirs=folders, time_limit=7.0)

    compiling = [m for m in METHODS_GIVEN if METHODS[m].compiles_kernels]
    others = [m for m in METHODS_GIVEN if not METHODS[m].compiles_kernels]
    assert compiling == ["rm", "cfr+"] and others == ["lp-highs", "subgradient"]
    assert started == [(g, m) for g in GAMES for m in others] + [(g, m) for g in GAMES for m in compiling]
    # One background worker, given the compiling runs' own command lines in the order they
    # start, stopped when the first of them starts.
    (ahead,) = RecordedAhead.made
    expected = [
        [sys.executable, "-P", "-m", "efce", "solve", g, "--method", m, "--json", "--time-limit", "7.0"]
        + ["--compile-only"]
        for g in GAMES
        for m in compiling
    ]
    assert ahead.commands == expected and ahead.stopped_before == 2 * len(others)
    for game, folder in zip(GAMES, folders, strict=True):
        assert list(summaries[game]["methods"]) == METHODS_GIVEN  # the order given
        assert json.loads((tmp_path / folder / "summary.json").read_text())["game"] == game


def test_the_background_goes_on_through_a_run_whose_kernels_it_compiled(tmp_path, monkeypatch):
    """A compiling run whose command the background has ended only loads its kernels: the
    background is stopped at the next compiling run, not at that one."""

    started = _recorded_runs(monkeypatch)
    # The commands: rm's (index 0), then cfr+'s.
    monkeypatch.setattr(RecordedAhead, "compiled_commands", frozenset({0}))
    methods = ["lp-highs", "subgradient", "rm", "cfr+"]
    compare_module.compare_games(GAMES[:1], methods, out_dirs=[str(tmp_path / "a")], time_limit=7.0)
    (ahead,) = RecordedAhead.made
    assert [c[c.index("--method") + 1] for c in ahead.commands] == ["rm", "cfr+"]
    assert started == [(GAMES[0], m) for m in methods] and ahead.stopped_before == 3  # at cfr+


def test_nothing_is_compiled_ahead_when_every_run_compiles(tmp_path, monkeypatch):
    _recorded_runs(monkeypatch)
    compare_module.compare_games(GAMES[:1], ["rm", "cfr+"], out_dirs=[str(tmp_path / "a")], time_limit=7.0)
    assert RecordedAhead.made == []  # no other run to overlap: each run's warm-up uses every core


def test_background_work_is_niced_single_core_and_stops_at_once(tmp_path):
    report = tmp_path / "report.json"
    late = tmp_path / "late"
    probe = (
        "import json, os, sys, time; "
        f"json.dump([os.nice(0), os.environ.get('EFCE_COMPILE_WORKERS')], open({str(report)!r}, 'w')); "
        "time.sleep(60)"
    )
    started = time.monotonic()
    ahead = CompileAhead([[sys.executable, "-c", probe], [sys.executable, "-c", f"open({str(late)!r}, 'w')"]])
    while not report.exists() or not report.read_text():
        assert time.monotonic() - started < 30, "the background process did not start"
        time.sleep(0.05)
    time.sleep(0.2)
    ahead.stop()
    assert time.monotonic() - started < 40 and ahead.done
    niceness, workers = json.loads(report.read_text())
    assert niceness >= NICENESS and workers == "0"
    assert not late.exists() and ahead.finished == 1  # killed, and nothing started after it


def test_compile_only_with_a_trace_is_refused_in_one_line(tmp_path, capsys):
    code = main(["solve", "kuhn", "--method", "cfr+", "--compile-only", "--trace", str(tmp_path / "t.csv")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--compile-only" in err and len(err.splitlines()) == 1


def test_compile_only_fills_the_cache_that_the_run_then_loads(tmp_path):
    """On an empty cache, ``--compile-only`` compiles; the run after it, in a new process, loads
    every kernel (its warm-up says "loading", never "compiling")."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "EFCE_COMPILE_WORKERS": "0"}
    command = [sys.executable, "-P", "-m", "efce", "solve", "kuhn", "--method", "cfr+", "--time-limit", "5"]
    first = subprocess.run([*command, "--compile-only", "--json"], capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr
    ready = json.loads(first.stdout)
    assert ready["status"] == "compiled" and ready["compile_seconds"] > 0
    assert "compiling its kernels" in first.stderr
    run = subprocess.run([*command, "--json"], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert "compiling" not in run.stderr and json.loads(run.stdout)["iterations"] > 0


def test_compile_only_of_an_lp_front_end_fills_the_cache_of_its_model_and_evaluator(tmp_path):
    """``lp-pdlp`` evaluates its stages inside its clock, so its warm-up
    (:func:`~baselines.efce_lp.warm_up_lp`) compiles the model builders' and the evaluator's
    kernels: after ``--compile-only``, the run in a new process compiles nothing at all."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "EFCE_COMPILE_WORKERS": "0"}
    game = "sheriff:max_bribe=1,max_items=2,rounds=1"
    command = [sys.executable, "-P", "-m", "efce", "solve", game, "--method", "lp-pdlp", "--time-limit", "30"]
    first = subprocess.run([*command, "--compile-only", "--json"], capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["compile_seconds"] > 0 and "compiling its kernels" in first.stderr
    probe = (
        "import sys; from numba.core import event; compiled = []; "
        "event.register('numba:compile', type('L', (event.Listener,), "
        "{'on_start': lambda s, e: compiled.append(e.data['dispatcher'].py_func.__qualname__), "
        "'on_end': lambda s, e: None})()); "
        "from efce.experiments.cli import main; sys.argv = ['efce', *sys.argv[1:]]; code = main(); "
        "print('compiled:', compiled, file=sys.stderr); sys.exit(code)"
    )
    run = subprocess.run(
        [sys.executable, "-P", "-c", probe, *command[4:], "--json"], capture_output=True, text=True, env=env
    )
    assert run.returncode == 0, run.stderr
    assert "compiled: []" in run.stderr, run.stderr[-2000:]
    assert json.loads(run.stdout.splitlines()[-1])["status"] == "converged"
