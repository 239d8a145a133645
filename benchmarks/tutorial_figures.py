"""The tutorial's figures (``docs/tutorial_figures/*.png``), drawn from the toolkit's own objects.

    python benchmarks/tutorial_figures.py [--out docs/tutorial_figures] [--only NAME,...]

Every figure shows what the tutorial prints next to it, so it is stable on any CPU like the text:

* ``game_trees.png`` — the game trees of the paper's Figures 1 and 2 (infosets joined by dashed
  lines, payoffs at the leaves);
* ``xi_chain.png`` — the chain of scaled extensions ``DECOMPOSE`` writes for Ξ of the Figure 2
  game, as a DAG whose columns are its levels;
* ``fill_grid.png`` — the fill-in grid of that chain (the paper's Figure 2, right);
* ``convergence.png`` — rm's max deviation and welfare per iteration on small Sheriff, against
  the LP's optimal EFCE welfare (iterations, not seconds, on the x axis);
* ``concepts.png`` — the optimal welfare of EFCE, EFCCE and NFCCE on small Sheriff (the LP).

The PNGs carry no date or version (``metadata={"Software": None}``) and are drawn with
matplotlib's default style and its bundled DejaVu fonts, so the same versions write the same
bytes; the docs site shows the committed files. Rerun this script after a change to what the
tutorial prints, and commit the PNGs with that change.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from collections.abc import Callable

import matplotlib
import matplotlib.style
import numpy as np
from matplotlib.figure import Figure

matplotlib.use("Agg")  # networkx's drawing functions go through pyplot: no window

#: Where the docs site finds the figures (``docs/tutorial.md`` links ``tutorial_figures/NAME``).
DEFAULT_OUT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "tutorial_figures"
)
#: The small Sheriff game of the tutorial's sections 11 and 14.
SMALL_SHERIFF = "sheriff:max_bribe=2,max_items=2,rounds=2"
DPI = 110
PLAYER_COLORS = ("tab:blue", "tab:orange", "tab:green")


def _new_figure(width: float, height: float) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


# ---------------------------------------------------------------------------------- game trees
def _tree_positions(game) -> dict[int, tuple[float, float]]:
    """Leaves evenly spaced left to right in depth-first order; an inner node centred over its
    children; depth downwards."""
    children: dict[int, list[int]] = {v: [] for v in range(game.num_nodes)}
    for v in range(1, game.num_nodes):
        children[int(game.parent[v])].append(v)
    for kids in children.values():
        kids.sort(key=lambda v: int(game.action[v]))
    depth = game.depth
    x: dict[int, float] = {}
    next_leaf = 0.0

    def place(v: int) -> float:
        nonlocal next_leaf
        if not children[v]:
            x[v] = next_leaf
            next_leaf += 1.0
        else:
            x[v] = float(np.mean([place(c) for c in children[v]]))
        return x[v]

    place(0)
    return {v: (x[v], -float(depth[v])) for v in range(game.num_nodes)}


def _draw_tree(ax, game, title: str) -> None:
    """One game tree: decision nodes coloured by player with their infoset's name, actions on
    the edges, dashed lines joining the nodes of one infoset, payoff vectors at the leaves."""
    import networkx as nx

    pos = _tree_positions(game)
    tree = nx.DiGraph()
    tree.add_nodes_from(range(game.num_nodes))
    tree.add_edges_from((int(game.parent[v]), v) for v in range(1, game.num_nodes))
    decision = [v for v in range(game.num_nodes) if game.player[v] >= 0]
    leaves = [v for v in range(game.num_nodes) if game.terminal_index[v] >= 0]
    nx.draw_networkx_edges(tree, pos, ax=ax, arrows=False, edge_color="0.4")
    edge_labels = {
        (int(game.parent[v]), v): game.action_labels(
            int(game.player[game.parent[v]]), int(game.infoset[game.parent[v]])
        )[int(game.action[v])]
        for v in range(1, game.num_nodes)
        if game.player[game.parent[v]] >= 0
    }
    nx.draw_networkx_edge_labels(
        tree, pos, edge_labels=edge_labels, ax=ax, font_size=8, bbox={"fc": "white", "ec": "none", "pad": 0.5}
    )
    nx.draw_networkx_nodes(
        tree,
        pos,
        nodelist=decision,
        ax=ax,
        node_size=420,
        node_color=[PLAYER_COLORS[int(game.player[v])] for v in decision],
    )
    nx.draw_networkx_labels(
        tree,
        pos,
        labels={v: game.infoset_label(int(game.player[v]), int(game.infoset[v])) for v in decision},
        ax=ax,
        font_size=9,
        font_color="white",
        font_weight="bold",
    )
    nx.draw_networkx_nodes(tree, pos, nodelist=leaves, ax=ax, node_size=40, node_color="0.2", node_shape="s")
    for v in leaves:
        payoff = game.payoffs[int(game.terminal_index[v])]
        ax.text(
            pos[v][0],
            pos[v][1] - 0.22,
            "\n".join(f"{p:g}" for p in payoff),
            ha="center",
            va="top",
            fontsize=8,
        )
    for player in range(game.num_players):  # infosets with two or more nodes
        members: dict[int, list[int]] = {}
        for v in decision:
            if game.player[v] == player:
                members.setdefault(int(game.infoset[v]), []).append(v)
        for nodes in members.values():
            if len(nodes) > 1:
                xs = [pos[v][0] for v in nodes]
                ax.plot(
                    [min(xs), max(xs)],
                    [pos[nodes[0]][1]] * 2,
                    linestyle="--",
                    color=PLAYER_COLORS[player],
                    zorder=0,
                )
    ax.set_title(title, fontsize=10)
    ax.set_ylim(min(y for _, y in pos.values()) - 0.9, 0.4)
    ax.axis("off")


def game_trees() -> Figure:
    """The game trees of the paper's Figures 1 and 2."""
    from matplotlib.lines import Line2D

    from efce import games

    fig = _new_figure(10.0, 3.6)
    left, right = fig.subplots(1, 2, width_ratios=[2.2, 1.0])
    _draw_tree(left, games.farina_fig1(), "farina-fig1 (the paper's Figure 1)")
    _draw_tree(right, games.farina_fig2(), "farina-fig2 (the paper's Figure 2)")
    handles = [
        Line2D(
            [],
            [],
            marker="o",
            linestyle="none",
            markersize=9,
            color=PLAYER_COLORS[p],
            label=f"Player {p + 1}",
        )
        for p in range(2)
    ]
    handles.append(Line2D([], [], linestyle="--", color="0.4", label="one infoset"))
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    return fig


# ---------------------------------------------------------------------------------- Ξ's chain
def _short_label(chain, k: int) -> str:
    """``h3: Δ2 → ξ[2, 3], ξ[2, 4]`` for a split, ``h6: {1} → ξ[∅, 1]`` for a sum."""
    description = chain.step_description(k)  # "◁ Δ2: (a, b) ∈ (s)·Δ2" or "◁ {1}: t = a + b"
    head, body = description[2:].split(": ", 1)
    if head == "{1}":
        target, sources = body.split(" = ", 1)
        return f"h{k + 1}: {target}\n= {sources}"
    targets = body.split(" ∈ ", 1)[0].strip("()")
    return f"h{k + 1}: {head}\n{targets}"


def xi_chain() -> Figure:
    """The chain of scaled extensions of Ξ for the Figure 2 game, one column per level."""
    from efce import games, polytopes
    from efce.polytopes.render import chain_dag, entry_label

    chain = polytopes.correlation_plan(games.farina_fig2())
    dag = chain_dag(chain)
    rank: dict[int, int] = {}
    pos = {}
    for node, data in dag.nodes(data=True):  # column = level; h1, h2, ... top to bottom
        level = int(data["level"])
        pos[node] = (float(level), -float(rank.get(level, 0)))
        rank[level] = rank.get(level, 0) + 1
    pos = {v: (x, y + (rank[int(x)] - 1) / 2) for v, (x, y) in pos.items()}  # centre each column
    fig = _new_figure(9.0, 3.9)
    ax = fig.add_subplot()
    kinds = {"root": "0.35", "simplex": "tab:blue", "singleton": "tab:green"}
    boxes = {}
    for node, data in dag.nodes(data=True):
        label = f"{{1}}\n{entry_label(chain, 0)} = 1" if node == "root" else _short_label(chain, int(node))
        boxes[node] = ax.text(
            *pos[node],
            label,
            ha="center",
            va="center",
            fontsize=8,
            color="white",
            bbox={"boxstyle": "round,pad=0.35", "fc": kinds[data["kind"]], "ec": "none"},
        )
    for u, v in dag.edges():  # arrows from box edge to box edge: step v reads what u filled
        ax.annotate(
            "",
            xy=pos[v],
            xytext=pos[u],
            arrowprops={
                "arrowstyle": "-|>",
                "color": "0.55",
                "shrinkA": 2,
                "shrinkB": 2,
                "patchA": boxes[u].get_bbox_patch(),
                "patchB": boxes[v].get_bbox_patch(),
            },
        )
    levels = sorted({data["level"] for _, data in dag.nodes(data=True)})
    for level in levels:
        xs = [pos[v][0] for v, d in dag.nodes(data=True) if d["level"] == level]
        ax.text(xs[0], max(rank.values()) / 2 + 0.1, f"level {level}", ha="center", fontsize=9, color="0.3")
    ax.set_xlim(-0.35, max(levels) + 0.35)
    ax.set_ylim(-max(rank.values()) / 2 - 0.1, max(rank.values()) / 2 + 0.4)
    ax.set_title(
        f"DECOMPOSE on farina-fig2: {chain.num_simplex_steps} splits (blue), "
        f"{chain.num_singleton_steps} sums (green), {chain.depth} levels",
        fontsize=10,
    )
    ax.axis("off")
    return fig


def fill_grid() -> Figure:
    """The fill-in grid of Ξ's chain for the Figure 2 game (the paper's Figure 2, right)."""
    from efce import games, polytopes
    from efce.polytopes.render import fill_grid_figure

    game = games.farina_fig2()
    fig = _new_figure(4.4, 2.8)
    fill_grid_figure(polytopes.correlation_plan(game), game, fig.add_subplot())
    return fig


# ---------------------------------------------------------------------------------- solvers
def _quiet(call: Callable):
    """``call()`` with the LP solver's banner kept off the terminal."""
    with contextlib.redirect_stdout(io.StringIO()):
        return call()


def convergence() -> Figure:
    """rm (PRM+, alternating, linear averaging: ``efce.solve``'s defaults) on small Sheriff: the
    max deviation and the welfare of the average plan at every iteration, and the LP's optimal
    EFCE welfare, which no EFCE exceeds."""
    import efce
    from efce.games import make_game
    from efce.solvers.methods.efce import solve_efce

    lp = _quiet(lambda: efce.solve(SMALL_SHERIFF, "lp-highs"))
    rm = solve_efce(make_game(SMALL_SHERIFF), check_every=1, target_gap=1e-3)  # a check per iteration
    its = np.array([row.iteration for row in rm.trace])
    gaps = np.array([row.gap for row in rm.trace])
    welfare = np.array([row.extra["welfare"] for row in rm.trace])
    fig = _new_figure(9.0, 3.4)
    ax_gap, ax_welfare = fig.subplots(1, 2)
    ax_gap.loglog(its, gaps, color="tab:blue", label="rm: max deviation of the average plan")
    ax_gap.axhline(1e-3, color="0.5", linestyle=":", label="target 1e-3")
    ax_gap.set_xlabel("iteration")
    ax_gap.set_ylabel("max deviation (payoff units)")
    ax_gap.legend(fontsize=8)
    ax_welfare.semilogx(its, welfare, color="tab:blue", label="rm: welfare of the average plan")
    ax_welfare.axhline(
        lp.info["welfare"],
        color="tab:red",
        linestyle="--",
        label=f"lp-highs: optimal EFCE welfare {lp.info['welfare']:.3f}",
    )
    ax_welfare.set_xlabel("iteration")
    ax_welfare.set_ylabel("welfare")
    ax_welfare.legend(fontsize=8, loc="lower right")
    fig.suptitle(f"{SMALL_SHERIFF}: rm {rm.status} after {rm.iterations} iterations", fontsize=10)
    return fig


def concepts() -> Figure:
    """The optimal welfare of each concept on small Sheriff (``lp-highs --concept``)."""
    import efce
    from efce.concepts import CONCEPTS

    values = [
        _quiet(lambda c=c: efce.solve(SMALL_SHERIFF, "lp-highs", concept=c)).info["welfare"] for c in CONCEPTS
    ]
    fig = _new_figure(4.8, 3.2)
    ax = fig.add_subplot()
    bars = ax.bar([c.upper() for c in CONCEPTS], values, color=["tab:blue", "tab:orange", "tab:green"])
    ax.bar_label(bars, labels=[f"{v:.3f}" for v in values], fontsize=9)
    ax.set_ylim(0, max(values) * 1.15)
    ax.set_ylabel("optimal social welfare")
    ax.set_title(f"{SMALL_SHERIFF}\nEFCE ⊆ EFCCE ⊆ NFCCE (lp-highs)", fontsize=9)
    return fig


#: Every figure of the tutorial: file name -> function drawing it.
FIGURES: dict[str, Callable[[], Figure]] = {
    "game_trees.png": game_trees,
    "xi_chain.png": xi_chain,
    "fill_grid.png": fill_grid,
    "convergence.png": convergence,
    "concepts.png": concepts,
}


def write(names: list[str], out: str) -> list[str]:
    """Draw ``names`` (keys of :data:`FIGURES`) into ``out``; returns the paths written."""
    from efce.games.resources.atomic import atomic_savefig

    os.makedirs(out, exist_ok=True)
    written = []
    # matplotlib's default style whatever the user's matplotlibrc says; no random ids in SVG.
    with matplotlib.style.context("default"), matplotlib.rc_context({"svg.hashsalt": "efce-tutorial"}):
        for name in names:
            path = os.path.join(out, name)
            atomic_savefig(FIGURES[name](), path, dpi=DPI, metadata={"Software": None})
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="folder to write into (default: %(default)s)")
    parser.add_argument("--only", default=",".join(FIGURES), help="comma-separated figure names")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        parser.error(f"unknown figure {', '.join(unknown)}; the figures are {', '.join(FIGURES)}")
    for path in write(names, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
