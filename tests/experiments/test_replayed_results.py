"""Results read back from files are checked, and each run's files are its own.

``efce compare --replot`` reads ``traces.csv`` and ``summary.json`` through the guarded readers
(:func:`efce.experiments.compare.load_comparison`): a damaged or hand-edited file is refused in
one line naming the file and the line or the run and field, never an internal error or a figure
with infinite axis limits.  A compared run's trace is read from a folder of its own
(:func:`efce.experiments.harness.run_solve`), so a trace file an earlier, killed comparison left
in ``--out`` is never taken for this run's."""

import csv
import json
import shutil

import pytest

from efce.experiments.cli import main

GAME = "farina-fig2"


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """A comparison's folder, written once; each test edits a copy."""
    out = tmp_path_factory.mktemp("compared") / "cmp"
    assert main(["compare", GAME, "--methods", "rm,lp-highs", "--out", str(out), "--json"]) == 0
    return out


def _replot(folder, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["compare", "--replot", "--out", str(folder), "--json"])
    return code, json.loads(capsys.readouterr().out)


def _copy(compared, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(compared, folder)
    return folder


def _edit_summary(folder, edit) -> None:
    path = folder / "summary.json"
    summary = json.loads(path.read_text(encoding="utf-8"))
    edit(summary)
    path.write_text(json.dumps(summary), encoding="utf-8")


def test_an_intact_folder_is_redrawn(compared, tmp_path, capsys):
    code, out = _replot(_copy(compared, tmp_path), capsys)
    assert code == 0 and set(out["methods"]) == {"rm", "lp-highs"}


def test_a_run_entry_without_its_times_to_gap_is_redrawn_without_them(compared, tmp_path, capsys):
    folder = _copy(compared, tmp_path)
    _edit_summary(folder, lambda s: s["methods"]["rm"].pop("time_to_gap"))
    code, out = _replot(folder, capsys)
    assert code == 0 and out["methods"]["rm"]["time_to_gap"] == {}


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda s: s["methods"].__setitem__("rm", 5), "run 'rm' must be an object"),
        (lambda s: s["methods"]["rm"].__setitem__("time_to_gap", 3), "'time_to_gap' must be an object"),
        (lambda s: s["methods"]["rm"]["time_to_gap"].__setitem__("0.1", "soon"), "'time_to_gap'"),
        (lambda s: s["methods"]["rm"].__setitem__("final_gap", -1.0), "'final_gap' must be a finite number"),
        (lambda s: s["methods"]["rm"].pop("status"), "run 'rm' has no 'status'"),
        (lambda s: s.__setitem__("methods", []), "'methods' must be an object"),
        (lambda s: s.pop("game"), "has no 'game'"),
    ],
    ids=["number", "times-a-number", "time-a-word", "negative-gap", "no-status", "methods-a-list", "no-game"],
)
def test_a_hand_edited_summary_is_refused_naming_the_file_and_the_field(
    compared, tmp_path, capsys, edit, named
):
    folder = _copy(compared, tmp_path)
    _edit_summary(folder, edit)
    code, out = _replot(folder, capsys)
    assert code == 2 and "summary.json" in out["error"] and named in out["error"], out
    assert "internal error" not in out["error"]


def test_an_infinite_time_in_the_summary_is_refused(compared, tmp_path, capsys):
    folder = _copy(compared, tmp_path)
    path = folder / "summary.json"
    path.write_text(path.read_text(encoding="utf-8").replace('"0.1": 0.', '"0.1": 1e999, "x": 0.', 1))
    code, out = _replot(folder, capsys)
    assert code == 2 and "summary.json" in out["error"] and "internal error" not in out["error"]


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (lambda text: text[: text.index("\n") + 13], "line 2: 3 fields"),  # cut inside "rm,1,0.000…"
        (lambda text: text.replace(",0.0,", ",inf,", 1), "not a finite number"),
        (lambda text: text.replace("rm,1,", "rm,one,", 1), "iteration 'one' is not an integer"),
        (lambda text: "iteration,seconds\n1,2\n", "not a trace"),
        (lambda text: text + "rm,2,0.5,nan,0.0\n", "gap is nan"),
    ],
    ids=["cut-in-a-row", "infinite", "iteration-a-word", "no-header", "nan-gap"],
)
def test_a_damaged_traces_file_is_refused_naming_the_file_and_the_line(
    compared, tmp_path, capsys, damage, named
):
    folder = _copy(compared, tmp_path)
    traces = folder / "traces.csv"
    traces.write_text(damage(traces.read_text(encoding="utf-8")), encoding="utf-8")
    code, out = _replot(folder, capsys)
    assert code == 2 and "traces.csv" in out["error"] and named in out["error"], out


def test_a_stale_trace_left_in_the_output_folder_is_not_taken_for_a_failed_run(tmp_path, capsys):
    # An earlier comparison of another game was killed and left its per-run trace behind;
    # this comparison's rm fails (kuhn has chance moves): its row must report no gap at all.
    out = tmp_path / "out"
    out.mkdir()
    with (out / "trace_rm.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["method", "iteration", "seconds", "gap", "infeasibility"])
        writer.writerow(["rm", 100, "0.5", "1e-5", "0.0"])
    code = main(["compare", "kuhn", "--methods", "rm,cfr+", "--out", str(out), "--json"])
    summary = json.loads(capsys.readouterr().out)
    rm = summary["methods"]["rm"]
    assert code == 2 and rm["status"] == "error" and "chance" in rm["error"]
    assert rm["final_gap"] is None and set(rm["time_to_gap"].values()) == {None}
    with (out / "traces.csv").open(newline="", encoding="utf-8") as fh:
        assert {row["method"] for row in csv.DictReader(fh)} == {"cfr+"}
