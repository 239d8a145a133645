"""Trigger-regret dynamics (``trigger``, ``coarse-trigger``): exact gaps against the expanded
distribution, the fixed point against a brute-force ``M``, the Φ-regret against the local
minimizers' regrets, the two-player correlation-plan gap, convergence, and the command line."""

import json

import numpy as np
import pytest

from efce import games
from efce.experiments.cli import main
from efce.solvers.backends import get_backend
from efce.solvers.evaluation.device import DEVICE_BYTES_LIMIT, device_bytes_bound
from efce.solvers.evaluation.device_gaps import device_gaps
from efce.solvers.methods.trigger import (
    TriggerDynamics,
    device_size_bound,
    reduced_plan_count,
    solve_trigger,
    trigger_layout,
)
from efce.solvers.regret.local import RegretMatching

KUHN3 = games.kuhn(3, 3)
FIG1 = games.farina_fig1()
SMALL = {
    "fig1": FIG1,
    "fig2": games.farina_fig2(),
    "kuhn3": KUHN3,
    "goofspiel2": games.goofspiel(2, 3),
    "battleship22": games.battleship(rows=2, cols=2, ship_sizes=[1], shots=2),
}
ITERATIONS = {"fig1": 40, "fig2": 40, "kuhn3": 25, "goofspiel2": 12, "battleship22": 4}


# ---------------------------------------------------------------------- exact gaps
@pytest.mark.parametrize("name", list(SMALL))
@pytest.mark.parametrize("coarse,averaging", [(False, "linear"), (True, "uniform")])
def test_exact_gaps_equal_gaps_of_expanded_distribution(name, coarse, averaging):
    """The accumulators' gaps (module doc) = the device-gap code on the joint-plan expansion."""
    game = SMALL[name]
    res = solve_trigger(
        game, ITERATIONS[name], coarse=coarse, averaging=averaging, device=True, check_every=ITERATIONS[name]
    )
    exact = device_gaps(game, res.point.to_device())
    assert res.info["efce_gap"] > 0  # not a vacuous comparison
    assert res.info["efce_gap"] == pytest.approx(exact.efce, abs=1e-9)
    assert res.info["efcce_gap"] == pytest.approx(exact.efcce, abs=1e-9)
    assert res.info["nfcce_gap"] == pytest.approx(exact.nfcce, abs=1e-9)
    np.testing.assert_allclose(res.info["utilities"], exact.utilities, atol=1e-9)
    assert res.info["welfare"] == pytest.approx(exact.welfare, abs=1e-9)


def test_reduced_plan_count_by_enumeration():
    """The bottom-up count against the number of distinct reduced plans of all pure plans."""
    import itertools

    from efce.solvers.evaluation.device import plans_reach_infosets

    for game in (FIG1, games.kuhn(2, 3), games.sheriff(max_bribe=1, max_items=1, rounds=1)):
        for p in range(game.num_players):
            A = game.sequences(p).infoset_num_actions
            plans = np.array(list(itertools.product(*[range(a) for a in A])))
            reduced = np.where(plans_reach_infosets(game, p, plans), plans, -1)
            assert reduced_plan_count(game.sequences(p)) == len(np.unique(reduced, axis=0))


# ---------------------------------------------------------------------- fixed point
def _dense_M(space, layout, lam, pi, coarse):
    """``M = Σ_t λ_t φ_t`` as an explicit S×S matrix from the definitions (note, section
    "Trigger deviations" / "Coarse triggers"), independent of the kernels."""
    S = space.num_sequences
    seqs = np.arange(S)
    M = np.zeros((S, S))
    for t in range(layout.num_triggers):
        j = int(layout.trigger_root[t])
        first, A = int(space.infoset_first_seq[j]), int(space.infoset_num_actions[j])
        in_subtree = np.zeros(S, bool)
        for a in range(A):
            in_subtree |= space.is_descendant(seqs, np.full(S, first + a))
        pi_full = np.zeros(S)
        block = slice(layout.seg.ptr[layout.root_seg[t]], layout.entry_hi[t])
        pi_full[layout.entry_seq[block]] = pi[block]
        phi = np.eye(S)
        if coarse:
            source = int(space.infoset_parent_seq[j])
            phi[in_subtree] = 0.0
        else:
            source = t + 1
            below = space.is_descendant(seqs, np.full(S, source))
            phi[below, below] = 0.0
        phi[in_subtree, source] += pi_full[in_subtree]
        M += lam[t] * phi
    return M


@pytest.mark.parametrize("coarse", [False, True])
@pytest.mark.parametrize("game", [KUHN3, games.goofspiel(2, 3), FIG1])
def test_fixed_point_is_fixed_and_feasible(game, coarse):
    rng = np.random.default_rng(7)
    cpu = get_backend("cpu")
    for p in range(game.num_players):
        space = game.sequences(p)
        layout = trigger_layout(space, coarse)
        for trial in range(4):
            lam = rng.random(layout.num_triggers) * (rng.random(layout.num_triggers) < 0.6)
            lam[rng.integers(layout.num_triggers)] = 1.0
            if trial == 0:
                lam[:] = 0.0
                lam[rng.integers(layout.num_triggers)] = 1.0  # one trigger: reducible chains
            if trial == 1:  # L_j ≪ λ: plain elimination lost the excess here (zero pivots)
                lam[rng.random(layout.num_triggers) < 0.5] *= 1e-18
            lam /= lam.sum()
            b = rng.random(layout.size) ** 3 * (rng.random(layout.size) < 0.8)
            b = np.where(
                layout.seg.sums(b)[layout.seg.owner] > 0,
                b / np.maximum(layout.seg.sums(b)[layout.seg.owner], 1e-300),
                1.0 / layout.seg.sizes[layout.seg.owner],
            )
            pi = np.zeros(layout.size)
            cpu.behaviour_to_sequence(b, layout.seg.ptr, layout.seg_parent_entry, pi)
            x = np.zeros(space.num_sequences)
            cpu.fixed_point(
                coarse,
                lam,
                pi,
                space.infoset_first_seq.astype(np.int64),
                space.infoset_num_actions.astype(np.int64),
                space.infoset_parent_seq.astype(np.int64),
                space.seq_infoset.astype(np.int64),
                layout.root_seg,
                layout.seg.ptr,
                layout.entry_hi,
                layout.entry_seq,
                x,
                np.zeros(space.num_sequences),
                np.zeros(space.num_sequences if not coarse else space.num_infosets),
            )
            M = _dense_M(space, layout, lam, pi, coarse)
            np.testing.assert_allclose(M @ x, x, atol=1e-12)
            assert x[0] == 1.0 and np.all(x >= 0)
            sums = np.add.reduceat(x[1:], space.infoset_first_seq - 1) if space.num_infosets else []
            np.testing.assert_allclose(sums, x[space.infoset_parent_seq], atol=1e-13)


# ---------------------------------------------------------------------- regret
@pytest.mark.parametrize("coarse", [False, True])
def test_trigger_regret_within_local_regrets(coarse):
    """Φ-regret of the played strategies (T × unclipped gain of the uniform average) ≤ the
    λ minimizer's regret + the largest subtree minimizer's CFR bound (Σ of local regrets), read
    from RM+'s state (which dominates the cumulative regrets); both are o(T)."""
    T = 300
    dyn = TriggerDynamics(KUHN3, coarse=coarse, rule=RegretMatching(plus=True), averaging="uniform")
    for _ in range(T):
        dyn.step()
    for player in dyn.players:
        efce, efcce, _ = player.gains(dyn.total_weight)
        phi_regret = T * (efcce if coarse else efce)
        lay = player.layout
        local = np.maximum(np.maximum.reduceat(player.sub_state["regret"], lay.seg.ptr[:-1]), 0.0)
        per_trigger = np.bincount(lay.seg_trigger, weights=local, minlength=lay.num_triggers)
        bound = max(player.lam_state["regret"].max(), 0.0) + per_trigger.max()
        assert phi_regret <= bound + 1e-9
        assert bound / T < 0.05


# ---------------------------------------------------------------------- two players
@pytest.mark.parametrize(
    "game",
    [
        FIG1,
        games.battleship(rows=1, cols=2, ship_sizes=[1], shots=2),
        games.sheriff(max_bribe=1, max_items=1, rounds=1),
    ],
)
def test_two_player_correlation_plan_gap(game):
    """ξ = Σ_t w_t x_1^t ⊗ x_2^t (relevant pairs) accumulated outside the solver: the toolkit's
    correlation-plan EFCE gap equals the trigger method's reported gap."""
    from efce.games.relevant import relevant_pairs
    from efce.solvers.evaluation.gaps import efce_gap

    pairs = relevant_pairs(game)
    s1, s2 = pairs.sigma1.astype(np.int64), pairs.sigma2.astype(np.int64)
    dyn = TriggerDynamics(game, averaging="linear")
    xi = np.zeros(len(s1))
    for t in range(1, 61):
        dyn.step()
        x1, x2 = (p.x for p in dyn.players)
        xi += t * x1[s1] * x2[s2]
    xi /= dyn.total_weight
    assert efce_gap(game, xi) == pytest.approx(dyn.gaps()["efce_gap"], abs=1e-9)


# ---------------------------------------------------------------------- convergence
def test_trigger_reaches_small_efce_gap_on_kuhn3():
    res = solve_trigger(KUHN3, 20_000, target_gap=1e-3, time_limit=20.0)
    assert res.status == "converged" and res.info["efce_gap"] <= 1e-3
    assert res.trace[0].gap > res.trace[-1].gap
    coarse = solve_trigger(KUHN3, 20_000, coarse=True, target_gap=1e-3, time_limit=20.0)
    assert coarse.status == "converged" and coarse.info["efcce_gap"] <= 1e-3


def test_bad_averaging_is_refused():
    from efce.games.game import GameError

    with pytest.raises(GameError, match="averaging"):
        TriggerDynamics(FIG1, averaging="cubic")


def _device_file_bytes(game, device) -> int:
    import io

    from efce.solvers.evaluation.device import write_device

    buffer = io.StringIO()
    write_device(game, device, buffer)
    return len(buffer.getvalue().encode())


def test_a_device_whose_loose_bound_passes_the_limit_is_recorded_when_it_fits():
    # The pre-run bound of Kuhn 3-player at 1,000 iterations is 6.7 GiB; the file is ~5 MB.
    assert device_bytes_bound(KUHN3, device_size_bound(KUHN3, 1_000)) > DEVICE_BYTES_LIMIT
    res = solve_trigger(KUHN3, 1_000, device=True, check_every=1_000)
    assert res.status == "iteration_limit" and res.iterations == 1_000
    assert _device_file_bytes(KUHN3, res.point) <= DEVICE_BYTES_LIMIT
    assert device_gaps(KUHN3, res.point).efce == pytest.approx(res.info["efce_gap"], abs=1e-9)


def test_the_run_stops_at_the_iteration_whose_device_would_pass_the_limit(monkeypatch):
    from efce.solvers.methods import trigger

    full = solve_trigger(KUHN3, 300, device=True, check_every=300)
    full_bytes = _device_file_bytes(KUHN3, full.point)
    limit = full_bytes // 2
    monkeypatch.setattr(trigger, "DEVICE_BYTES_LIMIT", limit)
    res = solve_trigger(KUHN3, 300, device=True, check_every=50)
    assert res.status == "device_limit" and 1 <= res.iterations < 300
    assert "device file" in res.info["message"]
    written = _device_file_bytes(KUHN3, res.point)
    assert written <= limit
    # The device is that of the iterations run (its gaps are the result's, its last trace row
    # the last iteration), and one more iteration would not have fitted.
    assert res.trace[-1].iteration == res.iterations
    assert device_gaps(KUHN3, res.point).efce == pytest.approx(res.info["efce_gap"], abs=1e-9)
    monkeypatch.setattr(trigger, "DEVICE_BYTES_LIMIT", 10**12)
    one_more = solve_trigger(KUHN3, res.iterations + 1, device=True, check_every=1_000)
    assert _device_file_bytes(KUHN3, one_more.point) > limit


def test_cli_device_out_at_the_limit_writes_the_device_that_fits_with_its_status(
    capsys, tmp_path, monkeypatch
):
    from efce.solvers.methods import trigger

    monkeypatch.setattr(trigger, "DEVICE_BYTES_LIMIT", 20_000)
    path = tmp_path / "device.json"
    argv = ["solve", "kuhn:players=3,ranks=3", "--method", "trigger", "--iterations", "300"]
    code, out = _run(capsys, [*argv, "--device-out", str(path), "--json"])
    result = json.loads(out)
    assert code == 0 and result["status"] == "device_limit" and 1 <= result["iterations"] < 300
    assert "20,000 bytes" in result["message"]
    assert 0 < path.stat().st_size <= 20_000
    assert len(json.loads(path.read_text())["device"]) == result["support"]


def test_a_device_limit_below_one_iteration_is_refused(monkeypatch):
    from efce.games.game import GameError
    from efce.solvers.methods import trigger

    monkeypatch.setattr(trigger, "DEVICE_BYTES_LIMIT", 100)
    with pytest.raises(GameError, match="one iteration already exceeds"):
        solve_trigger(KUHN3, 10, device=True)


# ---------------------------------------------------------------------- command line
def _run(capsys, argv):
    code = main(argv)
    out = capsys.readouterr().out
    return code, out


def test_cli_solve_trigger_json(capsys):
    code, out = _run(
        capsys, ["solve", "kuhn:players=3,ranks=3", "--method", "trigger", "--iterations", "200", "--json"]
    )
    assert code == 0 and out.count("\n") == 1
    data = json.loads(out)
    for key in (
        "method",
        "iterations",
        "seconds",
        "setup_seconds",
        "status",
        "efce_gap",
        "efcce_gap",
        "nfcce_gap",
        "welfare",
        "utilities",
        "iteration_seconds",
    ):
        assert key in data
    assert data["method"] == "trigger" and data["status"] == "iteration_limit"
    code, out = _run(
        capsys,
        [
            "solve",
            "kuhn:players=3,ranks=3",
            "--method",
            "coarse-trigger",
            "--target-gap",
            "0.01",
            "--local",
            "prm+",
            "--json",
        ],
    )
    assert code == 0 and json.loads(out)["status"] == "converged"


@pytest.mark.parametrize("method", ["trigger", "coarse-trigger", "icfr"])
def test_cli_device_out_round_trips_through_gap(capsys, tmp_path, method):
    path = tmp_path / "device.json"
    code, out = _run(
        capsys,
        [
            "solve",
            "kuhn:players=2,ranks=3",
            "--method",
            method,
            "--iterations",
            "30",
            "--device-out",
            str(path),
            "--json",
        ],
    )
    assert code == 0, out
    solved = json.loads(out)
    code, out = _run(capsys, ["gap", "kuhn:players=2,ranks=3", "--device", str(path), "--json"])
    assert code == 0
    gap = json.loads(out)
    assert gap["support"] == solved["device_support"]
    for key in ("efce", "efcce", "nfcce", "welfare"):
        assert gap[key] == pytest.approx(solved[f"{key}_gap" if key != "welfare" else key], abs=1e-9)
    np.testing.assert_allclose(gap["utilities"], solved["utilities"], atol=1e-9)


def test_cli_device_out_writes_what_fits_and_refuses_other_methods(capsys, tmp_path):
    path = tmp_path / "device.json"
    code, out = _run(
        capsys,
        ["solve", "kuhn:players=3,ranks=3", "--method", "trigger", "--device-out", str(path), "--json"],
    )
    # Its pre-run bound (21,970,000 joint plans, 31 GiB) is far over the limit; the device of
    # the 10,000 iterations fits, and is written.
    assert code == 0 and out.count("\n") == 1, out
    assert json.loads(out)["status"] == "iteration_limit"
    assert 0 < path.stat().st_size <= DEVICE_BYTES_LIMIT
    code, out = _run(
        capsys, ["solve", "kuhn:players=3,ranks=3", "--method", "rm", "--device-out", str(path), "--json"]
    )
    assert code != 0 and "--device-out is an option of" in json.loads(out)["error"]
