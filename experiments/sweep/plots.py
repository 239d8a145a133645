"""Plots of a sweep: gap against iterations and runtime, mean and seed band per series."""

from __future__ import annotations

import os

from efce.games.resources.atomic import atomic_savefig

from ..styles import Style, method_style
from .aggregation import mean_std, options_text, series_options
from .grid import slug
from .storage import finished, load_records


def _series_label(record: dict) -> str:
    options = series_options(record)
    return record["method"] + (f" ({options_text(options)})" if options else "")


def seed_band(
    records: list[dict], metric: str = "gap", x: str = "iterations"
) -> tuple[list[float | None], list[float | None], list[float | None]] | None:
    """Mean and std over seeds of ``metric`` along the trace checkpoints common to all runs.

    Returns
    -------
    tuple of lists or None
        ``(xs, mean, std)`` — ``xs`` the iterations, or the mean over seeds of the seconds at
        those iterations when ``x="seconds"`` — or None without a common checkpoint.
    """
    traces = [
        {row["iteration"]: row for row in r["trace"] if row.get(metric) is not None}
        for r in records
        if r.get("trace")
    ]
    if not traces:
        return None
    common = sorted(set.intersection(*(set(t) for t in traces)))
    if not common:
        return None
    xs, means, stds = [], [], []
    for it in common:
        mean, std = mean_std([t[it][metric] for t in traces])
        xs.append(it if x == "iterations" else mean_std([t[it]["seconds"] for t in traces])[0])
        means.append(mean)
        stds.append(std)
    return xs, means, stds


def _draw_band(ax, band, label, style: Style | None = None):
    xs, mean, std = band
    floor = 1e-12
    points = [(x, m, s) for x, m, s in zip(xs, mean, std, strict=True) if x > 0]
    if not points:
        return
    xs, mean, std = zip(*points, strict=True)
    kwargs = style.line_kwargs() if style is not None else {"marker": "o"}
    if len(xs) >= 3:
        kwargs["marker"] = ""  # a band of many checkpoints reads better as a line
    (line,) = ax.plot(xs, [max(m, floor) for m in mean], markersize=3, label=label, **kwargs)
    if any(std):
        ax.fill_between(
            xs,
            [max(m - s, floor) for m, s in zip(mean, std, strict=True)],
            [max(m + s, floor) for m, s in zip(mean, std, strict=True)],
            alpha=0.2,
            color=line.get_color(),
        )


def plot_sweep(source: str | list[dict], folder: str) -> list[str]:
    """The plots of a sweep: per game, the gap against iterations and against seconds, one line
    per (method, options) with a band of ± one std over seeds (``<game>.png``); and an overview
    (``overview.png``) with one panel per (method, options) and trace metric (``gap``, and the
    ICFR/CFR-S ``efcce`` and ``nfcce`` when present), one line per game, against iterations
    (the layout of Celli et al. 2020, Figure 3).

    Parameters
    ----------
    source : str or list of dict
        A sweep folder (every finished record in its ``runs/``) or records.
    folder : str
        Where to write the PNG files.

    Returns
    -------
    list of str
        The files written.

    Raises
    ------
    ValueError
        No finished run with a trace.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = load_records(source) if isinstance(source, str) else source
    records = [r for r in records if finished(r) and r.get("trace")]
    if not records:
        raise ValueError("no finished run with a trace to plot")
    os.makedirs(folder, exist_ok=True)
    written = []
    games = list(dict.fromkeys((r["label"], r["game"]) for r in records))
    series = list(dict.fromkeys(_series_label(r) for r in records))
    for label, game in games:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for name in series:
            members = [r for r in records if r["game"] == game and _series_label(r) == name]
            # One style per (method, options), the one every comparison figure gives it.
            style = method_style(members[0]["method"], series_options(members[0])) if members else None
            for ax, x in zip(axes, ("iterations", "seconds"), strict=True):
                band = seed_band(members, "gap", x) if members else None
                if band:
                    _draw_band(
                        ax, band, f"{name} ({len(members)} run{'s' if len(members) > 1 else ''})", style
                    )
        for ax, x in zip(axes, ("iterations", "runtime [s]"), strict=True):
            ax.set_xscale("log" if x == "iterations" else "linear")
            ax.set_yscale("log")
            ax.set_xlabel(x)
            ax.set_ylabel("gap (max deviation)")
            ax.grid(True, which="both", alpha=0.3)
            if ax.lines:
                ax.legend(fontsize=8)
        axes[0].set_title(label if label == game else f"{label}: {game}", fontsize=10)
        fig.tight_layout()
        path = os.path.join(folder, slug(label, 60) + ".png")
        atomic_savefig(fig, path, dpi=110)
        plt.close(fig)
        written.append(path)
    metrics = ["gap"] + [m for m in ("efcce", "nfcce") if any(m in r["trace"][0] for r in records)]
    titles = {"gap": "gap (max EFCE deviation)", "efcce": "EFCCE gap", "nfcce": "NFCCE gap"}
    fig, axes = plt.subplots(
        len(series), len(metrics), figsize=(5 * len(metrics), 4 * len(series)), squeeze=False
    )
    for row, name in enumerate(series):
        for col, metric in enumerate(metrics):
            ax = axes[row][col]
            for label, game in games:
                members = [r for r in records if r["game"] == game and _series_label(r) == name]
                band = seed_band(members, metric) if members else None
                if band:
                    _draw_band(ax, band, f"{label} ({len(members)})")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{name}: {titles[metric]}", fontsize=10)
            ax.set_xlabel("iterations")
            ax.grid(True, which="both", alpha=0.3)
            if ax.lines:
                ax.legend(fontsize=7)
    fig.tight_layout()
    path = os.path.join(folder, "overview.png")
    atomic_savefig(fig, path, dpi=100)
    plt.close(fig)
    written.append(path)
    return written
