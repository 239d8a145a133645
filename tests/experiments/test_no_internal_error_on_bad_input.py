"""No input file or argument reaches Python's internals: malformed JSON inputs are refused by the
one guarded reader (size, encoding, nesting, number range), integer options of every subcommand
are range-checked, quoted user text is shortened, and the messages name the actual problem."""

import json
import time
import warnings

import pytest

from efce.experiments.cli import main

TWO_ACTION_TWINS = """EFG 2 R "twins" { "P1" "P2" }
""
p "" 1 1 "I" { "#2" "x" "x" } 0
t "" 1 "" { 1 0 }
t "" 2 "" { 0 1 }
t "" 3 "" { 1 1 }
"""


def _error(argv, capsys) -> str:
    started = time.monotonic()
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    assert code == 2 and out.count("\n") == 1, out
    message = json.loads(out)["error"]
    assert "internal error" not in message and "\n" not in message
    assert time.monotonic() - started < 30
    return message


def _device(probability=1.0, plan1=None) -> dict:
    return {"device": [{"p": probability, "plans": [plan1 or {"1:1": "#2"}, {}]}]}


@pytest.mark.parametrize(
    "content, fragment",
    [
        (b'{"device": [{"p": 1' + b"0" * 400 + b', "plans": []}]}', "has 401 digits"),
        (b'{"device": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
        ('{"device": [{"p": 1, "plans": [{"é": "a"}]}]}'.encode("latin-1"), "not UTF-8 text"),
        (b'{"device": [{"p": 1e400, "plans": []}]}', "1e400 is out of range"),
        (b'{"device": [{"p": NaN, "plans": []}]}', "NaN is not a JSON number"),
        (b'{"device": [{"p": 1, "plans": [}', "not valid JSON"),
    ],
)
def test_malformed_device_files_are_refused_by_the_guarded_reader(tmp_path, capsys, content, fragment):
    game, device = tmp_path / "g.efg", tmp_path / "device.json"
    game.write_text(TWO_ACTION_TWINS)
    device.write_bytes(content)
    assert fragment in _error(["gap", str(game), "--device", str(device)], capsys)


def test_a_device_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path, capsys, monkeypatch):
    from efce.solvers.evaluation import device as device_module

    monkeypatch.setattr(device_module, "DEVICE_BYTES_LIMIT", 100)
    path = tmp_path / "device.json"
    path.write_text(json.dumps(_device()) + " " * 200)
    assert "more than the 100 read" in _error(["gap", "farina-fig1", "--device", str(path)], capsys)
    assert "is a folder" in _error(["gap", "farina-fig1", "--device", str(tmp_path)], capsys)


def test_a_damaged_run_record_is_set_aside_not_an_internal_error(tmp_path):
    from efce.experiments.sweep import load_records

    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a.json").write_bytes(b'{"key": "a", "x": ' + b"[" * 50_000 + b"}")
    (runs / "b.json").write_bytes(b'{"key": "b", "x": "\xff"}')
    (runs / "c.json").write_text('{"key": "c", "seconds": 1' + "0" * 400 + "}")
    (runs / "d.json").write_text('{"key": "d"}')
    notes: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the toolkit's notes are no warnings
        records = load_records(str(tmp_path), set_aside=notes)
    assert [r["key"] for r in records] == ["d"]
    assert len(notes) == 3 and all("damaged run record" in note for note in notes)
    assert sorted(p.name for p in runs.iterdir()) == [
        "a.json.damaged",
        "b.json.damaged",
        "c.json.damaged",
        "d.json",
    ]


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["decompose", "farina-fig2", "--verify", "--seed", "-1"], "--seed: expected an integer from 0"),
        (["decompose", "farina-fig2", "--seed", "1e3"], "--seed: expected an integer, got '1e3'"),
        (["sweep", "x.toml", "--out", "o", "--workers", "0"], "--workers: expected an integer from 1"),
        (["sweep", "x.toml", "--out", "o", "--workers", "1" + "0" * 30], "--workers: expected an integer"),
    ],
)
def test_integer_options_of_every_subcommand_are_range_checked(argv, fragment, capsys):
    assert fragment in _error(argv, capsys)


def test_quoted_user_text_is_shortened(tmp_path, capsys):
    path = tmp_path / "device.json"
    path.write_text(json.dumps(_device(plan1={"#" * 100_000: "a"})))
    game = tmp_path / "g.efg"
    game.write_text(TWO_ACTION_TWINS)
    message = _error(["gap", str(game), "--device", str(path)], capsys)
    assert "no infoset labelled" in message and "(100,000 characters)" in message
    assert len(message) < 1000


def test_an_ambiguous_action_is_answered_with_names_that_exist(tmp_path, capsys):
    # Actions "#2", "x", "x": "x" is ambiguous, and so is the second x's position "#2" (the first
    # action's label): that action has no name, and the message must not offer one.
    game = tmp_path / "g.efg"
    game.write_text(TWO_ACTION_TWINS)
    path = tmp_path / "device.json"
    path.write_text(json.dumps(_device(plan1={"I": "x"})))
    message = _error(["gap", str(game), "--device", str(path)], capsys)
    assert "is ambiguous" in message and "'#3' (action 3" in message
    assert "'None'" not in message and "action at position 2 (no unambiguous name" in message


@pytest.mark.parametrize(
    "content, fragment",
    [
        (
            'games = ["kuhn"]\nmethods = ["rm"]\n[options.rm]\nlocal = ["rm+", "rm+"]\n',
            "local lists 'rm+' twice",
        ),
        (
            'games = ["kuhn"]\nmethods = ["rm"]\n[options.rm]\niterations = [10, 10.0]\n',
            "the same run twice: rm on 'kuhn' with iterations=10",
        ),
        ('games = ["kuhn", "kuhn"]\nmethods = ["rm"]\n', "games: lists the same game 'kuhn' twice"),
    ],
)
def test_a_repeated_sweep_value_is_named_as_such(tmp_path, capsys, content, fragment):
    path = tmp_path / "s.sweep.toml"
    path.write_text(content)
    message = _error(["sweep", str(path), "--out", str(tmp_path / "out")], capsys)
    assert fragment in message
    assert not (tmp_path / "out").exists()


def test_a_folder_given_as_the_sweep_file_is_named_a_folder(tmp_path, capsys):
    message = _error(["sweep", str(tmp_path), "--out", str(tmp_path / "out")], capsys)
    assert "is a folder" in message and "no such" not in message


@pytest.mark.parametrize("estimate", [[], ["--estimate"]])
def test_leduc_without_any_raise_cap_is_refused_as_endless(capsys, estimate):
    message = _error(["info", "leduc:max_raises=none,raises_per_player=none", *estimate], capsys)
    assert "the betting would never end" in message and "too large" not in message


def test_estimating_a_missing_efg_file_is_an_error(tmp_path, capsys):
    assert "no such file" in _error(["info", str(tmp_path / "missing.efg"), "--estimate"], capsys)
