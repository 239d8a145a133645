"""Games at the players' edge: a one-player game is refused in one line by every method (its
EFCE is the player's best plan; nothing to correlate), never an internal error; a two-player game
whose second player never moves is solved by ``rm``, and ``efce info`` estimates that run."""

import json

import pytest

from efce.errors import GameError
from efce.experiments.cli import main
from efce.experiments.solve import METHODS, solve

#: One player, with a chance move.
ONE_PLAYER = """EFG 2 R "solo" { "P1" }
""
p "" 1 1 "root" { "a" "b" } 0
t "" 1 "x" { 1.0 }
c "" 1 "luck" { "h" 0.5 "t" 0.5 } 0
t "" 2 "y" { 2.0 }
t "" 3 "z" { 0.0 }
"""
#: Two players; the second never moves.
IDLE_SECOND = """EFG 2 R "idle second" { "P1" "P2" }
""
p "" 1 1 "root" { "a" "b" } 0
t "" 1 "x" { 1.0 -1.0 }
p "" 1 2 "again" { "c" "d" } 0
t "" 2 "y" { 2.0 0.0 }
t "" 3 "z" { 0.0 3.0 }
"""


@pytest.fixture
def solo(tmp_path):
    path = tmp_path / "solo.efg"
    path.write_text(ONE_PLAYER, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_refuses_a_one_player_game_in_one_line(solo, method):
    with pytest.raises(GameError, match="1 player") as refused:
        solve(solo, method)
    assert "best plan" in str(refused.value)


@pytest.mark.parametrize("method", ["icfr", "trigger", "cfr-s", "coarse-trigger"])
def test_the_command_line_refuses_a_one_player_game_without_an_internal_error(solo, method, capsys):
    assert main(["solve", solo, "--method", method, "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert "internal error" not in error and "solves games of two or more players" in error


def test_info_estimates_rm_on_a_game_whose_second_player_never_moves(tmp_path, capsys):
    from efce.games.spec import make_game
    from efce.solvers.backends import estimate_gpu_bytes
    from efce.solvers.methods.efce import estimate_efce_bytes

    path = tmp_path / "idle.efg"
    path.write_text(IDLE_SECOND, encoding="utf-8")
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    game = make_game(str(path))
    assert info["estimated_rm_bytes"] == estimate_efce_bytes(game)
    assert info["estimated_gpu_bytes"] == estimate_gpu_bytes(game)
    solved = solve(str(path), "rm")  # rm does solve it: the estimate is of a real run
    assert solved.status == "converged"


def test_info_gives_no_rm_estimate_for_a_game_rm_refuses(capsys):
    assert main(["info", "kuhn", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["estimated_rm_bytes"] is None and info["estimated_gpu_bytes"] is None
