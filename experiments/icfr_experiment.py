"""Reproduce Figure 3 (center) of Celli, Marchesi, Farina, Gatti (NeurIPS 2020): max EFCE
deviation of ICFR's empirical frequency of play vs iterations (log-log, mean ± std over seeds),
with the EFCCE and NFCCE gaps beside it, and CFR-S's EFCCE vs EFCE gaps.

    python -m experiments.icfr_experiment [--iterations 10000] [--seeds 3] [--out docs/results/icfr]
                                          [--games kuhn3r3,...] [--jobs 2]

Writes ``runs/<game>_<method>_<seed>.json`` (traces; existing ones are reused), ``icfr_fig3.png``
and ``icfr_fig3.md`` into the output directory.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

GAMES = {
    "K33": "kuhn:players=3,ranks=3",
    "K34": "kuhn:players=3,ranks=4",
    "G23": "goofspiel:players=2,ranks=3",
    "G33": "goofspiel:players=3,ranks=3",
    "L33": "leduc:players=3,ranks=3",
    "Bs": "battleship:rows=2,cols=2,ship_sizes=[2],shots=3",
}


def run_one(job):
    key, method, seed, iterations, out = job
    path = os.path.join(out, "runs", f"{key}_{method}_{seed}.json")
    if os.path.exists(path):
        with open(path) as fh:
            data = json.load(fh)
        if data["iterations"] >= iterations:
            return data
    from games.spec import make_game
    from solvers.icfr import solve_icfr
    game = make_game(GAMES[key])
    started = time.perf_counter()
    res = solve_icfr(game, iterations, seed=seed, method=method)
    data = {"game": key, "spec": GAMES[key], "method": method, "seed": seed,
            "iterations": res.iterations, "seconds": time.perf_counter() - started,
            "solver_seconds": res.info["iteration_seconds"], "support": res.info["support"],
            "welfare": res.info["welfare"], "utilities": res.info["utilities"],
            "trace": [{"iteration": r.iteration, "efce": r.gap, "efcce": r.extra["efcce"],
                       "nfcce": r.extra["nfcce"]} for r in res.trace]}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(data, fh)
    print(f"{key} {method} seed {seed}: {data['seconds']:.1f}s efce {res.info['efce_gap']:.3g}",
          flush=True)
    return data


def aggregate(runs, key, method, metric):
    rs = [r for r in runs if r["game"] == key and r["method"] == method]
    if not rs:
        return None
    its = sorted(set.intersection(*[{t["iteration"] for t in r["trace"]} for r in rs]))
    vals = np.array([[next(t[metric] for t in r["trace"] if t["iteration"] == it) for it in its]
                     for r in rs])
    return np.array(its), vals.mean(axis=0), vals.std(axis=0), len(rs)


def plot(runs, keys, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.6))
    panels = [("icfr", "efce", "ICFR: max EFCE deviation"), ("icfr", "efcce", "ICFR: EFCCE gap"),
              ("icfr", "nfcce", "ICFR: NFCCE gap")]
    for ax, (method, metric, title) in zip(axes, panels):
        for key in keys:
            agg = aggregate(runs, key, method, metric)
            if agg is None:
                continue
            its, mean, std, n = agg
            ax.plot(its, mean, label=f"{key} ({n} seeds)")
            ax.fill_between(its, np.maximum(mean - std, 1e-12), mean + std, alpha=0.2)
        ax.set_xscale("log"); ax.set_yscale("log"); ax.set_title(title); ax.set_xlabel("iterations")
        ax.grid(True, which="both", alpha=0.3)
    ax = axes[3]
    for key in keys:
        for metric, style in (("efcce", "-"), ("efce", "--")):
            agg = aggregate(runs, key, "cfr-s", metric)
            if agg is not None:
                its, mean, std, n = agg
                ax.plot(its, mean, style, label=f"{key} {metric.upper()}")
    ax.set_xscale("log"); ax.set_yscale("log"); ax.set_xlabel("iterations")
    ax.set_title("CFR-S: EFCCE (solid) vs EFCE (dashed) gap"); ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("gap (raw payoff units)")
    axes[0].legend(fontsize=8); ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path = os.path.join(out, "icfr_fig3.png")
    fig.savefig(path, dpi=110)
    return path


def table(runs, keys, out):
    lines = ["# ICFR / CFR-S gaps (Celli et al. 2020, Figure 3 center)", "",
             "Gaps of the empirical frequency of play at the last iteration, raw payoff units, "
             "mean ± std over seeds.", "",
             "| game | spec | method | seeds | iterations | EFCE gap | EFCCE gap | NFCCE gap | "
             "solver s/run | total s/run |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for key in keys:
        for method in ("icfr", "cfr-s"):
            rs = [r for r in runs if r["game"] == key and r["method"] == method]
            if not rs:
                continue
            last = lambda m: np.array([r["trace"][-1][m] for r in rs])
            cell = lambda m: f"{last(m).mean():.3g} ± {last(m).std():.2g}"
            lines.append(f"| {key} | `{GAMES[key]}` | {method} | {len(rs)} | {rs[0]['iterations']} | "
                         f"{cell('efce')} | {cell('efcce')} | {cell('nfcce')} | "
                         f"{np.mean([r['solver_seconds'] for r in rs]):.1f} | "
                         f"{np.mean([r['seconds'] for r in rs]):.1f} |")
    path = os.path.join(out, "icfr_fig3.md")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n\n![ICFR gaps](icfr_fig3.png)\n")
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=10_000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--games", default=",".join(GAMES), help=f"subset of {','.join(GAMES)}")
    ap.add_argument("--methods", default="icfr,cfr-s")
    ap.add_argument("--seeds-for", default="", help="per-game seed counts, e.g. L33=2,Bs=2")
    ap.add_argument("--out", default="docs/results/icfr")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    keys = [k for k in args.games.split(",") if k]
    for k in keys:
        if k not in GAMES:
            ap.error(f"unknown game {k}; valid: {', '.join(GAMES)}")
    per = dict(kv.split("=") for kv in args.seeds_for.split(",") if kv)
    jobs = [(k, m, s, args.iterations, args.out) for k in keys for m in args.methods.split(",")
            for s in range(int(per.get(k, args.seeds)))]
    jobs.sort(key=lambda j: -{"L33": 100, "Bs": 10}.get(j[0], 1) * (2 if j[1] == "icfr" else 1))
    os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)
    with ProcessPoolExecutor(max_workers=args.jobs) as ex:
        runs = list(ex.map(run_one, jobs))
    print(plot(runs, keys, args.out))
    print(table(runs, keys, args.out))


if __name__ == "__main__":
    main()
