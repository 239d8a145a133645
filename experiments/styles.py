"""One drawing style per compared run, the same in every figure: colour, marker and line style
keyed by the run's name.

A run is a method (``rm``, ``lp-highs``, ...) or a configuration of one
(``rm[local=rm+,averaging=linear,updates=alternating]``, the syntax of ``efce compare
--methods``).  A method has a fixed style (:data:`METHOD_STYLES`).  A configuration's style is
derived from its method's and from its options alone — never from which other runs share the
figure or in which order they were drawn — so a run looks the same in every panel, every figure
and every run of the command:

* its colour is the method's colour, darkened or lightened by one of :data:`SHADES`;
* its line is dashed, dotted or dash-dotted (:data:`CONFIGURATION_LINESTYLES`; a method's own
  line is solid), so it is never mistaken for its method;
* its marker is the method's, hollow.

Which shade and line style is read from a digest of the configuration's canonical options (names
normalised, sorted, numbers in one spelling), so ``rm[averaging=linear,local=rm+]`` and
``rm[local=rm+,averaging=linear]`` look the same.  A name that is no method of the toolkit (a
renamed run, a future method) gets a colour from the same digest among :data:`EXTRA_COLOURS`.
"""

from __future__ import annotations

import colorsys
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from matplotlib.colors import to_hex, to_rgb


@dataclass(frozen=True)
class Style:
    """How one run is drawn.

    Attributes
    ----------
    color : str
        ``#rrggbb``.
    marker : str
        A matplotlib marker.
    linestyle : str
        ``"-"`` for a method, ``"--"``, ``":"`` or ``"-."`` for a configuration of one.
    markerfacecolor : str
        ``color`` (filled) for a method, ``"white"`` (hollow) for a configuration.
    """

    color: str
    marker: str
    linestyle: str = "-"
    markerfacecolor: str | None = None

    def line_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``Axes.plot`` for this style."""
        return {
            "color": self.color,
            "marker": self.marker,
            "linestyle": self.linestyle,
            "markerfacecolor": self.markerfacecolor or self.color,
            "markeredgecolor": self.color,
        }


#: Every method of the toolkit (the keys of ``METHODS`` in :mod:`efce.experiments.solve`): the
#: colours of matplotlib's qualitative "tab10" palette and black, one marker each.
METHOD_STYLES: dict[str, Style] = {
    "rm": Style("#1f77b4", "o"),
    "lp-highs": Style("#ff7f0e", "s"),
    "lp-pdlp": Style("#2ca02c", "D"),
    "subgradient": Style("#d62728", "v"),
    "cfr": Style("#9467bd", "^"),
    "lp-cvxpy": Style("#8c564b", "P"),
    "cfr+": Style("#e377c2", "<"),
    "trigger": Style("#7f7f7f", "X"),
    "icfr": Style("#bcbd22", ">"),
    "cfr-s": Style("#17becf", "h"),
    "coarse-trigger": Style("#000000", "*"),
    "lp-colgen": Style("#393b79", "d"),
}

#: Lightness changes of a configuration's colour against its method's (negative: darker).
SHADES = (-0.22, 0.18, -0.36, 0.3)
#: Line styles of configurations (a method's own line is solid).
CONFIGURATION_LINESTYLES = ("--", ":", "-.")
#: Colours of names that are no method of the toolkit (matplotlib's "tab20" light tones and
#: "Dark2", none equal to a method's colour).
EXTRA_COLOURS = (
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
    "#ff9896",
    "#c5b0d5",
    "#1b9e77",
    "#d95f02",
    "#7570b3",
    "#e7298a",
    "#66a61e",
)
EXTRA_MARKERS = ("o", "s", "D", "^", "v", "P", "X")


def _digest(text: str) -> int:
    # hashlib, not hash(): Python salts str hashes per process, and a style must not change
    # between two runs of the command.
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _canonical_value(value: Any) -> str:
    """One spelling per value: ``1e-6``, ``1e-06`` and ``0.000001`` are the same step size."""
    if isinstance(value, bool):
        return str(value).lower()
    try:
        return f"{float(str(value).strip()):.12g}"
    except ValueError:
        return str(value).strip()


def canonical_options(options: Mapping[str, Any]) -> str:
    """``{"local": "rm+", "step-size": 1e-6}`` → ``"local=rm+,step_size=1e-06"``: names as
    option keys (``--step-size`` → ``step_size``), sorted, values in one spelling; options set
    to None are left out."""
    items = {
        str(name).strip().lstrip("-").replace("-", "_"): _canonical_value(value)
        for name, value in options.items()
        if value is not None
    }
    return ",".join(f"{name}={items[name]}" for name in sorted(items))


def _shaded(color: str, change: float) -> str:
    hue, lightness, saturation = colorsys.rgb_to_hls(*to_rgb(color))
    if lightness < 0.05:  # black has no hue: lighten it into grey instead of darkening
        change = abs(change)
    lightness = min(max(lightness + change, 0.08), 0.82)
    return to_hex(colorsys.hls_to_rgb(hue, lightness, saturation))


def method_style(method: str, options: Mapping[str, Any] | None = None) -> Style:
    """The style of ``method`` run with ``options`` (none: the method itself).

    Parameters
    ----------
    method : str
        A method name; one that is no method of the toolkit gets a colour and marker from a
        digest of its name.
    options : mapping, optional
        The configuration's options (name → value; names with or without ``--``, dashes or
        underscores).

    Returns
    -------
    Style
        For a configuration, a shade of the method's colour, a dashed, dotted or dash-dotted line
        and the method's marker hollow, chosen by a digest of :func:`canonical_options`.
    """
    base = METHOD_STYLES.get(method)
    if base is None:
        digest = _digest(method)
        base = Style(
            EXTRA_COLOURS[digest % len(EXTRA_COLOURS)],
            EXTRA_MARKERS[(digest // len(EXTRA_COLOURS)) % len(EXTRA_MARKERS)],
        )
    canonical = canonical_options(options or {})
    if not canonical:
        return base
    digest = _digest(f"{method}[{canonical}]")
    shade = SHADES[digest % len(SHADES)]
    linestyle = CONFIGURATION_LINESTYLES[(digest // len(SHADES)) % len(CONFIGURATION_LINESTYLES)]
    return Style(_shaded(base.color, shade), base.marker, linestyle, "white")


def style_of(run: str) -> Style:
    """The style of a compared run named as in ``efce compare --methods``: ``rm`` or
    ``rm[local=rm+,averaging=linear]`` (:func:`method_style` of its method and options).  A
    name that does not parse as a configuration is styled as a method of that name.

    Returns
    -------
    Style
    """
    from .compare import split_configuration

    try:
        method, items = split_configuration(run)
    except ValueError:
        return method_style(run)
    return method_style(method, dict(items))
