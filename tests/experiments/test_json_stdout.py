"""With ``--json`` stdout holds exactly one JSON object, whatever a library prints: HiGHS (from
highspy 1.16) writes its banner from C code when a solver object is constructed, before any
option can silence it.  The CLI points file descriptor 1 at stderr for the whole run."""

import json
import os
import subprocess
import sys

import pytest

from efce.experiments.cli import main, stdout_to_stderr
from efce.experiments.solve import METHODS
from tests.paths import ROOT

ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
SHERIFF = "sheriff:max_bribe=1,max_items=1,rounds=2"
KUHN3 = "kuhn:players=3,ranks=3"
#: A game each method accepts.
GAME = {"icfr": KUHN3, "cfr-s": KUHN3, "cfr": "kuhn", "cfr+": "kuhn"}


def _one_object(text: str) -> dict:
    """The single JSON object of ``text`` (json.loads refuses anything before or after it)."""
    value = json.loads(text)
    assert isinstance(value, dict)
    return value


@pytest.mark.parametrize("method", list(METHODS))
def test_solve_json_is_one_object_for_every_method(method, capfd):
    code = main(
        ["solve", GAME.get(method, SHERIFF), "--method", method, "--json", "--iterations", "20"]
        if "iterations" in METHODS[method].defaults
        else ["solve", GAME.get(method, SHERIFF), "--method", method, "--json"]
    )
    out, err = capfd.readouterr()
    result = _one_object(out)
    assert code == 0, result
    assert result["method"].startswith(method.split("-")[0])


@pytest.mark.parametrize("method", ["lp-highs", "lp-cvxpy"])
def test_solve_json_error_is_one_object(method, capfd):
    # Kuhn has chance moves: refused after HiGHS may already be loaded.
    assert main(["solve", "kuhn", "--method", method, "--json"]) == 2
    out, _ = capfd.readouterr()
    assert "chance" in _one_object(out)["error"]


def test_highs_banner_goes_to_stderr_in_a_real_process():
    child = subprocess.run(
        [sys.executable, "-P", "-m", "efce", "solve", SHERIFF, "--method", "lp-highs", "--json"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr
    assert _one_object(child.stdout)["status"] == "converged"


@pytest.mark.parametrize(
    "argv",
    [
        ["info", SHERIFF],
        ["info", "no-such-game"],
        ["decompose", SHERIFF],
        ["gap", KUHN3, "--device", "/nonexistent.npz"],
    ],
)
def test_other_commands_print_one_object(argv, capfd):
    main([*argv, "--json"])
    out, _ = capfd.readouterr()
    _one_object(out)


def test_compare_and_sweep_print_one_object(tmp_path, capfd):
    main(
        [
            "compare",
            SHERIFF,
            "--methods",
            "lp-highs",
            "--time-limit",
            "20",
            "--out",
            str(tmp_path / "c"),
            "--json",
        ]
    )
    out, _ = capfd.readouterr()
    assert _one_object(out)["methods"]["lp-highs"]["status"] == "converged"
    main(["sweep", str(tmp_path / "missing.toml"), "--out", str(tmp_path / "s"), "--json"])
    out, _ = capfd.readouterr()
    assert "error" in _one_object(out)


def test_c_level_output_inside_the_block_reaches_stderr(capfd):
    import ctypes

    libc = ctypes.CDLL(None)
    with stdout_to_stderr():
        libc.printf(b"from C\n")  # buffered by libc: flushed before fd 1 is restored
        os.write(1, b"from fd 1\n")
        print("from Python")
    print("after")
    out, err = capfd.readouterr()
    assert out == "after\n"
    assert "from C" in err and "from fd 1" in err and "from Python" in err
