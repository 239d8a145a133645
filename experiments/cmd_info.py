"""``efce info GAME``: the sizes of a game (players, infosets, sequences, terminals, relevant
sequence pairs, and for ``rm``'s games the estimated memory of its run on the CPU and on a GPU),
its infosets' names with ``--infosets``, or its size estimated from the spec alone with
``--estimate``."""

from __future__ import annotations

import argparse
import time

from .cli import command, load_game


def _configure_info(p: argparse.ArgumentParser) -> None:
    p.add_argument("game", help="a .efg path or a spec such as kuhn:players=3,ranks=3")
    p.add_argument("--infosets", action="store_true", help="list every infoset with its actions")
    p.add_argument(
        "--estimate",
        action="store_true",
        help="only estimate the size from the spec's parameters, without building",
    )


@command("info", _configure_info)
def run_info(args: argparse.Namespace) -> tuple[dict, str]:
    """Sizes of a game: players, infosets, sequences, terminals and relevant sequence pairs."""
    from efce.games.chance import chance_visibility
    from efce.games.relevant import count_relevant_pairs

    if args.estimate:
        return _estimate_info(args.game)
    game, seconds = load_game(args.game)
    spaces = [game.sequences(p) for p in range(game.num_players)]
    visibility = chance_visibility(game)
    why = {
        "none": "no chance moves",
        "public": "every player observes every chance outcome",
    }.get(visibility.kind, visibility.reason)
    pairs = None
    if game.num_players == 2:
        started = time.perf_counter()
        pairs = count_relevant_pairs(game)
        seconds += time.perf_counter() - started
    result = {
        "game": game.name,
        "players": game.num_players,
        "chance": game.has_chance,
        "public_chance": visibility.public,
        "public_chance_reason": why,
        "infosets": [s.num_infosets for s in spaces],
        "sequences": [s.num_sequences for s in spaces],
        "terminals": game.num_terminals,
        "nodes": game.num_nodes,
        "relevant_pairs": pairs,
        **_rm_estimates(game),
        "seconds": round(seconds, 6),
    }
    lines = [
        f"game            {game.name}",
        f"players         {game.num_players}{' + chance' if game.has_chance else ''}",
        f"chance          {'public' if visibility.public else 'private'}: {why}",
        f"nodes           {game.num_nodes:,}",
        f"terminals       {game.num_terminals:,}",
    ]
    for p, s in enumerate(spaces):
        lines.append(
            f"{game.player_names[p]:<15} {s.num_infosets:,} infosets, {s.num_sequences:,} "
            f"sequences (empty one included)"
        )
    if pairs is not None:
        lines.append(f"relevant pairs  {pairs:,}")
    if result["estimated_rm_bytes"] is not None:
        from efce.games.resources.memory import gib

        lines.append(
            f"rm memory       about {gib(result['estimated_rm_bytes'])} (CPU), "
            f"{gib(result['estimated_gpu_bytes'])} of GPU memory with --backend cuda"
        )
    lines.append(f"built in        {seconds:.3f} s")
    if args.infosets:
        from efce.solvers.evaluation.device import infoset_names

        listing = []
        for p, rows in enumerate(infoset_names(game)):
            listing.append(
                [
                    {
                        "infoset": r["label"],
                        "actions": r["action_labels"],
                        "name": r["name"],
                        "position": r["position"],
                        "action_names": r["actions"],
                    }
                    for r in rows
                ]
            )
            lines.append(f"\n{game.player_names[p]} infosets (name to use in device files, then actions):")
            lines.extend(
                f"  {_listed_name(r)}: {', '.join(_listed_action(r, a) for a in range(len(r['actions'])))}"
                for r in rows
            )
        result["infoset_labels"] = listing
    return result, "\n".join(lines)


def _rm_estimates(game) -> dict:
    """``estimated_rm_bytes``, the peak memory of ``efce solve GAME --method rm`` on the CPU
    (:func:`~efce.solvers.methods.efce.estimate_efce_bytes`), and ``estimated_gpu_bytes``, the
    GPU memory of its run with ``--backend cuda`` in rm's default configuration
    (:func:`~efce.solvers.backends.estimate_gpu_bytes`: the estimates that refuse a run
    before anything is built), counted from the game without building the model; both None for
    a game ``rm`` does not solve — by rm's own checks: not two players, private chance moves, no
    decision at all (a game where only one player moves is solved, and estimated)."""
    from efce.errors import GameError
    from efce.solvers.backends import estimate_gpu_bytes
    from efce.solvers.methods.efce import estimate_efce_bytes

    from .solve import check_capability

    try:
        check_capability(game, "rm")
        game.require_decisions("rm")
    except GameError:
        return {"estimated_rm_bytes": None, "estimated_gpu_bytes": None}

    return {"estimated_rm_bytes": estimate_efce_bytes(game), "estimated_gpu_bytes": estimate_gpu_bytes(game)}


def _listed_name(row: dict) -> str:
    """An infoset in ``info --infosets``: the exact name device files use, with the label and
    position when the name is not the label itself."""
    if row["name"] is None:
        return f"(no unambiguous name: label '{row['label']}' at {row['position']})"
    if row["name"] == row["label"]:
        return row["name"]
    return f"{row['name']} (labelled '{row['label']}')"


def _listed_action(row: dict, a: int) -> str:
    name, label = row["actions"][a], row["action_labels"][a]
    return label if name == label else f"{name} (labelled '{label}')" if name else f"'{label}' (ambiguous)"


def _estimate_info(spec: str):
    from efce.games.spec import check_spec, estimate_spec

    estimate = estimate_spec(spec)
    if estimate is None:
        check_spec(spec)  # a .efg path: it must at least exist and be readable
        return (
            {"game": spec, "estimated_nodes": None, "estimated_bytes": None},
            f"{spec}: no estimate for .efg files (read it without --estimate)",
        )
    from efce.games.resources.memory import gib

    result = {
        "game": spec,
        "estimated_nodes": estimate.nodes,
        "estimated_bytes": estimate.bytes,
        "estimate_exact": estimate.exact,
    }
    return result, f"{spec}: {estimate.describe()}, {gib(estimate.bytes)} to build"
