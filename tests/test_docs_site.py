"""The docs site as a reader sees it: the tutorial page shows every figure
``benchmarks/tutorial_figures.py`` draws, the built HTML carries the images, and the first page
says how to run the first example.

The site is built once per module, with the project's Sphinx configuration, from ``docs/``
itself, keeping only the first page and the tutorial (the API reference, which takes most of the
full build's minute, has no figure; the strict build of the whole site is its own check, see
``CONTRIBUTING.md``).
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

TUTORIAL = ROOT / "docs" / "tutorial.md"
FIGURE_FOLDER = ROOT / "docs" / "tutorial_figures"
#: ``![alt](tutorial_figures/NAME)`` in the tutorial's Markdown.
MARKDOWN_IMAGE = re.compile(r"!\[([^\]]+)\]\(tutorial_figures/([^)\s]+)\)")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def figure_script():
    """The module of ``benchmarks/tutorial_figures.py`` (a folder of scripts, not a package)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module("tutorial_figures")
    finally:
        sys.path.pop(0)


def referenced_figures() -> list[str]:
    return [name for _, name in MARKDOWN_IMAGE.findall(TUTORIAL.read_text())]


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    assert data[:8] == PNG_SIGNATURE, "not a PNG file"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    for module in ("sphinx", "myst_parser", "numpydoc", "pydata_sphinx_theme"):
        pytest.importorskip(module)
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-c",
            str(ROOT / ".sphinx"),
            "-q",
            "-b",
            "html",
            # Only the first page and the tutorial; the pages left out are the index's toctree
            # entries and the tutorial's links, which is all that this build then warns about.
            "-D",
            "exclude_patterns=results/**,api/**,guide.md,algorithms.md,results.md",
            "-D",
            "suppress_warnings=toc.excluded,myst.xref_missing",
            str(ROOT / "docs"),
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert not built.stderr.strip(), f"the build warned:\n{built.stderr[-3000:]}"
    return out


def test_tutorial_references_every_figure_the_script_draws_once():
    names = referenced_figures()
    assert sorted(names) == sorted(figure_script().FIGURES), (
        "docs/tutorial.md's images and benchmarks/tutorial_figures.py's FIGURES differ"
    )
    assert len(set(names)) == len(names), "an image is shown twice"


def test_committed_figures_are_the_referenced_ones_and_are_pngs():
    committed = sorted(p.name for p in FIGURE_FOLDER.iterdir())
    assert committed == sorted(referenced_figures()), "docs/tutorial_figures/ holds other files"
    for name in committed:
        width, height = png_size((FIGURE_FOLDER / name).read_bytes())
        assert width >= 300 and height >= 200, f"{name} is {width}x{height} pixels"


def test_built_tutorial_shows_every_figure(site: Path):
    html = (site / "tutorial.html").read_text()
    sources = re.findall(r'<img\b[^>]*\bsrc="([^"]+)"', html)
    shown = [Path(src).name for src in sources]
    assert sorted(shown) == sorted(figure_script().FIGURES)
    for src in sources:
        image = site / src
        assert image.is_file(), f"tutorial.html shows {src}, which the build did not write"
        assert image.stat().st_size > 0, f"{src} is empty"
        assert image.read_bytes() == (FIGURE_FOLDER / image.name).read_bytes(), (
            f"{src} is not the committed figure"
        )
    alts = re.findall(r'<img\b[^>]*\balt="([^"]*)"', html)
    assert len(alts) == len(sources) and all(alts), "an image without alt text"


def test_first_page_says_how_to_run_the_first_example_and_what_it_compiles(site: Path):
    text = re.sub(r"<[^>]+>", "", (site / "index.html").read_text())
    assert "efce solve farina-fig1 --method rm" in text
    assert "compile nothing" in text
    said = re.search(r"README.s comparison ends some\s+(\d+)\s+seconds later on an\s+empty cache", text)
    assert said, "the first page no longer says how much longer the README's comparison takes cold"
    assert abs(int(said.group(1)) - measured_readme_compile_seconds()) <= 10
    readme = re.sub(r"\s+", " ", (ROOT / "README.md").read_text())
    assert f"An empty numba cache adds some {said.group(1)} seconds to it" in readme


def measured_readme_compile_seconds() -> float:
    """Cold minus warm of the README's job on the newest commit measured in
    ``docs/results/first_run.md`` (the last row of its table of the README's job)."""
    table = (ROOT / "docs" / "results" / "first_run.md").read_text().split("the README's job.**")[1]
    rows = re.findall(r"^\| \w+ \| [\d.]+ s \| [\d.]+ s \| ([\d.]+) s \|$", table, re.MULTILINE)
    assert rows, "docs/results/first_run.md has no measured row of the README's job"
    return float(rows[-1])


FAST = ("game_trees.png", "xi_chain.png", "fill_grid.png")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=() if name in FAST else pytest.mark.slow)
        for name in ("game_trees.png", "xi_chain.png", "fill_grid.png", "convergence.png", "concepts.png")
    ],
)
def test_figure_script_redraws_the_committed_figure(name, tmp_path):
    """The script still draws each figure, at the committed size (the same bytes need the same
    matplotlib and FreeType, which CI's oldest and newest environments do not share)."""
    script = figure_script()
    assert script.main(["--out", str(tmp_path), "--only", name]) == 0
    drawn = (tmp_path / name).read_bytes()
    assert png_size(drawn) == png_size((FIGURE_FOLDER / name).read_bytes())


def test_figure_script_refuses_an_unknown_figure(capsys):
    with pytest.raises(SystemExit):
        figure_script().main(["--only", "no_such.png"])
    assert "unknown figure no_such.png" in capsys.readouterr().err
