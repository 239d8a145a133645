"""A sweep runs each run once, however its games are written: specs are compared, and runs
keyed, by the game's canonical spec (:func:`efce.games.spec.canonical_spec`), so the same game
listed twice is refused and ``--resume`` finds a run finished under another spelling."""

import json

import pytest

from efce.errors import SweepError
from efce.experiments.cli import main
from efce.experiments.sweep import load_sweep


@pytest.mark.parametrize(
    "games",
    [
        ["farina-fig2", "FARINA-FIG2"],
        ["kuhn", "kuhn:players=2,ranks=3"],
        ["kuhn:players=2,ranks=3", "kuhn:ranks=3,players=2"],
        ["sheriff:item_value=1", "sheriff:item_value=1.0"],
    ],
    ids=["case", "defaults", "order", "number-spelling"],
)
def test_one_game_listed_twice_under_two_spellings_is_refused(games):
    with pytest.raises(SweepError, match="the same game"):
        load_sweep({"games": games, "methods": ["cfr"]})


def test_runs_of_one_game_have_one_key_however_the_game_is_written():
    keys = {
        spelled: [
            r.key for r in load_sweep({"games": [spelled], "methods": ["cfr", "icfr"], "seeds": 2}).runs
        ]
        for spelled in ("kuhn", "KUHN:ranks=3", "kuhn:ranks=3,players=2")
    }
    assert len({tuple(k) for k in keys.values()}) == 1 and len(keys["kuhn"]) == 3


def test_resume_skips_a_run_finished_under_another_spelling(tmp_path, capsys):
    out = tmp_path / "out"
    first, again = tmp_path / "first.toml", tmp_path / "again.toml"
    first.write_text('games = ["farina-fig2"]\nmethods = ["rm"]\n[limits]\niterations = 5\n')
    again.write_text('games = ["FARINA-FIG2"]\nmethods = ["rm"]\n[limits]\niterations = 5\n')
    assert main(["sweep", str(first), "--out", str(out), "--workers", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["executed"] == 1
    assert main(["sweep", str(again), "--out", str(out), "--workers", "1", "--resume", "--json"]) == 0
    resumed = json.loads(capsys.readouterr().out)
    assert resumed["executed"] == 0 and resumed["skipped"] == 1
