"""Every command's text output in an ASCII locale (``LC_ALL=C`` with Python's UTF-8 mode off):
the toolkit's symbols (``◁``, ``≥``, ``—``) and a game's own non-ASCII names are written in
ASCII (:mod:`efce.streams`), never a ``UnicodeEncodeError`` traceback."""

import json
import os
import subprocess
import sys

import pytest

from tests.paths import ROOT, TWINS

#: An ASCII locale: the C locale, with the UTF-8 mode Python would turn on for it turned off.
ASCII = {
    **{k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "LANG", "LC_CTYPE")},
    "LC_ALL": "C",
    "PYTHONUTF8": "0",
    "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
}


def _efce(*argv: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-P", "-m", "efce", *argv], capture_output=True, env=ASCII, cwd=cwd, timeout=600
    )


def _ascii_text(done: subprocess.CompletedProcess) -> str:
    assert b"Traceback" not in done.stderr and b"UnicodeEncodeError" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    return done.stdout.decode("ascii")  # every byte ASCII


def test_the_environment_is_an_ascii_one():
    code = "import sys; print(sys.stdout.encoding, sys.flags.utf8_mode)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, env=ASCII, text=True)
    assert done.stdout.split() == ["ascii", "0"] or done.stdout.split()[0].lower() in ("ansi_x3.4-1968",)


def test_decompose_show_writes_the_chain_in_ascii():
    text = _ascii_text(_efce("decompose", "farina-fig2", "--show"))
    assert "{1} <|h1 Delta2" in text and "xi[{}, {}]" in text


def test_a_solve_with_a_welfare_threshold_prints_its_message_in_ascii():
    text = _ascii_text(_efce("solve", "farina-fig2", "--method", "rm", "--welfare-threshold", "3.5"))
    assert "no EFCE has welfare >= 3.5" in text


def test_info_of_a_file_with_a_non_ascii_title_escapes_what_ascii_cannot_hold(tmp_path):
    game = tmp_path / "zwillinge.efg"
    game.write_text(
        TWINS.read_text(encoding="utf-8").replace('"twins"', '"Zwillinge — für Ü"'), encoding="utf-8"
    )
    text = _ascii_text(_efce("info", str(game)))
    assert "Zwillinge -- f\\xfcr \\xdc" in text


def test_compare_and_its_replot_print_their_table_in_ascii(tmp_path):
    out = tmp_path / "cmp"
    first = _ascii_text(_efce("compare", "farina-fig2", "--methods", "rm,lp-highs", "--out", str(out)))
    again = _ascii_text(_efce("compare", "--replot", "--out", str(out)))
    assert "solved to optimality" in first and "solved to optimality" in again
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["game"] == "farina-fig2"


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_text_stream_writes_unencodable_characters_by_their_ascii_spelling(stream):
    code = (
        "import sys; from efce.streams import ensure_standard_streams; ensure_standard_streams(); "
        f"print('\\u03c4 \\u2265 0 \\u2014 \\u25c1 \\xe9', file=sys.{stream})"  # τ ≥ 0 — ◁ é
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, env=ASCII)
    assert getattr(done, stream) == b"tau >= 0 -- <| \\xe9\n", done
