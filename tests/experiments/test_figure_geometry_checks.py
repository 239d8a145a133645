"""The figure checks themselves (``figure_geometry``): a tick label counts where it is drawn, on a
log axis as on a linear one."""

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402

from .figure_geometry import drawn, text_problems, tick_labels  # noqa: E402


def _log_panel() -> Figure:
    fig = Figure(figsize=(4, 4))
    ax = fig.add_subplot()
    ax.set_yscale("log")
    ax.plot([1, 2], [1e-9, 1.0])
    ax.set_ylim(2.5e-10, 4.0)
    drawn(fig)
    return fig


def test_a_log_axis_shows_no_tick_label_below_its_lower_limit():
    fig = _log_panel()
    shown = {label.get_text() for label in tick_labels(fig.axes[0])}
    assert any("10^{-8}" in text for text in shown)
    assert not any("10^{-10}" in text or "10^{-12}" in text for text in shown)


def test_a_text_on_a_shown_tick_label_is_an_overlap_and_one_below_the_axis_is_not():
    fig = _log_panel()
    renderer = drawn(fig)
    (label,) = [lab for lab in tick_labels(fig.axes[0]) if "10^{-8}" in lab.get_text()]
    box = label.get_window_extent(renderer)
    x, y = fig.transFigure.inverted().transform(((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2))
    on_label = fig.text(x, y, "on the label", ha="center", va="center")
    assert any("on the label" in problem for problem in text_problems(fig))
    on_label.remove()
    # Where a 10^-12 label would sit, two decades under the axes: nothing is drawn there.
    fig.text(0.02, 0.02, "below the axes")
    assert not any("below the axes" in problem for problem in text_problems(fig))
