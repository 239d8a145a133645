"""Immutable means immutable: a Game, a Chain, a chain minimizer and a run's result take
everything at construction, and nothing — the library's own builders included — writes an
attribute on them afterwards.  The objects are built through the public builders, then
``obj.x = 1`` must fail; a changed result is a new one (``dataclasses.replace``)."""

import os

import numpy as np
import pytest

from efce import games
from efce.games.formats.efg import dumps, loads
from efce.polytopes import correlation_plan, sequence_form
from efce.polytopes.triggers import trigger_deviations
from efce.solvers.regret.algebra import chain_minimizer
from tests.paths import ROOT


def _games():
    yield games.kuhn()
    yield games.kuhn(players=3, ranks=3)
    yield games.leduc(players=2, ranks=2)
    yield games.goofspiel(players=2, ranks=3)
    yield games.sheriff(max_bribe=1, max_items=1, rounds=1)
    yield games.battleship(rows=2, cols=2, ship_sizes=[1], shots=1)
    yield games.farina_fig1()
    yield games.farina_fig2()
    yield games.make_game("kuhn:players=2,ranks=3")
    yield loads(dumps(games.kuhn()))


def _refuses_writes(obj):
    for name in ("x", "name", "labels", "level"):
        with pytest.raises(AttributeError):
            setattr(obj, name, 1)


@pytest.mark.parametrize("game", list(_games()), ids=lambda g: g.name)
def test_games_refuse_writes_after_construction(game):
    if game.num_players == 2:
        games.connected_infosets(game)  # derived facts are computed views, not assignments
    _ = game.depth, game.reach_chance
    _refuses_writes(game)
    with pytest.raises(AttributeError):
        del game.name


def test_efg_descriptive_attributes_are_given_at_construction():
    game = loads(dumps(games.farina_fig1()))
    assert game.comment == "" and len(game.outcome_names) == game.num_terminals
    _refuses_writes(game)


def test_chains_and_minimizers_refuse_writes():
    game = games.farina_fig1()
    chains = [sequence_form(game.sequences(0)), correlation_plan(game), trigger_deviations(game).chain]
    for chain in chains:
        _ = chain.levels, chain.step_order  # lazily computed views
        _refuses_writes(chain)
        for backend in ("compiled", "numpy"):
            minimizer = chain_minimizer(chain, "rm", backend=backend)
            _ = minimizer.recommend(minimizer.init()), minimizer.segments
            _refuses_writes(minimizer)


def test_no_library_code_writes_through_dict_or_object_setattr():
    """The writes that bypass ``__setattr__`` are gone from the package (a game, chain or
    minimizer could otherwise still be filled in after construction)."""
    offenders = []
    for folder in ("games", "polytopes", "solvers", "baselines", "experiments"):
        for base, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(base, name)
                    with open(path, encoding="utf-8") as fh:
                        text = fh.read()
                    for needle in ('.__dict__["', "object.__setattr__(self"):
                        if needle in text:
                            offenders.append(f"{os.path.relpath(path, ROOT)}: {needle}")
    assert not offenders, offenders


def test_known_levels_agree_with_the_computed_ones():
    from efce.polytopes.chain import Chain

    game = games.sheriff(max_bribe=1, max_items=1, rounds=1)
    for chain in (sequence_form(game.sequences(1)), correlation_plan(game), trigger_deviations(game).chain):
        fresh = Chain(chain.kind, chain.target_ptr, chain.source_ptr, chain.source, chain.entry_index)
        assert np.array_equal(fresh.level, chain.level)
        assert [list(a) for a in fresh.levels] == [list(a) for a in chain.levels]


def test_results_and_trace_rows_refuse_writes():
    import dataclasses

    from efce.solvers.result import SolveResult, TraceRow

    row = TraceRow(1, 0.5, 0.25)
    result = SolveResult("rm", np.zeros(2), "converged", 1, 0.1, 0.5, [row], {"efce_gap": 0.25})
    for obj, name in ((row, "gap"), (result, "status"), (result, "setup_seconds"), (result, "info")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, name, None)
    later = dataclasses.replace(result, setup_seconds=result.setup_seconds + 1.0)
    assert later.setup_seconds == pytest.approx(1.1) and result.setup_seconds == 0.1


def test_a_diverged_run_is_a_new_result_and_the_run_is_left_as_it_was():
    from efce.experiments.solve import finite_or_error
    from efce.solvers.result import SolveResult, TraceRow

    info = {"efce_gap": float("nan"), "utilities": [1.0, 2.0]}
    trace = [TraceRow(1, 0.0, 1.0), TraceRow(2, 0.1, float("inf"))]
    run = SolveResult("subgradient", np.array([np.nan, 1.0]), "iteration_limit", 2, 0.0, 0.1, trace, info)
    reported = finite_or_error(run)
    assert reported is not run and reported.status == "error" and reported.point is None
    assert reported.trace == trace[:1] and reported.info["non_finite"] == [
        "efce_gap",
        "trace gap",
        "the final point",
    ]
    # The run itself, its info dict and its trace list are unchanged.
    assert run.status == "iteration_limit" and run.trace == trace and len(trace) == 2
    assert set(info) == {"efce_gap", "utilities"} and run.info is info and np.isnan(info["efce_gap"])
    assert np.isnan(run.point[0])
