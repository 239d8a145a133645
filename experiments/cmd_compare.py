"""``efce compare [GAME] [--methods ...] [--time-limit S] [--memory-limit GiB] [--out DIR]
[--preset default|paper]``."""

from __future__ import annotations

import os
import re
import sys

from .cli import CommandError, command
from .compare import DEFAULT_METHODS

#: The README's main job: a tiny game where the LP wins and a larger one where regret
#: minimization pulls ahead (about a minute in all).
PRESETS = {
    "default": ["sheriff:max_bribe=2,max_items=2,rounds=2",   # 1,045 relevant pairs
                "sheriff:max_bribe=3,max_items=3,rounds=4"],  # 375,165 relevant pairs
    "paper": ["battleship:rows=3,cols=2,ship_sizes=[1],shots=3",
              "battleship:rows=3,cols=2,ship_sizes=[1],shots=4",
              "battleship:rows=3,cols=2,ship_sizes=[2],shots=4"],
}


def _configure(p):
    p.add_argument("game", nargs="?", default=None, help="a .efg path or spec (default: the preset's games)")
    p.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                   help="comma-separated: rm, lp-highs, lp-pdlp, lp-cvxpy, subgradient, cfr+, icfr, ...")
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds per method (default 30; 600 with --preset paper)")
    p.add_argument("--memory-limit", type=float, default=None, help="GiB per method (default: none)")
    p.add_argument("--out", default="results", help="output folder")
    p.add_argument("--preset", choices=sorted(PRESETS), default="default")
    p.add_argument("--step-size", type=float, default=None, help="subgradient step size")
    p.add_argument("--start", default=None, choices=("uniform", "random"), help="subgradient initial plan")


def _slug(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", spec).strip("_")


@command("compare", _configure)
def run_compare(args):
    """Compare LP, regret minimization and subgradient runtimes on one or more games."""
    from .compare import compare, summary_table
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    from .cmd_solve import METHODS
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise CommandError(f"unknown method(s) {', '.join(unknown)}; valid: {', '.join(METHODS)}")
    games = [args.game] if args.game else PRESETS[args.preset]
    time_limit = args.time_limit or (600.0 if args.preset == "paper" else 30.0)
    sub_args = (["--step-size", str(args.step_size)] if args.step_size else []) + \
        (["--start", args.start] if args.start else [])
    extra = {"subgradient": sub_args} if sub_args else {}
    summaries, texts = {}, []
    log = (lambda msg: print(msg, file=sys.stderr)) if not args.json else None
    for spec in games:
        out_dir = args.out if len(games) == 1 else os.path.join(args.out, _slug(spec))
        summary = compare(spec, methods, time_limit=time_limit, memory_limit_gib=args.memory_limit,
                          out_dir=out_dir, extra_args=extra, log=log)
        summaries[spec] = summary
        texts.append(summary_table(summary) + f"\n(files in {out_dir}: traces.csv, summary.json, convergence.png)")
    result = summaries[games[0]] if len(games) == 1 else {"games": summaries}
    return result, "\n\n".join(texts)
