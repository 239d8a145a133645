"""Issue 10: where the memory of ``efce solve GAME --method rm`` goes, in bytes per relevant pair.

Each instance runs in a fresh process through the same stages as the solver (game, relevant
pairs, DECOMPOSE, trigger chain + payoff operator, both engines and the loop buffers, gap
evaluator and feasibility check, a few iterations with a checkpoint).  For every stage it reports
the resident set size after the stage (``held``) and the process peak so far (``peak``), both in
MiB and in bytes per relevant pair; ``components`` are the exact array sizes of what the run
holds.  Targets (whole-process peak): small ≤ 0.6 GiB, medium ≤ 3 GiB, large ≤ 10 GiB.

    python benchmarks/bench_memory.py [--only small,medium,large] [--out FILE]
"""

from __future__ import annotations

import gc
import resource

from bench_games import INSTANCES
from harness import main


def _rss_mib() -> float:
    import psutil
    return psutil.Process().memory_info().rss / 2**20


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _nbytes(*arrays) -> int:
    return int(sum(a.nbytes for a in arrays if a is not None))


def _chain_bytes(chain) -> int:
    held = _nbytes(chain.kind, chain.target_ptr, chain.source_ptr, chain.source, chain.entry_index)
    for name in ("level", "step_size", "num_sources"):
        if name in chain.__dict__:
            held += chain.__dict__[name].nbytes
    if "levels" in chain.__dict__:
        levels = chain.__dict__["levels"]
        # Level slices of one array (DECOMPOSE) count once.
        bases = {id(lv.base if lv.base is not None else lv): (lv.base if lv.base is not None else lv)
                 for lv in levels}
        held += sum(b.nbytes for b in bases.values())
    return held


def _engine_bytes(engine) -> int:
    return _nbytes(engine._order, engine._kind, engine._a, engine._b, engine._buffer)


def case(kwargs, iterations: int = 3):
    def run():
        import numpy as np

        from efce import games
        from efce.games.relevant import relevant_pairs
        from efce.polytopes.decompose import correlation_plan
        from efce.polytopes.feasibility import FeasibilityCheck
        from efce.solvers.methods.efce import build_efce_model
        from efce.solvers.regret.engine import ChainEngine
        from efce.solvers.evaluation.gaps import EFCEGapEvaluator
        from efce.solvers.regret.local import RegretMatching
        from efce.solvers.methods.selfplay import SelfPlay

        stages = []

        def stage(name):
            gc.collect()
            stages.append({"stage": name, "held_mib": round(_rss_mib(), 1), "peak_mib": round(_peak_mib(), 1)})

        stage("imports")
        game = games.battleship(rows=3, cols=2, **kwargs)
        stage("game")
        pairs = relevant_pairs(game)
        stage("relevant pairs")
        chain = correlation_plan(game, pairs)
        stage("DECOMPOSE")
        model = build_efce_model(game, pairs=pairs, xi_chain=chain)
        stage("trigger chain + payoff operator")
        rule = RegretMatching(plus=True)
        xi_engine, y_engine = ChainEngine(chain, rule), ChainEngine(model.triggers.chain, rule)
        operator = model.operator
        play = SelfPlay((xi_engine, y_engine), (lambda y, out: operator.matvec(y, out=out),
                                                lambda x, out: operator.rmatvec(x, out=out, sign=-1.0)),
                        averaged=(True, False))
        x, sum_x = play.points[0], play.sums[0]
        stage("engines + loop buffers")
        evaluator = EFCEGapEvaluator(game, pairs, tables=model.tables, entry_index=chain.entry_index)
        feasibility = FeasibilityCheck(game, pairs)
        stage("gap evaluator + feasibility check")
        for t in range(1, iterations + 1):
            play.step(t)
        stage(f"{iterations} iterations")
        gap = evaluator.evaluate(sum_x, 1.0 / play.weight).gap
        violation = feasibility(x, model.entry_of_pair)
        stage("checkpoint (gap + feasibility)")

        n = len(pairs)
        tables = model.tables
        components = {
            "relevant pairs (CSR)": _nbytes(pairs.indptr, pairs.sigma2),
            "Ξ chain (DECOMPOSE)": _chain_bytes(chain),
            "entry of pair": _nbytes(model.entry_of_pair),
            "Y chain (triggers)": _chain_bytes(model.triggers.chain) + _nbytes(
                model.triggers.block_start, model.triggers.block_preorder_start,
                *model.triggers.preorder_sequences),
            "payoff operator: rows (one per nonzero)": sum(t.rows.nbytes for t in tables.players),
            "payoff operator: rest of the trigger tables": model.operator.nbytes
            - sum(t.rows.nbytes for t in tables.players),
            "Ξ engine (regrets, order)": _engine_bytes(xi_engine),
            "Y engine (regrets, order)": _engine_bytes(y_engine),
            "loop buffers (x, y, Σ t·x)": _nbytes(x, y, sum_x),
        }
        total = sum(components.values())
        per_pair = {k: round(v / n, 2) for k, v in components.items()}
        for s in stages:
            s["held_bytes_per_pair"] = round(s["held_mib"] * 2**20 / n, 1)
            s["peak_bytes_per_pair"] = round(s["peak_mib"] * 2**20 / n, 1)
        return {"relevant_pairs": n, "stages": stages, "components_bytes_per_pair": per_pair,
                "components_total_bytes_per_pair": round(total / n, 2),
                "gap_after_iterations": gap, "max_violation": violation,
                "peak_memory_mib": round(_peak_mib(), 1),
                "peak_bytes_per_pair": round(_peak_mib() * 2**20 / n, 1)}
    return run


if __name__ == "__main__":
    main({name: case(kw) for name, kw in INSTANCES.items()}, __doc__)
