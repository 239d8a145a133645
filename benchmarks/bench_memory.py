"""Issue 19: where the memory of ``efce solve GAME --method rm`` goes, in bytes per relevant pair.

Each instance runs in a fresh process through the stages of the default solve path
(:func:`solvers.methods.efce.solve_efce` with the CLI's defaults: PRM+ at every simplex,
quadratic averaging, alternating updates): the game, the model (relevant pairs, DECOMPOSE, trigger
chain and payoff operator: :func:`~solvers.methods.efce.build_efce_model`), the engines and loop
buffers, the gap evaluator and feasibility check, a few iterations and a checkpoint.  For every
stage it reports the resident set size after the stage and a heap trim (``held``) and the process peak so far
(``peak``), both in MiB and in bytes per relevant pair; ``components`` are the exact array sizes
of what the loop holds.  Targets (whole-process peak): small ≤ 0.45 GiB, medium ≤ 1.6 GiB,
large ≤ 60 B per pair (6.2 GiB).

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
    """Bytes of distinct buffers (views of one array count once)."""
    seen = {}
    for a in arrays:
        if a is None:
            continue
        base = a
        while getattr(base, "base", None) is not None:
            base = base.base
        seen[id(base)] = base.nbytes if hasattr(base, "nbytes") else a.nbytes
    return int(sum(seen.values()))


def _chain_bytes(chain) -> int:
    arrays = [chain.kind, chain.target_ptr, chain.source_ptr, chain.source, chain.entry_index,
              chain.known_level, chain.level_ptr]  # natural_entry: "entry of pair"
    for name in ("level", "step_order", "step_size", "num_sources", "entry_step", "source_step"):
        if name in chain.__dict__:
            arrays.append(chain.__dict__[name])
    arrays.extend(chain.__dict__.get("levels", []))
    return _nbytes(*arrays)


def _engine_bytes(engine) -> int:
    """The regret minimizer's state, its scratch and the parallel passes' chunk tables."""
    held = _nbytes(*(v for v in engine.state.values()))
    if engine._work is not None:
        held += engine._work.nbytes
    parallel = engine._parallel
    if parallel is not None:
        held += _nbytes(*parallel._static[5:], *parallel._ranges, parallel._scratch)
    minimizer = engine.minimizer
    if "_step_scratch" in minimizer.__dict__:
        held += minimizer.__dict__["_step_scratch"].nbytes
    if "_kind" in minimizer.__dict__ and minimizer.__dict__["_kind"] is not minimizer.chain.kind:
        held += minimizer.__dict__["_kind"].nbytes
    return held


def case(kwargs, iterations: int = 3):
    def run():
        import numpy as np

        from efce import games
        from efce.games.resources.memory import release_free_memory
        from efce.polytopes.feasibility import FeasibilityCheck
        from efce.solvers.evaluation.gaps import EFCEGapEvaluator
        from efce.solvers.methods.efce import AVERAGING, build_efce_model
        from efce.solvers.methods.selfplay import SelfPlay
        from efce.solvers.regret.engine import ChainEngine, minimizer_factory
        from efce.solvers.regret.local import PredictiveRMPlus

        stages = []

        def stage(name):
            gc.collect()
            release_free_memory()  # as solve_efce does between its stages
            stages.append({"stage": name, "held_mib": round(_rss_mib(), 1), "peak_mib": round(_peak_mib(), 1)})

        stage("imports")
        game = games.battleship(rows=3, cols=2, **kwargs)
        stage("game")
        model = build_efce_model(game)
        stage("model (pairs, DECOMPOSE, trigger chain, payoff operator)")
        make = minimizer_factory(None, None, PredictiveRMPlus())
        xi_engine = ChainEngine(model.xi_chain, minimizer=make(model.xi_chain))
        y_engine = ChainEngine(model.triggers.chain, minimizer=make(model.triggers.chain))
        operator = model.operator
        play = SelfPlay((xi_engine, y_engine), (lambda y, out: operator.matvec(y, out=out),
                                                lambda x, out: operator.rmatvec(x, out=out, sign=-1.0)),
                        averaged=(True, False), power=AVERAGING["quadratic"])
        x, y, sum_x = play.points[0], play.points[1], play.sums[0]
        stage("engines + loop buffers")
        evaluator = EFCEGapEvaluator(game, model.pairs, tables=model.tables,
                                     entry_of_pair=model.entry_of_pair)  # as solve_efce
        feasibility = FeasibilityCheck(game, model.pairs)
        stage("gap evaluator + feasibility check")
        for t in range(1, iterations + 1):
            play.step(t)
        stage(f"{iterations} iterations")
        gap = evaluator.evaluate(sum_x, 1.0 / play.weight).gap
        violation = max(feasibility(x, model.entry_of_pair),
                        feasibility(sum_x, model.entry_of_pair, 1.0 / play.weight))
        stage("checkpoint (gap + feasibility)")

        pairs = model.pairs
        n = len(pairs)
        tables = model.tables
        rows = sum(t.rows.nbytes for t in tables.players)
        components = {
            "relevant pairs (CSR)": _nbytes(pairs.indptr, pairs.sigma2),
            "Ξ chain (DECOMPOSE)": _chain_bytes(model.xi_chain),
            "entry of pair (the Ξ chain's natural_entry)": _nbytes(model.entry_of_pair),
            "Y chain (triggers)": _chain_bytes(model.triggers.chain) + _nbytes(
                model.triggers.block_start, model.triggers.block_preorder_start,
                *model.triggers.preorder_sequences),
            "payoff operator: rows (one per nonzero)": rows,
            "payoff operator: rest": operator.nbytes - rows,
            "Ξ engine (regret, prediction, tables)": _engine_bytes(xi_engine),
            "Y engine (regret, prediction, tables)": _engine_bytes(y_engine),
            "loop buffers (x, y, Σ t²·x)": _nbytes(x, y, sum_x),
            "game arrays": _nbytes(*(v for v in vars(game).values() if hasattr(v, "nbytes"))),
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
