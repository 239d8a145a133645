"""Class 10 of the round-3 probe: degenerate games and names that shadow built-in games."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from efce.experiments.cli import main
from efce.games import GameError
from efce.games.formats import efg
from efce.games.spec import check_spec, make_game
from tests.paths import TWINS as TWINS_FILE

LEAF = 'EFG 2 R "leaf" { "P1" "P2" }\n""\nt "" 1 "" { 1 0 }\n'
TWINS = str(TWINS_FILE)


def test_a_game_without_decisions_is_refused_by_rm_naming_the_players(capsys, tmp_path):
    path = tmp_path / "leaf.efg"
    path.write_text(LEAF)
    assert main(["solve", str(path), "--method", "rm", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert "needs a game with at least one decision" in error
    assert "no infoset for P1, P2" in error and "chain" not in error and "step" not in error


def test_methods_that_need_no_decision_still_answer():
    from efce.experiments.solve import solve

    game = efg.loads(LEAF)
    assert game.players_without_decisions() == [0, 1]
    result = solve(game, "cfr", iterations=3)
    assert result.info["exploitability"] == 0


def test_a_folder_named_like_a_built_in_game_does_not_shadow_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kuhn").mkdir()
    (tmp_path / "sheriff").write_text("not a game")
    assert make_game("kuhn").name.startswith("kuhn:")
    check_spec("sheriff:max_bribe=1,max_items=1,rounds=1")
    assert make_game("sheriff:max_bribe=1,max_items=1,rounds=1").num_players == 2


def test_a_path_must_end_in_efg_or_contain_a_slash(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mygame").write_text(Path(TWINS).read_text())
    with pytest.raises(
        GameError,
        match=r"unknown game 'mygame'.*'mygame' exists, but a path must "
        r"end in .efg or contain a / \(e.g. ./mygame\)",
    ):
        make_game("mygame")
    assert make_game("./mygame").name == "twins"
    assert main(["info", "mygame", "--json"]) == 2
    assert "./mygame" in json.loads(capsys.readouterr().out)["error"]


def test_a_spec_that_reads_both_as_path_and_game_is_refused():
    with pytest.raises(GameError, match=r"'kuhn:players=3/' is ambiguous: it reads as a path"):
        make_game("kuhn:players=3/")
