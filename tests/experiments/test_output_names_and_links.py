"""Output files whose names are as long as the file system allows, and output paths that are
symbolic links: a result file is written atomically through a temporary file beside it
(:func:`efce.games.resources.atomic.atomic_open`), whose name fits whenever the file's own name
does, and a link is written through, as ``cp`` and a shell's ``>`` do."""

import csv
import json
import os

import pytest

from efce.experiments.cli import main
from efce.games.resources.atomic import atomic_open


def _longest_name(folder, suffix: str) -> str:
    """A name of 250 bytes (legal: the usual limit is 255) ending in ``suffix``."""
    limit = os.pathconf(folder, "PC_NAME_MAX")
    assert limit >= 250
    return "t" * (250 - len(suffix)) + suffix


def test_a_trace_named_with_250_bytes_is_written(tmp_path, capsys):
    trace = tmp_path / _longest_name(tmp_path, ".csv")
    assert main(["solve", "farina-fig2", "--method", "rm", "--trace", str(trace), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "converged"
    assert os.listdir(tmp_path) == [trace.name]  # and no temporary file left beside it
    with trace.open(newline="", encoding="utf-8") as fh:
        assert next(csv.reader(fh))[0] == "method"


def test_a_device_file_named_with_250_bytes_is_written(tmp_path, capsys):
    device = tmp_path / _longest_name(tmp_path, ".json")
    argv = ["solve", "kuhn", "--method", "icfr", "--iterations", "10", "--device-out", str(device), "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["device_out"] == str(device)
    assert json.loads(device.read_text(encoding="utf-8"))["device"]


def test_a_name_over_the_limit_is_refused_before_the_run(tmp_path, capsys):
    trace = tmp_path / ("t" * 300 + ".csv")
    argv = ["solve", "farina-fig2", "--method", "rm", "--trace", str(trace), "--json"]
    assert main(argv) == 2
    assert "cannot write the trace file" in json.loads(capsys.readouterr().out)["error"]


def test_a_long_name_of_multibyte_characters_fits_its_temporary_name(tmp_path):
    name = "é" * 125  # 250 bytes in UTF-8
    with atomic_open(str(tmp_path / name)) as fh:
        fh.write("x")
    assert os.listdir(tmp_path) == [name]


def test_a_trace_that_is_a_symbolic_link_is_written_through_it(tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "kept.csv"
    target.write_text("old content\n", encoding="utf-8")
    os.chmod(target, 0o640)
    link = tmp_path / "trace.csv"
    link.symlink_to(target)
    assert main(["solve", "farina-fig2", "--method", "rm", "--trace", str(link), "--json"]) == 0
    capsys.readouterr()
    assert link.is_symlink() and os.readlink(link) == str(target)  # still the same link
    assert target.read_text(encoding="utf-8").startswith("method,iteration")  # the new content
    assert os.stat(target).st_mode & 0o777 == 0o640  # the file keeps its permissions
    assert sorted(os.listdir(elsewhere)) == ["kept.csv"] and sorted(os.listdir(tmp_path)) == [
        "elsewhere",
        "trace.csv",
    ]


def test_a_link_to_a_missing_file_in_a_missing_folder_is_refused_before_the_run(tmp_path, capsys):
    link = tmp_path / "trace.csv"
    link.symlink_to(tmp_path / "gone" / "t.csv")
    assert main(["solve", "farina-fig2", "--method", "rm", "--trace", str(link), "--json"]) == 2
    assert "cannot write the trace file" in json.loads(capsys.readouterr().out)["error"]


@pytest.mark.parametrize("mode", ["w", "wb"])
def test_text_is_written_as_utf8_whatever_the_locale(tmp_path, mode):
    path = tmp_path / "f.txt"
    with atomic_open(str(path), mode) as fh:
        fh.write("≥ ◁" if mode == "w" else "≥ ◁".encode())
    assert path.read_bytes() == "≥ ◁".encode()
