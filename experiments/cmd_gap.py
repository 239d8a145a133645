"""``efce gap GAME --device FILE.json``: EFCE / EFCCE / NFCCE gaps of a correlation device.

The device file lists joint pure plans with probabilities (see :mod:`solvers.evaluation.device`); the gaps
are in raw payoff units (max over players and trigger agents of the deviation gain, ≥ 0).
"""

from __future__ import annotations

import argparse

from efce.experiments.cli import command, load_game


def _configure_gap(p: argparse.ArgumentParser) -> None:
    p.add_argument("game", help="a .efg path or a spec such as kuhn:players=3,ranks=3")
    p.add_argument(
        "--device",
        required=True,
        help='JSON file {"device": [{"p": ..., "plans": [{infoset: action}, ...]}]}',
    )


@command("gap", _configure_gap)
def run_gap(args: argparse.Namespace) -> tuple[dict, str]:
    """Gaps (EFCE, EFCCE, NFCCE), utilities and welfare of a correlation device."""
    from efce.solvers.evaluation.device import device_from_json
    from efce.solvers.evaluation.device_gaps import device_gaps

    game, _ = load_game(args.game)
    device = device_from_json(game, args.device)
    gaps = device_gaps(game, device)
    result = gaps.to_dict()
    result["support"] = int(device.size)
    lines = [
        f"EFCE gap   {gaps.efce:.12g}",
        f"EFCCE gap  {gaps.efcce:.12g}",
        f"NFCCE gap  {gaps.nfcce:.12g}",
        "utilities  " + ", ".join(f"{u:.6g}" for u in gaps.utilities),
        f"welfare    {gaps.welfare:.6g}",
    ]
    return result, "\n".join(lines)
