"""``efce compare [GAME] [--methods ...] [--concept C] [--time-limit S] [--memory-limit GiB]
[--out DIR] [--preset default|paper|concepts|dynamics] [--linear-time] [--replot]``."""

from __future__ import annotations

import argparse
import os
import re
import sys

from efce.concepts import CONCEPTS
from efce.errors import CommandError, GameError, Interrupted, ResultWithError
from efce.interrupts import stop_requested

from .cli import command
from .compare import (
    DEFAULT_METHODS,
    compare_games,
    failed_methods,
    load_comparison,
    split_method_list,
    summary_table,
)
from .concepts import CONCEPT_METHODS, concepts_table, plot_concepts, takes_concept
from .figures import plot_convergence, plot_games
from .paths import check_outputs
from .solve import METHODS

#: The README's main job: a tiny game where the LP wins and a larger one where regret
#: minimization pulls ahead (about a minute in all).
PRESETS = {
    "default": [
        "sheriff:max_bribe=2,max_items=2,rounds=2",  # 1,045 relevant pairs
        "sheriff:max_bribe=3,max_items=3,rounds=4",
    ],  # 375,165 relevant pairs
    "paper": [
        "battleship:rows=3,cols=2,ship_sizes=[1],shots=3",
        "battleship:rows=3,cols=2,ship_sizes=[1],shots=4",
        "battleship:rows=3,cols=2,ship_sizes=[2],shots=4",
    ],
    # The three solution concepts side by side (experiments.concepts): a general-sum game
    # without chance and a game with public chance moves (constant-sum: every concept's
    # welfare is the prizes' total, which both methods must find).
    "concepts": [
        "sheriff:max_bribe=3,max_items=3,rounds=4",  # 375,165 relevant pairs
        "goofspiel:players=2,ranks=4,prizes=random",  # 265,393 relevant pairs
    ],
    # The ICFR seeds' three-player games that column generation certifies (docs/results/colgen.md).
    "dynamics": ["kuhn:players=3,ranks=4", "goofspiel:players=3,ranks=3"],
}

#: Figure 3 of Farina, Ling, Fang, Sandholm 2019: today's default, the paper's own configuration
#: of the regret minimizer, the LPs (HiGHS for the paper's Gurobi, and PDLP) and the subgradient
#: method.  The subgradient method starts from a random plan: in these single-cell Battleship
#: games uniform play is an exact equilibrium (docs/results.md, section 4), so from its default
#: uniform start it would stop at once; its step is 1e-6 because the paper's 1e-3 diverges here.
PAPER_METHODS = (
    "rm",
    "rm[local=rm+,averaging=linear,updates=alternating]",
    "lp-highs",
    "lp-pdlp",
    "subgradient[start=random,step_size=1e-6]",
)


#: The price of dynamics: the optimal EFCE for player 1, certified by column generation, beside
#: the EFCE each dynamic converges to (the table gives player 1's utility at each).
DYNAMICS_METHODS = ("lp-colgen[objective=player1]", "trigger", "icfr")
#: Each preset's methods and time limit, where they are not the defaults.
PRESET_RUNS = {
    "paper": (PAPER_METHODS, 600.0),
    "concepts": (CONCEPT_METHODS, 600.0),
    "dynamics": (DYNAMICS_METHODS, 600.0),
}


def _configure(p):
    p.add_argument("game", nargs="?", default=None, help="a .efg path or spec (default: the preset's games)")
    p.add_argument(
        "--methods",
        default=None,
        help=f"comma-separated, from: {', '.join(METHODS)}; a configuration of one as "
        f"METHOD[option=value,...], e.g. rm[local=rm+,averaging=linear] (default: "
        f"{','.join(DEFAULT_METHODS)}; with --preset paper also the paper's rm; with --preset "
        f"concepts {','.join(CONCEPT_METHODS)}; with --preset dynamics {','.join(DYNAMICS_METHODS)})",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="seconds per method (default 30; 600 with --preset paper or dynamics)",
    )
    p.add_argument(
        "--concept",
        choices=tuple(CONCEPTS),
        default=None,
        help="the equilibrium the methods compute (default efce): every method that takes a "
        "concept gets it; the default methods are then those",
    )
    p.add_argument("--memory-limit", type=float, default=None, help="GiB per method (default: none)")
    p.add_argument("--out", default="results", help="output folder")
    p.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default=None,
        help="the games to compare when no GAME is given (default: default)",
    )
    p.add_argument(
        "--linear-time",
        action="store_true",
        help="draw runtime on a linear axis, as the paper's Figure 3 (default: log, so that "
        "fast and slow runs are both readable)",
    )
    p.add_argument(
        "--replot",
        action="store_true",
        help="run nothing: redraw the figures and print the table from the traces.csv and "
        "summary.json already in --out (one comparison's folder, or the preset's folders of "
        "each game in it)",
    )
    p.add_argument("--step-size", type=float, default=None, help="subgradient step size")
    p.add_argument("--start", default=None, choices=("uniform", "random"), help="subgradient initial plan")


def _slug(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", spec).strip("_")


@command("compare", _configure)
def run_compare(args: argparse.Namespace) -> tuple[dict, str]:
    """Compare LP, regret minimization and subgradient runtimes on one or more games."""
    if args.game is not None and args.preset is not None:
        # A preset is a list of games (and, for paper, their time limit): with a game it would
        # be half ignored, half applied.
        raise CommandError(
            f"--preset {args.preset} chooses the games itself; give either a GAME or --preset, not both"
        )
    preset = args.preset or "default"
    if args.replot:
        return _replot(args, preset)
    if preset == "concepts" and args.concept is not None:
        raise CommandError("--preset concepts runs every concept itself; drop --concept")
    preset_methods, preset_limit = PRESET_RUNS.get(preset, (DEFAULT_METHODS, 30.0))
    methods = split_method_list(args.methods) if args.methods is not None else list(preset_methods)
    if args.methods is None and args.concept not in (None, "efce"):
        methods = [m for m in methods if takes_concept(m)]  # the defaults that compute it
    games = [args.game] if args.game is not None else PRESETS[preset]
    time_limit = args.time_limit if args.time_limit is not None else preset_limit
    subgradient = {"step_size": args.step_size, "start": args.start}
    options = {"subgradient": subgradient} if "subgradient" in methods else {}
    if "subgradient" not in methods and any(v is not None for v in subgradient.values()):
        raise CommandError(
            "--step-size and --start configure a plain 'subgradient' run, and there is "
            "none among the methods (a configured one takes them in brackets: "
            "subgradient[step_size=1e-6,start=random])"
        )
    out_dirs = [args.out if len(games) == 1 else os.path.join(args.out, _slug(spec)) for spec in games]
    if len(games) > 1:  # the figure of all games beside one folder per game
        extra = ("concepts.png",) if preset == "concepts" and args.game is None else ()
        check_outputs(
            folders={
                "output folder (--out)": (args.out, ("figure.png", *extra, *(_slug(g) + "/" for g in games)))
            }
        )
    log = (lambda msg: print(msg, file=sys.stderr)) if not args.json else None
    # Every game is checked before the first run; each game's files are written when its last
    # run ends.
    summaries = compare_games(
        games,
        methods,
        out_dirs=out_dirs,
        time_limit=time_limit,
        memory_limit_gib=args.memory_limit,
        options=options,
        log=log,
        linear_time=args.linear_time,
        concept=args.concept,
    )
    texts = [
        summary_table(summary) + f"\n(files in {out_dir}: traces.csv, summary.json, convergence.png)"
        for spec, out_dir in zip(games, out_dirs, strict=True)
        if (summary := summaries.get(spec)) is not None
    ]
    if not summaries:
        raise Interrupted("interrupted before the first method finished")
    unsaved_figure = []
    if len(games) > 1:
        # The games' panels side by side: Figure 3 of the paper with --preset paper.
        compared = [
            d
            for spec, d in zip(games, out_dirs, strict=True)
            if spec in summaries and not summaries[spec].get("unsaved")
        ]
        figure = os.path.join(args.out, "figure.png")
        try:
            plot_games(compared, figure, linear_time=args.linear_time)
            texts.append(f"(all games side by side: {figure})")
        except OSError as exc:
            unsaved_figure.append(f"cannot write '{figure}': {exc.strerror or exc}")
    if preset == "concepts" and args.game is None:
        compared_summaries = [summaries[spec] for spec in games if spec in summaries]
        texts.append(concepts_table(compared_summaries))
        figure = os.path.join(args.out, "concepts.png")
        try:
            plot_concepts(compared_summaries, figure)
            texts.append(f"(the concepts' optimal welfare and runtimes: {figure})")
        except OSError as exc:
            unsaved_figure.append(f"cannot write '{figure}': {exc.strerror or exc}")
    result = summaries[games[0]] if len(games) == 1 else {"games": summaries, "interrupted": stop_requested()}
    text = "\n\n".join(texts)
    # The exit code says whether every run succeeded; the summary is printed either way.
    problems = [line for s in summaries.values() for line in s.get("unsaved", [])] + unsaved_figure
    failed = [f"{m} on {spec}" for spec, s in summaries.items() for m in failed_methods(s)]
    if failed:
        problems.insert(0, f"{len(failed)} run(s) failed: {', '.join(failed)}")
    if problems:
        raise ResultWithError("; ".join(problems), result, text)
    return result, text


def _replot(args, preset: str):
    """``--replot``: the figures and the table again from the files of an earlier run, nothing
    run.  Every folder is read before anything is drawn.

    Raises
    ------
    CommandError
        An option that only matters for running, or a folder without the files of a run.
    """
    given = [
        flag
        for flag, value in (
            ("--methods", args.methods),
            ("--time-limit", args.time_limit),
            ("--memory-limit", args.memory_limit),
            ("--step-size", args.step_size),
            ("--start", args.start),
        )
        if value is not None
    ]
    if given:
        raise CommandError(f"--replot runs nothing, so {', '.join(given)} would be ignored; drop it")
    single = args.game is not None or (
        # One comparison's folder redraws as itself; otherwise the preset's folder per game.
        args.preset is None and os.path.exists(os.path.join(args.out, "summary.json"))
    )
    games = [args.game] if single else PRESETS[preset]
    out_dirs = [args.out] if single else [os.path.join(args.out, _slug(spec)) for spec in games]
    comparisons = []
    for out_dir in out_dirs:
        try:
            rows, summary = load_comparison(out_dir)  # guarded: names the file and the line or run
        except GameError as exc:
            raise CommandError(
                f"--replot reads the traces.csv and summary.json of an earlier run: {exc}"
            ) from None
        comparisons.append((rows, summary))
    texts = []
    for out_dir, (rows, summary) in zip(out_dirs, comparisons, strict=True):
        path = os.path.join(out_dir, "convergence.png")
        plot_convergence(rows, summary, path, linear_time=args.linear_time)
        texts.append(summary_table(summary) + f"\n(redrawn: {path})")
    if len(games) > 1:
        figure = os.path.join(args.out, "figure.png")
        plot_games(out_dirs, figure, linear_time=args.linear_time)
        texts.append(f"(all games side by side: {figure})")
    if preset == "concepts" and not single:
        texts.append(concepts_table([summary for _, summary in comparisons]))
        figure = os.path.join(args.out, "concepts.png")
        plot_concepts([summary for _, summary in comparisons], figure)
        texts.append(f"(the concepts' optimal welfare and runtimes: {figure})")
    summaries = {summary["game"]: summary for _, summary in comparisons}
    result = comparisons[0][1] if len(games) == 1 else {"games": summaries, "interrupted": False}
    return result, "\n\n".join(texts)
