"""Every output path of every command is checked before any work, by one validator, and a
refused command leaves nothing behind: an empty name is an error, two outputs naming one file
are refused, a named pipe or a folder where a file goes is refused (opening a pipe would wait
forever), a sweep whose run records folder cannot be written runs nothing, and a sweep whose
scheduler is unreachable, no Dask scheduler, or of an unknown scheme writes nothing."""

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from tests.paths import ROOT

EFCE = [sys.executable, "-P", "-m", "efce"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
#: A solve that would run for minutes: a refusal must come before it starts.
LONG_SOLVE = ["solve", "kuhn:players=3,ranks=3", "--method", "icfr", "--iterations", "100000000"]


def _efce(argv, cwd, timeout=60):
    """``efce ARGV --json`` in a child (a refusal that hangs fails the test instead of it)."""
    proc = subprocess.run(
        [*EFCE, *argv, "--json"], capture_output=True, text=True, env=ENV, cwd=cwd, timeout=timeout
    )
    assert proc.stdout.count("\n") == 1 and "Traceback" not in proc.stderr, (proc.stdout, proc.stderr)
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def _refused(tmp_path, argv, *fragments):
    started = time.monotonic()
    code, out = _efce(argv, tmp_path)
    assert code == 2, out
    assert all(f in out["error"] for f in fragments), out["error"]
    assert "internal error" not in out["error"]
    assert time.monotonic() - started < 30  # refused up front, not after the run


def test_an_empty_output_name_is_an_error_not_no_output(tmp_path):
    _refused(tmp_path, [*LONG_SOLVE, "--trace", ""], "--trace needs a file name")
    _refused(
        tmp_path,
        [
            "solve",
            "kuhn:players=3,ranks=3",
            "--method",
            "icfr",
            "--iterations",
            "100000000",
            "--device-out",
            " ",
        ],
        "--device-out needs a file name",
    )
    _refused(tmp_path, ["compare", "kuhn", "--methods", "cfr", "--out", ""], "output folder", "empty")
    assert os.listdir(tmp_path) == []


def test_two_outputs_naming_one_file_are_refused(tmp_path):
    (tmp_path / "sub").mkdir()
    same = ["--trace", "out.json", "--device-out", "sub/../out.json"]
    _refused(tmp_path, [*LONG_SOLVE, *same], "the trace file and the device file are the same file")
    assert sorted(os.listdir(tmp_path)) == ["sub"]


def test_a_named_pipe_is_refused_instead_of_waited_on(tmp_path, fifo):
    _refused(tmp_path, [*LONG_SOLVE, "--trace", str(fifo)], "named pipe (FIFO), not a regular file")
    _refused(tmp_path, [*LONG_SOLVE, "--device-out", str(fifo)], "named pipe")
    _refused(tmp_path, ["compare", "kuhn", "--methods", "cfr", "--out", str(fifo)], "not a folder")


def test_a_file_the_command_writes_in_its_folder_is_checked_too(tmp_path, fifo):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "summary.json")
    _refused(tmp_path, ["compare", "kuhn", "--methods", "cfr", "--out", str(out)], "summary.json")
    (out / "summary.json").unlink()
    (out / "traces.csv").mkdir()
    _refused(tmp_path, ["compare", "kuhn", "--methods", "cfr", "--out", str(out)], "traces.csv", "a folder")
    assert sorted(os.listdir(out)) == ["traces.csv"]


def test_a_sweep_whose_records_folder_cannot_be_written_runs_nothing(tmp_path):
    grid = tmp_path / "grid.sweep.toml"
    grid.write_text('games = ["kuhn"]\nmethods = ["cfr"]\n[limits]\niterations = 10\n')
    for blocker in ("file", "fifo"):
        out = tmp_path / f"out_{blocker}"
        out.mkdir()
        runs = out / "runs"
        if blocker == "file":
            runs.write_text("not a folder")
        else:
            os.mkfifo(runs)
        _refused(
            tmp_path, ["sweep", str(grid), "--out", str(out)], "runs in the output folder", "not a folder"
        )
        assert os.listdir(out) == ["runs"]  # no sweep.json, no record, no table: nothing ran


def _listening_socket():
    """A TCP server that accepts connections and says nothing Dask understands."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def accept():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    return server


def test_a_sweep_refused_for_its_scheduler_writes_nothing(tmp_path):
    grid = tmp_path / "grid.sweep.toml"
    grid.write_text('games = ["kuhn"]\nmethods = ["cfr"]\n[limits]\niterations = 10\n')
    server = _listening_socket()
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    unused_port = free.getsockname()[1]
    free.close()
    try:
        for scheduler in (
            f"tcp://127.0.0.1:{server.getsockname()[1]}",  # something listens, not Dask
            f"tcp://127.0.0.1:{unused_port}",  # nobody listens
            "foo://127.0.0.1:8786",  # no such protocol
        ):
            out = tmp_path / "out"
            code, printed = _efce(["sweep", str(grid), "--out", str(out), "--scheduler", scheduler], tmp_path)
            assert code == 2 and "internal error" not in printed["error"], printed
            assert not out.exists(), (scheduler, os.listdir(out))
    finally:
        server.close()


def test_one_validator_serves_every_output(tmp_path, fifo):
    from efce import compare, sweep
    from efce.errors import OptionError
    from efce.experiments.paths import check_outputs

    with pytest.raises(OptionError, match="named pipe"):
        check_outputs(files={"trace file": str(fifo)})
    with pytest.raises(OptionError, match="output folder"):
        compare("kuhn", ["cfr"], out_dir=str(fifo))
    with pytest.raises(OptionError, match="not a folder"):
        sweep({"games": ["kuhn"], "methods": ["cfr"]}, str(tmp_path / "pipe" / "x"))
    check_outputs(files={"trace file": str(tmp_path / "new.csv")}, folders={"out": str(tmp_path / "a" / "b")})
    assert sorted(os.listdir(tmp_path)) == ["pipe"]  # checking created nothing


def test_a_folder_only_creating_can_refuse_is_one_line_naming_it(tmp_path, monkeypatch):
    """``make_output_folder`` (compare's ``--out``, a sweep's run records folder) turns what only
    ``mkdir`` tells, after the looking-only check passed, into one line naming the folder."""
    import errno

    from efce.errors import OptionError
    from efce.experiments.paths import make_output_folder

    target = tmp_path / "made" / "inside"
    make_output_folder(str(target))
    assert target.is_dir()
    make_output_folder(str(target))  # an existing folder is fine

    def refuse(path, *args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)

    monkeypatch.setattr(os, "makedirs", refuse)
    with pytest.raises(OptionError) as refused:
        make_output_folder(str(tmp_path / "runs"), "runs folder")
    assert str(refused.value) == f"cannot create the runs folder '{tmp_path / 'runs'}': Permission denied"
