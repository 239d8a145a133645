"""``efce compare`` on a tiny game: every file, every method, the story the table tells."""

import csv
import json

import pytest

from efce.experiments.cli import main

GAME = "sheriff:max_bribe=1,max_items=2,rounds=2"


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare")
    code = main(
        [
            "compare",
            GAME,
            "--methods",
            "rm,lp-highs,lp-cvxpy,subgradient",
            "--time-limit",
            "10",
            "--out",
            str(out),
            "--json",
        ]
    )
    assert code == 0
    return out


def test_files_and_methods(compared):
    summary = json.loads((compared / "summary.json").read_text())
    assert summary["game"] == GAME
    assert set(summary["methods"]) == {"rm", "lp-highs", "lp-cvxpy", "subgradient"}
    for name, run in summary["methods"].items():
        assert run["status"] in ("converged", "iteration_limit", "time_limit"), (name, run)
        assert run["final_gap"] is not None and run["peak_memory_mib"] > 0
    assert (compared / "convergence.png").stat().st_size > 10_000
    with open(compared / "traces.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["method"] for r in rows} == {"rm", "lp-highs", "lp-cvxpy", "subgradient"}


def test_regret_minimization_decreases_and_stays_feasible(compared):
    with open(compared / "traces.csv") as fh:
        rows = [r for r in csv.DictReader(fh) if r["method"] == "rm"]
    gaps = [float(r["gap"]) for r in rows]
    assert len(gaps) > 3 and gaps[-1] < gaps[0] and gaps[-1] <= 1e-3
    assert max(float(r["infeasibility"]) for r in rows) <= 1e-9
    summary = json.loads((compared / "summary.json").read_text())
    assert summary["methods"]["rm"]["feasible_iterates"] is True
    assert summary["methods"]["rm"]["time_to_gap"]["0.001"] is not None


def test_lp_solves_tiny_games_exactly_and_subgradient_is_infeasible(compared):
    summary = json.loads((compared / "summary.json").read_text())
    assert summary["methods"]["lp-highs"]["final_gap"] <= 1e-6
    with open(compared / "traces.csv") as fh:
        sub = [r for r in csv.DictReader(fh) if r["method"] == "subgradient"]
    assert max(float(r["infeasibility"]) for r in sub) > 0


def test_table_and_unknown_method(capsys, tmp_path):
    assert main(["compare", GAME, "--methods", "rm,warp-drive", "--out", str(tmp_path)]) == 2
    assert "unknown method" in capsys.readouterr().err


def test_out_of_memory_is_recorded_and_others_go_on(tmp_path, capsys):
    code = main(
        [
            "compare",
            GAME,
            "--methods",
            "lp-highs,rm",
            "--time-limit",
            "5",
            "--memory-limit",
            "0.05",
            "--out",
            str(tmp_path),
            "--json",
        ]
    )
    assert code == 2  # every run failed: the summary is printed and written, the exit code says so
    printed = json.loads(capsys.readouterr().out)
    assert printed["error"].startswith("2 run(s) failed: lp-highs on") and "lp-highs" in printed["methods"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    for run in summary["methods"].values():
        assert run["status"] in ("out_of_memory", "error") and run["error"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["/no/such/game.efg"], "no such file"),
        (["warp:speed=9"], "unknown game 'warp'"),
        (["kuhn:players=100"], "too large"),
        ([GAME, "--methods", ""], "no method to compare"),
        ([GAME, "--methods", ","], "no method to compare"),
        ([GAME, "--methods", "rm,warp-drive"], "unknown method 'warp-drive'"),
        ([GAME, "--time-limit", "0"], "--time-limit must be a positive number"),
        ([GAME, "--time-limit", "nan"], "--time-limit must be a positive number"),
        ([GAME, "--memory-limit", "-1"], "--memory-limit must be a positive number"),
        ([GAME, "--methods", "rm", "--step-size", "1e-3"], "configure a plain 'subgradient' run"),
        (["--preset", "paper", "--step-size", "1e-3"], "there is none among the methods"),
        ([GAME, "--methods", "subgradient", "--step-size", "-1"], "--step-size must be a positive number"),
        ([GAME, "--methods", "rm[local=rm9]"], "--local must be one of"),
        ([GAME, "--methods", "rm[warp=9]"], "unknown option 'warp'"),
        ([GAME, "--methods", "rm[local]"], "is not option=value"),
        (
            [GAME, "--methods", "rm[iterations=many]"],
            "iterations in 'rm[iterations=many]' must be an integer",
        ),
        ([GAME, "--methods", "lp-highs[local=rm+]"], "lp-highs does not use --local"),
        ([GAME, "--methods", "rm[local=rm+,local=prm+]"], "gives local twice"),
        ([GAME, "--methods", "rm,rm"], "lists a run twice"),
        ([GAME, "--methods", "rm[local=rm+"], "is not a method or METHOD[option=value,...]"),
    ],
)
def test_bad_compare_arguments_are_refused_before_anything_runs(capsys, tmp_path, argv, message):
    out = tmp_path / "out"
    code = main(["compare", *argv, "--out", str(out), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code != 0 and message in payload["error"], payload
    assert not out.exists()  # nothing spawned, nothing written


def test_unwritable_output_folder_is_refused_before_anything_runs(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code = main(["compare", GAME, "--out", str(blocker / "out"), "--json"])
    assert code != 0 and "cannot write to the output folder" in json.loads(capsys.readouterr().out)["error"]


def test_an_output_folder_the_system_will_not_create_is_one_line_before_anything_runs(
    capsys, tmp_path, monkeypatch
):
    """Where only creating it tells (root under ``/proc``: ``access`` says yes, ``mkdir`` no)."""
    import errno
    import os

    out = tmp_path / "out"
    makedirs = os.makedirs

    def refuse(path, *args, **kwargs):
        if os.fspath(path) != str(out):
            return makedirs(path, *args, **kwargs)
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)

    monkeypatch.setattr(os, "makedirs", refuse)
    code = main(["compare", GAME, "--out", str(out), "--json"])
    error = json.loads(capsys.readouterr().out)["error"]
    assert code == 2 and error == f"cannot create the output folder '{out}': No such file or directory"


def test_configurations_of_one_method_are_separate_runs(tmp_path, capsys):
    # The paper's configuration of rm beside today's default: two curves, two different runs.
    paper = "rm[local=rm+,averaging=linear,updates=alternating]"
    code = main(
        ["compare", GAME, "--methods", f"rm,{paper}", "--time-limit", "10", "--out", str(tmp_path), "--json"]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert list(summary["methods"]) == ["rm", paper]
    with open(tmp_path / "traces.csv") as fh:
        rows = list(csv.DictReader(fh))
    curves = {m: [(r["iteration"], r["gap"]) for r in rows if r["method"] == m] for m in ("rm", paper)}
    assert curves["rm"] and curves[paper] and curves["rm"] != curves[paper]
    for run in summary["methods"].values():
        assert run["status"] == "converged" and run["final_gap"] <= 1e-3


def test_the_paper_preset_runs_are_valid_configurations():
    from efce.experiments.cmd_compare import PAPER_METHODS
    from efce.experiments.compare import method_variant
    from efce.experiments.solve import validate_options

    configured = {entry: validate_options(*method_variant(entry)) for entry in PAPER_METHODS}
    paper = configured["rm[local=rm+,averaging=linear,updates=alternating]"]
    assert (paper["local"], paper["averaging"], paper["updates"]) == ("rm+", "linear", "alternating")
    assert configured["rm"]["local"] != "rm+"  # today's default differs from the paper's
    subgradient = configured["subgradient[start=random,step_size=1e-6]"]
    assert (subgradient["start"], subgradient["step_size"]) == ("random", 1e-6)


def test_a_preset_of_several_games_draws_them_side_by_side(tmp_path, capsys, monkeypatch):
    from efce.experiments import cmd_compare
    from efce.experiments.compare import load_comparison

    games = [GAME, "sheriff:max_bribe=2,max_items=1,rounds=2"]
    monkeypatch.setitem(cmd_compare.PRESETS, "default", games)
    code = main(
        [
            "compare",
            "--preset",
            "default",
            "--methods",
            "rm,lp-highs",
            "--time-limit",
            "10",
            "--out",
            str(tmp_path),
            "--json",
        ]
    )
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert list(result["games"]) == games
    for spec in games:
        rows, summary = load_comparison(tmp_path / cmd_compare._slug(spec))
        assert summary["game"] == spec and {r["method"] for r in rows} == {"rm", "lp-highs"}
    assert (tmp_path / "figure.png").stat().st_size > 10_000


def test_summary_says_what_done_means_and_what_compiling_took(compared):
    from efce.experiments.compare import summary_table

    summary = json.loads((compared / "summary.json").read_text())
    runs = summary["methods"]
    assert (runs["lp-highs"]["outcome"], runs["lp-cvxpy"]["outcome"]) == ("optimal", "optimal")
    assert runs["lp-highs"]["outcome_detail"] == "solved to optimality (HiGHS: Optimal)"
    assert runs["rm"]["outcome"] == "converged" and runs["subgradient"]["outcome"] in (
        "iteration_limit",
        "time_limit",
    )
    # The LPs warm up in their worker before the clock, rm before its run (Method.warm_up).
    assert runs["lp-highs"]["compile_seconds"] > 0 and runs["lp-cvxpy"]["compile_seconds"] > 0
    assert runs["rm"]["compile_seconds"] > 0 and runs["rm"]["result"]["compile_seconds"] > 0
    assert runs["lp-highs"]["compile_seconds"] == runs["lp-highs"]["result"]["compile_seconds"]
    table = summary_table(summary).splitlines()
    assert "compile s" in table[1] and "outcome" in table[1]
    highs = next(line for line in table if line.startswith("lp-highs"))
    assert f"{runs['lp-highs']['compile_seconds']:.2f}" in highs and "solved to optimality" in highs


REFUSAL = (
    "the EFCE LP of battleship:rows=3,cols=2 (29,872,285 variables, about 20.3 GiB) is too large: "
    "about 20.3 GiB, over the memory budget of 13.5 GiB. Not building it. Use the scaled-extension "
    "regret minimizer instead, or raise memory_budget."
)


@pytest.mark.parametrize(
    "run, outcome, detail",
    [
        (
            {"method": "lp-highs", "status": "converged", "result": {"highs_status": "Optimal"}},
            "optimal",
            "solved to optimality (HiGHS: Optimal)",
        ),
        (
            {"method": "lp-pdlp", "status": "converged", "result": {"tolerance": 1e-6}},
            "optimal",
            "solved to optimality (PDLP: gap and violation ≤ 1e-06)",
        ),
        (
            {"method": "lp-highs", "status": "time_limit", "result": {"seconds": 30.02}, "final_gap": None},
            "time_limit",
            "timed out after 30 s without a solution",
        ),
        (
            {"method": "lp-highs", "status": "out_of_memory", "error": REFUSAL, "result": None},
            "refused",
            "refused up front: needs about 20.3 GiB, over the memory budget of 13.5 GiB",
        ),
        (
            {
                "method": "lp-pdlp",
                "status": "out_of_memory",
                "error": "killed by the system (out of memory?)",
            },
            "out_of_memory",
            "out of memory: killed by the system (out of memory?)",
        ),
        (
            {"method": "rm[local=rm+]", "status": "converged", "result": {"iterations": 2287}},
            "converged",
            "converged: reached its target gap after 2,287 iterations",
        ),
        (
            {"method": "subgradient", "status": "iteration_limit", "result": {"iterations": 10000}},
            "iteration_limit",
            "iteration limit: 10,000 iterations",
        ),
        (
            {"method": "rm", "status": "time_limit", "error": "killed after 95 s", "result": None},
            "time_limit",
            "timed out: killed after 95 s",
        ),
    ],
)
def test_the_outcome_of_a_run_says_why(run, outcome, detail):
    from efce.experiments.compare import run_outcome

    assert run_outcome(run, 30.0) == (outcome, detail)
