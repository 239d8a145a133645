"""Bad inputs through the command line, case by case: each is refused with one JSON object
``{"error": ...}`` naming the problem and a non-zero exit, quickly, with no traceback and no
"internal error"; inputs that look odd but are legitimate give a correct result.

Covers malformed ``.efg`` files, spec strings, oversized generated games, device files, trace
paths and ``--version`` (solver options, interruption and ``efce compare`` are tested beside
their own code).
"""

from __future__ import annotations

import json
import time

import pytest

from efce.experiments.cli import main
from tests.paths import ROOT
from tests.paths import TWINS as TWINS_FILE

HEADER = 'EFG 2 R "g" { "P1" "P2" }\n""\n'
TWO_LEAVES = 'p "" 1 1 "I" { "a" "b" } 0\nt "" 1 "" { 1 2 }\nt "" 2 "" { 3 4 }\n'

# Player 1 has two infosets labelled "again" whose actions are labelled with numbers.
TWINS = TWINS_FILE.read_text()

FILES = {
    "random.efg": bytes(range(256)) * 2,
    "nul.efg": (HEADER + 'p "" 1 1 "I" { "a" "b" } 0\nt "" 1 "" { 1\x00 2 }\n').encode(),
    "overflow.efg": (HEADER + TWO_LEAVES.replace("{ 1 2 }", "{ 1e400 2 }")).encode(),
    "near_max.efg": (HEADER + TWO_LEAVES.replace("{ 3 4 }", "{ 1e308 4 }")).encode(),
    "nan.efg": (HEADER + TWO_LEAVES.replace("{ 1 2 }", "{ nan 2 }")).encode(),
    "inf_prob.efg": (
        HEADER + 'c "" 1 "" { "h" inf "t" -inf } 0\nt "" 1 "" { 1 2 }\nt "" 2 "" { 3 4 }\n'
    ).encode(),
    "nbsp.efg": (HEADER + TWO_LEAVES.replace('"" {', '""\u00a0{')).encode(),
    "line_separator.efg": (HEADER + TWO_LEAVES.replace("0\nt", "0\u2028t")).encode(),
    "twins.efg": TWINS.encode(),
    "ambiguous.json": json.dumps(
        {"device": [{"p": 1, "plans": [{"root": "a", "again": "1"}, {"I": "x"}]}]}
    ).encode(),
    "no_action.json": json.dumps(
        {"device": [{"p": 1, "plans": [{"root": "a", "1:2": 3, "1:3": 1}, {"I": "x"}]}]}
    ).encode(),
    "no_infoset.json": json.dumps(
        {"device": [{"p": 1, "plans": [{"root": "a", "1:9": 1}, {"I": "x"}]}]}
    ).encode(),
    "positional.json": json.dumps(
        {"device": [{"p": 1, "plans": [{"root": "b", "1:2": 2, "1:3": 1}, {"I": "y"}]}]}
    ).encode(),
}

# (arguments with {dir} for the folder holding FILES, fragments the error must contain)
REFUSED = {
    "efg random bytes": (["info", "{dir}/random.efg"], ["random.efg:1:", "unexpected character U+"]),
    "efg control character": (["info", "{dir}/nul.efg"], ["nul.efg:4:", "U+0000"]),
    "efg payoff 1e400": (["info", "{dir}/overflow.efg"], ["overflow.efg:4:", "'1e400' is too large"]),
    "efg payoff 1e308": (
        ["solve", "{dir}/near_max.efg", "--method", "lp-highs"],
        ["near_max.efg:5:", "'1e308' is too large"],
    ),
    "efg nan payoff": (["info", "{dir}/nan.efg"], ["nan.efg:4:", "non-finite number 'nan'"]),
    "efg infinite probability": (["info", "{dir}/inf_prob.efg"], ["inf_prob.efg:3:", "non-finite"]),
    "spec fractional int": (
        ["info", "kuhn:ranks=2.5"],
        ["game 'kuhn'", "parameter 'ranks'", "must be an integer", "'2.5'"],
    ),
    "spec float for int": (
        ["solve", "kuhn:players=2.0", "--method", "cfr"],
        ["parameter 'players'", "an integer"],
    ),
    "spec out of range": (["info", "goofspiel:players=1"], ["parameter 'players'", "from 2 to 16"]),
    "spec bad word": (["info", "goofspiel:prizes=shuffled"], ["one of random, sorted"]),
    "spec bad bool": (["info", "goofspiel:limited_info=yes"], ["true or false"]),
    "spec nan number": (
        ["info", "battleship:loss_multiplier=nan"],
        ["parameter 'loss_multiplier'", "a number"],
    ),
    "spec list length": (["info", "leduc:raise_sizes=[2]"], ["a list of 2 numbers"]),
    "size kuhn 100 players": (
        ["info", "kuhn:players=100"],
        ["kuhn:players=100", "nodes", "too large", "Not building"],
    ),
    "size goofspiel 13 ranks": (["info", "goofspiel:ranks=13"], ["goofspiel:ranks=13", "nodes"]),
    "size before solving": (["solve", "goofspiel:ranks=13", "--method", "cfr"], ["too large"]),
    "size before decomposing": (["decompose", "sheriff:rounds=400"], ["too large"]),
    "size leduc many players": (["info", "leduc:players=12"], ["at least", "nodes"]),
    "device ambiguous label": (
        ["gap", "{dir}/twins.efg", "--device", "{dir}/ambiguous.json"],
        ["'again' of player 1 is ambiguous", "'1:2' (labelled 'again')"],
    ),
    "device unknown numeric action": (
        ["gap", "{dir}/twins.efg", "--device", "{dir}/no_action.json"],
        ["no action 3", "valid actions: '1', '2'"],
    ),
    "device unknown positional": (
        ["gap", "{dir}/twins.efg", "--device", "{dir}/no_infoset.json"],
        ["no infoset labelled '1:9'", "1:N with N from 1 to 3"],
    ),
    "trace in missing folder": (
        ["solve", "kuhn", "--method", "cfr", "--iterations", "5", "--trace", "{dir}/missing/trace.csv"],
        ["cannot write the trace file", "does not exist"],
    ),
    "trace is a folder": (
        ["solve", "kuhn", "--method", "cfr", "--iterations", "5", "--trace", "{dir}"],
        ["cannot write the trace file", "is a folder"],
    ),
}

# Legitimate inputs that used to fail: (arguments, check of the JSON result)
ACCEPTED = {
    "efg no-break space": (["info", "{dir}/nbsp.efg"], lambda out: out["terminals"] == 2),
    "efg line separator": (["info", "{dir}/line_separator.efg"], lambda out: out["terminals"] == 2),
    "device positional names and numeric actions": (
        ["gap", "{dir}/twins.efg", "--device", "{dir}/positional.json"],
        # Player 1 plays b, then "1" at the infoset below b (1:2 in breadth-first order):
        # the terminal paying (3, 0).  "2" at 1:1 (below a) is off the path.
        lambda out: out["utilities"] == [3.0, 0.0],
    ),
    "estimate without building": (
        ["info", "kuhn:players=100", "--estimate"],
        lambda out: out["estimated_nodes"] > 10**190 and out["estimated_bytes"] > out["estimated_nodes"],
    ),
    "estimate exact for a small game": (
        ["info", "sheriff", "--estimate"],
        lambda out: out["estimated_nodes"] == 28_085,
    ),
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("bad_inputs")
    for name, data in FILES.items():
        (path / name).write_bytes(data)
    return path


def run(args, folder, capsys):
    argv = [a.replace("{dir}", str(folder)) for a in args] + ["--json"]
    started = time.perf_counter()
    code = main(argv)
    seconds = time.perf_counter() - started
    captured = capsys.readouterr()
    lines = [line for line in captured.out.splitlines() if line.strip()]
    assert len(lines) == 1, captured.out
    return code, json.loads(lines[0]), captured, seconds


@pytest.mark.parametrize("case", list(REFUSED), ids=list(REFUSED))
def test_refused(case, folder, capsys):
    args, fragments = REFUSED[case]
    code, out, captured, seconds = run(args, folder, capsys)
    assert code != 0
    assert set(out) >= {"error"} and isinstance(out["error"], str)
    message = out["error"]
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    for text in (message, captured.err):
        assert "internal error" not in text and "Traceback" not in text
    assert seconds < 10, seconds


@pytest.mark.parametrize("case", list(ACCEPTED), ids=list(ACCEPTED))
def test_accepted(case, folder, capsys):
    args, check = ACCEPTED[case]
    code, out, captured, seconds = run(args, folder, capsys)
    assert code == 0, out
    assert "error" not in out
    assert check(out), out
    assert seconds < 20, seconds


def test_trace_path_is_checked_before_solving(folder, capsys, monkeypatch):
    from efce.experiments import cmd_solve as cmd_solve

    calls = []
    monkeypatch.setattr(cmd_solve, "solve", lambda *a, **k: calls.append(a))
    code, out, _, _ = run(["solve", "kuhn", "--method", "cfr", "--trace", "{dir}/no/t.csv"], folder, capsys)
    assert code != 0 and "trace file" in out["error"] and calls == []


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    from importlib.metadata import version

    assert capsys.readouterr().out.strip() == f"efce {version('efce-toolkit')}"


def test_version_falls_back_to_pyproject(monkeypatch):
    import importlib.metadata as metadata
    import re

    from efce.experiments.cli import _version

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    text = (ROOT / "pyproject.toml").read_text()
    assert _version() == re.search(r'^version\s*=\s*"([^"]+)"', text, re.M).group(1)
