"""A subgradient run whose steps overshoot is reported as diverged (status ``error``, a message
naming the cause), not as a result: on payoffs of magnitude 1e100 a step of 1e-3 sent the
iterate's entries to 1e96 while the reported max deviation was 0.  (The default step is the
method's own choice, for payoffs of magnitude one, and scales with the payoffs:
:mod:`efce.solvers.scaling`; a step given is in the game's units.)"""

import json
import os
import subprocess
import sys

import numpy as np

import efce
from efce import games
from efce.games.formats.efg import save
from efce.games.game import Game
from tests.paths import ROOT


def _times(game: Game, factor: float) -> Game:
    return Game(
        num_players=game.num_players,
        parent=game.parent,
        action=game.action,
        player=game.player,
        infoset=game.infoset,
        chance_prob=game.chance_prob,
        payoffs=np.asarray(game.payoffs) * factor,
        terminal_index=game.terminal_index,
        labels=game.labels,
        name=game.name,
    )


def test_steps_too_large_for_the_payoffs_end_the_run_as_diverged():
    result = efce.solve(_times(games.farina_fig2(), 1e100), "subgradient", step_size=1e-3)
    assert result.status == "error" and result.info["diverged"]
    assert "diverged" in result.info["message"] and "--step-size" in result.info["message"]
    from efce.baselines.subgradient import DIVERGED_ENTRY

    assert float(np.max(result.point)) > DIVERGED_ENTRY  # the iterate that ended the run


def test_a_converging_run_is_not_called_diverged():
    result = efce.solve(games.farina_fig2(), "subgradient", iterations=500, start="random")
    assert result.status in ("converged", "iteration_limit") and "diverged" not in result.info
    assert float(np.max(result.point)) <= 1.0 + 1e-6


def test_the_default_step_scales_with_the_payoffs_and_converges():
    result = efce.solve(_times(games.farina_fig2(), 1e100), "subgradient")
    assert result.status == "converged" and result.info["efce_gap"] <= 1e-6 * 1e100


def test_the_command_line_reports_a_divergence_as_one_error(tmp_path):
    path = tmp_path / "huge.efg"
    save(_times(games.farina_fig2(), 1e100 / 3), path)  # payoffs up to 1e100, the files' limit
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [
            sys.executable,
            "-P",
            "-m",
            "efce",
            "solve",
            str(path),
            "--method",
            "subgradient",
            "--step-size",
            "1e-3",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 2
    assert "subgradient diverged" in json.loads(done.stdout)["error"]
