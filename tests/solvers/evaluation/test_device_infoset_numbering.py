"""One numbering for infosets (positions ``P:N`` from 1, the labels of unnamed infosets, the
``efce info --infosets`` listing), and every ambiguous name in a device file refused."""

from __future__ import annotations

import json

import pytest

from efce.experiments.cli import main
from efce.games import GameError
from efce.games.formats import efg
from efce.solvers.evaluation.device import device_from_dict, device_from_json, device_to_dict, infoset_names

# Player 1's unnamed infosets are numbered out of order in the file: the root is infoset 2,
# the one below it infoset 1.  Under the old rule the label "1:1" (the file's number) named the
# second infoset while the position 1:1 (from 0: "1:0") named the first.
OUT_OF_ORDER = """EFG 2 R "ooo" { "P1" "P2" }
""
p "" 1 2 "" { "a" "b" } 0
p "" 2 1 "" { "x" "y" } 0
p "" 1 1 "" { "c" "d" } 0
t "" 1 "" { 1 0 }
t "" 2 "" { 0 1 }
t "" 3 "" { 2 0 }
t "" 4 "" { 3 0 }
"""

# Player 1's first infoset is *labelled* "1:2", which is the position of her second infoset.
COLLIDING = OUT_OF_ORDER.replace('p "" 1 2 "" {', 'p "" 1 2 "1:2" {').replace(
    'p "" 1 1 "" {', 'p "" 1 1 "x" {'
)

# Two actions with the same label at player 2's infoset.
TWIN_ACTIONS = OUT_OF_ORDER.replace('{ "x" "y" }', '{ "x" "x" }')


def dev(plan1, plan2):
    return {"device": [{"p": 1.0, "plans": [plan1, plan2]}]}


def test_unnamed_infosets_are_labelled_by_their_position_from_one():
    game = efg.loads(OUT_OF_ORDER)
    assert [game.infoset_label(0, i) for i in range(2)] == ["1:1", "1:2"]
    assert game.action_labels(0, 0) == ["a", "b"]  # position 1:1 is the root
    d = device_from_dict(game, dev({"1:1": "b", "1:2": "d"}, {"2:1": "y"}))
    assert d.plans[0].tolist() == [1, 1, 1]
    # The writer uses the same names, for the infosets the plan reaches ("b" leaves 1:2 behind).
    assert device_to_dict(game, d)["device"][0]["plans"] == [{"1:1": "b"}, {"2:1": "y"}]


def test_a_label_that_reads_as_another_position_is_refused_with_both_names():
    game = efg.loads(COLLIDING)
    with pytest.raises(GameError) as info:
        device_from_dict(game, dev({"1:2": "a", "x": "c"}, {"2:1": "x"}))
    message = str(info.value)
    assert "'1:2' of player 1 is ambiguous" in message
    assert "'1:1' (labelled '1:2')" in message and "'x'" in message
    assert "\n" not in message
    # The names it suggests work.
    d = device_from_dict(game, dev({"1:1": "a", "x": "c"}, {"2:1": "x"}))
    assert d.plans[0].tolist() == [0, 0, 0]
    names = infoset_names(game)
    assert [r["name"] for r in names[0]] == ["1:1", "x"]
    assert device_from_dict(game, device_to_dict(game, d)).plans.tolist() == d.plans.tolist()


def test_repeated_action_labels_are_refused_and_named_by_position():
    game = efg.loads(TWIN_ACTIONS)
    with pytest.raises(
        GameError,
        match=r"action name 'x' at infoset '2:1' of player 2 is "
        r"ambiguous; name the one you mean by: '#1' .*'#2'",
    ):
        device_from_dict(game, dev({"1:1": "a", "1:2": "c"}, {"2:1": "x"}))
    d = device_from_dict(game, dev({"1:1": "a", "1:2": "c"}, {"2:1": "#2"}))
    assert d.plans[0].tolist() == [0, 0, 1]
    assert device_to_dict(game, d)["device"][0]["plans"][1] == {"2:1": "#2"}
    assert infoset_names(game)[1][0]["actions"] == ["#1", "#2"]


@pytest.mark.parametrize(
    "text, fragment",
    [
        (
            '{"device": [{"p": 1, "plans": [{"1:1": "a", "1:1": "b", "1:2": "c"}, {"2:1": "x"}]}]}',
            "key '1:1' appears twice in one JSON object",
        ),
        (
            '{"device": [{"p": 0.5, "p": 1, "plans": [{"1:1": "a", "1:2": "c"}, {"2:1": "x"}]}]}',
            "key 'p' appears twice",
        ),
    ],
)
def test_duplicate_json_keys_are_refused(text, fragment):
    game = efg.loads(OUT_OF_ORDER)
    with pytest.raises(GameError, match=fragment):
        device_from_json(game, text)


def test_cli_lists_exact_names_and_refuses_ambiguity(tmp_path, capsys):
    path = tmp_path / "colliding.efg"
    path.write_text(COLLIDING)
    assert main(["info", str(path), "--infosets", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["infoset_labels"][0]
    assert [(r["name"], r["infoset"], r["position"]) for r in rows] == [
        ("1:1", "1:2", "1:1"),
        ("x", "x", "1:2"),
    ]
    assert main(["info", str(path), "--infosets"]) == 0
    assert "  1:1 (labelled '1:2'): a, b" in capsys.readouterr().out
    device = json.dumps(dev({"1:2": "a", "x": "c"}, {"2:1": "x"}))
    assert main(["gap", str(path), "--device", device, "--json"]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "is ambiguous" in json.loads(out)["error"]
    dup = '{"device": [{"p": 1, "plans": [{"1:1": "a", "1:1": "b", "x": "c"}, {"2:1": "x"}]}]}'
    assert main(["gap", str(path), "--device", dup, "--json"]) == 2
    assert "appears twice" in json.loads(capsys.readouterr().out)["error"]
