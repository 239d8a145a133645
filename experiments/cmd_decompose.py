"""``efce decompose GAME [--verify] [--show] [--json]``: Ξ as a chain of scaled extensions."""

from __future__ import annotations

import argparse
import time

from efce.games.resources.memory import peak_memory_mib

from .cli import command, integer_argument


def _configure(p):
    p.add_argument("game", help="a .efg path or a spec such as farina-fig2")
    p.add_argument(
        "--verify",
        action="store_true",
        help="check the chain against Definition 3: random points, unused constraints, "
        "LP vertices, dimension",
    )
    p.add_argument(
        "--show",
        action="store_true",
        help="print the chain in the paper's notation and the fill-in grid (small games)",
    )
    p.add_argument(
        "--seed", type=integer_argument(0, 2**63 - 1), default=0, help="random seed of --verify's checks"
    )


@command("decompose", _configure)
def run_decompose(args: argparse.Namespace) -> tuple[dict, str]:
    """Decompose the correlation-plan polytope of a two-player game without chance."""
    from efce.games.relevant import relevant_pairs
    from efce.games.spec import make_game
    from efce.polytopes import correlation_plan, verify
    from efce.polytopes.decompose import check_correlation_plan_budget, check_decomposable
    from efce.polytopes.render import chain_text, fill_grid_text

    game = make_game(args.game)
    check_decomposable(game)
    check_correlation_plan_budget(game)  # before the pairs: a .efg file has no size estimate
    started = time.perf_counter()
    pairs = relevant_pairs(game)
    chain = correlation_plan(game, pairs)
    seconds = time.perf_counter() - started
    result = {
        "game": game.name,
        "entries": chain.num_entries,
        "relevant_pairs": len(pairs),
        "simplex_steps": chain.num_simplex_steps,
        "singleton_steps": chain.num_singleton_steps,
        "levels": chain.depth,
        "seconds": round(seconds, 6),
        "peak_memory_mib": round(peak_memory_mib(), 1),
    }
    lines = [
        f"game             {game.name}",
        f"entries          {chain.num_entries:,} (relevant sequence pairs: {len(pairs):,})",
        f"steps            {chain.num_simplex_steps:,} simplex, {chain.num_singleton_steps:,} singleton",
        f"levels           {chain.depth}",
        f"decomposed in    {seconds:.3f} s (peak memory {result['peak_memory_mib']:.0f} MiB)",
    ]
    if args.verify:
        report = verify(chain, game, seed=args.seed)
        result["verified"] = report.passed
        result["checks"] = report.to_dict()
        result["unused_constraints"] = report.unused_constraints
        lines += ["", "verification:", str(report)]
        if report.unused_constraints:
            lines.append(
                "constraints not used by the chain (implied): "
                + "; ".join(report.unused_constraints[:10])
                + (" …" if len(report.unused_constraints) > 10 else "")
            )
    if args.show:
        lines += ["", chain_text(chain)]
        if len(pairs) <= 2500:
            lines += [
                "",
                "fill-in order (phase of each ξ[σ1, σ2], · = not relevant):",
                fill_grid_text(chain, game),
            ]
    return result, "\n".join(lines)
