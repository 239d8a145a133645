"""The figures of ``efce compare``: max deviation against runtime, as in Figure 3 of Farina,
Ling, Fang, Sandholm 2019.

* ``convergence.png`` (one game): the max deviation panel and the iterates' infeasibility
  (the largest violation of Definition 3) beside it — :func:`plot_convergence`;
* ``figure.png`` (several games, ``--preset``): one max-deviation panel per game in one row —
  :func:`plot_games`.

What every figure guarantees:

* **One style per run** (:func:`experiments.styles.style_of`): a method has the same colour,
  marker and line in every panel, figure and run; the legend is one, below the panels.
* **Every run is visible.**  The y-axis ends at a *floor* one decade below the smallest gap that
  is not numerically exact (:func:`gap_floor`); a gap below it (an LP solved to 6e-16, a gap of
  exactly 0) is drawn on the floor with a large marker and labelled with its value ("lp-highs:
  optimal, gap 6e-16") where the label fits without touching other text or data, else in the
  notes under the panel.  A run without a single point (refused, out of memory, timed out
  before a solution) is named in the notes with the reason.
* **Runtime on a log axis** by default, so a run of 0.05 s and one of 600 s are both readable;
  ``linear_time=True`` (``efce compare --linear-time``) draws the paper's linear axis.
* **No text over other text, the data or the tick labels, nothing cut**: titles are wrapped to
  their panel, the notes and the legend sit below the axes (constrained layout makes room), and
  the only text inside an axes is a floor label, placed where it touches nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from efce.games.resources.atomic import atomic_savefig

from .compare import load_comparison, price_of_dynamics_note, run_outcome
from .styles import style_of

if TYPE_CHECKING:  # annotations only: matplotlib is imported when a figure is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: A gap at or below this is numerically exact (an LP's optimum, an exact equilibrium): it never
#: sets the floor of a panel, it is drawn on the floor.
EXACT_GAP = 1e-9
#: Infeasibility below this (0 for the regret minimizers' feasible iterates) is drawn here.
INFEASIBILITY_FLOOR = 1e-17
#: Room below the floor and above the highest point, in decades of the log y-axis.
FLOOR_MARGIN_DECADES = 0.6
TOP_MARGIN_DECADES = 0.25
#: Room left and right of the points on the log time axis, in decades.
TIME_MARGIN_DECADES = 0.15
#: Resolution of the figures: drawn and saved at the same one, so the layout checked on the
#: figure is the layout in the file.
DPI = 120
#: Size of one panel with its labels, in inches.
PANEL_WIDTH = 5.4
PANEL_HEIGHT = 3.4
TITLE_SIZE = 10
NOTE_SIZE = 8
LABEL_SIZE = 8
LEGEND_SIZE = 9
#: Width of a character in units of the font size, an upper bound for the fonts used (wrapping
#: by it never makes a line wider than its panel).
CHAR_WIDTH = 0.58


def gap_floor(gaps: Iterable[float]) -> float:
    """The lowest max deviation a panel shows: one decade below the decade of the smallest gap
    above :data:`EXACT_GAP` (``9.2e-4`` → ``1e-5``), or :data:`EXACT_GAP` when every gap is
    numerically exact.  Lower gaps are drawn on the floor and labelled with their value."""
    visible = [g for g in gaps if math.isfinite(g) and g > EXACT_GAP]
    if not visible:
        return EXACT_GAP
    return 10.0 ** (math.floor(math.log10(min(visible))) - 1)


def gap_text(gap: float) -> str:
    """``5.55e-16`` → ``"6e-16"``; ``0`` → ``"0"``."""
    return "0" if gap == 0 else f"{gap:.0e}"


def wrap_items(text: str, width: int, separator: str = ",") -> str:
    """``text`` in lines of at most ``width`` characters, broken after ``separator`` (a game
    spec at its commas) or, failing that, at spaces; a longer piece is cut."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        pieces = [p + separator for p in paragraph.split(separator)]
        pieces[-1] = pieces[-1][: -len(separator)]
        for piece in pieces:
            for word in _words(piece, width):
                if line and len(line) + len(word) > width:
                    lines.append(line.rstrip())
                    line = word.lstrip()
                else:
                    line += word
        lines.append(line.rstrip())
    return "\n".join(lines)


def _words(piece: str, width: int) -> list[str]:
    if len(piece) <= width:
        return [piece]
    words = [w + " " for w in piece.split(" ")]
    words[-1] = words[-1][:-1]
    out = []
    for word in words:
        out += [word[i : i + width] for i in range(0, len(word), width)] or [word]
    return out


def _chars(width_inches: float, size: float) -> int:
    return max(12, int(width_inches * 72 / (CHAR_WIDTH * size)))


@dataclass
class FloorPoint:
    """A point drawn on a panel's floor (its gap is below the floor): the run's label, where it
    lies on the time axis, its gap and the word that labels it."""

    label: str
    x: float
    gap: float
    word: str


@dataclass
class GapPanel:
    """What :func:`draw_gap_panel` drew on one panel and the figure still places: the axes, the
    floor of the gap axis and the points drawn on it, and the panel's notes."""

    ax: Any
    floor: float | None = None
    floored: list[FloorPoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unplaced: list[str] = field(default_factory=list)
    note_artist: Any = None


def _run_order(rows: list[dict], runs: dict) -> list[str]:
    return list(dict.fromkeys([*runs, *(r["method"] for r in rows)]))


def _floor_word(run: dict | None) -> str:
    if not run:
        return "final"
    code = run.get("outcome") or run_outcome(run)[0]
    return code.replace("_", " ")


def _time_limits(xs: list[float], linear: bool) -> tuple[float, float]:
    if linear:
        right = max(xs, default=1.0)
        return 0.0, (right * 1.04 if right > 0 else 1.0)
    positive = [x for x in xs if x > 0] or [1.0]
    low, high = min(positive), max(positive)
    margin = 10.0**TIME_MARGIN_DECADES
    return low / margin, high * margin


def draw_gap_panel(
    ax: Axes, rows: list[dict], runs: dict, *, title: str, linear_time: bool, panel_width: float
) -> GapPanel:
    """Draw the max-deviation panel of one game on ``ax`` (no legend, no notes: the figure
    places them); returns what the figure needs to finish the panel."""
    panel = GapPanel(ax)
    gaps = [r["gap"] for r in rows if math.isfinite(r["gap"])]
    floor = panel.floor = gap_floor(gaps)
    left, right = _time_limits([r["seconds"] for r in rows], linear_time)
    for label in _run_order(rows, runs):
        points = [r for r in rows if r["method"] == label]
        if not points:
            if label in runs:
                panel.notes.append(f"{label}: {_missing_text(runs[label])}")
            continue
        style = style_of(label)
        xs = [r["seconds"] if linear_time else max(r["seconds"], left) for r in points]
        ys = [max(r["gap"], floor) for r in points]
        kwargs = style.line_kwargs()
        if len(points) == 1:
            kwargs["linestyle"] = "none"
        ax.plot(xs, ys, label=label, markersize=3 if len(points) > 1 else 6, linewidth=1.4, **kwargs)
        below = [i for i, r in enumerate(points) if not r["gap"] > floor]
        if below:
            i = below[-1]
            ax.plot(
                [xs[i]],
                [floor],
                linestyle="none",
                marker=style.marker,
                markersize=9,
                markerfacecolor=style.color,
                markeredgecolor="black",
                markeredgewidth=0.8,
                zorder=4,
                label=f"_{label} on the floor",
            )
            panel.floored.append(FloorPoint(label, xs[i], points[i]["gap"], _floor_word(runs.get(label))))
    price = price_of_dynamics_note(runs)
    if price is not None:
        panel.notes.append(price)
    if panel.floored:
        ax.axhline(floor, color="0.55", linewidth=0.8, linestyle=(0, (2, 2)), zorder=1, label="_floor")
        panel.notes.append(
            f"dotted line: the plot's floor ({gap_text(floor)}); a gap below it is drawn on it, "
            "with its value"
        )
    top = max(gaps, default=1.0)
    # Without a point on the floor the axis ends just below the lowest point, not at the floor.
    low = floor if panel.floored else min((g for g in gaps if g > floor), default=floor)
    ax.set_yscale("log")
    ax.set_ylim(low / 10.0**FLOOR_MARGIN_DECADES, max(top, low * 10) * 10.0**TOP_MARGIN_DECADES)
    if not linear_time:
        ax.set_xscale("log")
    ax.set_xlim(left, right)
    ax.set_xlabel("runtime [s]" + (" (log scale)" if not linear_time else ""))
    ax.set_ylabel("max deviation")
    ax.set_title(wrap_items(title, _chars(panel_width - 0.9, TITLE_SIZE)), fontsize=TITLE_SIZE)
    ax.grid(True, which="major", alpha=0.25)
    return panel


def _missing_text(run: dict) -> str:
    return run.get("outcome_detail") or run_outcome(run)[1]


def _draw_infeasibility_panel(ax, rows: list[dict], runs: dict, *, linear_time: bool) -> None:
    left, right = _time_limits([r["seconds"] for r in rows], linear_time)
    for label in _run_order(rows, runs):
        points = [r for r in rows if r["method"] == label]
        infeasible = any(r["infeasibility"] > 0 for r in points)
        if not points or not (infeasible or label.split("[")[0] == "subgradient"):
            continue
        kwargs = style_of(label).line_kwargs()
        if len(points) == 1:
            kwargs["linestyle"] = "none"
        ax.plot(
            [r["seconds"] if linear_time else max(r["seconds"], left) for r in points],
            [max(r["infeasibility"], INFEASIBILITY_FLOOR) for r in points],
            label=label,
            markersize=3 if len(points) > 1 else 6,
            linewidth=1.4,
            **kwargs,
        )
    ax.set_yscale("log")
    if not linear_time:
        ax.set_xscale("log")
    ax.set_xlim(left, right)
    ax.set_xlabel("runtime [s]" + (" (log scale)" if not linear_time else ""))
    ax.set_ylabel("infeasibility (Def. 3 violation)")
    ax.set_title("iterates' infeasibility", fontsize=TITLE_SIZE)
    ax.grid(True, which="major", alpha=0.25)


def _canvas_figure(width: float, height: float, layout: Literal["constrained"] | None) -> Figure:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    # Figure, not pyplot: nothing global to close, and a figure per call (sweeps draw many).
    fig = Figure(figsize=(width, height), dpi=DPI, layout=layout)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    return fig


def _new_figure(columns: int):
    fig = _canvas_figure(PANEL_WIDTH * columns, PANEL_HEIGHT + 1.3, "constrained")
    axes = fig.subplots(1, columns, squeeze=False)[0]
    return fig, list(axes)


def _set_notes(panel: GapPanel, panel_width: float) -> None:
    if panel.note_artist is not None:
        panel.note_artist.remove()
        panel.note_artist = None
    lines = panel.notes + panel.unplaced
    if not lines:
        return
    width = _chars(panel_width - 0.4, NOTE_SIZE)
    text = "\n".join(wrap_items(line, width, separator=" ") for line in lines)
    # Below the x-axis label, left-aligned with the axes, in the axes' layout box: constrained
    # layout makes room for it.
    panel.note_artist = panel.ax.annotate(
        text,
        xy=(0.0, 0.0),
        xycoords=_AxesLeftUnderLabel(panel.ax),
        xytext=(0, -4),
        textcoords="offset points",
        ha="left",
        va="top",
        fontsize=NOTE_SIZE,
        annotation_clip=False,
    )


class _AxesLeftUnderLabel:
    """Annotation coordinates: x from the axes' left edge, y from the bottom of the x label
    (a callable ``xycoords``: renderer → the bbox fractions refer to)."""

    def __init__(self, ax):
        self.ax = ax

    def __call__(self, renderer):
        from matplotlib.transforms import Bbox

        axes = self.ax.get_window_extent(renderer)
        label = self.ax.xaxis.label.get_window_extent(renderer)
        return Bbox.from_extents(axes.x0, label.y0, axes.x1, label.y1)


def _legend(fig, axes_list: list) -> None:
    handles: dict[str, Any] = {}
    for ax in axes_list:
        for line in ax.get_lines():
            label = line.get_label()
            if not label.startswith("_") and label not in handles:
                handles[label] = line
    if not handles:
        return
    width = fig.get_figwidth() * fig.dpi
    renderer = fig.canvas.get_renderer()
    for columns in range(min(len(handles), 4), 0, -1):
        legend = fig.legend(
            list(handles.values()),
            list(handles),
            loc="outside lower center",
            ncols=columns,
            fontsize=LEGEND_SIZE,
            frameon=False,
        )
        if legend.get_window_extent(renderer).width <= 0.96 * width or columns == 1:
            return
        legend.remove()


def _text_boxes(fig, renderer) -> list:
    boxes = []
    for text in fig.findobj(_is_text):
        if text.get_visible() and text.get_text().strip():
            boxes.append(text.get_window_extent(renderer))
    return boxes


def _is_text(artist) -> bool:
    from matplotlib.text import Text

    return isinstance(artist, Text)


def _line_obstacles(ax, renderer) -> list[tuple[Any, Any, float]]:
    """Per line of ``ax``: its path in display coordinates, its vertices, and its markers' radius
    in pixels."""
    out = []
    for line in ax.get_lines():
        if not line.get_visible():
            continue
        path = line.get_transform().transform_path(line.get_path())
        has_line = line.get_linestyle() not in ("None", "none", "", " ")
        radius = (line.get_markersize() / 2 + 1) * renderer.points_to_pixels(1) if line.get_marker() else 0
        out.append((path if has_line else None, path.vertices, radius))
    return out


def _touches(box, obstacles) -> bool:
    import numpy as np

    for path, vertices, radius in obstacles:
        if path is not None and path.intersects_bbox(box, filled=False):
            return True
        if radius and len(vertices):
            inside = (
                (vertices[:, 0] >= box.x0 - radius)
                & (vertices[:, 0] <= box.x1 + radius)
                & (vertices[:, 1] >= box.y0 - radius)
                & (vertices[:, 1] <= box.y1 + radius)
            )
            if np.any(inside):
                return True
    return False


#: Where a floor label may go, tried in order: (x offset, y offset) in points from its marker
#: and the horizontal alignment.  Beside the marker first, then stacked above it.
_LABEL_SPOTS = [(7, 6, "left"), (-7, 6, "right")] + [
    spot
    for level in range(1, 9)
    for spot in ((7, 6 + 11 * level, "left"), (-7, 6 + 11 * level, "right"), (0, 10 + 11 * level, "center"))
]


def _place_floor_labels(fig, panels: list[GapPanel]) -> bool:
    """Label each point drawn on a floor where the label touches no text, line or marker and
    stays inside its axes; a label that fits nowhere goes to the panel's notes.  Returns True
    when a label moved to the notes (the layout must then be redone)."""
    if not any(panel.floored for panel in panels):
        return False  # nothing to place: no draw to measure with (most of a figure's second)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    taken = _text_boxes(fig, renderer)
    moved = False
    for panel in panels:
        ax = panel.ax
        inner = ax.get_window_extent(renderer).padded(-2)
        obstacles = _line_obstacles(ax, renderer)
        for point in panel.floored:
            text = f"{point.label}: {point.word}, gap {gap_text(point.gap)}"
            if text in panel.unplaced:
                continue
            for dx, dy, ha in _LABEL_SPOTS:
                note = ax.annotate(
                    text,
                    xy=(point.x, panel.floor),
                    xytext=(dx, dy),
                    textcoords="offset points",
                    ha=ha,
                    va="bottom",
                    fontsize=LABEL_SIZE,
                    color=style_of(point.label).color,
                    annotation_clip=False,
                )
                note.set_in_layout(False)  # placed after the layout: it must not move the axes
                box = note.get_window_extent(renderer)
                fits = (
                    inner.x0 <= box.x0
                    and box.x1 <= inner.x1
                    and inner.y0 <= box.y0
                    and box.y1 <= inner.y1
                    and not any(box.overlaps(other) for other in taken)
                    and not _touches(box, obstacles)
                )
                if fits:
                    taken.append(box)
                    break
                note.remove()
            else:
                panel.unplaced.append(text)
                moved = True
    return moved


def _remove_floor_labels(panels: list[GapPanel]) -> None:
    from matplotlib.text import Annotation

    for panel in panels:
        for child in list(panel.ax.get_children()):
            if isinstance(child, Annotation) and child is not panel.note_artist:
                child.remove()


def _finish(fig, panels: list[GapPanel], axes_list: list, panel_width: float) -> None:
    """Notes, legend and floor labels; the labels are placed on the final layout."""
    for panel in panels:
        _set_notes(panel, panel_width)
    _legend(fig, axes_list)
    for _ in range(4):
        if not _place_floor_labels(fig, panels):
            return
        # A label went to the notes: they grew, the axes shrank; place every label again.
        _remove_floor_labels(panels)
        for panel in panels:
            _set_notes(panel, panel_width)


def convergence_figure(rows: list[dict], summary: dict, *, linear_time: bool = False) -> Figure:
    """The figure of :func:`plot_convergence` (a :class:`matplotlib.figure.Figure`, not saved).

    Parameters
    ----------
    rows : list of dict
        Trace rows (``method``, ``iteration``, ``seconds``, ``gap``, ``infeasibility``).
    summary : dict
        The comparison's summary (``game``, ``methods``: each run's status, error, result...).
    linear_time : bool
        A linear runtime axis (the paper's) instead of the log one.

    Returns
    -------
    matplotlib.figure.Figure
    """
    runs = summary.get("methods", {})
    if not rows:
        return _no_trace_figure(summary.get("game", ""), runs)
    fig, (ax_gap, ax_inf) = _new_figure(2)
    panel = draw_gap_panel(
        ax_gap, rows, runs, title=summary.get("game", ""), linear_time=linear_time, panel_width=PANEL_WIDTH
    )
    _draw_infeasibility_panel(ax_inf, rows, runs, linear_time=linear_time)
    _finish(fig, [panel], [ax_gap, ax_inf], PANEL_WIDTH)
    return fig


def _no_trace_figure(title: str, runs: dict) -> Figure:
    """The figure of a comparison no run of which reported a gap (each stopped, failed or was
    refused before its first checkpoint): its title and why each run drew nothing, in words.
    Two empty log-log panels said less and took most of a second to lay out, inside the 2 s a
    stopped ``compare`` has to end in."""
    width = 2 * PANEL_WIDTH
    lines = [f"{label}: {_missing_text(run)}" for label, run in runs.items()] or ["no method was run"]
    text = "\n".join(wrap_items(line, _chars(width - 0.6, NOTE_SIZE + 1), separator=" ") for line in lines)
    title = wrap_items(title, _chars(width - 0.6, TITLE_SIZE))
    # Heights in inches, from the top: the title, the heading, then the notes' lines.
    line = 1.5 / 72  # a line of text, in inches per point of font size
    title_height = (title.count("\n") + 1) * TITLE_SIZE * line
    heading_at = 0.25 + title_height + 0.15
    notes_at = heading_at + TITLE_SIZE * line + 0.08
    height = notes_at + (text.count("\n") + 1) * (NOTE_SIZE + 1) * line + 0.25
    fig = _canvas_figure(width, height, None)
    at = fig.dpi_scale_trans
    fig.text(width / 2, height - 0.25, title, fontsize=TITLE_SIZE, ha="center", va="top", transform=at)
    fig.text(
        0.3,
        height - heading_at,
        "No run reported a max deviation:",
        fontsize=TITLE_SIZE,
        va="top",
        transform=at,
    )
    fig.text(0.3, height - notes_at, text, fontsize=NOTE_SIZE + 1, va="top", transform=at)
    return fig


def games_figure(comparisons: list[tuple[list[dict], dict]], *, linear_time: bool = False) -> Figure:
    """The figure of :func:`plot_games`: one max-deviation panel per ``(rows, summary)`` in one
    row, one legend for all.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, axes = _new_figure(max(len(comparisons), 1))
    panels = [
        draw_gap_panel(
            ax,
            rows,
            summary.get("methods", {}),
            title=summary.get("game", ""),
            linear_time=linear_time,
            panel_width=PANEL_WIDTH,
        )
        for ax, (rows, summary) in zip(axes, comparisons, strict=False)
    ]
    _finish(fig, panels, axes, PANEL_WIDTH)
    return fig


def plot_convergence(rows: list[dict], summary: dict, path: str, *, linear_time: bool = False) -> None:
    """Write ``convergence.png`` of one comparison: max deviation (log) against runtime (log,
    or linear with ``linear_time``) for every run, and the iterates' infeasibility beside it
    (:func:`convergence_figure`).

    Raises
    ------
    OSError
        The file cannot be written.
    """
    atomic_savefig(convergence_figure(rows, summary, linear_time=linear_time), path, dpi=DPI)


def plot_games(out_dirs: list[str], path: str, *, linear_time: bool = False) -> None:
    """Write ``figure.png``: one max-deviation panel per comparison folder in ``out_dirs`` (the
    files :func:`experiments.compare.compare` wrote there), side by side — the layout of
    Figure 3 of Farina, Ling, Fang, Sandholm 2019 with ``--preset paper``.

    Raises
    ------
    OSError
        A folder's files cannot be read, or the figure cannot be written.
    """
    figure = games_figure([load_comparison(d) for d in out_dirs], linear_time=linear_time)
    atomic_savefig(figure, path, dpi=DPI)
