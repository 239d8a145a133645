"""Aggregation over seeds: the table (``table.csv``, ``table.md``, the terminal view)."""

from __future__ import annotations

import csv
import json
import math
import os

from efce.games.resources.atomic import atomic_open

from ..compare import THRESHOLDS
from .storage import finished

#: Final values aggregated over seeds: the trace's last gap (EFCE max deviation; exploitability
#: for cfr/cfr+) and the solve JSON's gaps.
GAP_COLUMNS = ("final_gap", "efce_gap", "efcce_gap", "nfcce_gap")


def mean_std(values: list[float]) -> tuple[float | None, float | None]:
    """Mean and population standard deviation (ddof = 0, as the ICFR table of docs/results)."""
    if not values:
        return None, None
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def options_text(options: dict) -> str:
    """``key=value,...`` of ``options`` for a table or a legend (``—`` for none)."""
    return ",".join(f"{k}={v}" for k, v in options.items()) or "—"


def series_options(record: dict) -> dict:
    """A record's options without the per-run limits common to the grid."""
    return {k: v for k, v in record["options"].items() if k not in ("iterations", "time_limit")}


def aggregate(records: list[dict]) -> list[dict]:
    """One row per (game, method, options): mean ± std over seeds.

    Columns: ``game`` (label), ``spec``, ``method``, one column per option set anywhere in the
    sweep (empty where not set), ``runs``, ``finished``, ``failed``, ``statuses`` (e.g.
    ``iteration_limit×3``), ``iterations_mean``, ``<gap>_mean`` / ``<gap>_std`` for each of
    :data:`GAP_COLUMNS`, ``time_to_<t>_mean`` / ``_std`` / ``_reached`` (seconds since the
    iterations started until the trace's gap first is ≤ t, over the runs that reach it, for
    each of :data:`experiments.compare.THRESHOLDS`), ``seconds_mean`` / ``_std`` (the solve's
    own seconds), ``iteration_seconds_mean``, ``wall_seconds_mean`` (the whole child process)
    and ``peak_memory_mib_max``.  Missing values are None.
    """
    option_names = list(dict.fromkeys(k for r in records for k in r["options"]))
    groups: dict[tuple, list[dict]] = {}
    for record in records:
        group = (
            record["label"],
            record["game"],
            record["method"],
            json.dumps(record["options"], sort_keys=True),
        )
        groups.setdefault(group, []).append(record)
    rows = []
    for (label, game, method, _), members in groups.items():
        ok = [r for r in members if finished(r) and r.get("result")]
        row = {"game": label, "spec": game, "method": method}
        for name in option_names:
            row[name] = members[0]["options"].get(name)
        statuses: dict[str, int] = {}
        for r in members:
            statuses[r["status"]] = statuses.get(r["status"], 0) + 1
        row.update(
            runs=len(members),
            finished=len(ok),
            failed=sum(r.get("outcome") == "failed" for r in members),
            statuses=" ".join(f"{s}×{n}" for s, n in statuses.items()),
            iterations_mean=mean_std([r["result"]["iterations"] for r in ok])[0],
        )
        for column in GAP_COLUMNS:
            values = [_final(r, column) for r in ok]
            row[f"{column}_mean"], row[f"{column}_std"] = mean_std([v for v in values if v is not None])
        for threshold in THRESHOLDS:
            hits = [t for t in (_time_to(r["trace"], threshold) for r in ok) if t is not None]
            name = f"time_to_{threshold:g}"
            row[f"{name}_mean"], row[f"{name}_std"] = mean_std(hits)
            row[f"{name}_reached"] = len(hits)
        row["seconds_mean"], row["seconds_std"] = mean_std([r["result"]["seconds"] for r in ok])
        row["iteration_seconds_mean"] = mean_std(
            [r["result"]["iteration_seconds"] for r in ok if r["result"].get("iteration_seconds") is not None]
        )[0]
        row["wall_seconds_mean"] = mean_std([r["wall_seconds"] for r in ok])[0]
        peaks = [r["peak_memory_mib"] for r in ok if r.get("peak_memory_mib") is not None]
        row["peak_memory_mib_max"] = max(peaks) if peaks else None
        rows.append(row)
    return rows


def option_columns(row: dict) -> list[str]:
    """The option columns of an :func:`aggregate` row (between ``method`` and ``runs``)."""
    names = list(row)
    return names[names.index("method") + 1 : names.index("runs")]


def shown_options(rows: list[dict]) -> list[str]:
    """The option columns worth showing: every option, but the per-run limits (iterations,
    time limit) only where they differ between rows."""
    names = option_columns(rows[0]) if rows else []
    return [
        n
        for n in names
        if n not in ("iterations", "time_limit") or len({json.dumps(r.get(n)) for r in rows}) > 1
    ]


def _final(record: dict, column: str) -> float | None:
    if column == "final_gap":
        return record["trace"][-1]["gap"] if record["trace"] else None
    return record["result"].get(column)


def _time_to(trace: list[dict], threshold: float) -> float | None:
    return next((row["seconds"] for row in trace if row["gap"] is not None and row["gap"] <= threshold), None)


def write_table(rows: list[dict], out_dir: str) -> None:
    """``table.csv`` (every column of :func:`aggregate`; empty cells for missing values) and
    ``table.md`` (the columns worth reading)."""
    columns = list(dict.fromkeys(k for row in rows for k in row)) or ["game", "spec", "method"]
    with atomic_open(os.path.join(out_dir, "table.csv"), "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if row.get(k) is None else row[k]) for k in columns})
    with atomic_open(os.path.join(out_dir, "table.md"), "w") as fh:
        fh.write(markdown_table(rows) + "\n")


def _cell(mean, std) -> str:
    if mean is None:
        return "—"
    return f"{mean:.3g} ± {std:.2g}" if std is not None else f"{mean:.3g}"


def markdown_table(rows: list[dict]) -> str:
    """The aggregated table in Markdown: mean ± std over seeds; columns without any value are
    left out."""
    option_names = shown_options(rows)
    heads = {
        "final_gap": "final gap",
        "efce_gap": "EFCE gap",
        "efcce_gap": "EFCCE gap",
        "nfcce_gap": "NFCCE gap",
    }
    columns = [("game", lambda r: r["game"])]
    if any(r["game"] != r["spec"] for r in rows):
        columns.append(("spec", lambda r: f"`{r['spec']}`"))
    columns.append(("method", lambda r: r["method"]))
    columns += [
        (name, (lambda n: lambda r: "—" if r.get(n) is None else str(r[n]))(name)) for name in option_names
    ]
    columns += [
        ("runs", lambda r: f"{r['finished']}/{r['runs']}"),
        ("iterations", lambda r: "—" if r["iterations_mean"] is None else f"{r['iterations_mean']:.0f}"),
    ]
    for column in GAP_COLUMNS:
        if any(r[f"{column}_mean"] is not None for r in rows):
            columns.append(
                (heads[column], (lambda c: lambda r: _cell(r[f"{c}_mean"], r[f"{c}_std"]))(column))
            )
    for threshold in THRESHOLDS:
        name = f"time_to_{threshold:g}"
        if any(r[f"{name}_reached"] for r in rows):
            columns.append(
                (
                    f"s to {threshold:g}",
                    (
                        lambda n: (
                            lambda r: (
                                "—"
                                if not r[f"{n}_reached"]
                                else _cell(r[f"{n}_mean"], r[f"{n}_std"])
                                + f" ({r[f'{n}_reached']}/{r['finished']})"
                            )
                        )
                    )(name),
                )
            )
    columns += [
        ("iteration s", lambda r: _cell(r["iteration_seconds_mean"], None)),
        ("solve s", lambda r: _cell(r["seconds_mean"], r["seconds_std"])),
        ("process s", lambda r: _cell(r["wall_seconds_mean"], None)),
        ("status", lambda r: r["statuses"]),
    ]
    lines = ["| " + " | ".join(h for h, _ in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(f(r) for _, f in columns) + " |" for r in rows]
    return "\n".join(lines)


def text_table(table: SweepTable) -> str:
    """The aggregated table for a terminal: mean ± std over seeds."""
    width = min(max([len(row["game"]) for row in table] + [4]) + 2, 50)
    head = (
        f"{'game':<{width}}{'method':<13}{'options':<22}{'runs':>6}{'final gap':>22}"
        + "".join(f"{'t(' + format(t, 'g') + ')':>12}" for t in THRESHOLDS)
        + f"{'solve s':>10}  status"
    )
    lines = [head, "-" * len(head)]
    shown = shown_options(table)
    for row in table:
        options = {k: row[k] for k in shown if row[k] is not None}
        times = []
        for t in THRESHOLDS:
            name = f"time_to_{t:g}"
            times.append(f"{row[name + '_mean']:>12.2f}" if row[name + "_reached"] else f"{'—':>12}")
        solve = f"{row['seconds_mean']:>10.1f}" if row["seconds_mean"] is not None else f"{'—':>10}"
        lines.append(
            f"{row['game'][: width - 1]:<{width}}{row['method']:<13}{options_text(options)[:21]:<22}"
            f"{str(row['finished']) + '/' + str(row['runs']):>6}"
            f"{_cell(row['final_gap_mean'], row['final_gap_std']):>22}{''.join(times)}{solve}  "
            f"{row['statuses']}"
        )
    return "\n".join(lines)


class SweepTable(list):
    """The aggregated table of a sweep: a list of row dicts (:func:`aggregate`), with

    Attributes
    ----------
    out_dir : str
    runs : int
        Runs in the grid.
    executed, skipped, failed : int
        Runs run by this call, skipped as already finished (resume), and recorded as failed.
    interrupted : bool
        A stop request (Ctrl-C, SIGTERM) ended the sweep early; finished runs are kept.
    wall_seconds : float
    unsaved : list of str
        One line per kind of file that could not be written (run records, the table): the
        rows are complete all the same.
    damaged : list of str
        One line per damaged run record found and set aside (its run was redone).
    """

    def __init__(self, rows=(), **facts):
        super().__init__(rows)
        self.out_dir = facts.get("out_dir", "")
        self.runs = facts.get("runs", 0)
        self.executed = facts.get("executed", 0)
        self.skipped = facts.get("skipped", 0)
        self.failed = facts.get("failed", 0)
        self.interrupted = facts.get("interrupted", False)
        self.wall_seconds = facts.get("wall_seconds", 0.0)
        self.unsaved = list(facts.get("unsaved", ()))
        self.damaged = list(facts.get("damaged", ()))

    def summary(self) -> dict:
        return {
            "out_dir": self.out_dir,
            "runs": self.runs,
            "executed": self.executed,
            "skipped": self.skipped,
            "failed": self.failed,
            "interrupted": self.interrupted,
            "wall_seconds": round(self.wall_seconds, 3),
            "damaged_records": list(self.damaged),
        }
