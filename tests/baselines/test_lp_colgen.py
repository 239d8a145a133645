"""``lp-colgen`` (efce.baselines.lp_colgen): optimal EFCE, EFCCE and NFCCE of any game by column
generation, against the brute-force oracle (tests/brute_force_equilibria.py), the two-player LP,
and its own certificate."""

from __future__ import annotations

import functools
import json
import threading

import numpy as np
import pytest

import efce
from efce import games
from efce.baselines import lp_colgen
from efce.baselines.colgen_incentives import Incentives
from efce.baselines.colgen_master import Master
from efce.baselines.colgen_pricing import PolynomialBuilder, reduced_plans
from efce.baselines.lp_colgen import estimate_colgen_bytes, solve_lp_colgen
from efce.errors import GameError, MemoryBudgetExceeded, OptionError
from efce.experiments.cli import main
from efce.games.game import CHANCE, TERMINAL, ExplicitLabels, Game
from efce.interrupts import clear_stop, request_stop
from tests.brute_force_equilibria import BruteForce
from tests.random_games import random_game

CONCEPTS = ("efce", "efcce", "nfcce")
#: Tight enough that the certified value is the optimum to the oracle's 1e-7.
TOLERANCE = 1e-9
#: The random games' size: the oracle's LP has a column per joint plan and a row per pure
#: deviation (a few seconds per concept at the generator's default of 4,000 joint plans).
MAX_JOINT_PLANS = 1500


def _check_against_the_oracle(game, bf: BruteForce, concept: str, objective: str, pricing: str) -> float:
    """Run lp-colgen and compare it with the oracle; returns the optimum."""
    best = bf.optimum(concept, objective)
    result = solve_lp_colgen(game, concept=concept, objective=objective, pricing=pricing, tolerance=TOLERANCE)
    info = result.info
    where = f"{game.name} {concept} {objective} {pricing}"
    assert result.status == "converged", where
    assert info["objective_value"] == pytest.approx(best, abs=1e-7), where
    lower, upper = info["objective_interval"]
    assert lower <= best + 1e-7 and upper >= best - 1e-7 and upper - lower <= 2 * TOLERANCE, where
    assert info[f"{concept}_gap"] <= 1e-9, where
    # certified by an exact step: a run that stopped on the heuristic alone has no bound
    assert info["exact_pricings"] >= 1 and result.trace[-1].extra["upper"] == upper, where
    # the returned distribution is the oracle's kind of object: its gains by the oracle agree
    return best


def _games(kind: str, players: int, count: int):
    """The first ``count`` random games of the kind in which someone decides."""
    seed = 0
    while count:
        game = random_game(seed, players=players, chance=kind, max_joint_plans=MAX_JOINT_PLANS)
        if len(game.players_without_decisions()) < players:
            count -= 1
            yield seed, game
        seed += 1


def _oracle(game) -> BruteForce:
    """The oracle of ``game``, its rows built once per concept (it solves two objectives)."""
    bf = BruteForce(game)
    bf.incentive_rows = functools.cache(bf.incentive_rows)
    return bf


@pytest.mark.parametrize("kind", ["none", "public", "private"])
@pytest.mark.parametrize("players", [2, 3])
def test_the_optimum_of_every_concept_and_objective_is_the_oracles(kind, players):
    """Seven random tiny games of each kind (42 in all, 3-player private chance included): every
    concept, the welfare and one player's utility, by exact enumeration pricing; the concepts'
    optima differ (EFCE < NFCCE) on some games of every kind (on 23 of the 42)."""
    differ = 0
    for seed, game in _games(kind, players, 7):
        bf = _oracle(game)
        for objective in ("welfare", f"player{seed % players + 1}"):
            value = {c: _check_against_the_oracle(game, bf, c, objective, "enumeration") for c in CONCEPTS}
            assert value["efce"] <= value["efcce"] + 1e-7 <= value["nfcce"] + 2e-7
            differ += value["nfcce"] - value["efce"] > 1e-6
    assert differ >= 1


def test_the_milp_pricing_certifies_the_same_optimum():
    for seed, game in _games("private", 3, 3):
        bf = _oracle(game)
        for concept in CONCEPTS:
            _check_against_the_oracle(game, bf, concept, f"player{seed % 3 + 1}", "milp")


@pytest.mark.parametrize("kind", ["none", "private"])
def test_the_exact_steps_find_what_the_heuristic_misses(kind, monkeypatch):
    """With the heuristic reduced to best responses from the master's top column (no random
    starts), it stops short of the optimum on some of these games: the exact steps add the
    columns it misses, and only they certify (a run that took the heuristic's best as its bound
    would report a lower optimum)."""
    monkeypatch.setattr(lp_colgen, "RANDOM_STARTS", 0)
    monkeypatch.setattr(lp_colgen, "SUPPORT_STARTS", 1)
    for seed, game in _games(kind, 3, 4):
        bf = _oracle(game)
        for concept in CONCEPTS:
            _check_against_the_oracle(game, bf, concept, f"player{seed % 3 + 1}", "enumeration")


@pytest.mark.parametrize("seed", range(5))
def test_two_players_without_chance_equal_the_von_stengel_forges_lp(seed):
    game = random_game(seed, players=2, chance="none")
    for objective in ("welfare", "player1", "player2"):
        lp = efce.solve(game, "lp-highs", objective=objective)
        colgen = efce.solve(game, "lp-colgen", objective=objective, tolerance=TOLERANCE)
        assert colgen.status == lp.status == "converged"
        assert colgen.info["objective_value"] == pytest.approx(lp.info["objective_value"], abs=1e-7)


def test_the_papers_example_game_equals_the_lp():
    game = games.farina_fig2()
    lp = efce.solve(game, "lp-highs")
    colgen = efce.solve(game, "lp-colgen")
    assert colgen.info["welfare"] == pytest.approx(lp.info["welfare"], abs=1e-7)


def test_the_masters_duals_give_its_columns_reduced_costs():
    """HiGHS's reduced costs of the master's columns are the pricing polynomial at their plans
    (its dual sign convention), nonpositive at an optimum — in both phases."""
    game = random_game(2, players=3, chance="private")
    rng = np.random.default_rng(0)
    incentives = Incentives(game, "efce")
    builder = PolynomialBuilder(incentives)
    plans = [reduced_plans(game.sequences(p)) for p in range(3)]
    picks = [x[rng.integers(len(x), size=40)] for x in plans]
    weights = np.ones(3)
    master = Master(incentives, weights)
    master.add(*incentives.columns(picks))
    for phase in (1, 2):
        if phase == 2:
            master.start_phase_two()
        status, value, mu, duals, _ = master.solve(None)
        assert status == "optimal"
        poly = builder(duals, weights if phase == 2 else np.zeros(3))
        reduced = np.asarray(master.highs.getSolution().col_dual)[master.num_fixed :]
        np.testing.assert_allclose(poly(picks), reduced, atol=1e-9)
        assert reduced.max() <= 1e-9
        assert float(mu @ (master.utilities @ weights)) == pytest.approx(value) or phase == 1


def test_a_masters_time_limit_counts_this_solve_not_every_solve_before():
    """HiGHS accumulates its run time over the solves of one object: a limit shorter than that
    total but ample for one more solve must not stop the master (it did, at 687 s of a 1,200 s
    run on three-player Leduc).  Checked on the limit the master gives HiGHS, which is not a
    race against the clock: HiGHS's run time stands still between solves, so the limit must be
    exactly the run time so far plus the seconds given."""
    game = random_game(2, players=3, chance="private")
    rng = np.random.default_rng(0)
    incentives = Incentives(game, "efce")
    plans = [reduced_plans(game.sequences(p)) for p in range(3)]
    master = Master(incentives, np.ones(3))
    for _ in range(20):  # each round a few new columns, solved from the last basis
        master.add(*incentives.columns([x[rng.integers(len(x), size=5)] for x in plans]))
        assert master.solve(None)[0] == "optimal"
    spent = master.highs.getRunTime()
    assert spent > 0.0
    master.highs.clearSolver()  # the next solve starts over: it needs more than no time at all
    assert master.solve(3600.0)[0] == "optimal"
    _, limit = master.highs.getOptionValue("time_limit")
    assert limit == spent + 3600.0


def named(game: Game) -> Game:
    """``game`` with infosets and actions named as device files can name them."""
    infosets = [
        [f"P{p + 1}-{j}" for j in range(game.sequences(p).num_infosets)] for p in range(game.num_players)
    ]
    actions = [
        [[f"a{a}" for a in range(int(k))] for k in game.sequences(p).infoset_num_actions]
        for p in range(game.num_players)
    ]
    return Game(
        num_players=game.num_players,
        parent=game.parent,
        action=game.action,
        player=game.player,
        infoset=game.infoset,
        chance_prob=game.chance_prob,
        payoffs=game.payoffs,
        terminal_index=game.terminal_index,
        labels=ExplicitLabels(infosets, actions),
        name=game.name,
    )


@pytest.mark.parametrize("concept", CONCEPTS)
def test_the_device_out_has_the_concepts_gap_and_value_by_efce_gap(concept, tmp_path, capsys):
    """``efce solve --device-out`` then ``efce gap`` on the file: the concept's gap ≤ 1e-9 and
    the reported objective (player 2's utility) — a 3-player game with private chance."""
    path = tmp_path / "game.efg"
    games.save(named(random_game(3, players=3, chance="private")), path)
    device = tmp_path / "device.json"
    argv = ["solve", str(path), "--method", "lp-colgen", "--concept", concept, "--objective", "player2"]
    assert main([*argv, "--tolerance", "1e-9", "--device-out", str(device), "--json"]) == 0
    solved = json.loads(capsys.readouterr().out)
    assert solved["status"] == "converged" and solved["device_support"] == solved["support"]
    assert main(["gap", str(path), "--device", str(device), "--json"]) == 0
    gaps = json.loads(capsys.readouterr().out)
    assert gaps[concept] <= 1e-9
    assert gaps["utilities"][1] == pytest.approx(solved["objective_value"], abs=1e-9)
    assert solved["objective_interval"][0] <= gaps["utilities"][1] + 1e-9


def _one_player() -> Game:
    return Game.from_tree(
        num_players=1,
        parent=[-1, 0, 0],
        action=[0, 0, 1],
        player=[0, TERMINAL, TERMINAL],
        infoset_key=[0, -1, -1],
        terminal_payoffs=[[1.0], [2.0]],
        name="one-player",
    )


def _no_decisions() -> Game:
    return Game.from_tree(
        num_players=2,
        parent=[-1, 0, 0],
        action=[0, 0, 1],
        player=[CHANCE, TERMINAL, TERMINAL],
        infoset_key=[-1, -1, -1],
        terminal_payoffs=[[1.0, 0.0], [0.0, 1.0]],
        chance_prob=[1.0, 0.5, 0.5],
        name="no-decisions",
    )


@pytest.mark.parametrize(
    "game, options, error, message",
    [
        (_one_player, {}, GameError, "games of two or more players.*; one-player has 1 player"),
        (_no_decisions, {}, GameError, "at least one decision"),
        (
            lambda: games.kuhn(3, 3),
            {"objective": "player4"},
            OptionError,
            "has 3 players .player1 to player3",
        ),
        (
            lambda: games.kuhn(3, 4),
            {"pricing": "enumeration"},
            GameError,
            "has 4,299,816,960,000, more than 200,000",
        ),
    ],
)
def test_refused_up_front_in_one_line(game, options, error, message):
    with pytest.raises(error, match=message) as refused:
        efce.solve(game(), "lp-colgen", **options)
    assert "\n" not in str(refused.value)


def test_a_game_over_the_memory_budget_is_refused_before_anything_is_built():
    game = games.kuhn(3, 3)
    least, most = estimate_colgen_bytes(game, "efce")
    assert 0 < least < most
    with pytest.raises(MemoryBudgetExceeded, match="column-generation master and pricing MILP of kuhn"):
        solve_lp_colgen(game, memory_budget=least // 2)


def test_a_time_limit_returns_the_interval_so_far():
    game = games.kuhn(3, 4)
    result = solve_lp_colgen(game, objective="player1", time_limit=4.0)
    assert result.status == "time_limit" and result.seconds < 10
    rows = result.trace
    assert [r.iteration for r in rows] == list(range(1, len(rows) + 1))
    assert all(r.extra["columns"] >= 1 and "pricing_seconds" in r.extra for r in rows)
    lower, upper = result.info["objective_interval"]
    if lower is not None:  # phase 2 reached: a feasible equilibrium's value
        assert result.info["efce_gap"] <= 1e-9 and (upper is None or upper >= lower - 1e-9)


def test_a_stop_request_keeps_the_trace():
    game = games.kuhn(3, 4)
    timer = threading.Timer(2.0, request_stop)
    timer.start()
    try:
        result = solve_lp_colgen(game, objective="player1")
    finally:
        timer.cancel()
        clear_stop()
    assert result.status == "interrupted"
    assert result.trace and result.info["rounds"] == len(result.trace)
