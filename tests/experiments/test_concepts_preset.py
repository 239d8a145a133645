"""``efce compare --preset concepts`` as committed in ``docs/results/compare_concepts``: per game
and concept both LPs (PDLP and Clarabel's interior-point method) and rm's welfare bisection, the
exact optima ordered EFCE ≤ EFCCE ≤ NFCCE, rm's certified upper end above each exact optimum,
and the figure's text clear of other text and data (the geometry check of the other
comparison figures)."""

from __future__ import annotations

import json

import pytest

from efce.concepts import CONCEPTS
from efce.experiments.concepts import concept_rows, concepts_figure, concepts_table
from tests.paths import ROOT

from .figure_geometry import text_problems

FOLDERS = sorted((ROOT / "docs" / "results" / "compare_concepts").glob("*/summary.json"))


@pytest.fixture(scope="module")
def summaries() -> list[dict]:
    assert len(FOLDERS) == 2, "the concepts preset's results are missing from docs/results/compare_concepts"
    return [json.loads(path.read_text()) for path in FOLDERS]


def _by_name(summary: dict) -> dict[tuple[str, str], dict]:
    return {(row["concept"], row["name"]): row for row in concept_rows(summary)}


def test_every_concept_has_both_lps_and_rm(summaries):
    for summary in summaries:
        rows = _by_name(summary)
        for concept in CONCEPTS:
            runs = {(concept, n) for n in ("lp-pdlp", "lp-cvxpy (clarabel)", "rm")}
            assert runs <= set(rows), summary["game"]
        assert "lp-cvxpy (clarabel)" in concepts_table([summary])


def test_the_interior_point_optima_are_ordered_and_below_rms_certified_upper_ends(summaries):
    """Clarabel's optimum is exact to about 1e-8, so the inclusions EFCE ⊆ EFCCE ⊆ NFCCE order
    its three values, and rm's upper end, which no equilibrium of the concept exceeds, lies
    above each."""
    for summary in summaries:
        rows = _by_name(summary)
        optimum = {}
        for concept in CONCEPTS:
            lp = rows[(concept, "lp-cvxpy (clarabel)")]
            assert lp["status"] == "converged", (summary["game"], concept)
            optimum[concept] = lp["welfare"][0]
            rm = rows[(concept, "rm")]
            assert rm["status"] == "converged" and rm["welfare"][1] - rm["welfare"][0] <= 1e-2
            assert rm["welfare"][1] >= optimum[concept] - 1e-6, (summary["game"], concept)
        assert optimum["efce"] <= optimum["efcce"] + 1e-6 <= optimum["nfcce"] + 2e-6, summary["game"]


def test_the_concepts_figure_has_no_overlapping_text_and_a_legend_entry_per_run(summaries):
    fig = concepts_figure(summaries)
    assert text_problems(fig) == []
    labels = {t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()}
    assert {"lp-pdlp", "lp-cvxpy (clarabel)", "rm"} <= labels
