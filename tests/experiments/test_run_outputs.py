"""Finished work is not lost at the last write, and compare/sweep do not report success on bad
input: output paths checked up front, atomic writes, the result printed when its file cannot be
written, bad game files refused before anything is written, failed runs not counted as
finished, damaged records set aside, an unreachable scheduler refused in seconds."""

import json
import os
import shutil
import time

import pytest

from efce.experiments import cmd_solve as cmd_solve
from efce.experiments.cli import main
from efce.experiments.sweep import load_records, write_record
from efce.games.resources.atomic import atomic_open

K33 = "kuhn:players=3,ranks=3"


def test_atomic_open_leaves_no_partial_file(tmp_path):
    path = tmp_path / "out.csv"
    path.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_open(str(path)) as fh:
        fh.write("half")
        raise RuntimeError("disk full")
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["out.csv"]
    with atomic_open(str(path)) as fh:
        fh.write("new\n")
    assert path.read_text() == "new\n" and os.listdir(tmp_path) == ["out.csv"]


def test_missing_trace_folder_is_refused_before_the_run(tmp_path, capsys):
    started = time.perf_counter()
    code = main(
        [
            "solve",
            K33,
            "--method",
            "icfr",
            "--iterations",
            "100000000",
            "--trace",
            str(tmp_path / "gone" / "t.csv"),
            "--json",
        ]
    )
    assert code == 2 and time.perf_counter() - started < 10
    assert "cannot write the trace file" in json.loads(capsys.readouterr().out)["error"]


def test_folder_removed_during_the_run_keeps_the_result(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "out"
    folder.mkdir()
    real_solve = cmd_solve.solve

    def solve_then_remove(*args, **kwargs):
        result = real_solve(*args, **kwargs)
        shutil.rmtree(folder)  # the folder disappears while the run computes
        return result

    monkeypatch.setattr(cmd_solve, "solve", solve_then_remove)
    trace = folder / "t.csv"
    code = main(["solve", K33, "--method", "icfr", "--iterations", "50", "--trace", str(trace), "--json"])
    printed = json.loads(capsys.readouterr().out)
    assert code == 2
    assert printed["status"] == "iteration_limit" and printed["iterations"] == 50  # the result
    assert str(trace) in printed["error"]


def test_compare_folder_removed_mid_run_still_prints_the_summary(tmp_path, capsys, monkeypatch):
    from efce.experiments import compare as compare

    out = tmp_path / "cmp"
    real = compare.run_method

    def run_then_remove(*args, **kwargs):
        result = real(*args, **kwargs)
        shutil.rmtree(out, ignore_errors=True)
        return result

    monkeypatch.setattr(compare, "run_method", run_then_remove)
    # a generous limit: the run ends at its iteration limit (~3 s) even on a loaded machine
    code = main(["compare", K33, "--methods", "icfr", "--time-limit", "60", "--out", str(out), "--json"])
    printed = json.loads(capsys.readouterr().out)
    assert code == 2 and printed["methods"]["icfr"]["status"] == "iteration_limit"
    assert "summary.json" in printed["error"]


BAD_EFG = 'EFG 2 R "broken" { "a" "b" }\nthis is not a game\n'


def test_compare_refuses_an_unparseable_game_file_before_writing(tmp_path, capsys):
    game = tmp_path / "bad.efg"
    game.write_text(BAD_EFG)
    out = tmp_path / "cmp"
    assert main(["compare", str(game), "--methods", "rm,lp-highs", "--out", str(out), "--json"]) == 2
    assert "bad.efg" in json.loads(capsys.readouterr().out)["error"]
    assert not out.exists()


def test_sweep_refuses_an_unparseable_game_file_before_writing(tmp_path, capsys):
    (tmp_path / "bad.efg").write_text(BAD_EFG)
    (tmp_path / "s.toml").write_text(
        'name = "s"\ngames = ["bad.efg"]\nmethods = ["icfr"]\nseeds = [0]\n[limits]\niterations = 10\n'
    )
    out = tmp_path / "sw"
    assert main(["sweep", str(tmp_path / "s.toml"), "--out", str(out), "--json"]) == 2
    assert "bad.efg" in json.loads(capsys.readouterr().out)["error"]
    assert not out.exists()


def test_unreachable_scheduler_is_refused_in_seconds(tmp_path, capsys):
    import socket

    with socket.socket() as s:  # a port that was free a moment ago: nobody listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "sw"
    started = time.perf_counter()
    code = main(
        [
            "sweep",
            "benchmarks/sweeps/tiny.sweep.toml",
            "--out",
            str(out),
            "--scheduler",
            f"tcp://127.0.0.1:{port}",
            "--json",
        ]
    )
    assert code == 2 and time.perf_counter() - started < 10
    error = json.loads(capsys.readouterr().out)["error"]
    assert "cannot reach the Dask scheduler" in error and "memory" not in error
    assert not out.exists()


def test_damaged_record_is_named_and_set_aside(tmp_path):
    write_record(str(tmp_path), {"key": "good", "outcome": "finished", "status": "converged"})
    damaged = tmp_path / "runs" / "bad.json"
    damaged.write_text('{"key": "bad", "outc')
    notes: list[str] = []
    records = load_records(str(tmp_path), set_aside=notes)
    assert [r["key"] for r in records] == ["good"]
    assert len(notes) == 1 and "bad.json" in notes[0]
    assert not damaged.exists() and (tmp_path / "runs" / "bad.json.damaged").exists()


def test_failed_run_is_not_recorded_as_finished():
    from efce.experiments.sweep.execution import _record

    class Done:
        status = "finished"

        def result(self):
            return {"key": "k", "status": "error", "error": "boom"}

    class FakeRun:
        key = "k"

        def params(self):
            return {"key": "k"}

    record = _record(Done(), FakeRun(), {})
    assert record["outcome"] == "failed"
