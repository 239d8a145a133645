"""Teaching views of chains: paper notation, Figure 2 (right) fill grid, step DAG."""

from __future__ import annotations

import re

import networkx as nx
import numpy as np
import pytest
from matplotlib.figure import Figure

from efce.games.generators.figures import farina_fig1, farina_fig2
from efce.games.relevant import relevant_pairs
from efce.polytopes.chain import SIMPLEX, SINGLETON, Chain
from efce.polytopes.decompose import correlation_plan
from efce.polytopes.render import (
    MAX_DAG_STEPS,
    chain_dag,
    chain_text,
    fill_grid,
    fill_grid_figure,
    fill_grid_text,
)
from efce.polytopes.sequence_form import sequence_form


@pytest.fixture(scope="module")
def fig1_p1():
    game = farina_fig1()
    return sequence_form(game.sequences(0), game.sequence_labels(0))


@pytest.fixture(scope="module")
def fig2():
    game = farina_fig2()
    return game, correlation_plan(game)


def long_chain(num_steps: int) -> Chain:
    """A path of Δ2 splits: step k splits the first entry filled by step k-1."""
    target_ptr = 1 + 2 * np.arange(num_steps + 1, dtype=np.int64)
    source = np.r_[0, target_ptr[:-2]].astype(np.int64)
    return Chain(
        kind=np.full(num_steps, SIMPLEX, dtype=np.int8),
        target_ptr=target_ptr,
        source_ptr=np.arange(num_steps + 1, dtype=np.int64),
        source=source,
        entry_index=np.arange(int(target_ptr[-1]), dtype=np.int64),
        name="path",
    )


# ------------------------------------------------------------------ chain text
def test_fig1_sequence_form_notation_and_h(fig1_p1):
    assert fig1_p1.notation() == "{1} ◁ Δ2 ◁ Δ2 ◁ Δ2 ◁ Δ3"
    text = chain_text(fig1_p1)
    lines = text.splitlines()
    assert lines[0] == "{1} ◁h1 Δ2 ◁h2 Δ2 ◁h3 Δ2 ◁h4 Δ3"
    assert lines[1:] == [
        "h1: x[∅] → (x[1], x[2])",
        "h2: x[1] → (x[3], x[4])",
        "h3: x[1] → (x[5], x[6])",
        "h4: x[2] → (x[7], x[8], x[9])",
    ]


def test_variable_letter_parameter(fig1_p1):
    assert "h1: y[∅] → (y[1], y[2])" in chain_text(fig1_p1, var="y")


def test_fig2_correlation_plan_text(fig2):
    _, chain = fig2
    text = chain_text(chain)
    assert text.splitlines()[0] == "{1} ◁h1 Δ2 ◁h2 Δ2 ◁h3 Δ2 ◁h4 Δ2 ◁h5 Δ2 ◁h6 {1} ◁h7 {1} ◁h8 {1} ◁h9 {1}"
    assert re.search(r"^h1: ξ\[∅, ∅\] +→ \(ξ\[1, ∅\], ξ\[2, ∅\]\)$", text, re.M)
    for s2 in "1234":
        assert re.search(rf"^h\d+: ξ\[1, {s2}\] \+ ξ\[2, {s2}\] → ξ\[∅, {s2}\]$", text, re.M)
    assert re.search(r"^h\d+: ξ\[1, ∅\] +→ \(ξ\[1, 1\], ξ\[1, 2\]\)$", text, re.M)
    assert re.search(r"^h\d+: ξ\[2, ∅\] +→ \(ξ\[2, 3\], ξ\[2, 4\]\)$", text, re.M)


def test_long_chain_truncated():
    chain = long_chain(100)
    lines = chain_text(chain, max_steps=10).splitlines()
    assert len(lines) == 1 + 10 + 1
    assert lines[-1] == "… 90 more steps"
    assert lines[0].endswith("◁h10 Δ2 ◁ …") and "h11" not in lines[0]
    assert lines[1].startswith("h1:  x[0]") and lines[10].startswith("h10: x[17]")
    full = chain_text(chain, max_steps=None).splitlines()
    assert len(full) == 101 and "more steps" not in full[-1]
    assert chain_text(chain).splitlines()[-1] == "… 40 more steps"  # default max_steps=60


# ------------------------------------------------------------------ fill grid
FIG2_GRID = [[1, 4, 4, 4, 4], [2, 3, 3, 3, 3], [2, 3, 3, 3, 3]]


def test_fig2_fill_grid_matches_paper(fig2):
    game, chain = fig2
    labels1, labels2, grid = fill_grid(chain, game)
    assert labels1 == ["∅", "1", "2"]
    assert labels2 == ["∅", "1", "2", "3", "4"]
    assert grid.tolist() == FIG2_GRID
    assert fill_grid_text(chain, game).splitlines() == [
        "σ1\\σ2 ∅ 1 2 3 4",
        "    ∅ 1 4 4 4 4",
        "    1 2 3 3 3 3",
        "    2 2 3 3 3 3",
    ]


def test_fig1_fill_grid_marks_irrelevant_pairs():
    game = farina_fig1()
    chain = correlation_plan(game)
    _, _, grid = fill_grid(chain, game)
    pairs = relevant_pairs(game)
    relevant = np.zeros(grid.shape, bool)
    relevant[pairs.sigma1, pairs.sigma2] = True
    assert np.array_equal(grid > 0, relevant)
    assert grid[0, 0] == 1 and grid.max() == chain.depth + 1
    text = fill_grid_text(chain, game)
    assert text.count("·") == int((~relevant).sum())


def test_fill_grid_rejects_other_chains(fig1_p1):
    with pytest.raises(ValueError):
        fill_grid(fig1_p1, farina_fig1())
    with pytest.raises(ValueError):
        fill_grid(correlation_plan(farina_fig2()), farina_fig1())


def test_fill_grid_figure(fig2):
    game, chain = fig2
    fig = fill_grid_figure(chain, game)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert len(ax.texts) == 15  # one number per relevant pair
    assert sorted(t.get_text() for t in ax.texts) == sorted(str(v) for row in FIG2_GRID for v in row)
    assert ax.get_xlabel() == "σ2" and ax.get_ylabel() == "σ1"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["∅", "1", "2", "3", "4"]


def test_fill_grid_figure_hatches_irrelevant_and_uses_given_axes():
    game = farina_fig1()
    chain = correlation_plan(game)
    fig = Figure()
    ax = fig.add_subplot()
    assert fill_grid_figure(chain, game, ax=ax) is fig
    n_rel = len(relevant_pairs(game))
    assert len(ax.texts) == n_rel
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == 10 * 5 - n_rel


# ------------------------------------------------------------------ DAG
def test_fig2_dag(fig2):
    _, chain = fig2
    dag = chain_dag(chain)
    assert nx.is_directed_acyclic_graph(dag)
    assert dag.number_of_nodes() == chain.num_steps + 1 == 10
    assert dag.number_of_edges() == 1 + 4 + 4 * 2
    assert list(dag.successors("root")) == [0]
    assert nx.topological_sort(dag).__next__() == "root"
    # the entry -> step that fills it, computed independently of chain.entry_step
    filled_by = {}
    for k in range(chain.num_steps):
        for e in range(int(chain.target_ptr[k]), int(chain.target_ptr[k + 1])):
            filled_by[e] = k
    singletons = [k for k in range(chain.num_steps) if chain.kind[k] == SINGLETON]
    assert len(singletons) == 4
    for k in singletons:
        attrs = dag.nodes[k]
        assert attrs["kind"] == "singleton" and attrs["size"] == 1 and attrs["level"] == 3
        assert attrs["label"] == chain.step_description(k)
        sources = chain.source[chain.source_ptr[k] : chain.source_ptr[k + 1]].tolist()
        assert len(sources) == 2
        expected = {filled_by[e] for e in sources}
        assert len(expected) == 2
        assert set(dag.predecessors(k)) == expected
        assert all(dag.nodes[u]["kind"] == "simplex" and dag.nodes[u]["level"] == 2 for u in expected)
        assert all(dag.edges[u, k]["entries"] == 1 for u in expected)
    for u, v in dag.edges:
        assert dag.nodes[u]["level"] < dag.nodes[v]["level"]


def test_dag_counts_entries_per_edge():
    game = farina_fig1()
    chain = correlation_plan(game)
    dag = chain_dag(chain)
    assert nx.is_directed_acyclic_graph(dag)
    assert sum(d["entries"] for _, _, d in dag.edges(data=True)) == len(chain.source)
    # e.g. ξ[2, y1] = ξ[7, y1] + ξ[8, y1] + ξ[9, y1] reads three entries filled by three splits
    for k in range(chain.num_steps):
        n_src = int(chain.source_ptr[k + 1] - chain.source_ptr[k])
        assert sum(dag.edges[u, k]["entries"] for u in dag.predecessors(k)) == n_src


def test_dag_path_and_size_limit():
    dag = chain_dag(long_chain(50))
    assert nx.is_directed_acyclic_graph(dag) and dag.number_of_edges() == 50
    assert nx.dag_longest_path_length(dag) == 50
    with pytest.raises(ValueError, match="200,000"):
        chain_dag(long_chain(MAX_DAG_STEPS + 1))
