"""Teaching views of chains of scaled extensions (Farina, Ling, Fang, Sandholm 2019).

* :func:`chain_text` — the chain in the paper's notation (section 3.1), one line per ``h``:
  ``{1} ◁h1 Δ2 ◁h2 Δ2 ◁h3 Δ2 ◁h4 Δ3`` then ``h1: x[∅] → (x[1], x[2])`` …
* :func:`fill_grid`, :func:`fill_grid_text`, :func:`fill_grid_figure` — the fill-in order of a
  correlation plan ξ as a ``|Σ1| × |Σ2|`` table, as in Figure 2 (right): cell ``(σ1, σ2)`` holds the
  phase (``level + 1``, so ``ξ[∅, ∅] = 1`` is phase 1) in which ``DECOMPOSE`` fills
  ``ξ[σ1, σ2]``; irrelevant pairs are empty.
* :func:`chain_dag` — the steps as a ``networkx`` DAG (``u → v`` when step ``v`` reads an entry
  filled by step ``u``).

These are for small, teaching-size chains; every view refuses or truncates huge inputs instead
of materializing per-entry Python objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .chain import SINGLETON, Chain

if TYPE_CHECKING:  # pragma: no cover
    import networkx as nx
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

    from efce.games.game import Game

MAX_DAG_STEPS = 200_000
MAX_GRID_CELLS = 4_000_000
MAX_ANNOTATED_CELLS = 2_500


# ---------------------------------------------------------------------------------- labels
def is_correlation_plan(chain: Chain) -> bool:
    """Correlation-plan chains (from :func:`polytopes.decompose.correlation_plan`) are named
    ``"Ξ of …"``."""
    return chain.name.startswith("Ξ")


def default_variable(chain: Chain) -> str:
    """``ξ`` for correlation plans, ``x`` for sequence-form (and other) chains."""
    return "ξ" if is_correlation_plan(chain) else "x"


def entry_label(chain: Chain, entry: int, var: str | None = None) -> str:
    """``x[σ]`` / ``ξ[σ1, σ2]`` for an entry (in fill order) of ``chain``."""
    var = default_variable(chain) if var is None else var
    if entry == 0 and chain.natural_of(0) < 0:
        return "1"
    text = str(chain.describe_entry(chain.natural_of(entry)))
    if is_correlation_plan(chain) and text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    return f"{var}[{text}]"


# ---------------------------------------------------------------------------------- text
def chain_text(chain: Chain, max_steps: int | None = 60, var: str | None = None) -> str:
    """The chain in the paper's notation, then one line per step with its ``h``.

    For Figure 1's Player-1 sequence form::

        {1} ◁h1 Δ2 ◁h2 Δ2 ◁h3 Δ2 ◁h4 Δ3
        h1: x[∅] → (x[1], x[2])
        h2: x[1] → (x[3], x[4])
        h3: x[1] → (x[5], x[6])
        h4: x[2] → (x[7], x[8], x[9])

    A simplex step ``◁h Δs`` splits ``h(x)`` among the ``s`` entries in parentheses; a singleton
    step ``◁h {1}`` sets one entry to ``h(x)`` (e.g. ``h6: ξ[1, 1] + ξ[2, 1] → ξ[∅, 1]``).
    Only the first ``max_steps`` steps are shown (``None``: all), followed by a
    ``… N more steps`` line.  ``var`` is the variable letter (default ``ξ`` for correlation
    plans, whose chain names start with ``Ξ``, else ``x``).
    """
    var = default_variable(chain) if var is None else var
    n = chain.num_steps
    shown = n if max_steps is None else max(0, min(n, int(max_steps)))
    header = ["{1}"]
    for k in range(shown):
        size = int(chain.target_ptr[k + 1] - chain.target_ptr[k])
        header.append(f"◁h{k + 1} " + ("{1}" if chain.kind[k] == SINGLETON else f"Δ{size}"))
    if shown < n:
        header.append("◁ …")
    rows = []
    for k in range(shown):
        src = chain.source[chain.source_ptr[k] : chain.source_ptr[k + 1]]
        h = " + ".join(entry_label(chain, int(e), var) for e in src)
        targets = [
            entry_label(chain, e, var) for e in range(int(chain.target_ptr[k]), int(chain.target_ptr[k + 1]))
        ]
        filled = targets[0] if chain.kind[k] == SINGLETON else "(" + ", ".join(targets) + ")"
        rows.append((f"h{k + 1}:", h, filled))
    w_name = max((len(r[0]) for r in rows), default=0)
    w_h = max((len(r[1]) for r in rows), default=0)
    lines = [" ".join(header)]
    lines += [f"{name:<{w_name}} {h:<{w_h}} → {filled}" for name, h, filled in rows]
    if shown < n:
        lines.append(f"… {n - shown} more steps")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- grid
def entry_levels(chain: Chain) -> np.ndarray:
    """Level of every entry (fill order): 0 for the constant entry, else its step's level."""
    out = np.zeros(chain.num_entries, dtype=np.int64)
    out[1:] = np.repeat(np.asarray(chain.level, dtype=np.int64), chain.step_size)
    return out


def fill_grid(chain: Chain, game: Game) -> tuple[list[str], list[str], np.ndarray]:
    """``(labels1, labels2, grid)`` with ``grid[σ1, σ2]`` the fill-in phase of ``ξ[σ1, σ2]``
    (``level + 1``: ``ξ[∅, ∅]`` is phase 1, as in Figure 2 (right)) and 0 for irrelevant pairs.

    ``chain`` must be the correlation-plan chain of ``game`` (entries = relevant pairs)."""
    from efce.games.relevant import relevant_pairs

    pairs = relevant_pairs(game)
    if chain.num_entries != len(pairs) or not is_correlation_plan(chain):
        raise ValueError(
            f"{chain.name!r} is not a correlation-plan chain of {game.name}: it has "
            f"{chain.num_entries} entries, the game has {len(pairs)} relevant pairs"
        )
    n1, n2 = pairs.num_sequences
    if n1 * n2 > MAX_GRID_CELLS:
        raise ValueError(
            f"the fill grid of {game.name} would have {n1} × {n2} = {n1 * n2:,} cells "
            f"(limit {MAX_GRID_CELLS:,}); it is a teaching view for small games"
        )
    grid = np.zeros((n1, n2), dtype=np.int64)
    idx = np.asarray(chain.natural_index, dtype=np.int64)
    grid[pairs.sigma1[idx], pairs.sigma2[idx]] = entry_levels(chain) + 1
    return list(game.sequence_labels(0)), list(game.sequence_labels(1)), grid


def fill_grid_text(chain: Chain, game: Game) -> str:
    """:func:`fill_grid` as an aligned table: rows σ1, columns σ2, ``·`` for irrelevant pairs.

    For Figure 2's game::

        σ1\\σ2  ∅  1  2  3  4
             ∅  1  4  4  4  4
             1  2  3  3  3  3
             2  2  3  3  3  3
    """
    labels1, labels2, grid = fill_grid(chain, game)
    cells = [[str(v) if v else "·" for v in row] for row in grid.tolist()]
    corner = "σ1\\σ2"
    w_row = max([len(corner)] + [len(s) for s in labels1])
    widths = [max([len(lab)] + [len(r[j]) for r in cells]) for j, lab in enumerate(labels2)]
    lines = [
        " ".join([f"{corner:>{w_row}}"] + [f"{lab:>{w}}" for lab, w in zip(labels2, widths, strict=True)])
    ]
    for lab, row in zip(labels1, cells, strict=True):
        lines.append(" ".join([f"{lab:>{w_row}}"] + [f"{c:>{w}}" for c, w in zip(row, widths, strict=True)]))
    return "\n".join(lines)


def fill_grid_figure(
    chain: Chain,
    game: Game,
    ax: Axes | None = None,
    *,
    annotate: bool | None = None,
    cmap: str = "viridis",
) -> Figure | SubFigure:
    """Draw :func:`fill_grid` (Figure 2, right): cells colored by fill-in phase with the phase
    number inside, irrelevant pairs grey and hatched, rows σ1 and columns σ2.

    Draws into ``ax`` if given, else into a new figure built on the Agg canvas (pyplot is not
    used, so no window opens and the global backend is untouched).  Returns the figure drawn on
    (``ax``'s own: a :class:`~matplotlib.figure.SubFigure` when ``ax`` lies in one).
    ``annotate`` (default: when at most 2,500 pairs are relevant) writes one number per relevant
    cell and nothing else as text annotations."""
    from matplotlib import colormaps
    from matplotlib.colors import BoundaryNorm, ListedColormap
    from matplotlib.patches import Rectangle

    labels1, labels2, grid = fill_grid(chain, game)
    if ax is None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        n1, n2 = grid.shape
        fig = Figure(figsize=(min(2.0 + 0.6 * n2, 16.0), min(1.5 + 0.5 * n1, 16.0)), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
    drawn_on = ax.figure  # the caller's ax may lie in a SubFigure
    phases = int(grid.max())
    base = colormaps[cmap]
    colors = base(np.linspace(0.15, 0.9, max(phases, 1)))
    norm = BoundaryNorm(np.arange(0.5, phases + 1.5), max(phases, 1))
    ax.imshow(
        np.ma.masked_equal(grid, 0),
        cmap=ListedColormap(colors),
        norm=norm,
        interpolation="nearest",
        aspect="auto",
    )
    relevant = grid > 0
    for i, j in zip(*np.nonzero(~relevant), strict=True):
        ax.add_patch(
            Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="0.85", edgecolor="0.6", hatch="//", linewidth=0.0)
        )
    if annotate is None:
        annotate = int(relevant.sum()) <= MAX_ANNOTATED_CELLS
    if annotate:
        for i, j in zip(*np.nonzero(relevant), strict=True):
            v = int(grid[i, j])
            dark = colors[v - 1][:3] @ np.array([0.299, 0.587, 0.114]) < 0.5
            ax.text(j, i, str(v), ha="center", va="center", color="white" if dark else "black")
    ax.set_xticks(np.arange(grid.shape[1]), labels=labels2)
    ax.set_yticks(np.arange(grid.shape[0]), labels=labels1)
    ax.set_xticks(np.arange(grid.shape[1] + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(grid.shape[0] + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xlabel("σ2")
    ax.set_ylabel("σ1")
    ax.set_title(f"Fill-in order of ξ ({game.name})", fontsize="medium", pad=10)
    return drawn_on


# ---------------------------------------------------------------------------------- DAG
def chain_dag(chain: Chain) -> nx.DiGraph:
    """The steps of ``chain`` as a DAG.

    Nodes: ``"root"`` (the constant entry, level 0) and one node ``k`` per step (0-based, step
    ``h{k+1}``), with attributes ``kind`` (``"simplex"``/``"singleton"``; ``"root"`` for the root),
    ``size`` (entries filled), ``level`` and ``label`` (:meth:`~efce.polytopes.chain.Chain.step_description`).
    Edges ``u → v`` when step ``v``'s ``h`` reads an entry filled by ``u``, with attribute
    ``entries``: how many of ``v``'s source entries ``u`` filled.

    The edge list comes from array operations (``entry_step`` of every source slot); chains with
    more than 200,000 steps are refused."""
    import networkx as nx

    n = chain.num_steps
    if n > MAX_DAG_STEPS:
        raise ValueError(
            f"chain_dag is a teaching view: {chain.name!r} has {n:,} steps (limit {MAX_DAG_STEPS:,})"
        )
    chain.validate()
    src_step = chain.entry_step[chain.source]  # -1 = root
    dst_step = chain.source_step
    key = (src_step + 1) * n + dst_step
    uniq, counts = np.unique(key, return_counts=True)
    u = uniq // n - 1
    v = uniq % n if n else uniq
    g = nx.DiGraph(name=chain.name)
    g.add_node("root", kind="root", size=1, level=0, label=f"{{1}}: {entry_label(chain, 0)} = 1")
    kinds = np.where(chain.kind == SINGLETON, "singleton", "simplex")
    g.add_nodes_from(
        (k, {"kind": str(kinds[k]), "size": int(s), "level": int(lv), "label": chain.step_description(k)})
        for k, (s, lv) in enumerate(
            zip(chain.step_size.tolist(), np.asarray(chain.level).tolist(), strict=True)
        )
    )
    g.add_edges_from(
        ("root" if a < 0 else a, b, {"entries": c})
        for a, b, c in zip(u.tolist(), v.tolist(), counts.tolist(), strict=True)
    )
    return g


__all__ = [
    "chain_text",
    "fill_grid",
    "fill_grid_text",
    "fill_grid_figure",
    "chain_dag",
    "entry_label",
    "entry_levels",
    "default_variable",
    "is_correlation_plan",
]
