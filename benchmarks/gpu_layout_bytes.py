"""Issue 39, the GPU side: the bytes a CUDA run of ``rm`` holds on the GPU, counted on the host.

For each game, the model is built as ``efce solve GAME --method rm --backend cuda`` builds it (no
welfare threshold), then the layouts the GPU would receive (Ξ's and Y's chain layouts, ``A`` and
``Aᵀ`` as CSR: :mod:`solvers.backends.cuda.layouts`) and :func:`run_device_bytes`, which counts
every array a :class:`~solvers.backends.cuda.saddle.CudaSaddlePoint` allocates for them (PRM+,
alternating updates).  Beside it, :func:`estimate_cuda_bytes`, the pre-build estimate that refuses
a model too large for the GPU, which must stay above the exact count.  No GPU and no numba-cuda
needed: these are the layouts' sizes, not a measurement on a device.

Prints one JSON line per game (bytes, and per relevant pair: the total, the estimate, Ξ's and Y's
layouts, the payoff matrices) and writes them all to OUT.

    python benchmarks/gpu_layout_bytes.py OUT GAME [GAME ...]
"""

from __future__ import annotations

import json
import sys

from efce.games.spec import make_game
from efce.solvers.backends.cuda.layouts import (
    chain_layout,
    estimate_cuda_bytes,
    payoff_layout,
    run_device_bytes,
)
from efce.solvers.methods.efce import build_efce_model


def layout_bytes(spec: str) -> dict:
    game = make_game(spec)
    estimate = estimate_cuda_bytes(game)
    model = build_efce_model(game, None)
    xi, y = chain_layout(model.xi_steps), chain_layout(model.triggers.chain)
    payoff = payoff_layout(model.operator, game)
    exact = run_device_bytes(xi, y, payoff, predictive=True)
    pairs = model.xi_steps.num_entries
    return {
        "pairs": pairs,
        "exact": exact,
        "estimate": estimate,
        "exact_per_pair": exact / pairs,
        "estimate_per_pair": estimate / pairs,
        "xi": xi.nbytes / pairs,
        "y": y.nbytes / pairs,
        "payoff": payoff.nbytes / pairs,
    }


def main(argv: list[str]) -> None:
    out, specs = argv[0], argv[1:]
    results = {}
    for spec in specs:
        results[spec] = layout_bytes(spec)
        print(spec, json.dumps(results[spec]), flush=True)
    with open(out, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
