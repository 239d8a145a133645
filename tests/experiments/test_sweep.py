"""``efce sweep``: the grid, run keys, validation, Dask execution (a local cluster, and a real
``dask scheduler`` / ``dask worker`` cluster on localhost with a worker killed mid-sweep),
resume, and the aggregated table."""

import csv
import json
import math
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from efce.experiments.cli import main
from efce.experiments.harness import efce_command, last_json_object
from efce.experiments.solve import solve
from efce.experiments.sweep import SweepError, aggregate, finished, load_records, load_sweep, run_key, sweep
from tests.paths import ROOT

TINY = ROOT / "benchmarks" / "sweeps" / "tiny.sweep.toml"
K33, G23 = "kuhn:players=3,ranks=3", "goofspiel:players=2,ranks=3"


def small_sweep(iterations, games=(K33, G23), seeds=(0, 1)):
    return {
        "name": "small",
        "games": list(games),
        "methods": ["icfr", "cfr-s"],
        "seeds": list(seeds),
        "limits": {"iterations": iterations, "time": 120, "memory": 2},
    }


# ----------------------------------------------------------------------------- the grid
def test_tiny_example_grid_and_stable_keys():
    spec = load_sweep(TINY)
    assert len(spec.runs) == 8
    assert {(r.game, r.method, r.seed) for r in spec.runs} == {
        (g, m, s) for g in (K33, G23) for m in ("icfr", "cfr-s") for s in (0, 1)
    }
    assert len({r.key for r in spec.runs}) == 8
    assert all(
        r.options == {"iterations": 2000, "time_limit": 60.0} and r.memory_gib == 2.0 for r in spec.runs
    )
    again = load_sweep(
        {
            "games": [G23, K33],
            "methods": ["cfr-s", "icfr"],
            "seeds": 2,
            "limits": {"memory": 2, "time": 60.0, "iterations": 2000.0},
        }
    )
    assert {r.key for r in again.runs} == {r.key for r in spec.runs}  # order and spelling don't matter
    run = spec.runs[0]
    assert run.key.startswith("kuhn_players_3_ranks_3-icfr-s0-")
    changed = {
        run_key(run.game, run.method, 1, run.options, 2.0),
        run_key(run.game, run.method, 0, {**run.options, "iterations": 2001}, 2.0),
        run_key(run.game, run.method, 0, run.options, 3.0),
        run_key(run.game, "cfr-s", 0, run.options, 2.0),
    }
    assert run.key not in changed and len(changed) == 4


def test_option_lists_are_axes_and_deterministic_methods_run_once():
    spec = load_sweep(
        {
            "games": {"fig2": "farina-fig2"},
            "methods": ["rm", "subgradient", "lp-highs"],
            "seeds": 3,
            "limits": {"iterations": 50},
            "options": {
                "rm": {"local": ["rm+", "hedge"], "target_gap": 0.0},
                "subgradient": {"step_size": [1e-3, 1e-4]},
            },
        }
    )
    runs = [(r.method, r.seed, tuple(sorted(r.options.items()))) for r in spec.runs]
    assert runs == [
        ("rm", None, (("iterations", 50), ("local", "rm+"), ("target_gap", 0.0))),
        ("rm", None, (("iterations", 50), ("local", "hedge"), ("target_gap", 0.0))),
        *[
            ("subgradient", s, (("iterations", 50), ("step_size", a)))
            for a in (1e-3, 1e-4)
            for s in (0, 1, 2)
        ],
        ("lp-highs", None, ()),  # the LP takes no iteration budget
    ]
    assert all(r.label == "fig2" and r.game == "farina-fig2" for r in spec.runs)
    assert "--local" in spec.runs[1].solve_arguments() and "hedge" in spec.runs[1].solve_arguments()
    assert spec.runs[2].solve_arguments()[-2:] == ["--seed", "0"]


@pytest.mark.parametrize(
    "content, message",
    [
        ({"games": [K33], "methods": ["icfr"], "gmaes": 1}, "unknown sweep key gmaes"),
        ({"games": [], "methods": ["icfr"]}, "games is empty"),
        ({"games": ["kuhn:players=3,rank=3"], "methods": ["icfr"]}, "unknown parameter rank"),
        ({"games": ["missing.efg"], "methods": ["icfr"]}, "no such file"),
        ({"games": [K33], "methods": ["icfr", "warp"]}, "unknown method 'warp'"),
        ({"games": [K33], "methods": ["icfr"], "seeds": [0, 0]}, "distinct integers"),
        ({"games": [K33], "methods": ["icfr"], "limits": {"time": -1}}, "limits.time must be a positive"),
        (
            {"games": [K33], "methods": ["icfr"], "limits": {"iterations": 2.5}},
            "limits.iterations must be an integer",
        ),
        ({"games": [K33], "methods": ["icfr"], "limits": {"cores": 2}}, "unknown limit cores"),
        ({"games": [K33], "methods": ["icfr"], "options": {"rm": {"local": "rm+"}}}, "not in methods: rm"),
        ({"games": [K33], "methods": ["icfr"], "options": {"icfr": {"seed": [1, 2]}}}, "top-level seeds"),
        (
            {"games": [K33], "methods": ["icfr"], "options": {"icfr": {"local": "rm"}}},
            "icfr does not use --local",
        ),
        (
            {"games": [K33], "methods": ["rm"], "options": {"rm": {"local": ["rm+", "fast"]}}},
            "[options.rm]: --local must be one of",
        ),
        ({"games": [K33], "methods": ["rm"], "options": {"rm": {"target_gap": []}}}, "empty list"),
        ({"games": [K33, K33], "methods": ["icfr"]}, "twice"),
    ],
)
def test_bad_sweeps_are_refused_with_the_reason(content, message):
    with pytest.raises(SweepError) as info:
        load_sweep(content)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_cli_refuses_bad_files_and_arguments_before_any_cluster(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('games = ["kuhn"\n')
    assert main(["sweep", str(bad), "--out", str(tmp_path / "o"), "--json"]) == 2
    assert "not valid TOML" in json.loads(capsys.readouterr().out)["error"]
    assert main(["sweep", str(tmp_path / "none.toml"), "--out", str(tmp_path / "o"), "--json"]) == 2
    assert "no such sweep file" in json.loads(capsys.readouterr().out)["error"]
    assert (
        main(
            [
                "sweep",
                str(TINY),
                "--out",
                str(tmp_path / "o"),
                "--workers",
                "2",
                "--scheduler",
                "tcp://127.0.0.1:1",
                "--json",
            ]
        )
        == 2
    )
    assert "--workers sizes the local cluster" in json.loads(capsys.readouterr().out)["error"]
    assert not (tmp_path / "o").exists()


def test_aggregate_is_mean_and_std_over_seeds():
    def record(seed, gaps, efcce):
        trace = [
            {"iteration": i, "seconds": 0.5 * i, "gap": g, "infeasibility": 0.0}
            for i, g in enumerate(gaps, start=1)
        ]
        return {
            "key": f"k{seed}",
            "label": "G",
            "game": "g",
            "method": "icfr",
            "seed": seed,
            "options": {"iterations": len(gaps)},
            "memory_gib": None,
            "status": "iteration_limit",
            "outcome": "finished",
            "wall_seconds": 2.0 + seed,
            "peak_memory_mib": 100.0 + seed,
            "trace": trace,
            "result": {
                "iterations": len(gaps),
                "seconds": 1.0 + seed,
                "efce_gap": gaps[-1],
                "efcce_gap": efcce,
            },
        }

    records = [
        record(0, [0.5, 0.05, 0.004], 0.01),
        record(1, [0.3, 0.2, 0.02], 0.03),
        {**record(2, [1.0, 1.0, 1.0], 0.0), "outcome": "failed", "status": "failed", "result": None},
    ]
    (row,) = aggregate(records)
    assert (row["runs"], row["finished"], row["failed"]) == (3, 2, 1)
    assert row["statuses"] == "iteration_limit×2 failed×1"
    assert math.isclose(row["efce_gap_mean"], 0.012) and math.isclose(row["efce_gap_std"], 0.008)
    assert math.isclose(row["efcce_gap_mean"], 0.02) and math.isclose(row["efcce_gap_std"], 0.01)
    assert row["final_gap_mean"] == row["efce_gap_mean"] and row["nfcce_gap_mean"] is None
    assert row["time_to_0.1_reached"] == 2 and math.isclose(row["time_to_0.1_mean"], 1.25)  # 1.0, 1.5
    assert math.isclose(row["time_to_0.1_std"], 0.25)
    assert row["time_to_0.01_reached"] == 1 and row["time_to_0.01_mean"] == 1.5
    assert row["time_to_0.001_reached"] == 0 and row["time_to_0.001_mean"] is None
    assert row["peak_memory_mib_max"] == 101.0 and row["iterations"] == 3


# ----------------------------------------------------------------------------- local cluster
def test_local_cluster_gives_the_runs_of_one_by_one_solves(tmp_path):
    content = small_sweep(300)
    table = sweep(content, str(tmp_path), workers=2, progress=False)
    assert (table.runs, table.executed, table.skipped, table.failed) == (8, 8, 0, 0)
    records = load_records(str(tmp_path), [r.key for r in load_sweep(content).runs])
    assert len(records) == 8 and all(finished(r) and r["attempts"] == 1 for r in records)
    assert len({r["worker"] for r in records}) == 2
    for r in records:  # the same run in this process, without Dask, subprocess or CLI
        direct = solve(r["game"], r["method"], seed=r["seed"], iterations=300)
        assert r["result"]["efce_gap"] == direct.info["efce_gap"]
        assert r["result"]["efcce_gap"] == direct.info["efcce_gap"]
        assert [(t["iteration"], t["gap"], t["efcce"]) for t in r["trace"]] == [
            (t.iteration, t.gap, t.extra["efcce"]) for t in direct.trace
        ]
    with open(tmp_path / "table.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 and all(row["runs"] == "2" for row in rows)
    for row in rows:
        gaps = [
            r["result"]["efce_gap"]
            for r in records
            if r["game"] == row["game"] and r["method"] == row["method"]
        ]
        assert float(row["efce_gap_mean"]) == pytest.approx(sum(gaps) / 2, rel=1e-12)
        assert float(row["efce_gap_std"]) == pytest.approx(abs(gaps[0] - gaps[1]) / 2, rel=1e-12)
    pandas = pytest.importorskip("pandas")
    frame = pandas.read_csv(tmp_path / "table.csv")
    assert frame["efce_gap_mean"].dtype == float and len(frame) == 4
    assert {"overview.png", "kuhn_players_3_ranks_3.png"} <= set(os.listdir(tmp_path / "plots"))
    with pytest.raises(SweepError, match="already holds 8 finished run"):
        sweep(content, str(tmp_path), workers=2)
    again = sweep(content, str(tmp_path), resume=True)  # nothing left: no cluster is started
    assert (again.executed, again.skipped) == (0, 8) and list(again) == list(table)


# ----------------------------------------------------------------------------- a real cluster
def _spawn(args, log):
    env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "dask", *args],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """``dask scheduler`` and two ``dask worker`` processes (no nanny: a killed worker stays
    dead) on 127.0.0.1, random free ports."""
    import distributed

    folder = tmp_path_factory.mktemp("cluster")
    scheduler_file = folder / "scheduler.json"
    log = open(folder / "cluster.log", "w")  # noqa: SIM115  (the cluster writes it until teardown closes it)
    processes = [
        _spawn(
            [
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(scheduler_file),
            ],
            log,
        )
    ]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() or not scheduler_file.read_text().strip():
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        for _ in range(2):
            processes.append(
                _spawn(
                    [
                        "worker",
                        address,
                        "--host",
                        "127.0.0.1",
                        "--nthreads",
                        "1",
                        "--no-nanny",
                        "--no-dashboard",
                        "--memory-limit",
                        "0",
                    ],
                    log,
                )
            )
        with distributed.Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
            workers = {pid: addr for addr, pid in client.run(os.getpid).items()}
        yield {"address": address, "workers": workers, "log": folder / "cluster.log"}
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=30)
        log.close()


def _sweep_process(sweep_file, out, address):
    return subprocess.Popen(
        efce_command("sweep", str(sweep_file), "--out", str(out), "--scheduler", address, "--json"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _write(path, content):
    lines = [
        f"games = {json.dumps(content['games'])}",
        f"methods = {json.dumps(content['methods'])}",
        f"seeds = {json.dumps(content['seeds'])}",
        "[limits]",
        *(f"{k} = {v}" for k, v in content["limits"].items()),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_resume_after_an_interrupted_sweep_runs_only_the_missing_runs(cluster, tmp_path):
    sweep_file = _write(tmp_path / "resume.sweep.toml", small_sweep(1500, games=(K33,), seeds=(0, 1, 2, 3)))
    out = tmp_path / "out"
    first = _sweep_process(sweep_file, out, cluster["address"])
    deadline = time.monotonic() + 90
    while len(list((out / "runs").glob("*.json"))) < 2:
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.1)
    first.send_signal(signal.SIGINT)
    stdout, stderr = first.communicate(timeout=60)
    report = last_json_object(stdout)
    assert first.returncode == 0 and report["interrupted"] is True, stderr
    kept = {p.name: p.read_bytes() for p in (out / "runs").glob("*.json")}
    assert 2 <= len(kept) < 8 and report["executed"] == len(kept)

    table = sweep(str(sweep_file), str(out), scheduler=cluster["address"], resume=True, progress=False)
    assert (table.executed, table.skipped, table.failed) == (8 - len(kept), len(kept), 0)
    assert not table.interrupted
    for name, content in kept.items():
        assert (out / "runs" / name).read_bytes() == content  # finished runs are not redone
    records = load_records(str(out))
    assert len(records) == 8 and all(finished(r) for r in records)
    assert sum(row["finished"] for row in table) == 8


def test_a_killed_worker_loses_nothing(cluster, tmp_path):
    sweep_file = _write(tmp_path / "kill.sweep.toml", small_sweep(4000, games=(K33,), seeds=(0, 1, 2)))
    out = tmp_path / "out"
    process = _sweep_process(sweep_file, out, cluster["address"])
    victim_pid = next(iter(cluster["workers"]))
    victim = psutil.Process(victim_pid)
    deadline = time.monotonic() + 90
    while not (children := victim.children()) or time.time() - children[0].create_time() < 1.0:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.1)
    orphan = children[0]
    victim.kill()  # the worker dies mid-run: its run is retried on the other worker
    stdout, stderr = process.communicate(timeout=180)
    report = last_json_object(stdout)
    assert process.returncode == 0 and report["failed"] == 0 and report["executed"] == 6, stderr
    records = load_records(str(out))
    assert len(records) == 6 and all(finished(r) for r in records)
    retried = [r for r in records if r["attempts"] == 2]
    assert len(retried) == 1 and retried[0]["worker"] != cluster["workers"][victim_pid]
    orphan_deadline = time.monotonic() + 10
    while orphan.is_running() and orphan.status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < orphan_deadline, "the killed worker's run kept running"
        time.sleep(0.1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux-only")
def test_a_run_dies_with_the_process_that_started_it(tmp_path):
    """The harness's child must not outlive a killed worker (it would compute for nobody)."""
    pid_file = tmp_path / "child.pid"
    script = tmp_path / "parent.py"
    script.write_text(
        "import sys\n"
        "from experiments.harness import run_child\n"
        "run_child([sys.executable, '-c', 'import os, sys, time; '\n"
        "           'open(sys.argv[1], \"w\").write(str(os.getpid())); time.sleep(60)', sys.argv[1]])\n"
    )
    parent = subprocess.Popen(
        [sys.executable, str(script), str(pid_file)], env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    child = psutil.Process(int(pid_file.read_text()))
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 5
    while child.is_running() and child.status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the child outlived its parent"
        time.sleep(0.05)


def test_a_run_lost_twice_is_recorded_as_failed_with_the_reason():
    from distributed import KilledWorker

    from efce.experiments.sweep.execution import _record

    class Lost:  # a future whose task killed its worker on both attempts
        status = "error"

        def exception(self):
            from types import SimpleNamespace

            return KilledWorker("efce-run", SimpleNamespace(address="tcp://127.0.0.1:4242"), 1)

    run = load_sweep(TINY).runs[0]
    record = _record(Lost(), run, {run.key: 2})
    assert record["outcome"] == "failed" and record["status"] == "failed" and not finished(record)
    assert record["attempts"] == 2 and record["key"] == run.key
    assert record["error"] == "its worker died while running it, 2 time(s) (last on tcp://127.0.0.1:4242)"


def test_sweep_plots_draw_each_series_in_its_comparison_style(tmp_path, monkeypatch):
    # A series (method, options) looks as the same run does in every `efce compare` figure.
    from matplotlib.colors import to_hex
    from matplotlib.figure import Figure

    from efce.experiments.styles import method_style
    from efce.experiments.sweep.plots import plot_sweep

    def record(method, options, seed):
        trace = [
            {"iteration": i, "seconds": 0.1 * i, "gap": 1.0 / i, "infeasibility": 0.0} for i in (1, 2, 4)
        ]
        return {
            "label": "G",
            "game": "g",
            "method": method,
            "seed": seed,
            "options": {"iterations": 4, **options},
            "outcome": "finished",
            "trace": trace,
        }

    series = [("rm", {}), ("rm", {"local": "rm+"}), ("subgradient", {"step_size": 1e-6})]
    records = [record(m, o, seed) for m, o in series for seed in (0, 1)]
    saved = []
    original = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: saved.append(fig) or original(fig, *a, **k))
    plot_sweep(records, str(tmp_path))
    per_game = saved[0]
    expected = {
        m + (f" ({','.join(f'{k}={v}' for k, v in o.items())})" if o else "") + " (2 runs)": method_style(
            m, o
        ).color
        for m, o in series
    }
    for ax in per_game.axes:
        assert {line.get_label(): to_hex(line.get_color()) for line in ax.get_lines()} == expected
    assert len(set(expected.values())) == 3
