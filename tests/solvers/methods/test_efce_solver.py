"""The EFCE saddle-point solver, CFR/CFR+, and the solve command (issue 4's "done when")."""

import json
import os

import numpy as np
import pytest

from efce import games
from efce.polytopes import vsf_constraints
from efce.polytopes.triggers import trigger_deviations
from efce.solvers.evaluation.gaps import EFCEGapEvaluator
from efce.solvers.methods.cfr import exploitability, solve_cfr
from efce.solvers.methods.efce import build_efce_model, saddle_point_gap, solve_efce


@pytest.mark.parametrize(
    "make",
    [
        lambda: games.sheriff(max_bribe=2, max_items=2, rounds=2),
        lambda: games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2),
    ],
)
def test_efce_solver_converges_with_feasible_iterates(make):
    game = make()
    result = solve_efce(game, iterations=20_000, target_gap=1e-3, check_feasibility_every_iteration=True)
    assert result.status == "converged"
    assert result.info["efce_gap"] <= 1e-3
    assert result.info["max_violation"] <= 1e-9
    # The reported gap is the project's evaluator on the returned plan.
    evaluator = EFCEGapEvaluator(game)
    assert evaluator(result.point).gap == pytest.approx(result.info["efce_gap"], abs=1e-12)
    assert vsf_constraints(game).max_violation(result.point) <= 1e-9
    gaps = [row.gap for row in result.trace]
    assert gaps[-1] < gaps[0]


def test_saddle_point_value_is_the_max_deviation():
    """ξᵀ A y over the vertices of Y equals the trigger gains of the gap evaluator."""
    game = games.sheriff(max_bribe=1, max_items=2, rounds=2)
    model = build_efce_model(game)
    rng = np.random.default_rng(2)
    xi_entry = model.xi_chain.random_point(rng)
    xi = model.xi_chain.to_natural(xi_entry, len(model.pairs))
    gains = EFCEGapEvaluator(game, model.pairs)(xi)
    from efce.solvers.regret.engine import chain_minimum

    # max over Y of ξᵀAy = −min over Y of (−Aᵀξ)·y
    best = -chain_minimum(model.triggers.chain, -model.operator.transpose_matmul(xi_entry))
    assert best == pytest.approx(max(np.nanmax(g) for g in gains.gains), abs=1e-12)


@pytest.mark.parametrize(
    "make",
    [
        games.farina_fig1,
        lambda: games.goofspiel(2, 2, prizes="sorted"),
        lambda: games.sheriff(max_bribe=1, max_items=2, rounds=2),
        lambda: games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2),
    ],
)
def test_saddle_point_gap_is_the_evaluators_gap(make):
    """The checkpoints' gap (saddle point) against the evaluator's (backward induction per
    trigger), on scaled points in float64 and float32 like the solver's running sum."""
    game = make()
    model = build_efce_model(game)
    evaluator = EFCEGapEvaluator(game, tables=model.tables)
    work = np.empty(model.triggers.chain.num_entries)
    rng = np.random.default_rng(11)
    for vertex, dtype, scale in (
        (False, np.float64, 1.0),
        (True, np.float64, 0.25),
        (False, np.float32, 1 / 7),
    ):
        values = (model.xi_chain.random_point(rng, vertex=vertex) / scale).astype(dtype)
        report = evaluator.evaluate(values, scale)
        assert saddle_point_gap(model, values, scale, work) == pytest.approx(report.gap, abs=1e-12)
        assert evaluator.welfare(values, scale) == pytest.approx(report.welfare, abs=1e-12)
    with pytest.raises(ValueError, match="work"):
        saddle_point_gap(model, values, 1.0, np.empty(work.size + 1))


@pytest.mark.parametrize("alternating", [True, False])
def test_the_idle_buffer_is_not_read_by_the_next_step(alternating):
    """Scratch written between steps (NaN here) must not reach the iterates."""
    from efce.solvers.methods.efce import saddle_point_play
    from efce.solvers.regret.engine import minimizer_factory

    model = build_efce_model(games.sheriff(max_bribe=1, max_items=2, rounds=2))
    plays = [
        saddle_point_play(model, minimizer_factory("prm+", None, None), alternating=alternating)
        for _ in range(2)
    ]
    size = model.triggers.chain.num_entries
    assert plays[1].idle_buffer(10**9) is None
    for t in range(1, 6):
        plays[1].idle_buffer(size)[:] = np.nan
        for play in plays:
            play.step(t)
        for mine, theirs in zip(
            plays[1].points + plays[1].sums, plays[0].points + plays[0].sums, strict=True
        ):
            if mine is not None:
                np.testing.assert_array_equal(mine, theirs)


def test_the_last_checkpoints_gap_is_the_reported_gap():
    """The loop stops on the saddle point's gap; the report is the evaluator's on the plan."""
    game = games.sheriff(max_bribe=2, max_items=2, rounds=2)
    result = solve_efce(game, iterations=300, target_gap=None)
    assert result.trace[-1].iteration == result.iterations
    assert result.trace[-1].gap == pytest.approx(result.info["efce_gap"], abs=1e-12)
    assert result.trace[-1].extra["welfare"] == pytest.approx(result.info["welfare"], abs=1e-12)


def test_trigger_chain_covers_every_trigger_subtree():
    game = games.farina_fig1()
    space = trigger_deviations(game)
    chain = space.chain
    assert space.num_triggers == (game.sequences(0).num_sequences - 1) + (game.sequences(1).num_sequences - 1)
    x = chain.random_point(np.random.default_rng(0))
    assert x[1 : 1 + space.num_triggers].sum() == pytest.approx(1.0)
    chain.validate()


def test_welfare_threshold_below_and_above_the_lp_optimum():
    from efce.baselines import solve_lp_highs

    game = games.sheriff(max_bribe=2, max_items=2, rounds=2)
    optimum = solve_lp_highs(game, objective="welfare").info["welfare"]
    below = solve_efce(game, iterations=20_000, target_gap=1e-3, welfare_threshold=optimum - 0.05)
    assert below.status == "converged"
    assert below.info["efce_gap"] <= 1e-3 and below.info["welfare"] >= optimum - 0.05 - 1e-3
    at = solve_efce(game, iterations=20_000, target_gap=1e-3, welfare_threshold=optimum)
    assert at.status == "converged" and at.info["welfare"] >= optimum - 1e-3
    above = solve_efce(game, iterations=2_000, target_gap=1e-3, welfare_threshold=optimum + 0.2)
    assert above.status == "infeasible" and "no EFCE" in above.info["message"]
    assert above.info["saddle_value_lower_bound"] > 0


def test_cfr_plus_on_kuhn_reaches_the_game_value():
    result = solve_cfr(games.kuhn(2), iterations=4000, variant="cfr+")
    assert result.info["exploitability"] <= 1e-4
    assert result.info["value"] == pytest.approx(-1 / 18, abs=1e-4)


def test_cfr_plus_on_leduc_matches_the_known_value_and_exploitability_falls():
    result = solve_cfr(games.leduc(2), iterations=3000, variant="cfr+")
    assert result.info["value"] == pytest.approx(-0.0856, abs=2e-3)
    gaps = [row.gap for row in result.trace]
    assert gaps[-1] < 1e-2 * gaps[0] and gaps[-1] < 1e-3


def test_cfr_and_cfr_plus_agree_on_the_equilibrium_value():
    game = games.kuhn(2, 4)
    a = solve_cfr(game, iterations=3000, variant="cfr")
    b = solve_cfr(game, iterations=3000, variant="cfr+")
    assert a.info["value"] == pytest.approx(b.info["value"], abs=5e-3)
    gap, _ = exploitability(game, b.point)
    assert gap == pytest.approx(b.info["exploitability"])


def test_solve_command_json_contract(capsys):
    from efce.experiments.cli import main

    assert (
        main(
            [
                "solve",
                "sheriff:max_bribe=1,max_items=1,rounds=2",
                "--method",
                "rm",
                "--json",
                "--iterations",
                "3000",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    for key in (
        "method",
        "iterations",
        "setup_seconds",
        "seconds",
        "efce_gap",
        "welfare",
        "utilities",
        "max_violation",
        "status",
    ):
        assert key in out
    assert out["status"] in ("converged", "iteration_limit") and out["max_violation"] <= 1e-9
    assert main(["solve", "kuhn", "--method", "cfr+", "--json", "--iterations", "500"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "exploitability" in out and "value" in out
    assert main(["solve", "kuhn", "--method", "rm", "--json"]) == 2
    assert "chance" in json.loads(capsys.readouterr().out)["error"]


def test_a_model_over_the_memory_budget_is_refused_up_front():
    from efce.games.resources.memory import MemoryBudgetExceeded
    from efce.solvers.methods.efce import estimate_efce_bytes

    game = games.sheriff(max_bribe=1, max_items=1, rounds=2)
    with pytest.raises(MemoryBudgetExceeded, match="too large: about .* GiB, over the memory budget"):
        solve_efce(game, memory_budget=estimate_efce_bytes(game) - 1)
    assert solve_efce(game, iterations=10, memory_budget=estimate_efce_bytes(game)).iterations == 10


def _untimed(values: dict) -> dict:
    """The values to compare between runs: no timings, arrays as lists."""
    return {
        k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in values.items() if "seconds" not in k
    }


def _rows(result):
    return [(r.iteration, r.gap, r.infeasibility, _untimed(r.extra)) for r in result.trace]


@pytest.mark.parametrize("welfare_threshold", [None, 3.0])
def test_parking_the_pairs_and_the_game_changes_nothing(welfare_threshold, monkeypatch, tmp_path):
    """The pair arrays and the game's own arrays on disk during the loop (forced here: the game
    is tiny) or in memory give the same plan, trace and report; the model and the game get them
    back and no file is left."""
    import tempfile

    from efce.games.resources import memory

    game = games.sheriff(max_bribe=1, max_items=2, rounds=2)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    results = {}
    for min_bytes in (0, 2**62):
        monkeypatch.setattr(memory, "PARK_MIN_BYTES", min_bytes)
        model = build_efce_model(game, welfare_threshold=welfare_threshold)
        columns, entry_of_pair = model.pairs.sigma2.copy(), model.entry_of_pair.copy()
        parents = game.parent.copy()
        seen = []

        def progress(row, seen=seen, model=model):
            mapped = isinstance(game.parent.base, np.memmap)
            seen.append((model.pairs, model.entry_of_pair, len(os.listdir(tmp_path)), mapped))

        results[min_bytes] = solve_efce(
            game,
            model=model,
            iterations=300,
            target_gap=None,
            check_every=9,
            welfare_threshold=welfare_threshold,
            progress=progress,
        )
        assert all(pairs is None and eop is None for pairs, eop, _, _ in seen)
        # one folder for the pairs, one for the game's arrays, which the loop sees as maps
        assert all(files == (2 if min_bytes == 0 else 0) for _, _, files, _ in seen)
        assert all(mapped == (min_bytes == 0) for *_, mapped in seen)
        assert not isinstance(game.parent.base, np.memmap) and np.array_equal(game.parent, parents)
        assert np.array_equal(model.pairs.sigma2, columns) and np.array_equal(
            model.entry_of_pair, entry_of_pair
        )
        assert not os.listdir(tmp_path)
    parked, held = results[0], results[2**62]
    assert np.array_equal(parked.point, held.point) and _rows(parked) == _rows(held)
    assert _untimed(parked.info) == _untimed(held.info) and parked.status == held.status


def test_an_interrupted_solve_gives_the_pairs_back(monkeypatch, tmp_path):
    import tempfile

    from efce.games.resources import memory

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(memory, "PARK_MIN_BYTES", 0)
    game = games.sheriff(max_bribe=1, max_items=2, rounds=2)
    model = build_efce_model(game)

    def interrupt(row):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        solve_efce(game, model=model, iterations=100, progress=interrupt)
    assert model.pairs is not None and len(model.entry_of_pair) == len(model.pairs)
    assert not os.listdir(tmp_path)
    assert solve_efce(game, model=model, iterations=50, target_gap=None).info["max_violation"] <= 1e-9


def test_the_reported_plan_is_checked_against_definition_3(monkeypatch):
    """The checkpoints read the chain's constraints; the plan returned is also checked by the
    independent Definition-3 check, which counts in ``max_violation``."""
    from efce.solvers.methods import efce as method

    monkeypatch.setattr(method.FeasibilityCheck, "__call__", lambda self, xi, *args: 0.5)
    result = solve_efce(games.farina_fig2(), iterations=20, target_gap=None)
    assert max(row.infeasibility for row in result.trace) <= 1e-12
    assert result.info["max_violation"] == 0.5 and not result.info["feasible_iterates"]


def test_the_labelled_chain_is_refused_while_the_pairs_are_parked(monkeypatch):
    from efce.games.resources import memory
    from efce.solvers.methods.efce import pair_arrays_parked

    model = build_efce_model(games.farina_fig2())
    labelled = model.xi_chain.natural_entry.copy()
    monkeypatch.setattr(memory, "PARK_MIN_BYTES", 0)  # park even these few bytes (on disk unless RAM-backed)
    with pair_arrays_parked(model):
        assert model.pairs is None and model.entry_of_pair is None
        with pytest.raises(RuntimeError, match="relevant pairs of the model are parked"):
            _ = model.xi_chain
    np.testing.assert_array_equal(model.xi_chain.natural_entry, labelled)  # back after the block
