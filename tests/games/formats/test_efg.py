"""Gambit .efg reader and writer."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from efce import games
from efce.games import CHANCE, TERMINAL, Game, GameError
from efce.games.formats import efg
from efce.games.game import ExplicitLabels
from tests.paths import GAME_DATA

DATA = GAME_DATA
ARRAYS = ("parent", "action", "player", "infoset", "chance_prob", "payoffs", "terminal_index")


def assert_same_game(g: Game, h: Game) -> None:
    for name in ARRAYS:
        assert np.array_equal(getattr(g, name), getattr(h, name)), name
    assert g.num_players == h.num_players
    assert g.player_names == h.player_names
    assert g.name == h.name
    for p in range(g.num_players):
        count = g.sequences(p).num_infosets
        assert count == h.sequences(p).num_infosets
        for i in range(count):
            assert g.infoset_label(p, i) == h.infoset_label(p, i)
            assert g.action_labels(p, i) == h.action_labels(p, i)
    for v in np.flatnonzero(g.player == CHANCE):
        assert g.labels.chance_actions(g, v) == h.labels.chance_actions(h, v)


def write(tmp_path: Path, text: str, name: str = "game.efg") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("players", [2, 3])
def test_kuhn_round_trip(players, tmp_path):
    g = games.kuhn(players)
    path = tmp_path / "kuhn.efg"
    efg.save(g, path)
    h = efg.load(path)
    assert_same_game(g, h)
    assert isinstance(h.labels, ExplicitLabels)
    # A second round trip writes the identical text.
    assert efg.dumps(h) == path.read_text()


def test_kuhn_file_looks_like_gambit():
    text = efg.dumps(games.kuhn(2))
    lines = text.splitlines()
    assert lines[0] == 'EFG 2 R "kuhn:players=2,ranks=3" { "Player 1" "Player 2" }'
    assert lines[1] == '""'
    assert lines[3].startswith('c "" 1 "" { "0" 1/6 "1" 1/6 ')
    assert re.fullmatch(r'p "" 1 1 "card\d" \{ "check" "bet" \} 0', lines[4])
    assert all(re.fullmatch(r'(p|c|t) "".*', line) for line in lines[3:] if line)
    assert sum(line.startswith("t ") for line in lines) == games.kuhn(2).num_terminals


@pytest.mark.parametrize(
    "name",
    [
        "two_stage_pennies",
        "one_card_poker",
        "horse",
    ],
)
def test_data_files_round_trip(name, tmp_path):
    g = efg.load(DATA / f"{name}.efg")
    efg.save(g, tmp_path / "again.efg")
    h = efg.load(tmp_path / "again.efg")
    assert_same_game(g, h)
    assert h.comment == g.comment


def test_two_stage_matching_pennies_internal_outcomes():
    g = efg.load(DATA / "two_stage_pennies.efg")
    assert g.name == "Matching pennies played twice"
    assert g.comment == ""
    assert [s.num_infosets for s in (g.sequences(0), g.sequences(1))] == [5, 5]
    # Stage payoffs (+-1 for match / mismatch) accumulate: HH then HH is +2 for player 1.
    assert sorted(map(tuple, g.payoffs.tolist())) == sorted(
        [(2.0, -2.0)] * 4 + [(0.0, 0.0)] * 8 + [(-2.0, 2.0)] * 4
    )
    assert g.is_zero_sum
    # Terminals in preorder of the file: the first one (H, H, H, H) is worth 2.
    first_terminal = g.original_order[g.terminal_nodes].argmin()
    assert g.payoffs[g.terminal_index[g.terminal_nodes[first_terminal]]].tolist() == [2.0, -2.0]
    assert [g.infoset_label(0, i) for i in range(5)] == ["1:1", "1:2", "1:3", "1:4", "1:5"]
    assert g.action_labels(1, 3) == ["H", "T"]


def test_one_card_poker():
    g = efg.load(DATA / "one_card_poker.efg")
    assert g.player_names == ["Dealer", "Caller"]
    assert g.comment.startswith("A one-card poker game")
    assert g.comment.count("\n") == 9
    assert g.player[0] == CHANCE
    assert g.chance_prob[1:3].tolist() == [0.5, 0.5]
    assert g.labels.chance_actions(g, 0) == ["King", "Queen"]
    assert [g.infoset_label(0, i) for i in range(2)] == ["1:1", "1:2"]
    assert g.action_labels(0, 0) == ["Bet", "Fold"]
    assert g.action_labels(1, 0) == ["Call", "Fold"]
    # Expected payoff when everybody bets and calls: (2 - 2) / 2 = 0.
    assert sorted(map(tuple, g.payoffs.tolist())) == sorted(
        [(2, -2), (1, -1), (-1, 1), (-2, 2), (1, -1), (-1, 1)]
    )


def test_horse_escapes_in_comment():
    g = efg.load(DATA / "horse.efg")
    assert g.num_players == 3
    assert '"Selten\'s horse"' in g.comment
    assert '\\"' not in g.comment
    # Player 3's infoset spans two nodes.
    indptr, nodes = g.infoset_nodes(2)
    assert indptr.tolist() == [0, 2]
    assert g.name == "A three-player horse"


# ---------------------------------------------------------------------------- syntax details
HAND_WRITTEN = r"""EFG 2 R "hand \"written\" \\ game" { "Alice" "Bob" }
"a comment
over two lines"
# an extension: '#' comments outside strings
c "root" 1 "deal" { "x" 1/3 "y" 0.25 "z" 5/12 } 0
p "" 1 1 "A's \"first\"" { "l" "r" } 1 "o1" { 1/2, .25 }
t "" 2 "o2" { 1 2 }
p "" 2 1 "" { "L" "R" }
   0
t "" 2
t
"" 3 "o3" { -1.5e0, 2.5E-1 }
p "" 1 1 "A's \"first\"" { "l" "r" } 0
t "" 0
p "" 2 1 0
t "" 1
t "" 1
c "" 2 "" { "heads" 0.5 "tails" 0.5 } 0
p "" 1 2 "A\\second" { "only" } 0
t "" 3
t "" 2
"""


def test_hand_written_file():
    g = efg.loads(HAND_WRITTEN, source="hand.efg")
    assert g.name == 'hand "written" \\ game'
    assert g.player_names == ["Alice", "Bob"]
    assert g.comment == "a comment\nover two lines"
    # Root chance: fractional and decimal probabilities, read exactly.
    assert g.chance_prob[1:4].tolist() == [1 / 3, 0.25, 5 / 12]
    assert g.labels.chance_actions(g, 0) == ["x", "y", "z"]
    assert [g.infoset_label(0, i) for i in range(2)] == ['A\'s "first"', "A\\second"]
    assert g.action_labels(0, 0) == ["l", "r"]
    assert g.action_labels(0, 1) == ["only"]
    assert g.infoset_label(1, 0) == "2:1"  # empty name: player:number as written
    assert g.action_labels(1, 0) == ["L", "R"]
    # Infoset 1 of player 1 spans the first two chance branches.
    indptr, nodes = g.infoset_nodes(0)
    assert np.diff(indptr).tolist() == [2, 1]
    # Payoffs of the terminals in file order (outcome 1 = (1/2, 1/4) sits on an internal node).
    pre = np.argsort(g.original_order)
    terminals = [g.payoffs[g.terminal_index[v]].tolist() for v in pre if g.player[v] == TERMINAL]
    assert terminals == [
        [1.5, 2.25],  # o1 + o2
        [1.5, 2.25],  # o1 + o2 (reused by number, payoffs omitted)
        [-1.0, 0.5],  # o1 + o3
        [0.0, 0.0],  # outcome 0
        [0.5, 0.25],
        [0.5, 0.25],  # o1 only
        [-1.5, 0.25],
        [1.0, 2.0],  # o3, o2
    ]


def test_internal_outcomes_accumulate_exactly():
    text = """EFG 2 R "acc" { "P1" "P2" }
p "" 1 1 "" { "a" } 1 "" { 0.1, 1/3 }
p "" 2 1 "" { "b" } 2 "" { 0.2, 1/3 }
t "" 3 "" { 0, 1/3 }
"""
    g = efg.loads(text)
    # Summed as rationals, then rounded once: 0.1 + 0.2 is exactly 0.3 and 3 * 1/3 is 1.
    assert g.payoffs.tolist() == [[0.3, 1.0]]


def test_outcome_reuse_without_payoffs_and_reused_infosets():
    text = """EFG 2 R "reuse" { "P1" "P2" }
p "" 1 7 "" { "a" "b" } 0
p "" 2 3 "" { "c" "d" } 0
t "" 4 "" { 3, -3 }
t "" 9 "" { -1, 1 }
p "" 2 3 0
t "" 9
t "" 4
"""
    g = efg.loads(text)
    # Unnamed infosets are labelled by their position in the game (from 1), not the file's number.
    assert g.infoset_label(0, 0) == "1:1"
    assert g.infoset_label(1, 0) == "2:1"
    assert g.action_labels(1, 0) == ["c", "d"]
    assert sorted(map(tuple, g.payoffs.tolist())) == [(-1, 1), (-1, 1), (3, -3), (3, -3)]


def test_chance_infoset_reused_by_number():
    text = """EFG 2 R "chance reuse" { "P1" }
p "" 1 1 "" { "a" "b" } 0
c "" 4 "coin" { "h" 1/4 "t" 3/4 } 0
t "" 1 "" { 1 }
t "" 2 "" { 2 }
c "" 4 0
t "" 3 "" { 3 }
t "" 4 "" { 4 }
"""
    g = efg.loads(text)
    chance = np.flatnonzero(g.player == CHANCE)
    assert len(chance) == 2
    for v in chance:
        assert g.labels.chance_actions(g, v) == ["h", "t"]
        kids = g.first_child[v] + np.arange(2)
        assert g.chance_prob[kids].tolist() == [0.25, 0.75]
    with pytest.raises(
        GameError,
        match=r"^x\.efg:6: chance infoset 4 \"coin\" has probabilities "
        r"different from those at line 3$",
    ):
        efg.loads(text.replace('c "" 4 0', 'c "" 4 "coin" { "h" 1/2 "t" 1/2 } 0'), source="x.efg")


def test_tokens_split_across_lines_and_commas():
    text = (
        'EFG\n2\nR\n"t"\n{\n"P1"\n}\np\n""\n1\n1\n"I"\n{\n"a"\n"b"\n}\n0\n'
        't "" 1 "" {\n4,\n}\nt "" 2 "" { 5 }\n'
    )
    g = efg.loads(text)
    assert sorted(g.payoffs[:, 0].tolist()) == [4.0, 5.0]
    assert g.action_labels(0, 0) == ["a", "b"]


def test_number_formats():
    text = """EFG 2 D "nums" { "P" }
p "" 1 1 "" { "go" } 0
c "" 1 "" { "a" 1/8 "b" .125 "c" 0.25 "d" 2.5e-1 "e" +1/4 } 0
t "" 1 "" { -3 }
t "" 2 "" { 1.5E+1 }
t "" 3 "" { +7/2 }
t "" 4 "" { -.5 }
t "" 5 "" { 1e3 }
"""
    g = efg.loads(text)
    assert g.chance_prob[2:].tolist() == [0.125, 0.125, 0.25, 0.25, 0.25]
    assert g.payoffs[:, 0].tolist() == [-3.0, 15.0, 3.5, -0.5, 1000.0]


def test_format_number_exact_and_decimal():
    fmt = efg._format_number
    assert fmt(3.0) == "3"
    assert fmt(-2.0) == "-2"
    assert fmt(1 / 3) == "1/3"
    assert fmt(5 / 12) == "5/12"
    assert fmt(0.25) == "1/4"
    assert fmt(0.1234567891) == repr(0.1234567891)
    assert fmt(1e-12) == "1e-12"
    for x in (1 / 3, 0.1234567891, 1e-12, 2 / 7, np.pi, -1e300, 123456.789):
        assert float(Fraction(fmt(x))) == x


def test_probabilities_round_trip_exactly():
    probs = [1 / 3, 0.1234567891, 1 - 1 / 3 - 0.1234567891]
    g = Game.from_tree(
        num_players=1,
        parent=[-1, 0, 1, 1, 1],
        action=[-1, 0, 0, 1, 2],
        player=[0, CHANCE, TERMINAL, TERMINAL, TERMINAL],
        infoset_key=[0, -1, -1, -1, -1],
        terminal_payoffs=[[1.0], [0.1], [-2.0 / 3.0]],
        chance_prob=[1.0, 1.0] + probs,
    )
    text = efg.dumps(g)
    assert '"0" 1/3 "1" 0.1234567891 ' in text
    assert_same_game(g, efg.loads(text))


def test_labels_with_quotes_and_backslashes_round_trip():
    text = r"""EFG 2 R "q\"t\\" { "P \"1\"" "P\\2" }
"c\\\"x"
p "" 1 1 "say \"hi\"" { "a\\b" "\"" } 0
p "" 2 1 "back\\slash" { "x" } 0
t "" 1 "" { 1 2 }
t "" 2 "" { 3 4 }
"""
    g = efg.loads(text)
    assert g.name == 'q"t\\'
    assert g.player_names == ['P "1"', "P\\2"]
    assert g.comment == 'c\\"x'
    assert g.infoset_label(0, 0) == 'say "hi"'
    assert g.action_labels(0, 0) == ["a\\b", '"']
    h = efg.loads(efg.dumps(g))
    assert_same_game(g, h)
    assert h.comment == g.comment


def test_explicit_labels_from_game_and_checks():
    g = games.kuhn(2)
    labels = ExplicitLabels.from_game(g)
    assert labels.infoset(g, 0, 0) == g.infoset_label(0, 0)
    assert labels.actions(g, 1, 3) == g.action_labels(1, 3)
    assert labels.chance_actions(g, 0) == g.labels.chance_actions(g, 0)
    with pytest.raises(GameError, match="2 infoset names but 1 action lists"):
        ExplicitLabels([["a", "b"]], [[["x"]]])


def test_imperfect_recall_message_from_game_uses_labels():
    # Player 1 forgets her first action: both nodes of infoset "later" follow different actions.
    labels = ExplicitLabels([["first", "later"]], [[["l", "r"], ["x", "y"]]])
    with pytest.raises(GameError, match="infoset 'later'"):
        Game.from_tree(
            num_players=1,
            parent=[-1, 0, 0, 1, 1, 2, 2],
            action=[-1, 0, 1, 0, 1, 0, 1],
            player=[0, 0, 0] + [TERMINAL] * 4,
            infoset_key=[0, 1, 1, -1, -1, -1, -1],
            terminal_payoffs=np.zeros((4, 1)),
            labels=labels,
        )


# ---------------------------------------------------------------------------- errors
HEADER = 'EFG 2 R "g" { "P1" "P2" }\n""\n'

# (file text, line number in the message, fragments of the message)
ERRORS = {
    "missing brace after infoset name": (
        HEADER + 'p "" 1 1 "I" "a" "b" } 0\n',
        3,
        ["expected '{' after infoset name"],
    ),
    "unknown node type": (
        HEADER + 'p "" 1 1 "I" { "a" "b" } 0\nt "" 1 "" { 1, 2 }\nx "" 2 "" { 1, 2 }\n',
        5,
        ["unknown node type", "'x'", "'p', 'c' or 't'"],
    ),
    "too few payoffs": (
        HEADER + 'p "" 1 1 "I" { "a" "b" } 0\nt "" 1 "" { 1, 2 }\nt "" 2 "" { 1 }\n',
        5,
        ["outcome 2 has 1 payoffs, expected 2"],
    ),
    "too many payoffs": (
        HEADER + 'p "" 1 1 "I" { "a" "b" } 0\nt "" 1 "" { 1, 2, 3 }\nt "" 2 "" { 1 2 }\n',
        4,
        ["outcome 1 has 3 payoffs, expected 2"],
    ),
    "probabilities do not sum to one": (
        HEADER + 'p "" 1 1 "I" { "a" } 0\nc "nature" 1 "" { "h" 1/2 "t" 1/3 } 0\n'
        't "" 1 "" { 1 2 }\nt "" 2 "" { 1 2 }\n',
        4,
        ['chance node "nature"', "sum to 5/6", "not 1"],
    ),
    "negative probability": (
        HEADER + '\n\nc "" 1 "" { "h" 3/2\n "t" -1/2 } 0\nt "" 1 "" { 1 2 }\nt "" 2 "" { 1 2 }\n',
        6,
        ["negative probability -1/2", '"t"'],
    ),
    "infoset action count mismatch": (
        HEADER + 'p "" 1 1 "" { "a" "b" } 0\np "" 2 4 "J" { "c" "d" } 0\nt "" 1 "" { 1 2 }\n'
        't "" 2 "" { 1 2 }\np "" 2 4 "J" { "c" "d" "e" } 0\n',
        7,
        ["player 2's infoset 4", '"J"', "3 actions here but 2 at line 4"],
    ),
    "infoset action labels mismatch": (
        HEADER + 'p "" 1 1 "" { "a" "b" } 0\np "" 2 4 "J" { "c" "d" } 0\nt "" 1 "" { 1 2 }\n'
        't "" 2 "" { 1 2 }\np "" 2 4 "J" { "c" "x" } 0\n',
        7,
        ["player 2's infoset 4", '{ "c" "x" } here but { "c" "d" } at line 4'],
    ),
    "infoset name mismatch": (
        HEADER + 'p "" 1 1 "" { "a" "b" } 0\np "" 2 4 "J" { "c" } 0\nt "" 1 "" { 1 2 }\n'
        'p "" 2 4 "K" { "c" } 0\nt "" 1 "" { 1 2 }\n',
        6,
        ['named "K" here but "J" at line 4'],
    ),
    "player out of range": (
        HEADER + 'p "" 3 1 "I" { "a" } 0\nt "" 1 "" { 1 2 }\n',
        3,
        ["player 3 does not exist"],
    ),
    "player zero": (
        HEADER + 'p "" 0 1 "I" { "a" } 0\nt "" 1 "" { 1 2 }\n',
        3,
        ["player 0 does not exist", "'c' nodes"],
    ),
    "truncated tree": (
        HEADER + 'p "" 1 1 "I" { "a" "b" } 0\nt "" 1 "" { 1 2 }\n',
        4,
        ["unexpected end of file", "incomplete"],
    ),
    "truncated in payoffs": (
        HEADER + 'p "" 1 1 "I" { "a" } 0\nt "" 1 "" { 1 2\n',
        4,
        ["unexpected end of file", "payoff"],
    ),
    "unterminated string": (
        HEADER + 'p "" 1 1 "I" { "a" } 0\nt "" 1 "unterminated { 1 2 }\n',
        4,
        ["unterminated string"],
    ),
    "trailing garbage": (
        HEADER + 'p "" 1 1 "I" { "a" } 0\nt "" 1 "" { 1 2 }\nt "" 2 "" { 3 4 }\n',
        5,
        ["trailing garbage"],
    ),
    "bad header": ('NFG 1 R "g" { "P1" }\n', 1, ["expected the file header 'EFG 2 R'"]),
    "wrong version": ('EFG 3 R "g" { "P1" }\n', 1, ["only EFG version 2"]),
    "missing player list": ('EFG 2 R "g"\n"P1"\n', 2, ["expected '{' before the player names"]),
    "outcome used before definition": (
        HEADER + 'p "" 1 1 "I" { "a" } 0\nt "" 5\n',
        4,
        ["outcome 5 is used before its payoffs"],
    ),
    "outcome redefined": (
        HEADER + 'p "" 1 1 "I" { "a" "b" } 0\nt "" 1 "" { 1 2 }\nt "" 1 "" { 1 3 }\n',
        5,
        ["outcome 1 has payoffs { 1, 3 } here but { 1, 2 } at line 4"],
    ),
    "outcome zero with payoffs": (
        HEADER + 'p "" 1 1 "I" { "a" } 0 "none" { 1 2 }\nt "" 1 "" { 1 2 }\n',
        3,
        ["outcome 0"],
    ),
    "infoset used before its actions": (
        HEADER + 'p "" 1 1 0\nt "" 1 "" { 1 2 }\n',
        3,
        ["player 1's infoset 1 is used before its actions"],
    ),
    "chance infoset used before its actions": (HEADER + 'c "" 2 0\n', 3, ["chance infoset 2 is used before"]),
    "bad number": (HEADER + 'p "" 1 1 "I" { "a" } 0\nt "" 1 "" { 1/0 2 }\n', 4, ["invalid number '1/0'"]),
    "symbol instead of payoff": (
        HEADER + 'p "" 1 1 "I" { "a" } 0\nt "" 1 "" { 1 two }\n',
        4,
        ["expected a payoff", "symbol 'two'"],
    ),
    "empty action list": (HEADER + 'p "" 1 1 "I" { } 0\n', 3, ["empty action list"]),
    "overflowing payoff": (
        HEADER + 'p "" 1 1 "I" { "a" } 0\nt "" 1 "" { 1e400 2 }\n',
        4,
        ["'1e400' is too large"],
    ),
    "payoff near the float limit": (
        HEADER + 'p "" 1 1 "I" { "a" } 0\nt "" 1 "" { 2, -1e308 }\n',
        4,
        ["'-1e308' is too large"],
    ),
    "huge fraction": (
        HEADER + 'p "" 1 1 "I" { "a" } 0\nt "" 1 "" { 10000000000000000000000000000000'
        "00000000000000000000000000000000000000000000000000000000000000000000000000000"
        "0000000/1 2 }\n",
        4,
        ["too large"],
    ),
    "billion-digit exponent": (
        HEADER + 'p "" 1 1 "I" { "a" } 0\nt "" 1 "" { 1e-999999999 2 }\n',
        4,
        ["'1e-999999999' is out of range"],
    ),
    "internal outcomes summing beyond the limit": (
        HEADER + 'p "" 1 1 "I" { "a" } 1 "big" { 1e100 0 }\nt "" 2 "" { 1e100 0 }\n',
        4,
        ["exceed 1e+100"],
    ),
    "nan payoff": (HEADER + 'p "" 1 1 "I" { "a" } 0\nt "" 1 "" { nan 2 }\n', 4, ["non-finite number 'nan'"]),
    "infinite probability": (
        HEADER + 'c "" 1 "" { "h" -inf "t" inf } 0\nt "" 1 "" { 1 2 }\nt "" 2 "" { 1 2 }\n',
        3,
        ["non-finite number '-inf'"],
    ),
    "control character": (
        HEADER + 'p "" 1 1 "I" { "a" } 0\n\nt "" 1 "" { 1\x00 2 }\n',
        5,
        ["unexpected character U+0000"],
    ),
    "huge player number": (
        HEADER + 'p "" 1' + "9" * 5000 + ' 1 "I" { "a" } 0\n',
        3,
        ["expected a player number"],
    ),
    "imperfect recall": (
        'EFG 2 R "g" { "P1" }\n""\np "" 1 1 "first" { "l" "r" } 0\n'
        'p "" 1 2 "later" { "x" "y" } 0\nt "" 1 "" { 1 }\nt "" 2 "" { 2 }\n'
        'p "" 1 2 "later" { "x" "y" } 0\nt "" 3 "" { 3 }\nt "" 4 "" { 4 }\n',
        7,
        ["imperfect recall", 'infoset 2 "later"', "first at line 4"],
    ),
    "absent-minded": (
        'EFG 2 R "g" { "P1" }\n""\np "" 1 1 "I" { "stop" "go" } 0\nt "" 1 "" { 1 }\n'
        'p "" 1 1 0\nt "" 2 "" { 2 }\nt "" 3 "" { 3 }\n',
        5,
        ["imperfect recall", "first at line 3"],
    ),
}


@pytest.mark.parametrize("case", list(ERRORS), ids=list(ERRORS))
def test_errors_name_file_and_line(case, tmp_path):
    text, line, fragments = ERRORS[case]
    path = write(tmp_path, text, name="broken.efg")
    with pytest.raises(GameError) as info:
        efg.load(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:{line}: "), message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    # loads names the given source the same way.
    with pytest.raises(GameError, match=rf"^mine\.efg:{line}: "):
        efg.loads(text, source="mine.efg")


def test_missing_file_names_it(tmp_path):
    with pytest.raises(GameError, match="nowhere.efg"):
        efg.load(tmp_path / "nowhere.efg")


def test_errors_are_game_errors_not_value_errors_from_parsing():
    # Fuzz: every prefix of a valid file either parses (the full file) or raises GameError
    # with a line number.
    text = efg.dumps(games.kuhn(2)).rstrip()
    cut_points = range(0, len(text), max(1, len(text) // 150))
    for cut in cut_points:
        with pytest.raises(GameError, match=r"^<string>:\d+: "):
            efg.loads(text[:cut])


def test_unicode_whitespace_separates_tokens():
    # A no-break space (pasted from a web page), a line separator, an ideographic space: all
    # whitespace; only "\n" counts as a new line in messages.
    text = (
        HEADER + 'p "" 1 1 "I"\u00a0{ "a" "b" } 0\u2028t "" 1 "" {\u3000 1 2 }\n'
        't "" 2 "" { 3 4 }\nt "" 3 "" { 5 6 }\n'
    )
    with pytest.raises(GameError, match=r"^<string>:5: .*trailing garbage"):
        efg.loads(text)
    g = efg.loads(text.rsplit("t ", 1)[0])
    assert g.payoffs.tolist() == [[1, 2], [3, 4]]


def test_outcome_names_and_comment_round_trip(tmp_path):
    g = efg.load(DATA / "one_card_poker.efg")
    # Every name stands for one payoff vector (names are aligned with the terminals).
    by_name = {}
    for name, row in zip(g.outcome_names, g.payoffs.tolist(), strict=True):
        assert by_name.setdefault(name, row) == row, name
    assert by_name["Dealer wins big"] == [2, -2]
    assert by_name["Dealer loses ante"] == [-1, 1]
    assert len(g.outcome_names) == g.num_terminals == 6
    efg.save(g, tmp_path / "again.efg")
    text = (tmp_path / "again.efg").read_text()
    assert '"Dealer wins big"' in text and "Outcomes are numbered out of order" in text
    h = games.load(tmp_path / "again.efg")
    assert h.outcome_names == g.outcome_names
    assert h.comment == g.comment
    assert efg.dumps(h) == text


def test_generated_games_write_empty_outcome_names():
    text = efg.dumps(games.kuhn(2))
    assert efg.loads(text).outcome_names == [""] * games.kuhn(2).num_terminals
