"""Issue 19: where the memory of ``efce solve GAME --method rm`` goes, in bytes per relevant pair.

Each instance runs in a fresh process through the stages of the default solve path
(:func:`solvers.methods.efce.solve_efce` with the CLI's defaults: PRM+ at every simplex,
alternating updates; the averaging does not change the memory) with the same functions: the
game, the model (relevant pairs, DECOMPOSE, trigger chain and payoff operator:
:func:`~solvers.methods.efce.build_efce_model`), the pair arrays parked
(:func:`~solvers.methods.efce.pair_arrays_parked`), the engines and loop buffers
(:func:`~solvers.methods.efce.saddle_point_play`), the gap evaluator, a few iterations, a
checkpoint (gap and the chain check), and the end of a run (the map back, the plan gathered in
pair order, the pairs back, Definition 3 checked).  For every stage it reports the resident set
size after the stage and a heap trim (``held``) and the process peak so far (``peak``), both in
MiB and in bytes per relevant pair; ``components`` are the exact sizes of the distinct buffers
the loop holds (a buffer shared by two components counts in the first), ``parked`` what is out
of memory during the loop.  Targets (whole-process peak): small ≤ 0.45 GiB, medium ≤ 1.6 GiB,
large ≤ 60 B per pair (6.2 GiB).

    python benchmarks/bench_memory.py [--only small,medium,large] [--out FILE]
"""

from __future__ import annotations

import functools
import gc
import resource

from bench_games import INSTANCES
from harness import main


def _rss_mib() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class _Buffers:
    """Bytes of distinct buffers, each counted once over all components (views and arrays
    shared between components — e.g. the weighted payoffs that are the game's payoffs — count
    in the first component that holds them)."""

    def __init__(self):
        self._seen: set[int] = set()

    def nbytes(self, *roots) -> int:
        """Bytes of the buffers reachable from ``roots`` (arrays, containers, objects) not
        counted yet."""
        import numpy as np

        total, stack, visited = 0, list(roots), set()
        while stack:
            obj = stack.pop()
            if obj is None or id(obj) in visited:
                continue
            visited.add(id(obj))
            if isinstance(obj, np.ndarray):
                base = obj
                while isinstance(base.base, np.ndarray):
                    base = base.base
                if id(base) not in self._seen and not isinstance(base, np.memmap):  # a map: on disk
                    self._seen.add(id(base))
                    total += base.nbytes
            elif isinstance(obj, dict):
                stack.extend(obj.values())
            elif isinstance(obj, (list, tuple)):
                stack.extend(obj)
            elif type(obj).__module__.startswith("efce") and hasattr(obj, "__dict__"):
                stack.extend(vars(obj).values())
        return total


def _engine_state(engine) -> list:
    """The regret minimizer's state, its work space and what its backend's passes hold besides
    the chain's own arrays (counted with the chain): scratch, the parallel passes' tables."""
    import numpy as np

    chain_arrays = {id(v) for v in vars(engine.chain).values() if isinstance(v, np.ndarray)}
    held, stack = [], list(vars(engine._passes).values()) if engine._passes is not None else []
    while stack:
        obj = stack.pop()
        if isinstance(obj, functools.partial):
            stack.extend(obj.args)
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
        elif isinstance(obj, np.ndarray) and id(obj) not in chain_arrays:
            held.append(obj)
    return [engine.state, engine._work, held]


def _structure(game, model) -> dict:
    """The sizes the loop's arrays scale with: Ξ's entries (those of simplex steps carry the
    rule's state), steps (one shift byte each) and source slots (one int32 each for the steps
    that do not repeat the step before shifted: ShiftedSources), Y's entries (the
    deviator's state), the nonzeros of A's deviation part (one int32 row each), the game's nodes
    and terminals.  ``docs/results/memory.md`` derives from them the bytes per relevant pair
    that the loop holds at the least."""
    xi = model.xi_steps
    return {
        "xi_entries": int(xi.num_entries),
        "xi_simplex_entries": int(xi.simplex_entries),
        "xi_steps": int(xi.num_steps),
        "xi_source_slots": int(len(xi.source)),
        "xi_stored_source_slots": int(len(xi.shifted_sources.stored)),  # ShiftedSources
        "y_entries": int(model.triggers.num_entries),
        "deviation_nonzeros": int(sum(len(t.rows) for t in model.tables.players)),
        "game_nodes": int(game.num_nodes),
        "game_terminals": int(game.num_terminals),
    }


def case(kwargs, iterations: int = 3):
    def run():
        from efce import games
        from efce.games.resources.memory import release_free_memory
        from efce.polytopes.feasibility import FeasibilityCheck
        from efce.solvers.evaluation.gaps import EFCEGapEvaluator
        from efce.solvers.methods.efce import (
            average_point,
            build_efce_model,
            pair_arrays_parked,
            saddle_point_play,
        )
        from efce.solvers.regret.engine import minimizer_factory
        from efce.solvers.regret.local import PredictiveRMPlus

        stages = []

        def stage(name):
            gc.collect()
            release_free_memory()  # as solve_efce does between its stages
            stages.append(
                {"stage": name, "held_mib": round(_rss_mib(), 1), "peak_mib": round(_peak_mib(), 1)}
            )

        stage("imports")
        game = games.battleship(rows=3, cols=2, **kwargs)
        stage("game")
        model = build_efce_model(game)
        n = len(model.pairs)
        structure = _structure(game, model)
        parked_bytes = model.pairs.sigma2.nbytes + model.entry_of_pair.nbytes
        stage("model (pairs, DECOMPOSE, trigger chain, payoff operator)")
        game_bytes = _Buffers().nbytes(game)
        with pair_arrays_parked(model) as parked:
            stage("pair arrays parked")
            evaluator = EFCEGapEvaluator(game, tables=model.tables)  # as solve_efce
            with game.arrays_on_disk():
                stage("game arrays on disk")
                model.xi_steps = model.xi_steps.source_on_disk()  # as solve_efce (ShiftedSources)
                play = saddle_point_play(model, minimizer_factory(None, None, PredictiveRMPlus()))
                xi_engine, deviator, x, sum_x = play.engine, play.deviator, play.points[0], play.sums[0]
                stage("engines + loop buffers")
                for t in range(1, iterations + 1):
                    play.step(t)
                stage(f"{iterations} iterations")
                gap = max(0.0, -deviator.best_response(sum_x) / play.weight)
                violation = max(model.xi_steps.violations((x, sum_x), (1.0, 1.0 / play.weight)))
                stage("checkpoint (gap + chain check)")

                buffers = _Buffers()
                game_held = buffers.nbytes(game)  # what stays in memory: arrays others hold too
                tables, operator = model.tables, model.operator
                rows = buffers.nbytes([t.rows for t in tables.players])
                components = {
                    "game (what stays in memory: sequence spaces, arrays the model shares)": game_held,
                    "Ξ chain (DECOMPOSE)": buffers.nbytes(model.xi_steps),
                    "Y (triggers; no chain)": buffers.nbytes(model.triggers),
                    "payoff operator: rows (one per nonzero)": rows,
                    "payoff operator: rest": buffers.nbytes(operator),
                    "Ξ engine (regret, prediction, tables)": buffers.nbytes(_engine_state(xi_engine)),
                    "Y deviator (regret, prediction, weights, scratch)": buffers.nbytes(deviator),
                    "loop buffers (x, Σ w·x; float32 on big chains)": buffers.nbytes(x, sum_x),
                    "gap evaluator": buffers.nbytes(evaluator),
                }
                # The end of solve_efce: the engines go, the average (a float32 running sum's
                # rescaled chain point) is gathered in pair order through the map, then the pairs
                # come back for the Definition-3 check.
                weight = play.weight
                del play, xi_engine, deviator, x
            stage("end: engines dropped, game arrays back")
            average = average_point(model.xi_steps, sum_x, weight, in_place=True)
            del sum_x
            stage("end: average rescaled")
            xbar = parked.gather(average)  # the map read piece by piece
            del average
            stage("end: plan gathered")
            violation = max(violation, FeasibilityCheck(game, parked.pairs())(xbar))
        stage("end (plan gathered, pairs back, Definition 3)")

        total = sum(components.values())
        per_pair = {k: round(v / n, 2) for k, v in components.items()}
        for s in stages:
            s["held_bytes_per_pair"] = round(s["held_mib"] * 2**20 / n, 1)
            s["peak_bytes_per_pair"] = round(s["peak_mib"] * 2**20 / n, 1)
        return {
            "relevant_pairs": n,
            "structure": structure,
            "stages": stages,
            "components_bytes_per_pair": per_pair,
            "components_total_bytes_per_pair": round(total / n, 2),
            "parked_bytes_per_pair (pair columns + pair → entry map)": round(parked_bytes / n, 2),
            "game_on_disk_bytes_per_pair (the game's own arrays)": round((game_bytes - game_held) / n, 2),
            "gap_after_iterations": gap,
            "max_violation": violation,
            "peak_memory_mib": round(_peak_mib(), 1),
            "peak_bytes_per_pair": round(_peak_mib() * 2**20 / n, 1),
        }

    return run


if __name__ == "__main__":
    main({name: case(kw) for name, kw in INSTANCES.items()}, __doc__)
