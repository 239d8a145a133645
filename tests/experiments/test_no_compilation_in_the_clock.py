"""After a method's warm-up (:attr:`~efce.solvers.options.Method.warm_up`), its run compiles and
loads no numba kernel: every variant the run calls — in its setup, its timed iterations and
checkpoints, its final report — was compiled or loaded by the warm-up, before the clock.

Each case runs in a fresh process (:mod:`tests.experiments.kernel_loads`), which has to load
every kernel (from numba's cache, or compile it): the warm-up must have made some available, and
the run none.  The cases cover every method ``efce compare`` runs by default and with ``--preset
paper`` (rm and its paper configuration, subgradient; the LPs' first calls are
``tests/baselines/test_lp_warm_up.py``'s), the other numba methods, games with and without chance
moves, two and three players, the device path, and — with the CPU backend's thresholds lowered —
the variants of big games on a small one: parallel passes and products, float32 running sums
over float64 state, float32 state with bfloat16 predictions, each on one chain while the other
stays serial.
"""

from __future__ import annotations

import pytest

from tests.experiments.kernel_loads import in_a_fresh_process

SMALL_SHERIFF = "sheriff:max_bribe=2,max_items=2,rounds=2"  # Ξ 1,045 entries, Y 814
GOOFSPIEL = "goofspiel:players=2,ranks=3,prizes=sorted"  # Y (585) larger than Ξ (552)
THREE_PLAYERS = "kuhn:players=3"
THREE_PLAYERS_NO_CHANCE = "goofspiel:players=3,ranks=2,prizes=sorted"
PAPER_RM = {"local": "rm+", "averaging": "linear", "updates": "alternating"}

#: (case id, method, game, options, extra settings of the case).
CASES = [
    ("rm", "rm", SMALL_SHERIFF, {}, {}),
    ("rm-one-thread", "rm", SMALL_SHERIFF, {"threads": 1}, {}),
    ("rm-paper", "rm", SMALL_SHERIFF, PAPER_RM, {}),
    ("rm-welfare-threshold", "rm", SMALL_SHERIFF, {"welfare_threshold": 0.5}, {}),
    ("rm-objective-welfare", "rm", SMALL_SHERIFF, {"objective": "welfare", "iterations": 20}, {}),
    (
        "rm-simultaneous-hedge",
        "rm",
        SMALL_SHERIFF,
        {"updates": "simultaneous", "averaging": "quadratic", "local": "hedge"},
        {},
    ),
    ("rm-more-trigger-entries", "rm", GOOFSPIEL, {}, {}),
    # Ξ (1,045 entries) parallel, Y (814) serial; Ξ's running sum float32 over float64 state
    ("rm-parallel-xi", "rm", SMALL_SHERIFF, {"threads": 2}, {"parallel_min_size": 900}),
    (
        "rm-float32-sum",
        "rm",
        SMALL_SHERIFF,
        {"threads": 2},
        {"parallel_min_size": 900, "float32_min_entries": 1000},
    ),
    (
        "rm-float32-state-welfare",
        "rm",
        SMALL_SHERIFF,
        {"threads": 2, "welfare_threshold": 0.5},
        {"parallel_min_size": 500, "float32_min_entries": 500},
    ),
    ("cfr", "cfr", "kuhn", {"iterations": 20}, {}),
    ("cfr+-parallel", "cfr+", SMALL_SHERIFF, {"iterations": 20, "threads": 2}, {"parallel_min_size": 50}),
    ("icfr", "icfr", THREE_PLAYERS, {"iterations": 20}, {}),
    ("cfr-s-device", "cfr-s", THREE_PLAYERS_NO_CHANCE, {"iterations": 20}, {"device": True}),
    ("trigger-float32", "trigger", THREE_PLAYERS, {"iterations": 5}, {"float32_min_entries": 10}),
    ("coarse-trigger-device", "coarse-trigger", "kuhn", {"iterations": 20}, {"device": True}),
    ("subgradient-paper", "subgradient", SMALL_SHERIFF, {"start": "random", "step_size": 1e-6}, {}),
]


def kernel_loads(method: str, game: str, options: dict, **extra) -> dict:
    """:func:`tests.experiments.kernel_loads.main` of the case, in a fresh process."""
    return in_a_fresh_process({"method": method, "game": game, "options": options, **extra})


@pytest.mark.parametrize(
    "method, game, options, extra", [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_the_run_compiles_and_loads_nothing_after_the_warm_up(method, game, options, extra):
    loads = kernel_loads(method, game, options, **extra)
    assert loads["status"] in ("converged", "iteration_limit", "time_limit")
    assert loads["warm_up"], "a fresh process loads its kernels: the warm-up made none available"
    assert loads["compile_seconds"] > 0
    assert loads["clock"] == [], "compiled or loaded inside the timed iterations"
    assert loads["run"] == [], "compiled or loaded after the warm-up"


def test_the_warm_up_loads_the_big_variants_only_for_big_structures():
    # The same run with the thresholds lowered needs the parallel passes; at their defaults not
    # (the warm-up calls what the run will call, not every variant there is).
    small = kernel_loads("rm", SMALL_SHERIFF, {"threads": 2})
    big = kernel_loads("rm", SMALL_SHERIFF, {"threads": 2}, parallel_min_size=900)
    assert not any("_parallel" in name for name in small["warm_up"])
    parallel = {name.split("(")[0] for name in big["warm_up"] if "_parallel" in name}
    assert {
        "efce.solvers.backends.cpu.chain_runs.run_recommend_parallel",
        "efce.solvers.backends.cpu.chain_runs.run_observe_parallel",
        "efce.solvers.backends.cpu.operator.following_matvec_parallel",
    } <= parallel
