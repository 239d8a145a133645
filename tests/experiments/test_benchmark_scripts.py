"""The long-run benchmark scripts still run end to end (on a tiny game, for a second)."""

import csv
import importlib
import json
import os
import subprocess
import sys

import pytest

from tests.paths import ROOT


def benchmark_script(name: str):
    """The module of ``benchmarks/NAME.py`` (a folder of scripts, not a package)."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


def test_large_battleship_script_writes_every_checkpoint_and_its_feasibility(tmp_path):
    out = tmp_path / "run"
    subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "benchmarks", "run_large_battleship.py"),
            # 10 s: on a cold numba cache the first iteration and gap check compile for ~4 s
            "--seconds",
            "10",
            "--out",
            str(out),
            "--game",
            "battleship:rows=2,cols=2,ship_sizes=[1],shots=2",
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    summary = json.loads((out / "summary.json").read_text())
    with open(out / "trace.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert summary["status"] == "time_limit" and summary["iterations"] == int(rows[-1]["iteration"])
    assert summary["feasible_iterates"] and summary["relevant_pairs"] > 0
    from efce.experiments.solve import METHODS

    assert summary["configuration"]["local"] == METHODS["rm"].defaults["local"]  # efce solve's rm
    assert set(summary["setup"]) >= {"game", "relevant pairs", "DECOMPOSE", "trigger chain + payoff operator"}
    # Checkpoints follow the solver's geometric schedule, and the average plan improves.
    iterations = [int(r["iteration"]) for r in rows]
    assert iterations[:3] == [1, 2, 3] and iterations == sorted(iterations)
    assert float(rows[-1]["max_deviation"]) < 0.1 * float(rows[0]["max_deviation"])
    for r in rows:
        assert 0 <= float(r["iteration_seconds"]) <= float(r["seconds"]) + 1e-2
        assert max(float(r["max_violation_iterate"]), float(r["max_violation_average"])) <= 1e-9


def _timing(*args: str) -> list[dict]:
    child = subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "timing.py"), *args],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return [json.loads(line) for line in child.stdout.splitlines()]


def test_timing_script_measures_every_kind_of_run():
    game = "sheriff:max_bribe=1,max_items=1,rounds=1"
    *runs, summary = _timing("iterations", game, "--iterations", "3", "--repeats", "2")
    assert [r["threads"] for r in runs] == [1, 2, 1, 2] and all(r["iterations"] == 3 for r in runs)
    assert summary["ratio_to_first"]["1"] == 1.0
    (run,) = _timing("to-target", game, "--options", '{"threads": 1}')
    assert run["status"] == "converged" and run["gap"] <= 1e-3 and run["plan_violation"] <= 1e-9
    configurations = _timing("configurations", game, "--configs", "0,6", "--trace")
    assert [(c["rule"], c["alternating"]) for c in configurations] == [("rm+", True), ("prm+", False)]
    assert all(c["to_1e-3"] is not None and c["trace"] for c in configurations)
    *cfr, cfr_summary = _timing("cfr-iterations", "kuhn:players=2", "--iterations", "50", "--repeats", "2")
    assert len(cfr) == 2 and cfr_summary["median_seconds_per_iteration"] > 0


def test_interrupt_check_cost_script_times_the_builds_with_and_without_the_checks():
    result = benchmark_script("interrupt_checks").measure("kuhn:players=3,ranks=3", rounds=2)
    assert {"efce.games.game", "efce.games.generators.builder"} <= set(result["modules_with_checks"])
    assert len(result["seconds"]["checks"]) == len(result["seconds"]["no_checks"]) == 2
    from efce import interrupts
    from efce.games import game, relevant

    assert "efce.interrupts" not in result["modules_with_checks"]
    assert game.check_stop is interrupts.check_stop is relevant.check_stop  # the real checks are back
    interrupts.request_stop()
    try:
        with pytest.raises(interrupts.Interrupted):
            game.check_stop("building")
    finally:
        interrupts.clear_stop()


def test_model_build_script_times_the_build_and_digests_every_array_it_made():
    model_build = benchmark_script("model_build")
    digest, measure = model_build.digest, model_build.measure
    result = measure("sheriff:max_bribe=2,max_items=2,rounds=1", repeats=2)
    assert result["median_seconds"] > 0 and len(result["digest"]) == 64
    assert (
        measure("sheriff:max_bribe=2,max_items=2,rounds=1", repeats=1)["digest"] == result["digest"]
    )  # deterministic
    assert measure("sheriff:max_bribe=2,max_items=2,rounds=2", repeats=1)["digest"] != result["digest"]
    # One entry of one array changed (a builder that is not bit-identical) changes the digest.
    from efce.games.spec import make_game
    from efce.solvers.methods.efce import build_efce_model

    model = build_efce_model(make_game("sheriff:max_bribe=2,max_items=2,rounds=1"))
    assert digest(model) == result["digest"]
    model.entry_of_pair[[0, 1]] = model.entry_of_pair[[1, 0]]
    assert digest(model) != result["digest"]


def test_phases_script_times_every_pass_of_an_rm_iteration_on_each_thread_count():
    child = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "benchmarks", "phases.py"),
            "sheriff:max_bribe=1,max_items=1,rounds=1",
            "--threads",
            "1,1",
            "--iterations",
            "2",
            "--warmup",
            "3",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    first, *lines = [json.loads(line) for line in child.stdout.splitlines()]
    assert (
        first["evaluator_gap"] == first["saddle_point_gap"]
        or abs(first["evaluator_gap"] - first["saddle_point_gap"]) <= 1e-12
    )
    assert [line["threads"] for line in lines] == [1, 1]
    for line in lines:
        # The deviator runs fused with the payoff operator: ``A y`` makes its points block by
        # block, ``Y observe`` takes its losses -A^T x where they are made.
        assert list(line["passes_ms"]) == ["A y", "Xi observe", "Xi recommend", "Y observe"]
        assert line["iteration_ms"] == round(sum(line["passes_ms"].values()), 3)
        # The saddle-point gap is the fused deviator's best response (it makes -A^T x itself).
        assert set(line["checkpoint_ms"]) == {
            "saddle_point_gap",
            "evaluator_gap",
            "welfare",
            "violations",
        }


def _optimum(game, model) -> float:
    """The LP's optimal objective by ``lp-highs`` on the prebuilt ``model``."""
    from efce.baselines import solve_lp_highs

    result = solve_lp_highs(game, model=model)
    assert result.status == "converged", result.info
    return result.info["objective_value"]


@pytest.mark.parametrize("concept", ["efce", "efcce", "nfcce"])
@pytest.mark.parametrize("objective", ["welfare", "player2"])
def test_the_pdlp_benchmarks_local_following_rows_keep_the_lps_optimum(monkeypatch, concept, objective):
    """``pdlp_settings.py --follow-values local`` claims an equivalent LP: the same optimum as the
    toolkit's model, by an exact solver, for every concept and two objectives."""
    from efce import games
    from efce.baselines import build_efce_lp, efce_lp

    game = games.sheriff(max_bribe=1, max_items=1, rounds=2)
    dense = build_efce_lp(game, objective=objective, concept=concept)
    monkeypatch.setattr(
        efce_lp,
        "incentive_block",
        benchmark_script("pdlp_settings").local_follow_block(efce_lp.incentive_block),
    )
    local = build_efce_lp(game, objective=objective, concept=concept)
    assert local.num_variables > dense.num_variables  # the follow-value variables are there
    assert _optimum(game, local) == pytest.approx(_optimum(game, dense), abs=1e-7)


def _highs_optimum(c, A, row_lower, row_upper, col_lower, col_upper) -> float:
    """``min cᵀx, row_lower ≤ A x ≤ row_upper, col_lower ≤ x ≤ col_upper`` by HiGHS's simplex."""
    import highspy

    from efce.baselines.backends import highs_model
    from efce.baselines.lp_highs import new_highs

    lp = highs_model(A, c, col_lower, col_upper, row_lower, row_upper, maximize=False)
    highs = new_highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("presolve", "off")
    highs.passModel(lp)
    highs.run()
    assert highs.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return highs.getInfo().objective_function_value


@pytest.mark.parametrize("concept", ["efce", "efcce", "nfcce"])
def test_the_pdlp_benchmarks_highs_presolve_keeps_the_lps_optimum(concept):
    """``pdlp_settings.py --setting highs`` hands PDLP HiGHS's presolved LP: smaller, with the same
    optimum as the toolkit's model (both by HiGHS's simplex, without its presolve)."""
    import numpy as np

    from efce import games
    from efce.baselines import build_efce_lp

    model = build_efce_lp(
        games.sheriff(max_bribe=1, max_items=1, rounds=2), objective="welfare", concept=concept
    )
    lp = (
        -np.asarray(model.c, dtype=np.float64),
        model.A,
        model.row_lower,
        model.row_upper,
        model.col_lower,
        model.col_upper,
    )
    presolved = benchmark_script("pdlp_settings").highs_presolved(*lp)
    assert presolved[1].nnz < model.A.nnz
    assert _highs_optimum(*presolved) == pytest.approx(_highs_optimum(*lp), abs=1e-9)


def test_loop_structure_script_counts_what_a_naive_walk_counts():
    """``loop_structure.py``'s vectorized counts against a step-by-step and slot-by-slot walk."""
    import numpy as np

    from efce import games
    from efce.solvers.methods.efce import build_efce_model

    script = benchmark_script("loop_structure")
    model = build_efce_model(games.sheriff(max_bribe=2, max_items=2, rounds=2))
    chain = model.xi_steps
    sp, src = chain.steps.source_ptr, chain.source
    run = np.repeat(np.arange(chain.steps.num_runs), chain.steps.counts)
    shift = [
        k > 0
        and run[k] == run[k - 1]
        and sp[k + 1] > sp[k]
        and np.array_equal(src[sp[k] : sp[k + 1]], src[sp[k - 1] : sp[k]] + 1)
        for k in range(chain.num_steps)
    ]
    kept = sum(int(sp[k + 1] - sp[k]) for k in range(chain.num_steps) if not shift[k])
    counted = script.source_structure(chain)
    assert 0 < sum(shift) < chain.num_steps  # both kinds of step occur
    assert counted["steps_previous_plus_one"] == round(float(np.mean(shift)), 4)
    assert counted["source_slots_kept"] == kept
    for t, line in zip(model.tables.players, script.row_structure(model.tables), strict=True):
        width = np.diff(t.line_start)
        distinct = sum(
            len(np.unique(t.rows[t.row_start[i] + a * width[i] : t.row_start[i] + (a + 1) * width[i]]))
            for i in range(len(width))
            for a in range(int(t.trig_count[i]))
            if width[i] > 0
        )
        assert line["nonzeros"] == len(t.rows) and line["distinct_rows_per_slot"] == distinct


def test_gpu_layout_bytes_script_counts_the_runs_arrays_under_the_estimate(tmp_path):
    out = tmp_path / "bytes.json"
    subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "gpu_layout_bytes.py"), str(out), "farina-fig1"],
        check=True,
        capture_output=True,
    )
    from efce.games.spec import make_game
    from efce.solvers.backends.cuda.layouts import chain_layout, payoff_layout, run_device_bytes
    from efce.solvers.methods.efce import build_efce_model

    game = make_game("farina-fig1")
    model = build_efce_model(game)
    exact = run_device_bytes(
        chain_layout(model.xi_steps),
        chain_layout(model.triggers.chain),
        payoff_layout(model.operator, game),
        predictive=True,
    )
    line = json.loads(out.read_text())["farina-fig1"]
    assert line["exact"] == exact < line["estimate"] and line["pairs"] == model.xi_steps.num_entries
