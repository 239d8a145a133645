"""A game given as a path object (:class:`pathlib.Path`) is a file, always: ``Path("./mygame")``
drops the ``./`` that told a spec from a file, so without this rule a ``.efg`` file without its
suffix was refused with the hint "write ./mygame", which a ``Path`` cannot follow."""

import json
import shutil
from pathlib import Path

import pytest

import efce
from tests.paths import TWINS


@pytest.fixture
def in_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_solve_reads_a_path_without_suffix_as_a_file(in_folder):
    shutil.copy(TWINS, in_folder / "mygame")
    result = efce.solve(Path("./mygame"), "rm")
    assert result.status == "converged"


def test_a_path_named_like_a_built_in_game_is_the_file(in_folder):
    shutil.copy(TWINS, in_folder / "kuhn")  # not Kuhn poker: the twins game, two players, no chance
    result = efce.solve(Path("kuhn"), "rm")
    assert result.status == "converged"  # rm refuses Kuhn poker (chance moves): this is the file


def test_compare_passes_a_path_on_as_a_file(in_folder):
    shutil.copy(TWINS, in_folder / "mygame")
    summary = efce.compare(Path("mygame"), ["rm"], out_dir=str(in_folder / "out"))
    assert summary["methods"]["rm"]["status"] == "converged", json.dumps(summary)[:500]


def test_a_string_keeps_the_spec_rule():
    with pytest.raises(efce.errors.GameError, match="unknown game 'mygame'"):
        efce.solve("mygame", "rm")
