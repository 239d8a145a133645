"""The parallel chain passes and payoff operator: bit-identical to the serial kernels for every
thread count, and the ``threads`` option's validation."""

from __future__ import annotations

import json

import numba
import numpy as np
import pytest

import efce
from efce.experiments.cli import main
from efce.games.arrays import THREAD_ROW_GAP, thread_rows
from efce.games.spec import make_game
from efce.solvers.evaluation import payoff_operator
from efce.solvers.evaluation.gaps import EFCEGapEvaluator
from efce.solvers.methods.efce import build_efce_model, solve_efce
from efce.solvers.regret import engine
from efce.solvers.regret.engine import ChainEngine, available_threads, thread_count
from efce.solvers.regret.local import make_rule

GAMES = ["sheriff:max_bribe=2,max_items=2,rounds=2", "battleship:rows=2,cols=2,ship_sizes=[1],shots=2"]
TWO = min(2, available_threads())


def _kernels(monkeypatch, parallel: bool) -> None:
    """From here on, build chain engines and operators with the parallel kernels (on every
    thread count) or with the serial ones, whatever their size."""
    threshold = 1 if parallel else 2**62
    monkeypatch.setattr(engine, "PARALLEL_MIN_ENTRIES", threshold)
    monkeypatch.setattr(payoff_operator, "PARALLEL_MIN_ROWS", threshold)


@pytest.fixture
def parallel_everywhere(monkeypatch):
    """Run the parallel kernels even on these small games (they switch on by size)."""
    _kernels(monkeypatch, parallel=True)


def _serial_and_parallel_models(spec, monkeypatch, **options):
    """The same model built twice: with the serial kernels' operator and with the parallel one."""
    game = make_game(spec)
    models = []
    for parallel in (False, True):
        _kernels(monkeypatch, parallel)
        models.append(build_efce_model(game, **options))
    return models


def _self_play(model, rule, threads, iterations, *, parallel, monkeypatch):
    """Alternating self-play of the saddle point on ``threads`` threads; the final points."""
    _kernels(monkeypatch, parallel)
    with thread_count(threads):
        ex = ChainEngine(model.xi_chain, make_rule(rule))
        ey = ChainEngine(model.triggers.chain, make_rule(rule))
        assert (ex._parallel is not None) == parallel and (ey._parallel is not None) == parallel
        assert model.operator._parallel == parallel
        x, y = np.empty(model.xi_chain.num_entries), np.empty(model.triggers.chain.num_entries)
        ex.recommend(out=x)
        ey.recommend(out=y)
        for _ in range(iterations):
            model.operator.matvec(y, x)
            ex.observe(x, overwrite=True)
            ex.recommend(out=x)
            model.operator.rmatvec(x, y, -1.0)
            ey.observe(y, overwrite=True)
            ey.recommend(out=y)
        return x, y


@pytest.mark.parametrize("spec", GAMES)
@pytest.mark.parametrize("rule", ["rm+", "prm+", "dcfr", "hedge"])
def test_parallel_iterates_equal_the_serial_ones_bit_for_bit(spec, rule, monkeypatch):
    # The parallel kernels run on one thread too (faster than the serial ones there): on one
    # thread and on two they reproduce the serial kernels' iterates exactly.
    serial_model, parallel_model = _serial_and_parallel_models(spec, monkeypatch)
    x0, y0 = _self_play(serial_model, rule, 1, 25, parallel=False, monkeypatch=monkeypatch)
    for threads in sorted({1, TWO}):
        x, y = _self_play(parallel_model, rule, threads, 25, parallel=True, monkeypatch=monkeypatch)
        assert np.array_equal(x, x0) and np.array_equal(y, y0), threads


@pytest.mark.parametrize("spec", GAMES)
def test_many_chunks_per_level_keep_the_iterates_bit_identical(spec, monkeypatch):
    # With the default chunk size these games have one chunk per level, so how a level's chunks
    # are shared among the threads (contiguous shares for Ξ, dealt in turn for Y, which has a
    # level order) would go untested: tiny chunks give every deep level several per thread.
    serial_model, parallel_model = _serial_and_parallel_models(spec, monkeypatch)
    x0, y0 = _self_play(serial_model, "prm+", 1, 15, parallel=False, monkeypatch=monkeypatch)
    monkeypatch.setattr(engine, "CHUNK_WORK", 8)
    _kernels(monkeypatch, parallel=True)
    for chain, dealt in ((parallel_model.xi_chain, False), (parallel_model.triggers.chain, True)):
        kind, tptr, sptr, source, order, chunk_ptr, chunk_state, level_chunk = ChainEngine(
            chain, make_rule("prm+")
        )._parallel._static
        assert np.diff(level_chunk).max() >= 6
        assert (len(order) > 0) == dealt  # the kernels deal a level's chunks iff the chain has an order
    for threads in sorted({1, TWO}):
        x, y = _self_play(parallel_model, "prm+", threads, 15, parallel=True, monkeypatch=monkeypatch)
        assert np.array_equal(x, x0) and np.array_equal(y, y0), threads


@pytest.mark.parametrize("spec", GAMES)
def test_operator_products_are_bit_identical(spec, monkeypatch):
    serial_model, parallel_model = _serial_and_parallel_models(spec, monkeypatch, welfare_threshold=0.5)
    rng = np.random.default_rng(0)
    shape = serial_model.operator.shape
    y = rng.random(shape[1])
    y[rng.random(shape[1]) < 0.3] = 0.0  # the matvec skips zero columns
    x = rng.random(shape[0])
    products = []
    for model, counts in ((serial_model, (1,)), (parallel_model, sorted({1, TWO}))):
        assert model.operator._parallel == (model is parallel_model)
        for threads in counts:
            with thread_count(threads):
                products.append(
                    (
                        model.operator.matvec(y, np.empty(shape[0])),
                        model.operator.rmatvec(x, np.empty(shape[1]), -1.0),
                    )
                )
    reference = products[0]
    assert all(
        np.array_equal(p[0], reference[0]) and np.array_equal(p[1], reference[1]) for p in products[1:]
    )


@pytest.mark.parametrize("spec", GAMES)
def test_gap_evaluation_is_the_same_on_every_thread_count(spec):
    game = make_game(spec)
    model = build_efce_model(game)
    evaluator = EFCEGapEvaluator(game, model.pairs, tables=model.tables, entry_of_pair=model.entry_of_pair)
    x = model.xi_chain.random_point(np.random.default_rng(3))
    reports = {}
    for threads in range(1, available_threads() + 1):
        with thread_count(threads):
            reports[threads] = evaluator.evaluate(x)
    serial = reports[1]
    assert np.isfinite(serial.gap) and serial.gap > 0
    # Called on ξ in relevant-pair order, through the pair → entry map: the plain evaluator's gap.
    natural = x[model.entry_of_pair]
    assert evaluator(natural).gap == pytest.approx(
        EFCEGapEvaluator(game, model.pairs)(natural).gap, abs=1e-12
    )
    for report in reports.values():
        assert report.gap == serial.gap and report.worst == serial.worst
        assert all(
            np.array_equal(a, b, equal_nan=True) for a, b in zip(report.gains, serial.gains, strict=True)
        )


def test_solve_efce_same_result_on_every_thread_count(parallel_everywhere):
    game = make_game(GAMES[0])
    runs = [solve_efce(game, iterations=200, target_gap=None, threads=t, rule="prm+") for t in (1, TWO)]
    assert np.array_equal(runs[0].point, runs[1].point)
    assert runs[0].info["efce_gap"] == runs[1].info["efce_gap"]


def test_thread_count_is_restored():
    before = numba.get_num_threads()
    with thread_count(1):
        assert numba.get_num_threads() == 1
    assert numba.get_num_threads() == before


@pytest.mark.parametrize("value", [0, 99, -1])
def test_bad_thread_counts_are_refused(value, capsys):
    code = main(["solve", "farina-fig2", "--method", "rm", "--threads", str(value), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 2 and out["error"].startswith("--threads must be an integer from 1 to "), out
    assert "\n" not in out["error"]
    with pytest.raises(efce.experiments.solve.OptionError, match="--threads"):
        efce.solve("farina-fig2", "rm", threads=value)
    with pytest.raises(ValueError, match="threads"):
        solve_efce(make_game("farina-fig2"), threads=value)


@pytest.mark.parametrize(
    "width, dtype", [(1, np.float64), (6, np.float64), (16, np.float64), (17, np.int64), (3, np.float32)]
)
def test_thread_rows_share_no_cache_line(width, dtype):
    """Per-thread scratch: one row per thread of numba's pool, ``width`` usable slots each, and
    at least two cache lines between the used part of a row and the next row (a plain
    ``(threads, width)`` array of 6 float64 puts two threads' rows in one 64-byte line)."""
    rows = thread_rows(width, dtype)
    assert rows.dtype == dtype and rows.shape[0] == numba.config.NUMBA_NUM_THREADS
    assert rows.shape[1] >= width and rows.flags.c_contiguous
    gap_bytes = rows.strides[0] - width * rows.itemsize
    assert gap_bytes >= THREAD_ROW_GAP
