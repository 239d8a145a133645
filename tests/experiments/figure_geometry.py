"""Checks of a drawn matplotlib figure by matplotlib's own geometry (renderer extents), for the
tests of the comparison figures.  Each check returns a list of problems (empty: the figure
passes), so a failing test says what overlaps what.

Written apart from the drawing code (``experiments.figures``) on purpose: a layout rule copied
into the checks would pass whatever the rule got wrong.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.text import Text

#: Pixels by which two boxes must overlap to count (anti-aliasing and rounding of extents).
TOLERANCE = 0.5


def drawn(fig: Figure):
    """Draw ``fig`` (its layout runs) and return its renderer (a figure that ``pyplot.close``
    left with a bare canvas gets an Agg one again)."""
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _in_view(axis, value: float) -> bool:
    """Whether ``value`` lies inside ``axis``'s view limits, compared on the axis's own scale: a
    tolerance in data units would let a log axis keep the ticks of every decade below its lower
    limit (with matplotlib 3.10, a ``10^-12`` label computed two decades under a panel, never drawn,
    "overlapped" the legend below it)."""
    scale = axis.get_transform()
    with np.errstate(divide="ignore", invalid="ignore"):
        low, high = sorted(scale.transform(np.asarray(axis.get_view_interval(), dtype=float)))
        (at,) = scale.transform(np.asarray([value], dtype=float))
    span = high - low
    return bool(low - 1e-9 * span <= at <= high + 1e-9 * span)


def tick_labels(ax) -> list[Text]:
    """The tick labels ``ax`` shows: visible, not empty, at a tick inside the view limits."""
    labels = []
    for axis in (ax.xaxis, ax.yaxis):
        for tick in axis.get_major_ticks() + axis.get_minor_ticks():
            if not _in_view(axis, tick.get_loc()):
                continue
            for label in (tick.label1, tick.label2):
                if label.get_visible() and label.get_text().strip():
                    labels.append(label)
    return labels


def texts(fig: Figure) -> list[tuple[str, Text]]:
    """Every visible, non-empty text of ``fig`` with what it is: titles, axis labels, tick
    labels, legend texts, annotations and free texts."""
    found: list[tuple[str, Text]] = []
    seen: set[int] = set()

    def add(kind: str, text: Text) -> None:
        if id(text) in seen or not text.get_visible() or not text.get_text().strip():
            return
        seen.add(id(text))
        found.append((kind, text))

    for ax in fig.axes:
        for label in tick_labels(ax):
            add("tick label", label)
        for title in (ax.title, ax._left_title, ax._right_title):
            add("title", title)
        add("x label", ax.xaxis.label)
        add("y label", ax.yaxis.label)
        add("offset text", ax.xaxis.get_offset_text())
        add("offset text", ax.yaxis.get_offset_text())
        for child in ax.get_children():
            if isinstance(child, Text):
                add("text in axes", child)
    for legend in legends(fig):
        for text in legend.get_texts():
            add("legend text", text)
        add("legend title", legend.get_title())
    for text in fig.texts:
        add("figure text", text)
    if fig._suptitle is not None:
        add("figure title", fig._suptitle)
    return found


def legends(fig: Figure) -> list[Legend]:
    """The figure's legends and its axes' legends."""
    return list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]


def _overlap(a, b) -> bool:
    return min(a.x1, b.x1) - max(a.x0, b.x0) > TOLERANCE and min(a.y1, b.y1) - max(a.y0, b.y0) > TOLERANCE


def _drawn_line(line: Line2D) -> bool:
    return line.get_linestyle() not in ("None", "none", "", " ")


def _has_marker(line: Line2D) -> bool:
    return line.get_marker() not in (None, "", " ", "None", "none")


def _display_points(line: Line2D) -> np.ndarray:
    return line.get_transform().transform(np.column_stack(line.get_data()).astype(float))


def _touches_data(box, line: Line2D, renderer) -> bool:
    """Whether ``box`` covers a marker or crosses a drawn segment of ``line``."""
    if not line.get_visible():
        return False
    path = line.get_transform().transform_path(line.get_path())
    if _drawn_line(line) and len(path.vertices) > 1 and path.intersects_bbox(box, filled=False):
        return True
    if _has_marker(line):
        radius = renderer.points_to_pixels(line.get_markersize()) / 2
        points = path.vertices
        inside = (
            (points[:, 0] > box.x0 - radius + TOLERANCE)
            & (points[:, 0] < box.x1 + radius - TOLERANCE)
            & (points[:, 1] > box.y0 - radius + TOLERANCE)
            & (points[:, 1] < box.y1 + radius - TOLERANCE)
        )
        return bool(inside.any())
    return False


def text_problems(fig: Figure) -> list[str]:
    """Texts that overlap another text (tick labels included), that cross the data of an axes
    they lie in (lines and markers), that leave the figure (cut), and legends inside an axes
    that cover its data."""
    renderer = drawn(fig)
    problems = []
    boxes = [(kind, text, text.get_window_extent(renderer)) for kind, text in texts(fig)]
    figure_box = fig.bbox
    for kind, text, box in boxes:
        if (
            box.x0 < figure_box.x0 - TOLERANCE
            or box.y0 < figure_box.y0 - TOLERANCE
            or box.x1 > figure_box.x1 + TOLERANCE
            or box.y1 > figure_box.y1 + TOLERANCE
        ):
            problems.append(f"{kind} {text.get_text()!r} is cut by the figure's edge")
    for i, (kind_a, text_a, box_a) in enumerate(boxes):
        for kind_b, text_b, box_b in boxes[i + 1 :]:
            if kind_a == kind_b == "tick label":
                continue  # matplotlib's own tick layout; what is asked is text against ticks
            if _overlap(box_a, box_b):
                problems.append(f"{kind_a} {text_a.get_text()!r} overlaps {kind_b} {text_b.get_text()!r}")
    covers = [(kind, text.get_text(), box) for kind, text, box in boxes if kind != "tick label"]
    covers += [("legend", "legend frame", legend.get_window_extent(renderer)) for legend in legends(fig)]
    for ax in fig.axes:
        axes_box = ax.get_window_extent(renderer)
        for kind, label, box in covers:
            if not _overlap(box, axes_box):
                continue
            for line in ax.get_lines():
                if _touches_data(box, line, renderer):
                    problems.append(f"{kind} {label!r} covers data of {line.get_label()!r}")
                    break
    return problems


def legend_problems(fig: Figure) -> list[str]:
    """Legend entries without a visible artist: no line of that label in any axes with a point
    inside the axes' limits that no legend frame or text covers."""
    renderer = drawn(fig)
    frames = [legend.get_window_extent(renderer) for legend in legends(fig)]
    frames += [text.get_window_extent(renderer) for _, text in texts(fig) if text.get_bbox_patch()]
    problems = []
    for legend in legends(fig):
        for text in legend.get_texts():
            label = text.get_text()
            if not any(_visible_point(ax, label, frames, renderer) for ax in fig.axes):
                problems.append(f"legend entry {label!r} has no visible point in any axes")
    return problems


def _visible_point(ax, label: str, frames: list, renderer) -> bool:
    axes_box = ax.get_window_extent(renderer)
    for line in ax.get_lines():
        if line.get_label() != label or not line.get_visible() or line.get_alpha() == 0:
            continue
        if not (_has_marker(line) or _drawn_line(line)):
            continue
        (x_low, x_high), (y_low, y_high) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        for (x, y), (px, py) in zip(np.column_stack(line.get_data()), _display_points(line), strict=True):
            inside = x_low <= x <= x_high and y_low <= y <= y_high
            inside = inside and axes_box.x0 <= px <= axes_box.x1 and axes_box.y0 <= py <= axes_box.y1
            covered = any(f.x0 < px < f.x1 and f.y0 < py < f.y1 for f in frames)
            if inside and not covered:
                return True
    return False


def colours(figures: list[Figure]) -> dict[str, set[str]]:
    """Per line label (not ``_hidden`` ones): the colours it is drawn with over every panel of
    every figure."""
    from matplotlib.colors import to_hex

    found: dict[str, set[str]] = {}
    for fig in figures:
        for ax in fig.axes:
            for line in ax.get_lines():
                label = line.get_label()
                if not label.startswith("_"):
                    found.setdefault(label, set()).add(to_hex(line.get_color()))
    return found


def colour_problems(figures: list[Figure]) -> list[str]:
    """Runs drawn in more than one colour across the panels of ``figures``."""
    return [
        f"{label} is drawn in {len(seen)} colours: {sorted(seen)}"
        for label, seen in colours(figures).items()
        if len(seen) > 1
    ]
