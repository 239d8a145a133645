"""Each parallel loop's body that is a function of its own (the deviator's passes, Ξ's run
passes, the checks: :mod:`efce.solvers.backends.cpu`) is compiled once per run configuration.

numba types a parallel loop's body twice: once with the loop index as ``int64`` and once, in the
parallel lowering, as ``uint64``; an argument that starts as a literal (``max_width = 0``) is
typed ``Literal[int](0)`` first.  A body function handed such an argument as it is would be
compiled twice, and a first run would pay for both.  The run below starts on an empty numba cache,
so that every variant it calls, nested ones included, is compiled in its process and recorded.
"""

from __future__ import annotations

import os
from collections import Counter

from tests.experiments.kernel_loads import in_a_fresh_process

#: The body functions, each called once per part from a parallel loop.
BODIES = (
    "deviator._observe_part",
    "deviator._recommend_part",
    "chain_runs._recommend_chunks",
    "chain_runs._observe_chunks",
    "chain_runs._scatter_chunks",
    "feasibility._definition3_part",
    "feasibility._run_chain_part",
    "gaps._gains_part",
)


def test_each_parallel_body_is_compiled_once_on_an_empty_cache(tmp_path):
    # Ξ (1,045 entries, steps stored as runs) and the operator's 1,045 rows above the lowered
    # threshold: the parallel passes, the fused deviator's parallel parts and the parallel checks.
    case = {
        "game": "sheriff:max_bribe=2,max_items=2,rounds=2",
        "method": "rm",
        "options": {"threads": 2, "iterations": 30},
        "parallel_min_size": 900,
    }
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path),
        "EFCE_COMPILE_WORKERS": "0",  # every variant compiled in the recorded process
        "EFCE_KERNELS": "compiled",
    }
    loaded = in_a_fresh_process(case, env=env)
    variants = Counter()
    for name in loaded["warm_up"] + loaded["run"]:
        function = name.split("(")[0]
        for body in BODIES:
            if function.endswith("." + body):
                variants[body] += 1
    assert set(variants) == set(BODIES), f"not compiled in this run: {set(BODIES) - set(variants)}"
    twice = {body: count for body, count in variants.items() if count != 1}
    assert not twice, f"compiled more than once: {twice}"
