"""The CPU backend's parallel kernels — chain passes, payoff operator, gap and feasibility
sweeps — are bit-identical to the serial kernels for every thread count; the thread count is the
backend's, set around each parallel call and restored; the ``threads`` option's validation."""

from __future__ import annotations

import json

import numba
import numpy as np
import pytest

import efce
from efce.experiments.cli import main
from efce.games.spec import make_game
from efce.polytopes.feasibility import FeasibilityCheck
from efce.solvers.backends import available_threads, get_backend
from efce.solvers.backends.cpu import CPUBackend
from efce.solvers.backends.cpu import backend as cpu_backend
from efce.solvers.backends.cpu.jit import THREAD_ROW_GAP, run_on_threads, thread_rows
from efce.solvers.evaluation.gaps import EFCEGapEvaluator
from efce.solvers.methods.efce import build_efce_model, solve_efce
from efce.solvers.regret.engine import ChainEngine
from efce.solvers.regret.local import make_rule

GAMES = ["sheriff:max_bribe=2,max_items=2,rounds=2", "battleship:rows=2,cols=2,ship_sizes=[1],shots=2"]
TWO = min(2, available_threads())


def serial() -> CPUBackend:
    """The serial kernels, whatever the size (they switch on by size)."""
    return CPUBackend(threads=1, parallel_min_size=2**62)


def parallel(threads: int) -> CPUBackend:
    """The parallel kernels even on these small games, on ``threads`` threads."""
    return CPUBackend(threads=threads, parallel_min_size=1)


def _self_play(model, rule, backend, iterations):
    """Alternating self-play of the saddle point on ``backend``; the final points."""
    ex = ChainEngine(model.xi_chain, make_rule(rule), backend=backend)
    ey = ChainEngine(model.triggers.chain, make_rule(rule), backend=backend)
    expected = backend.parallel_min_size == 1
    assert ex.minimizer._passes.parallel == expected and ey.minimizer._passes.parallel == expected
    products = model.operator.products(backend)
    assert (products.parts > 1) == (expected and backend.threads > 1)
    x, y = np.empty(model.xi_chain.num_entries), np.empty(model.triggers.chain.num_entries)
    ex.recommend(out=x)
    ey.recommend(out=y)
    for _ in range(iterations):
        products.matvec(y, x)
        ex.observe(x, overwrite=True)
        ex.recommend(out=x)
        products.rmatvec(x, y, -1.0)
        ey.observe(y, overwrite=True)
        ey.recommend(out=y)
    return x, y


@pytest.mark.parametrize("spec", GAMES)
@pytest.mark.parametrize("rule", ["rm+", "prm+", "dcfr", "hedge"])
def test_parallel_iterates_equal_the_serial_ones_bit_for_bit(spec, rule):
    # The parallel kernels run on one thread too (faster than the serial ones there): on one
    # thread and on two they reproduce the serial kernels' iterates exactly.
    model = build_efce_model(make_game(spec))
    x0, y0 = _self_play(model, rule, serial(), 25)
    for threads in sorted({1, TWO}):
        x, y = _self_play(model, rule, parallel(threads), 25)
        assert np.array_equal(x, x0) and np.array_equal(y, y0), threads


@pytest.mark.parametrize("spec", GAMES)
def test_many_chunks_per_level_keep_the_iterates_bit_identical(spec, monkeypatch):
    # With the default chunk size these games have one chunk per level, so how a level's chunks
    # are shared among the threads (contiguous shares for Ξ, dealt in turn for Y, which has a
    # level order) would go untested: tiny chunks give every deep level several per thread.
    model = build_efce_model(make_game(spec))
    x0, y0 = _self_play(model, "prm+", serial(), 15)
    monkeypatch.setattr(cpu_backend, "CHUNK_WORK", 8)
    for chain, dealt in ((model.xi_chain, False), (model.triggers.chain, True)):
        passes = ChainEngine(chain, make_rule("prm+"), backend=parallel(TWO)).minimizer._passes
        assert np.diff(passes.level_chunk).max() >= 6
        assert passes.dealt == dealt  # the kernels deal a level's chunks iff the chain has an order
        assert (chain.runs is not None) == (not dealt)  # Ξ's steps are runs, read by the run passes
    for threads in sorted({1, TWO}):
        x, y = _self_play(model, "prm+", parallel(threads), 15)
        assert np.array_equal(x, x0) and np.array_equal(y, y0), threads


@pytest.mark.parametrize("spec", GAMES)
def test_operator_products_are_bit_identical(spec):
    model = build_efce_model(make_game(spec), welfare_threshold=0.5)
    rng = np.random.default_rng(0)
    shape = model.operator.shape
    y = rng.random(shape[1])
    y[rng.random(shape[1]) < 0.3] = 0.0  # the matvec skips zero columns
    x = rng.random(shape[0])
    products = []
    for backend in (serial(), *(parallel(t) for t in sorted({1, TWO}))):
        on = model.operator.products(backend)
        products.append((on.matvec(y, np.empty(shape[0])), on.rmatvec(x, np.empty(shape[1]), -1.0)))
    reference = products[0]
    assert all(
        np.array_equal(p[0], reference[0]) and np.array_equal(p[1], reference[1]) for p in products[1:]
    )


@pytest.mark.parametrize("spec", GAMES)
def test_checkpoint_sweeps_are_the_same_on_every_thread_count(spec):
    game = make_game(spec)
    model = build_efce_model(game)
    chain = model.xi_chain
    rng = np.random.default_rng(3)
    x = chain.random_point(rng)
    bad = x + rng.normal(scale=1e-3, size=x.shape)
    natural = x[model.entry_of_pair]
    reports, violations, definition3 = {}, {}, {}
    for threads in range(1, available_threads() + 1):
        backend = CPUBackend(threads=threads)
        evaluator = EFCEGapEvaluator(
            game, model.pairs, tables=model.tables, entry_of_pair=model.entry_of_pair, backend=backend
        )
        reports[threads] = evaluator.evaluate(x)
        violations[threads] = chain.violations((x, bad), (1.0, 0.5), backend=backend)
        definition3[threads] = FeasibilityCheck(game, model.pairs, backend).violations((natural, bad), None)
    serial_report = reports[1]
    assert np.isfinite(serial_report.gap) and serial_report.gap > 0
    assert violations[1][1] > 1e-4 and definition3[1][1] > 1e-4  # a point off the polytope
    # Called on ξ in relevant-pair order, through the pair → entry map: the plain evaluator's gap.
    assert EFCEGapEvaluator(game, model.pairs, tables=model.tables, entry_of_pair=model.entry_of_pair)(
        natural
    ).gap == pytest.approx(EFCEGapEvaluator(game, model.pairs)(natural).gap, abs=1e-12)
    for threads, report in reports.items():
        assert report.gap == serial_report.gap and report.worst == serial_report.worst
        assert all(
            np.array_equal(a, b, equal_nan=True)
            for a, b in zip(report.gains, serial_report.gains, strict=True)
        )
        assert violations[threads] == violations[1] and definition3[threads] == definition3[1]


def test_solve_efce_same_result_on_every_thread_count():
    game = make_game(GAMES[0])
    runs = [
        solve_efce(game, iterations=200, target_gap=None, backend=parallel(t), rule="prm+") for t in (1, TWO)
    ]
    assert np.array_equal(runs[0].point, runs[1].point)
    assert runs[0].info["efce_gap"] == runs[1].info["efce_gap"]


def test_the_backend_sets_numbas_thread_count_around_its_call_and_restores_it():
    seen = []
    before = numba.get_num_threads()
    run_on_threads(1, lambda: seen.append(numba.get_num_threads()))
    assert seen == [1] and numba.get_num_threads() == before
    with pytest.raises(ZeroDivisionError):
        run_on_threads(1, lambda: 1 / 0)
    assert numba.get_num_threads() == before  # restored on an error too


def test_a_backend_keeps_its_thread_count_whatever_numba_is_set_to():
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        assert get_backend().threads == 1  # the default: numba's setting when the backend is made
        backend = CPUBackend(threads=TWO, parallel_min_size=1)
        model = build_efce_model(make_game(GAMES[1]))
        assert model.operator.products(backend).parts == TWO
        passes = ChainEngine(model.xi_chain, make_rule("prm+"), backend=backend).minimizer._passes
        assert passes.threads == TWO
        seen = []
        run_on_threads(backend.threads, lambda: seen.append(numba.get_num_threads()))
        assert seen == [TWO] and numba.get_num_threads() == 1
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("value", [0, 99, -1, 1.5, True])
def test_bad_thread_counts_are_refused(value, capsys):
    if not isinstance(value, bool) and value in (0, 99, -1):
        code = main(["solve", "farina-fig2", "--method", "rm", "--threads", str(value), "--json"])
        out = json.loads(capsys.readouterr().out)
        assert code == 2 and out["error"].startswith("--threads must be an integer from 1 to "), out
        assert "\n" not in out["error"]
        with pytest.raises(efce.experiments.solve.OptionError, match="--threads"):
            efce.solve("farina-fig2", "rm", threads=value)
    with pytest.raises(ValueError, match="threads must be an integer from 1 to"):
        solve_efce(make_game("farina-fig2"), threads=value)
    with pytest.raises(efce.errors.OptionError, match="threads must be an integer"):
        CPUBackend(threads=value)


def test_unknown_backends_and_conflicting_options_are_refused():
    with pytest.raises(efce.errors.OptionError, match="unknown compute backend 'gpu'; valid: cpu"):
        get_backend("gpu")
    with pytest.raises(efce.errors.OptionError, match="not both"):
        solve_efce(make_game("farina-fig2"), threads=1, backend=CPUBackend(threads=1))


@pytest.mark.parametrize(
    "width, dtype", [(1, np.float64), (6, np.float64), (16, np.float64), (17, np.int64), (3, np.float32)]
)
def test_thread_rows_share_no_cache_line(width, dtype):
    """Per-thread scratch: one row per thread of numba's pool, ``width`` usable slots each, and
    at least two cache lines between the used part of a row and the next row (a plain
    ``(threads, width)`` array of 6 float64 puts two threads' rows in one 64-byte line)."""
    rows = thread_rows(width, dtype)
    assert rows.dtype == dtype and rows.shape[0] == available_threads()
    assert rows.shape[1] >= width and rows.flags.c_contiguous
    gap_bytes = rows.strides[0] - width * rows.itemsize
    assert gap_bytes >= THREAD_ROW_GAP
