"""``efce info GAME`` reports the memory of ``rm``'s run on the CPU and on a GPU: the estimates
that refuse a run before anything is built (numba-cuda not needed)."""

import json

from efce.experiments.cli import main
from efce.games.spec import make_game
from efce.solvers.backends.cuda.layouts import estimate_cuda_bytes
from efce.solvers.methods.efce import estimate_efce_bytes

SHERIFF = "sheriff:max_bribe=2,max_items=2,rounds=2"


def info(capsys, spec: str) -> dict:
    assert main(["info", spec, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_info_gives_rms_cpu_and_gpu_estimates_of_the_game(capsys):
    game = make_game(SHERIFF)
    out = info(capsys, SHERIFF)
    assert out["estimated_rm_bytes"] == estimate_efce_bytes(game)
    assert out["estimated_gpu_bytes"] == estimate_cuda_bytes(game)
    # A bigger game needs more GPU memory (the estimate counts its pairs, entries and nonzeros).
    bigger = info(capsys, "sheriff:max_bribe=3,max_items=3,rounds=2")
    assert bigger["estimated_gpu_bytes"] > out["estimated_gpu_bytes"] > 0
    assert main(["info", SHERIFF]) == 0
    assert "of GPU memory with --backend cuda" in capsys.readouterr().out


def test_games_rm_does_not_solve_have_no_estimates(capsys):
    out = info(capsys, "kuhn:players=2")  # chance moves
    assert out["estimated_rm_bytes"] is None and out["estimated_gpu_bytes"] is None
