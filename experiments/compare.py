"""Compare EFCE methods on one game: each in its own process, under time and memory limits.

Every method runs as ``efce solve GAME --method M --json --trace FILE`` in a child process with an
address-space limit (``RLIMIT_AS``) and a wall-clock limit, so a method that runs out of memory
or time is recorded as such while the others go on.  The runner writes

* ``traces.csv`` — every trace row of every method (method, iteration, seconds, gap, infeasibility);
* ``summary.json`` — per method: status, final gap, time to reach 1e-1/1e-2/1e-3, peak memory;
* ``convergence.png`` — max deviation (log scale) against wall-clock seconds, as in Figure 3 of
  Farina, Ling, Fang, Sandholm 2019, and the infeasibility of the subgradient iterates.
"""

from __future__ import annotations

import csv
import json
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field

THRESHOLDS = (1e-1, 1e-2, 1e-3)
DEFAULT_METHODS = ("rm", "lp-highs", "lp-pdlp", "subgradient")


@dataclass
class MethodRun:
    method: str
    status: str
    wall_seconds: float
    peak_memory_mib: float
    final_gap: float | None = None
    time_to_gap: dict[str, float | None] = field(default_factory=dict)
    feasible_iterates: bool | None = None
    max_infeasibility: float | None = None
    result: dict | None = None
    error: str | None = None


def run_method(game_spec: str, method: str, out_dir: str, *, time_limit: float,
               memory_limit_gib: float | None, extra_args: list[str] | None = None) -> tuple[MethodRun, list[dict]]:
    """Run one method in a child process; never raises for the method's own failures."""
    trace_path = os.path.join(out_dir, f"trace_{method}.csv")
    cmd = [sys.executable, "-m", "experiments", "solve", game_spec, "--method", method, "--json",
           "--time-limit", str(time_limit), "--trace", trace_path, *(extra_args or [])]
    limit = None if memory_limit_gib is None else int(memory_limit_gib * 2**30)

    def limit_memory():  # runs in the child before exec
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=limit_memory, text=True)
    grace = 60.0 + 0.5 * time_limit  # model building is outside the solver's own time limit
    try:
        stdout, stderr = proc.communicate(timeout=time_limit + grace)
        timed_out = False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        stdout, stderr = proc.communicate()
        timed_out = True
    wall = time.perf_counter() - started
    peak = _child_peak_mib()
    run = MethodRun(method, "error", wall, peak)
    payload = _last_json(stdout)
    if timed_out:
        run.status = "time_limit"
        run.error = f"killed after {wall:.0f} s"
    elif payload is None or "error" in payload:
        message = (payload or {}).get("error") or (stderr.strip().splitlines() or ["no output"])[-1]
        run.peak_memory_mib = (payload or {}).get("peak_memory_mib", run.peak_memory_mib)
        run.error = message
        run.status = "out_of_memory" if ("memory" in message.lower() or proc.returncode == -signal.SIGKILL) else "error"
    else:
        run.status = payload.get("status", "error")
        run.result = payload
        run.final_gap = payload.get("efce_gap")
        run.peak_memory_mib = payload.get("peak_memory_mib", run.peak_memory_mib)
        run.feasible_iterates = payload.get("feasible_iterates")
    rows = _read_trace(trace_path, method)
    if rows:
        run.max_infeasibility = max(r["infeasibility"] for r in rows)
        if run.final_gap is None:
            run.final_gap = rows[-1]["gap"]
        for threshold in THRESHOLDS:
            hit = next((r["seconds"] for r in rows if r["gap"] <= threshold), None)
            run.time_to_gap[f"{threshold:g}"] = hit
    else:
        run.time_to_gap = {f"{t:g}": None for t in THRESHOLDS}
    return run, rows


def _child_peak_mib() -> float:
    """Peak RSS over the children waited for so far (an upper bound for the last one; a child
    that reports its own peak in its JSON overrides it)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0


def _last_json(stdout: str) -> dict | None:
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
            if isinstance(value, dict):
                return value
        except json.JSONDecodeError:
            continue
    return None


def _read_trace(path: str, method: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path) as fh:
        rows = []
        for row in csv.DictReader(fh):
            rows.append({"method": method, "iteration": int(row["iteration"]), "seconds": float(row["seconds"]),
                         "gap": float(row["gap"]), "infeasibility": float(row["infeasibility"])})
    os.remove(path)
    return rows


def compare(game_spec: str, methods=DEFAULT_METHODS, *, time_limit: float = 60.0,
            memory_limit_gib: float | None = None, out_dir: str = "results",
            extra_args: dict[str, list[str]] | None = None, log=None) -> dict:
    """Run every method on ``game_spec`` and write traces.csv, summary.json, convergence.png."""
    os.makedirs(out_dir, exist_ok=True)
    runs, all_rows = [], []
    for method in methods:
        if log:
            log(f"running {method} on {game_spec} (time limit {time_limit:g} s)")
        run, rows = run_method(game_spec, method, out_dir, time_limit=time_limit,
                               memory_limit_gib=memory_limit_gib,
                               extra_args=(extra_args or {}).get(method))
        runs.append(run)
        all_rows += rows
    with open(os.path.join(out_dir, "traces.csv"), "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["method", "iteration", "seconds", "gap", "infeasibility"])
        writer.writeheader()
        writer.writerows(all_rows)
    summary = {"game": game_spec, "time_limit": time_limit, "memory_limit_gib": memory_limit_gib,
               "methods": {r.method: asdict(r) for r in runs}}
    with open(os.path.join(out_dir, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=2)
    missing = {r.method: _why_missing(r.status, r.error) for r in runs
               if not any(row["method"] == r.method for row in all_rows)}
    plot_convergence(all_rows, os.path.join(out_dir, "convergence.png"), title=game_spec, missing=missing)
    return summary


def _why_missing(status: str, error: str | None) -> str:
    """A short reason for a method without a single trace point."""
    if error and "too large" in error:
        return "refused up front (model too large for memory)"
    return f"{status.replace('_', ' ')}, no solution"


def plot_convergence(rows: list[dict], path: str, title: str = "", missing: dict | None = None) -> None:
    """Max deviation (log) vs seconds for every method; a second panel with infeasibility.
    ``missing`` maps methods that produced no point (time limit, memory) to their status."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = list(dict.fromkeys(r["method"] for r in rows))
    fig, (ax_gap, ax_inf) = plt.subplots(1, 2, figsize=(11, 4))
    for method in methods:
        pts = [r for r in rows if r["method"] == method]
        xs = [r["seconds"] for r in pts]
        ys = [max(r["gap"], 1e-12) for r in pts]
        style = "o-" if len(pts) > 1 else "o"
        ax_gap.plot(xs, ys, style, label=method, markersize=3)
        if any(r["infeasibility"] > 0 for r in pts) or method == "subgradient":
            ax_inf.plot(xs, [max(r["infeasibility"], 1e-16) for r in pts], style, label=method, markersize=3)
    ax_gap.set_yscale("log")
    ax_gap.set_xlabel("runtime [s]")
    ax_gap.set_ylabel("max deviation")
    ax_gap.set_title(title)
    if missing:
        note = "\n".join(f"{m}: {why}" for m, why in missing.items())
        ax_gap.text(0.98, 0.98, note, transform=ax_gap.transAxes, ha="right", va="top", fontsize=9,
                    bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.8})
    if ax_gap.lines:
        ax_gap.legend(loc="best")
    ax_inf.set_yscale("log")
    ax_inf.set_xlabel("runtime [s]")
    ax_inf.set_ylabel("infeasibility (max violation of Definition 3)")
    ax_inf.set_title("iterates' infeasibility")
    if ax_inf.lines:
        ax_inf.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def summary_table(summary: dict) -> str:
    """Method, time to 1e-1/1e-2/1e-3, final gap, peak memory, status."""
    head = f"{'method':<13}{'t(1e-1)':>10}{'t(1e-2)':>10}{'t(1e-3)':>10}{'final gap':>12}{'peak MiB':>10}  status"
    lines = [f"game: {summary['game']}", head, "-" * len(head)]
    for method, run in summary["methods"].items():
        times = [run["time_to_gap"].get(f"{t:g}") for t in THRESHOLDS]
        cells = "".join(f"{t:>10.2f}" if t is not None else f"{'—':>10}" for t in times)
        gap = run["final_gap"]
        gap_text = f"{gap:>12.3e}" if gap is not None else f"{'—':>12}"
        error = run.get("error") or ""
        status = run["status"] + (f" ({error[:90]}{'…' if len(error) > 90 else ''})" if error else "")
        lines.append(f"{method:<13}{cells}{gap_text}{run['peak_memory_mib']:>10.0f}  {status}")
    return "\n".join(lines)


def replot(out_dir: str) -> None:
    """Redraw ``convergence.png`` of a finished comparison from its traces.csv and summary.json."""
    with open(os.path.join(out_dir, "summary.json")) as fh:
        summary = json.load(fh)
    with open(os.path.join(out_dir, "traces.csv")) as fh:
        rows = [{"method": r["method"], "iteration": int(r["iteration"]), "seconds": float(r["seconds"]),
                 "gap": float(r["gap"]), "infeasibility": float(r["infeasibility"])} for r in csv.DictReader(fh)]
    traced = {r["method"] for r in rows}
    missing = {m: _why_missing(run["status"], run.get("error")) for m, run in summary["methods"].items()
               if m not in traced}
    plot_convergence(rows, os.path.join(out_dir, "convergence.png"), title=summary["game"], missing=missing)
