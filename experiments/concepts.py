"""``efce compare --preset concepts``: the three solution concepts side by side.

Per game and concept (:mod:`efce.concepts`) the preset runs the LP of the concept's optimal
welfare twice, by a first-order method (``lp-pdlp``, the README job's LP) and by an
interior-point method (``lp-cvxpy`` with Clarabel, which solves full Sheriff's coarse LPs in
minutes where PDLP needs up to ten, docs/results/lp_baseline.md), and ``rm --objective
welfare`` (the bisection's certified interval), each in its own process through
:func:`~.compare.compare`, and reports per game:

* the optimal welfare of each concept — the LPs' optima and rm's interval — where the
  inclusions EFCE ⊆ EFCCE ⊆ NFCCE show as a non-decreasing row;
* each run's runtime (the solver call or the bisection, compiling and model setup excluded, as
  in every comparison).

The table is :func:`concepts_table`, the figure ``concepts.png`` :func:`plot_concepts`: a welfare
panel and a runtime panel per game, in the one style per run of :mod:`experiments.styles`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from efce.concepts import CONCEPTS
from efce.games.resources.atomic import atomic_savefig

from .compare import method_variant
from .styles import style_of

if TYPE_CHECKING:  # annotations only: matplotlib is imported when the figure is drawn
    from matplotlib.figure import Figure

#: The runs of the preset: per concept the LP by PDLP and by Clarabel, and rm's welfare bisection.
CONCEPT_METHODS = tuple(
    run
    for c in CONCEPTS
    for run in (
        f"lp-pdlp[concept={c}]",
        f"lp-cvxpy[concept={c},lp_solver=clarabel]",
        f"rm[concept={c},objective=welfare]",
    )
)


def takes_concept(entry: str) -> bool:
    """Whether the method of a compared run (``rm``, ``lp-highs[...]``) takes ``--concept``."""
    from .solve import METHODS

    method, _ = method_variant(entry)
    return method in METHODS and "concept" in METHODS[method].defaults


def concept_rows(summary: dict) -> list[dict]:
    """Per run of one game's comparison: its method, its name in the table (``lp-cvxpy``'s with
    its solver), concept, the welfare it found (an LP's optimum as ``[w, w]``, rm's certified
    interval, None without a result) and its seconds."""
    rows = []
    for label, run in summary.get("methods", {}).items():
        method, options = method_variant(label)
        result = run.get("result") or {}
        concept = result.get("concept") or options.get("concept") or "efce"
        interval = result.get("welfare_interval")
        if interval is None and result.get("welfare") is not None and run.get("status") == "converged":
            interval = [result["welfare"], result["welfare"]]
        rows.append(
            {
                "run": label,
                "method": method,
                "name": f"{method} ({options['lp_solver']})" if "lp_solver" in options else method,
                "concept": concept,
                "welfare": interval,
                "seconds": result.get("seconds"),
                "status": run.get("status"),
            }
        )
    return rows


def concepts_table(summaries: list[dict]) -> str:
    """Per game, per concept: the LPs' optimal welfare and rm's interval, with their seconds."""
    lines = []
    for summary in summaries:
        rows = concept_rows(summary)
        lines.append(f"game: {summary.get('game', '')}")
        head = f"{'concept':<9}{'method':<20}{'welfare':>28}{'seconds':>10}  status"
        lines += [head, "-" * len(head)]
        for concept in CONCEPTS:
            for row in (r for r in rows if r["concept"] == concept):
                w = row["welfare"]
                text = "—" if w is None else f"{w[0]:.6f}" if w[0] == w[1] else f"[{w[0]:.6f}, {w[1]:.6f}]"
                seconds = "—" if row["seconds"] is None else f"{row['seconds']:.1f}"
                lines.append(f"{concept:<9}{row['name']:<20}{text:>28}{seconds:>10}  {row['status']}")
        lines.append("")
    lines.append("welfare: an LP's optimum; rm's certified interval (--objective welfare, width ≤ 1e-2)")
    return "\n".join(lines)


def concepts_figure(summaries: list[dict]) -> Figure:
    """Per game two panels: each concept's optimal welfare (an LP's point, rm's interval as a
    bar) and each run's seconds (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.4 * 2, 3.2 * max(len(summaries), 1)), layout="constrained")
    axes = fig.subplots(max(len(summaries), 1), 2, squeeze=False)
    names = list(CONCEPTS)
    for (ax_w, ax_t), summary in zip(axes, summaries, strict=False):
        rows = concept_rows(summary)
        # One series per name (two lp-cvxpy solvers are two), styled by its method.
        names_drawn = sorted({r["name"] for r in rows})
        for k, name in enumerate(names_drawn):
            shift = (k - (len(names_drawn) - 1) / 2) * 0.15
            for row in (r for r in rows if r["name"] == name):
                style = style_of(row["method"]).line_kwargs()
                x = names.index(row["concept"]) + shift
                if row["welfare"] is not None:
                    lo, hi = row["welfare"]
                    ax_w.errorbar(
                        x,
                        (lo + hi) / 2,
                        yerr=[[(hi - lo) / 2], [(hi - lo) / 2]],
                        capsize=4,
                        color=style["color"],
                        marker=style["marker"],
                        linestyle="none",
                        markerfacecolor=style["markerfacecolor"],
                        markeredgecolor=style["markeredgecolor"],
                        label=row["name"] if row["concept"] == names[0] else None,
                    )
                if row["seconds"] is not None:
                    ax_t.bar(x, row["seconds"], width=0.14, color=style["color"])
        for ax in (ax_w, ax_t):
            ax.set_xticks(range(len(names)), [n.upper() for n in names])
            ax.set_xlim(-0.6, len(names) - 0.4)
        ax_w.set_title(f"{summary.get('game', '')}: optimal welfare", fontsize=10, wrap=True)
        ax_w.set_ylabel("welfare")
        ax_t.set_title("runtime (s)", fontsize=10)
        ax_t.set_yscale("log")
        ax_w.legend(fontsize=8, loc="best")
    return fig


def plot_concepts(summaries: list[dict], path: str) -> None:
    """Write ``concepts.png`` (:func:`concepts_figure`).

    Raises
    ------
    OSError
        The file cannot be written.
    """
    atomic_savefig(concepts_figure(summaries), path, dpi=120)
