"""The figures of ``efce compare``, checked by matplotlib's own geometry: every legend entry has
a visible point, no text overlaps other text, the data or the tick labels, nothing is cut, and
each run has one colour in every panel.

The figures come from the stored results of the paper preset (``docs/results/compare_paper``)
and of the README's command (``docs/results/compare_default``), drawn again, and from a real
``efce compare`` run on two tiny games.  The figures are taken where the code saves them
(``Figure.savefig``), so the checks see exactly what lands in the files.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys

import pytest
from matplotlib.figure import Figure

from efce.experiments.cli import main
from efce.experiments.cmd_compare import plot_games
from tests.paths import ROOT

from .figure_geometry import colour_problems, colours, drawn, legend_problems, text_problems

PAPER = sorted((ROOT / "docs" / "results" / "compare_paper").glob("battleship_*"))
README = sorted((ROOT / "docs" / "results" / "compare_default").glob("sheriff_*"))
TINY_GAMES = ["sheriff:max_bribe=1,max_items=2,rounds=2", "sheriff:max_bribe=2,max_items=1,rounds=2"]


class SavedFigures:
    """Every figure saved while it is active (``Figure.savefig`` wrapped): ``(file name,
    figure)`` in the order saved; the name without folder and without the temporary file's
    decoration (``.figure.png.x1y2.tmp`` → ``figure.png``)."""

    def __init__(self, monkeypatch):
        self.saved: list[tuple[str, Figure]] = []
        original = Figure.savefig

        def record(fig, fname, *args, **kwargs):
            name = getattr(fname, "name", fname)
            if isinstance(name, int):  # a file opened from a descriptor: its path, on Linux
                name = os.readlink(f"/proc/self/fd/{name}")
            name = re.sub(r"^\.(.+)\.[^.]+\.tmp$", r"\1", os.path.basename(str(name)))
            self.saved.append((name, fig))
            return original(fig, fname, *args, **kwargs)

        monkeypatch.setattr(Figure, "savefig", record)

    def all(self) -> list[Figure]:
        return [fig for _, fig in self.saved]


def all_problems(figures: list[Figure]) -> list[str]:
    problems = colour_problems(figures)
    for fig in figures:
        problems += text_problems(fig) + legend_problems(fig)
    return problems


@pytest.mark.parametrize("linear", [False, True], ids=["log time", "linear time"])
def test_the_paper_figure_redrawn_from_its_stored_traces_passes_the_geometry_checks(
    tmp_path, monkeypatch, linear
):
    assert len(PAPER) == 3, "the paper preset's results are missing from docs/results/compare_paper"
    saved = SavedFigures(monkeypatch)
    plot_games(
        [str(d) for d in PAPER], str(tmp_path / "figure.png"), **({"linear_time": True} if linear else {})
    )
    (fig,) = saved.all()
    assert len([ax for ax in fig.axes if ax.get_lines()]) == 3  # one row: a panel per game
    assert all_problems([fig]) == []


def test_the_readme_figure_redrawn_from_its_stored_traces_passes_the_geometry_checks(tmp_path, monkeypatch):
    assert len(README) == 2, "the README command's results are missing from docs/results/compare_default"
    saved = SavedFigures(monkeypatch)
    plot_games([str(d) for d in README], str(tmp_path / "figure.png"))
    assert all_problems(saved.all()) == []


def test_each_run_has_its_registry_colour_in_every_panel(tmp_path, monkeypatch):
    # The paper's three games have different runs with points (the LPs only on the first):
    # a colour cycle per panel gives the same run another colour from panel to panel.
    from efce.experiments.styles import style_of

    saved = SavedFigures(monkeypatch)
    plot_games([str(d) for d in PAPER], str(tmp_path / "figure.png"))
    drawn = colours(saved.all())
    assert {"rm", "lp-pdlp", "subgradient[start=random,step_size=1e-6]"} <= set(drawn)
    assert drawn == {label: {style_of(label).color} for label in drawn}


def _write_comparison(folder, game: str, runs: dict[str, dict], rows: list[dict]) -> None:
    folder.mkdir(parents=True)
    with open(folder / "traces.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["method", "iteration", "seconds", "gap", "infeasibility"])
        writer.writeheader()
        writer.writerows(rows)
    summary = {"game": game, "time_limit": 30.0, "memory_limit_gib": None, "methods": runs}
    (folder / "summary.json").write_text(json.dumps(summary))


def _run(method: str, status: str, final_gap=None, error=None, result=None) -> dict:
    return {
        "method": method,
        "status": status,
        "wall_seconds": 1.0,
        "peak_memory_mib": 100.0,
        "final_gap": final_gap,
        "time_to_gap": {"0.1": None, "0.01": None, "0.001": None},
        "feasible_iterates": None,
        "max_infeasibility": None,
        "result": result,
        "error": error,
    }


@pytest.fixture
def exact_lp_beside_rm(tmp_path):
    """The README's small game as its command draws it: rm falls to 9e-4 within 0.2 s, HiGHS
    solves the LP to 6e-16 in 0.036 s (below any sensible floor), subgradient stalls; and a
    second exact LP (gap 0) beside HiGHS."""
    rows = [
        {"method": "rm", "iteration": i, "seconds": 0.01 * i, "gap": 2.0 / i**1.6, "infeasibility": 1e-16}
        for i in range(1, 41)
    ]
    rows += [
        {"method": "lp-highs", "iteration": 832, "seconds": 0.036, "gap": 5.55e-16, "infeasibility": 1e-16}
    ]
    # A second exact LP next to the first: its label must find another place.
    rows += [{"method": "lp-cvxpy", "iteration": 12, "seconds": 0.037, "gap": 0.0, "infeasibility": 0.0}]
    rows += [
        {
            "method": "subgradient",
            "iteration": i,
            "seconds": 0.005 * i,
            "gap": 0.3 / i**0.2,
            "infeasibility": 0.02,
        }
        for i in range(1, 400, 7)
    ]
    runs = {
        "rm": _run("rm", "converged", rows[39]["gap"], result={"iterations": 40}),
        "lp-highs": _run("lp-highs", "converged", 5.55e-16, result={"highs_status": "Optimal"}),
        "lp-cvxpy": _run("lp-cvxpy", "converged", 0.0, result={"solver": "CLARABEL"}),
        "subgradient": _run("subgradient", "iteration_limit", 0.09, result={"iterations": 400}),
    }
    folder = tmp_path / "small"
    _write_comparison(folder, TINY_GAMES[0], runs, rows)
    return folder


def test_a_run_below_the_floor_is_drawn_on_it_labelled_with_its_gap(
    exact_lp_beside_rm, tmp_path, monkeypatch
):
    saved = SavedFigures(monkeypatch)
    plot_games([str(exact_lp_beside_rm)], str(tmp_path / "figure.png"))
    (fig,) = saved.all()
    renderer = drawn(fig)
    ax = next(ax for ax in fig.axes if ax.get_lines())
    bottom, top = ax.get_ylim()
    lp_points = [
        (x, y)
        for line in ax.get_lines()
        if line.get_label() == "lp-highs"
        for x, y in zip(*line.get_data(), strict=True)
    ]
    assert lp_points and all(bottom < y < top for _, y in lp_points)
    assert bottom > 1e-15  # the axis does not stretch down to the LP's round-off
    (label,) = [t for t in ax.texts if t.get_text() == "lp-highs: optimal, gap 6e-16"]
    assert [t for t in ax.texts if t.get_text() == "lp-cvxpy: optimal, gap 0"]
    # The label sits beside the point it names.
    marker = ax.transData.transform(lp_points[0])
    box = label.get_window_extent(renderer)
    assert box.x0 - 40 < marker[0] < box.x1 + 40 and box.y0 - 40 < marker[1] < box.y1 + 40
    assert all_problems([fig]) == []


def test_the_runtime_axis_is_logarithmic_unless_linear_time_is_asked(
    exact_lp_beside_rm, tmp_path, monkeypatch
):
    saved = SavedFigures(monkeypatch)
    plot_games([str(exact_lp_beside_rm)], str(tmp_path / "log.png"))
    code = main(["compare", "--replot", "--linear-time", "--out", str(exact_lp_beside_rm), "--json"])
    assert code == 0
    scales = [(name, {ax.get_xscale() for ax in fig.axes}) for name, fig in saved.saved]
    assert scales == [("log.png", {"log"}), ("convergence.png", {"linear"})]


@pytest.fixture(scope="module")
def tiny_comparison(tmp_path_factory):
    """``efce compare`` with the README's default methods on two tiny games (the default
    preset's path: a folder and ``convergence.png`` per game, ``figure.png`` for both)."""
    from efce.experiments import cmd_compare

    out = tmp_path_factory.mktemp("compare_figures")
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(cmd_compare.PRESETS, "default", TINY_GAMES)
        saved = SavedFigures(patch)
        code = main(["compare", "--time-limit", "10", "--out", str(out), "--json"])
    assert code == 0
    return out, saved


def test_the_figures_of_a_real_run_pass_the_geometry_checks(tiny_comparison):
    _, saved = tiny_comparison
    assert [name for name, _ in saved.saved] == ["convergence.png", "convergence.png", "figure.png"]
    assert all_problems(saved.all()) == []


def test_a_configuration_is_styled_apart_from_its_method_and_alike_in_any_order():
    from efce.experiments.styles import METHOD_STYLES, method_style, style_of

    paper = style_of("rm[local=rm+,averaging=linear,updates=alternating]")
    assert paper == style_of("rm[updates=alternating,averaging=linear,local=rm+]")
    assert paper == method_style("rm", {"--local": "rm+", "averaging": "linear", "updates": "alternating"})
    assert (paper.color, paper.linestyle) != (style_of("rm").color, style_of("rm").linestyle)
    assert paper.linestyle != "-" and paper.marker == style_of("rm").marker
    assert style_of("subgradient[step_size=1e-6]") == style_of("subgradient[step_size=0.000001]")
    assert style_of("subgradient[step_size=1e-6]") != style_of("subgradient[step_size=1e-3]")
    assert len({s.color for s in METHOD_STYLES.values()}) == len(METHOD_STYLES)


def test_styles_are_the_same_in_another_process():
    # A style from Python's salted hash() would differ between two runs of the command.
    runs = ["rm[local=rm+,averaging=linear,updates=alternating]", "subgradient[start=random]", "warp-drive"]
    code = (
        "import json, sys\nfrom efce.experiments.styles import style_of\n"
        "print(json.dumps([style_of(r).__dict__ for r in sys.argv[1:]]))"
    )
    seen = [
        subprocess.run(
            [sys.executable, "-c", code, *runs],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    ]
    assert seen[0] == seen[1]
    from efce.experiments.styles import style_of

    assert json.loads(seen[0]) == [style_of(r).__dict__ for r in runs]


def test_a_comparison_without_a_trace_says_why_each_run_drew_nothing_not_empty_panels(monkeypatch, tmp_path):
    from efce.experiments.figures import plot_convergence

    runs = {
        "cfr": {"method": "cfr", "status": "interrupted"},
        "lp-highs": {"method": "lp-highs", "status": "error", "error": "lp-highs solves two-player games"},
    }
    saved = SavedFigures(monkeypatch)
    plot_convergence([], {"game": "kuhn:players=3", "methods": runs}, str(tmp_path / "convergence.png"))
    (fig,) = saved.all()
    assert fig.axes == []
    texts = [t.get_text() for t in fig.texts]
    assert "kuhn:players=3" in texts and "No run reported a max deviation:" in texts
    assert texts[-1] == "cfr: interrupted by a stop request\nlp-highs: lp-highs solves two-player games"
    assert text_problems(fig) == []
