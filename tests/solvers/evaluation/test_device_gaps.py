"""Device gaps (EFCE / EFCCE / NFCCE) against brute force over all pure plans."""

import itertools
import json

import numpy as np
import pytest

from efce import games
from efce.games.game import GameError
from efce.solvers.evaluation.device import (
    Device,
    device_from_dict,
    device_from_json,
    device_to_dict,
    infoset_offsets,
    plans_reach_infosets,
    plays_sequences,
)
from efce.solvers.evaluation.device_gaps import device_gaps, induced_correlation_plan


def tiny_games():
    return {
        "kuhn2": games.kuhn(2, 3),
        "kuhn3": games.kuhn(3, 3),
        "sheriff": games.sheriff(max_bribe=1, max_items=1, rounds=1),
        "battleship": games.battleship(rows=1, cols=2, ship_sizes=[1], shots=2),
        "fig1": games.farina_fig1(),
        "fig2": games.farina_fig2(),
    }


GAMES = tiny_games()


# ---------------------------------------------------------------------- brute force
def all_plans(game, p):
    A = game.sequences(p).infoset_num_actions
    return np.array(list(itertools.product(*[range(a) for a in A])), dtype=np.int64).reshape(-1, len(A))


def terminal_reach(game, p, plans):
    """[P, T] reach of every terminal (terminal_index order) by player p's plans."""
    z = game.terminal_nodes[np.argsort(game.terminal_index[game.terminal_nodes])]
    return plays_sequences(game, p, plans)[:, game.node_sequences(p)[z]].astype(float)


def terminals_below(game, p):
    """in_I[I, t]: terminal t lies below a node of infoset I; in_Ia[σ, t] below (I, a)."""
    space = game.sequences(p)
    z = game.terminal_nodes[np.argsort(game.terminal_index[game.terminal_nodes])]
    in_I = np.zeros((space.num_infosets, len(z)), dtype=bool)
    in_seq = np.zeros((space.num_sequences, len(z)), dtype=bool)
    for t, node in enumerate(z):
        child, v = node, int(game.parent[node])
        while v >= 0:
            if game.player[v] == p:
                infoset = int(game.infoset[v])
                in_I[infoset, t] = True
                in_seq[space.infoset_first_seq[infoset] + game.action[child], t] = True
            child, v = v, int(game.parent[v])
    return in_I, in_seq


def brute_gaps(game, device):
    n = game.num_players
    off = infoset_offsets(game)
    z = game.terminal_nodes[np.argsort(game.terminal_index[game.terminal_nodes])]
    pc = game.reach_chance[z]
    reach = [terminal_reach(game, p, device.plans[:, off[p] : off[p + 1]]) for p in range(n)]
    out = {"efce": -np.inf, "efcce": -np.inf, "nfcce": -np.inf, "util": np.zeros(n)}
    for i in range(n):
        space = game.sequences(i)
        plans = all_plans(game, i)
        R = terminal_reach(game, i, plans)  # [P, T]
        plays_all = plays_sequences(game, i, plans)
        opp = np.ones_like(reach[0])
        for j in range(n):
            if j != i:
                opp = opp * reach[j]
        pcu = pc * game.payoffs[:, i]
        own_plays = plays_sequences(game, i, device.plans[:, off[i] : off[i + 1]])
        follow_tz = reach[i] * opp * pcu  # [K, T]
        out["util"][i] = device.probs @ follow_tz.sum(axis=1)
        in_I, in_seq = terminals_below(game, i)
        # NFCCE
        dev = (R @ (device.probs @ (opp * pcu))).max()
        out["nfcce"] = max(out["nfcce"], dev - out["util"][i])
        for infoset in range(space.num_infosets):
            reaching = plays_all[:, space.infoset_parent_seq[infoset]]
            RI = R[reaching] * in_I[infoset]
            # EFCCE trigger at infoset
            w = device.probs * own_plays[:, space.infoset_parent_seq[infoset]]
            dev = (RI @ (w @ (opp * pcu))).max()
            fol = w @ (follow_tz * in_I[infoset]).sum(axis=1)
            out["efcce"] = max(out["efcce"], dev - fol)
            for a in range(space.infoset_num_actions[infoset]):
                sig = space.infoset_first_seq[infoset] + a
                w = device.probs * own_plays[:, sig]
                dev = (RI @ (w @ (opp * pcu))).max()
                fol = w @ (follow_tz * in_seq[sig]).sum(axis=1)
                out["efce"] = max(out["efce"], dev - fol)
    for key in ("efce", "efcce", "nfcce"):
        out[key] = max(0.0, out[key])
    return out


def random_device(game, rng, K=5):
    cols = []
    for p in range(game.num_players):
        A = game.sequences(p).infoset_num_actions
        cols.append(rng.integers(0, A[None, :], size=(K, len(A))))
    return Device(np.concatenate(cols, axis=1), rng.dirichlet(np.ones(K)))


# ---------------------------------------------------------------------- tests
@pytest.mark.parametrize("name", list(GAMES))
def test_gaps_match_brute_force(name):
    game = GAMES[name]
    rng = np.random.default_rng(7)
    for _ in range(4):
        dev = random_device(game, rng, K=int(rng.integers(1, 7)))
        got = device_gaps(game, dev)
        want = brute_gaps(game, dev)
        assert got.efce == pytest.approx(want["efce"], abs=1e-9)
        assert got.efcce == pytest.approx(want["efcce"], abs=1e-9)
        assert got.nfcce == pytest.approx(want["nfcce"], abs=1e-9)
        np.testing.assert_allclose(got.utilities, want["util"], atol=1e-9)
        # Reduced plans (unreached infosets blanked, duplicates merged) give the same numbers.
        red = device_gaps(game, dev.reduced(game))
        assert red.efce == pytest.approx(got.efce, abs=1e-12)
        assert red.efcce == pytest.approx(got.efcce, abs=1e-12)
        assert red.nfcce == pytest.approx(got.nfcce, abs=1e-12)


@pytest.mark.parametrize("name", list(GAMES))
def test_gap_relations(name):
    """Deviation gains nest: an EFCCE gain at I is at most the sum of the positive EFCE gains of
    (I, a); the NFCCE gain is at most the sum of the positive EFCCE gains at root infosets."""
    game = GAMES[name]
    rng = np.random.default_rng(3)
    for _ in range(5):
        g = device_gaps(game, random_device(game, rng))
        for i in range(game.num_players):
            space = game.sequences(i)
            pos = np.maximum(g.efce_gains[i][1:], 0)
            per_infoset = np.add.reduceat(pos, space.infoset_first_seq - 1)
            assert np.all(g.efcce_gains[i] <= per_infoset + 1e-9)
            roots = space.infoset_parent_seq == 0
            assert g.nfcce_gains[i] <= np.maximum(g.efcce_gains[i][roots], 0).sum() + 1e-9
            if roots.sum() == 1:  # one root infoset: the plain ordering EFCCE >= NFCCE
                assert g.efcce_gains[i].max() + 1e-9 >= g.nfcce_gains[i]


def pure_nash(game):
    """All pure Nash equilibria of a small two-player game (brute force)."""
    P1, P2 = all_plans(game, 0), all_plans(game, 1)
    z = game.terminal_nodes[np.argsort(game.terminal_index[game.terminal_nodes])]
    pc = game.reach_chance[z]
    R1, R2 = terminal_reach(game, 0, P1), terminal_reach(game, 1, P2)
    U1 = (R1 * pc * game.payoffs[:, 0]) @ R2.T
    U2 = (R1 * pc * game.payoffs[:, 1]) @ R2.T
    ok = (U1.max(axis=0, keepdims=True) - 1e-12 <= U1) & (U2.max(axis=1, keepdims=True) - 1e-12 <= U2)
    return [(P1[a], P2[b]) for a, b in zip(*np.nonzero(ok), strict=True)]


def test_some_small_game_has_a_pure_nash():
    assert any(pure_nash(GAMES[name]) for name in ("sheriff", "battleship", "fig1", "fig2", "kuhn2"))


@pytest.mark.parametrize("name", ["sheriff", "battleship", "fig1", "fig2", "kuhn2"])
def test_pure_nash_has_zero_gaps(name):
    game = GAMES[name]
    eqs = pure_nash(game)
    if not eqs:
        pytest.skip(f"{name} has no pure Nash equilibrium")
    for p1, p2 in eqs[:5]:
        g = device_gaps(game, Device(np.concatenate([p1, p2])[None, :], [1.0]))
        assert g.efce == 0.0 and g.efcce == 0.0 and g.nfcce == 0.0
    # A mixture of pure equilibria need not be an equilibrium, but a non-equilibrium pure profile
    # has a positive NFCCE gap.
    P1, P2 = all_plans(game, 0), all_plans(game, 1)
    eq_set = {(tuple(a), tuple(b)) for a, b in eqs}
    for a in P1[:4]:
        for b in P2[:4]:
            if (tuple(a), tuple(b)) not in eq_set:
                g = device_gaps(game, Device(np.concatenate([a, b])[None, :], [1.0]))
                assert g.nfcce > 0 and g.efce >= 0


def test_two_player_consistency_with_correlation_plan_gap():
    gaps_mod = pytest.importorskip("efce.solvers.evaluation.gaps")
    rng = np.random.default_rng(11)
    for name in ("fig1", "fig2", "sheriff", "battleship"):
        game = GAMES[name]
        for _ in range(3):
            dev = random_device(game, rng)
            xi = induced_correlation_plan(game, dev)
            assert device_gaps(game, dev).efce == pytest.approx(gaps_mod.efce_gap(game, xi), abs=1e-9)


def test_two_player_consistency_with_chance():
    """The correlation-plan evaluator handles chance too (p_c folded into payoffs)."""
    gaps_mod = pytest.importorskip("efce.solvers.evaluation.gaps")
    game = GAMES["kuhn2"]
    rng = np.random.default_rng(5)
    for _ in range(3):
        dev = random_device(game, rng)
        xi = induced_correlation_plan(game, dev)
        assert device_gaps(game, dev).efce == pytest.approx(gaps_mod.efce_gap(game, xi), abs=1e-9)


# ---------------------------------------------------------------------- device I/O
def test_from_counts_merges_duplicates():
    plans = np.array([[0, 1], [0, 1], [1, 0]])
    dev = Device.from_counts(plans, [1, 2, 1])
    assert dev.size == 2
    np.testing.assert_allclose(sorted(dev.probs), [0.25, 0.75])


def test_json_roundtrip_and_errors(tmp_path):
    game = GAMES["kuhn3"]
    rng = np.random.default_rng(0)
    dev = random_device(game, rng, K=3).merged()
    data = device_to_dict(game, dev)
    back = device_from_dict(game, data)
    # Written reduced: the same plans where they reach, -1 where they do not.
    off = infoset_offsets(game)
    expected = dev.plans.copy()
    for p in range(game.num_players):
        block = expected[:, off[p] : off[p + 1]]
        block[~plans_reach_infosets(game, p, block)] = -1
    np.testing.assert_array_equal(back.plans, expected)
    path = tmp_path / "d.json"
    path.write_text(json.dumps(data))
    assert device_from_json(game, str(path)).size == dev.size

    def bad(mutate, match):
        d = json.loads(json.dumps(data))
        mutate(d)
        with pytest.raises(GameError, match=match):
            device_from_dict(game, d)

    first_label = game.infoset_label(0, 0)
    bad(lambda d: d["device"][0]["plans"][0].update({"nope": "bet"}), "no infoset labelled 'nope'")
    bad(lambda d: d["device"][0]["plans"][0].update({first_label: "raise"}), "no action 'raise'")
    bad(lambda d: d["device"][0]["plans"][0].pop(first_label), "names no action at infoset")
    bad(lambda d: d["device"][0]["plans"].pop(), "expected 3 plans")
    bad(lambda d: d["device"][0].update(p=d["device"][0]["p"] + 0.1), "sum to")
    bad(
        lambda d: (d["device"][0].update(p=-0.5), d["device"][1].update(p=d["device"][1]["p"] + 0.5)),
        "negative probability",
    )
    with pytest.raises(GameError, match="cannot read device file"):
        device_from_json(game, str(tmp_path / "missing.json"))


@pytest.mark.parametrize("kind", ["none", "public", "private"])
def test_gaps_match_the_oracle_where_a_player_may_not_move(kind):
    """Random games that may end before a player moves (chance or another player's move ends
    them): the terminals where the deviator never moves count on both sides of the NFCCE gain
    (the independent oracle of tests/brute_force_equilibria.py, on random distributions)."""
    from tests.brute_force_equilibria import BruteForce
    from tests.random_games import random_game

    rng = np.random.default_rng(7)
    checked = 0
    for seed in range(6):
        game = random_game(seed, players=2 + seed % 2, chance=kind)
        bf = BruteForce(game)
        off = infoset_offsets(game)
        for _ in range(2):
            mu = rng.random(len(bf.joint)) * (rng.random(len(bf.joint)) < 0.3)
            if not mu.any():
                continue
            mu /= mu.sum()
            plans = np.full((len(bf.joint), int(off[-1])), -1, dtype=np.int64)
            for k, joint in enumerate(bf.joint):
                for p, index in enumerate(joint):
                    for infoset, action in bf.plans[p][index].items():
                        plans[k, off[p] + infoset] = action
            gaps = device_gaps(game, Device(plans, mu).merged())
            for concept in ("efce", "efcce", "nfcce"):
                assert getattr(gaps, concept) == pytest.approx(bf.gains(concept, mu), abs=1e-9), concept
            checked += 1
    assert checked >= 10
