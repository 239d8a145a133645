"""Devices name infosets by label or by position, and actions by label (JSON numbers too)."""

from __future__ import annotations

import numpy as np
import pytest

from efce.games import GameError
from efce.games.formats import efg
from efce.solvers.evaluation.device import device_from_dict, device_to_dict, plans_reach_infosets
from tests.paths import TWINS

# Player 1 has two infosets both named "again" (after her own "a" and "b"), with actions
# labelled 1 and 2; player 2 has one infoset "I".
TEXT = TWINS.read_text()


@pytest.fixture(scope="module")
def game():
    return efg.loads(TEXT)


def device(plan1, plan2=None):
    return {"device": [{"p": 1.0, "plans": [plan1, plan2 or {"I": "y"}]}]}


def test_positional_names_pick_infosets_that_share_a_label(game):
    labels = [game.infoset_label(0, i) for i in range(3)]
    assert labels.count("again") == 2
    root = labels.index("root")
    first, second = [i for i, lab in enumerate(labels) if lab == "again"]
    # Positions count from 1, as in `efce info --infosets`.
    dev = device_from_dict(game, device({"root": "a", f"1:{first + 1}": 2, f"1:{second + 1}": "1"}))
    row = dev.plans[0]
    assert row[root] == 0 and row[first] == 1 and row[second] == 0 and row[3] == 1
    # Written back with positional names for the repeated label, each plan reduced to the
    # infosets it reaches, and read again identically there.
    data = device_to_dict(game, dev)
    reached = plans_reach_infosets(game, 0, dev.plans[:, :3])[0]
    assert reached[root] and reached.sum() == 2  # "a" at the root leads to one "again"
    positions = {root: "root", first: f"1:{first + 1}", second: f"1:{second + 1}"}
    assert set(data["device"][0]["plans"][0]) == {positions[i] for i in np.flatnonzero(reached)}
    np.testing.assert_array_equal(device_from_dict(game, data).plans, dev.reduced(game).plans)


def test_positional_names_work_for_unique_labels_too(game):
    dev = device_from_dict(game, device({"1:1": "a", "1:2": "1", "1:3": "2"}, {"2:1": "x"}))
    assert dev.plans.shape == (1, 4)


@pytest.mark.parametrize(
    "plan, fragments",
    [
        (
            {"root": "a", "again": "1"},
            ["'again' of player 1 is ambiguous", "'1:2' (labelled 'again')", "'1:3' (labelled 'again')"],
        ),
        ({"root": "a", "1:7": "1"}, ["no infoset labelled '1:7'", "1:N with N from 1 to 3"]),
        ({"root": "c"}, ["has no action 'c'", "valid actions: 'a', 'b'"]),
        ({"root": 3}, ["has no action 3", "valid actions: 'a', 'b'"]),
        ({"root": "a", "1:1": "a"}, ["names infoset 'root' twice ('1:1' is another name for it)"]),
    ],
)
def test_errors_list_valid_names(game, plan, fragments):
    with pytest.raises(GameError) as info:
        device_from_dict(game, device(plan))
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
