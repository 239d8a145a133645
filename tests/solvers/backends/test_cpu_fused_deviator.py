"""The CPU backend's fused deviator (:class:`efce.solvers.backends.cpu.backend.FusedDeviator`,
:mod:`efce.solvers.backends.cpu.deviator`): the EFCE saddle point's loop with Y's passes and the
payoff operator's products fused gives the iterates, running sums and checkpoint gaps of the loop
of two chain engines and the products, bit for bit — every concept, rule, update order and
averaging, serial and split among threads."""

from __future__ import annotations

import numpy as np
import pytest

from efce.games.spec import make_game
from efce.solvers.backends import available_threads
from efce.solvers.backends.cpu import CPUBackend
from efce.solvers.methods.efce import build_efce_model, saddle_point_gap, saddle_point_play
from efce.solvers.methods.selfplay import DeviatorPlay, SelfPlay
from efce.solvers.regret.engine import minimizer_factory
from efce.solvers.regret.registry import make_rule

SHERIFF = "sheriff:max_bribe=2,max_items=2,rounds=2"
BATTLESHIP = "battleship:rows=2,cols=2,ship_sizes=[1],shots=2"
TWO = min(2, available_threads())


def _plays(model, rule, backend, *, alternating=True, average=False, steps=12):
    """The fused loop and the loop of two engines, each run ``steps`` iterations."""
    fused = minimizer_factory(rule, None, make_rule("prm+"), backend)

    def engines(chain):  # a factory of any minimizers: the loop keeps Y's engine
        return fused(chain)

    plays = []
    for make in (fused, engines):
        products = model.operator.products(backend)
        play = saddle_point_play(
            model, make, alternating=alternating, average_deviator=average, products=products
        )
        for t in range(1, steps + 1):
            play.step(t)
        plays.append(play)
    return plays


def _same(fused: DeviatorPlay, plain: SelfPlay, model) -> None:
    assert isinstance(fused, DeviatorPlay) and isinstance(plain, SelfPlay)
    assert np.array_equal(fused.points[0], plain.points[0])
    assert np.array_equal(fused.sums[0], plain.sums[0])
    assert np.array_equal(fused.deviator.point(), plain.points[1])
    if plain.sums[1] is not None:
        fused.flush()
        assert np.array_equal(fused.sums[1], plain.sums[1])
    scale = 1.0 / plain.weight
    expected = saddle_point_gap(model, plain.sums[0], scale, np.empty(model.triggers.num_entries))
    assert max(0.0, -scale * fused.deviator.best_response(fused.sums[0])) == expected


@pytest.mark.parametrize("concept", ["efce", "efcce", "nfcce"])
@pytest.mark.parametrize("spec", [SHERIFF, BATTLESHIP])
def test_the_fused_loop_is_the_loop_of_two_engines(spec, concept):
    model = build_efce_model(make_game(spec), concept=concept)
    for rule in ("prm+", "rm+", "dcfr", "hedge"):
        for alternating in (True, False):
            fused, plain = _plays(model, rule, CPUBackend(threads=1), alternating=alternating, average=True)
            _same(fused, plain, model)


@pytest.mark.parametrize("concept", ["efce", "efcce", "nfcce"])
def test_split_among_threads_the_fused_loop_is_the_same(concept):
    """With every kernel's parallel form (the slots split into blocks on ``TWO`` threads, or
    kept in order where the concept needs it) the iterates do not move."""
    model = build_efce_model(make_game(BATTLESHIP), concept=concept)
    serial, _ = _plays(model, "prm+", CPUBackend(threads=1), average=True)
    for threads in sorted({1, TWO}):
        fused, plain = _plays(model, "prm+", CPUBackend(threads=threads, parallel_min_size=1), average=True)
        assert fused.deviator.parts == threads
        _same(fused, plain, model)
        assert np.array_equal(fused.points[0], serial.points[0])


def test_the_prm_plus_copies_for_three_and_four_actions_are_the_general_step():
    """PRM+ steps of 3 and 4 actions go through copies compiled for their size
    (``deviator_observe``, ``deviator_recommend``): the same iterates as Y's chain engine, whose
    passes run the general step body (this game has infosets of both sizes, and of others)."""
    model = build_efce_model(make_game(BATTLESHIP))
    sizes = {int(n) for t in model.tables.players for n in np.unique(t.num_actions)}
    assert {3, 4} <= sizes
    fused, plain = _plays(model, "prm+", CPUBackend(threads=1), steps=6)
    _same(fused, plain, model)


def test_a_factory_of_other_minimizers_keeps_the_engine_of_ys_chain():
    model = build_efce_model(make_game(SHERIFF))
    numpy_rule = minimizer_factory("prm+", None, make_rule("prm+"), "numpy")
    assert isinstance(saddle_point_play(model, numpy_rule), SelfPlay)
    assert isinstance(
        saddle_point_play(model, minimizer_factory("prm+", None, make_rule("prm+"))), DeviatorPlay
    )


def test_the_fused_loop_holds_no_array_of_ys_entries_but_the_state():
    """Y's point, loss and chain are not made: the deviator's arrays of Y's size are its state."""
    model = build_efce_model(make_game(BATTLESHIP))
    play = saddle_point_play(model, minimizer_factory("prm+", None, make_rule("prm+")))
    for t in range(1, 4):
        play.step(t)
    n_y = model.triggers.num_entries
    deviator = play.deviator
    sized = [v for v in vars(deviator).values() if isinstance(v, np.ndarray) and v.size >= n_y - 1]
    assert sized == []
    assert all(v.size == n_y - 1 for key, v in deviator.state.items() if key != "t")
    assert "chain" not in vars(model.triggers)  # the cached chain was never made
