"""The regret-minimizer algebra: Algorithm 1 / Proposition 1, chains, CFR, regret circuits."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from efce import games
from efce.games.game import CHANCE
from efce.games.payoffs import sequence_form_payoffs
from efce.polytopes import SIMPLEX, Chain, correlation_plan, sequence_form, vsf_constraints
from efce.polytopes.triggers import trigger_deviations
from efce.solvers.backends.cpu import CPUBackend
from efce.solvers.regret.algebra import (
    cartesian_product,
    chain_minimizer,
    convex_hull,
    nested_chain_minimizer,
    regret,
    run,
    scaled_extension,
    sequence_form_minimizer,
    simplex,
    singleton,
)
from efce.solvers.regret.internal import BlumMansour
from efce.solvers.regret.local import Hedge, PredictiveRMPlus, RegretMatching
from efce.solvers.regret.protocol import LinearOracle, RegretMinimizer, copy_state

from .rules import ClippedLossRM, DecayedRegretMatching, every_rule

RULES = {
    "rm": RegretMatching,
    "rm+": lambda: RegretMatching(plus=True),
    "hedge": lambda: Hedge(eta=0.5),
    "prm+": PredictiveRMPlus,
    "dcfr": lambda: RegretMatching(alpha=1.5, beta=0.0),
}
MAIN_RULES = ["rm", "rm+", "hedge", "prm+"]


def small_chains():
    fig1, fig2 = games.farina_fig1(), games.farina_fig2()
    sheriff = games.sheriff(max_bribe=1, max_items=1, rounds=1)
    return {
        "fig2-cp": correlation_plan(fig2),
        "fig1-sf1": sequence_form(fig1.sequences(0)),
        "fig1-sf2": sequence_form(fig1.sequences(1)),
        "sheriff-cp": correlation_plan(sheriff),
        "kuhn-sf1": sequence_form(games.kuhn(2).sequences(0)),
        "fig1-triggers": trigger_deviations(fig1).chain,  # steps not in level order
    }


CHAINS = small_chains()


# ---------------------------------------------------------------------------- helpers
def run_scaled(rm, loss_fn, T):
    """Drive ``Z = X ◁h Y``; return the iterates/losses of Z, X and Y (what each one saw)."""
    state = rm.init()
    m = rm.rm_x.dim
    rec = {k: [] for k in ("z", "lz", "x", "lx", "y", "ly")}
    for t in range(T):
        z = rm.recommend(state)
        sx, sy = state
        x, y = rm.rm_x.recommend(sx), rm.rm_y.recommend(sy)
        np.testing.assert_allclose(z, np.concatenate([x, rm.h(x) * y]), atol=1e-14)
        loss = loss_fn(t, z)
        lx_tilde = loss[:m] + (loss[m:] @ y) * rm.a
        for key, val in zip(
            ("z", "lz", "x", "lx", "y", "ly"), (z, loss, x, lx_tilde, y, loss[m:]), strict=True
        ):
            rec[key].append(val)
        state = rm.observe(state, loss)
    return rec


def loss_sequences(dim, seed):
    """Random and adversarial loss functions ``(t, z_t) -> ℓ_t``."""
    rng = np.random.default_rng(seed)
    fixed = rng.normal(size=(4000, dim))
    v = rng.normal(size=dim)
    return {
        "random": lambda t, z: fixed[t],
        "punish": lambda t, z: z.copy(),  # ℓ_t = +z_t
        "punish-shifted": lambda t, z: z - 0.5 * z.mean(),
        "alternating": lambda t, z: v if t % 2 == 0 else -v,
        "alternating-biased": lambda t, z: (v if t % 2 == 0 else -v) + 0.1 * fixed[t],
    }


def chain_feasibility(chain: Chain, x: np.ndarray) -> float:
    """Largest violation of the chain constraints: x[0] = 1, x ≥ 0, Σ x[targets_k] = h_k(x)
    (and x[target] = h_k(x) for singleton steps)."""
    sums = np.add.reduceat(x[1:], chain.target_ptr[:-1] - 1)
    return max(
        abs(x[0] - 1.0),
        float(np.max(-x, initial=0.0)),
        float(np.max(np.abs(sums - chain.h_values(x)), initial=0.0)),
    )


def chain_vertices(chain: Chain):
    """All points of the chain with every simplex at a vertex."""
    choices = [
        range(int(s)) if kind == SIMPLEX else range(1)
        for kind, s in zip(chain.kind, chain.step_size, strict=True)
    ]
    for pick in itertools.product(*choices):
        w = np.zeros(chain.num_entries)
        w[0] = 1.0
        w[chain.target_ptr[:-1] + np.array(pick, dtype=np.int64)] = 1.0
        yield chain.point(w)


def brute_min(points, loss):
    return min(float(p @ loss) for p in points)


# ---------------------------------------------------------------------------- Algorithm 1
def make_extensions(rule_name, seed):
    rng = np.random.default_rng(seed)
    rule = RULES[rule_name]()
    out = {}
    # X, Y simplexes; h with mixed-sign a and an offset b keeping h > 0 on X.
    a = rng.uniform(-1, 1, size=3)
    out["simplex◁simplex"] = scaled_extension(simplex(3, rule), simplex(4, rule), a, -a.min() + 0.25)
    out["simplex◁simplex (h = x_0)"] = scaled_extension(simplex(2, rule), simplex(3, rule), [1.0, 0.0])
    # X itself a scaled extension (Δ2 ◁ Δ3), h reading two coordinates with weights.
    inner = scaled_extension(simplex(2, rule), simplex(3, rule), [0.5, 2.0], 0.1)
    out["(simplex◁simplex)◁simplex"] = scaled_extension(
        inner, simplex(2, rule), [0.0, 1.0, 3.0, 0.0, 0.5], 0.0
    )
    return out


@pytest.mark.parametrize("rule_name", MAIN_RULES + ["dcfr"])
def test_proposition_1(rule_name):
    T = 400
    for name, rm in make_extensions(rule_name, 1).items():
        h_star = -rm.rm_x.minimize(-rm.a)[0] + rm.b
        h_min = rm.rm_x.minimize(rm.a)[0] + rm.b
        assert h_star >= h_min >= 0
        for kind, loss_fn in loss_sequences(rm.dim, 2).items():
            rec = run_scaled(rm, loss_fn, T)
            r_z = regret(rm, rec["lz"], rec["z"])
            r_x = regret(rm.rm_x, rec["lx"], rec["x"])
            r_y = regret(rm.rm_y, rec["ly"], rec["y"])
            # Proposition 1; exact form R_Z ≤ R_X + max_x h(x)·R_Y, which is ≤ R_X + h*[R_Y]^+.
            # (R_X + h*·R_Y itself needs R_Y ≥ 0: for R_Y < 0 the max is attained at h_min.)
            tight = r_x + max(h_star * r_y, h_min * r_y)
            assert r_z <= tight + 1e-9, (name, kind, r_z, r_x, r_y)
            assert r_z <= r_x + h_star * max(r_y, 0.0) + 1e-9
            if r_y >= 0:
                assert r_z <= r_x + h_star * r_y + 1e-9


@pytest.mark.parametrize("rule_name", ["rm+", "prm+"])
def test_proposition_1_needs_positive_part_of_r_y(rule_name):
    """The bound as printed, R_X + h*·R_Y, fails when R_Y < 0 (possible for RM+/PRM+/Hedge;
    never for RM, whose regret is ≥ 0): here the comparator x attains R_X at h(x) = 0, so
    R_Z = R_X > R_X + h*·R_Y.  The valid forms are R_X + max_x h(x)·R_Y ≤ R_X + h*·[R_Y]^+."""
    sequences = {
        "rm+": [
            [1, 0, 2, 2],
            [-2, -2, -2, -1],
            [-2, -2, -1, 1],
            [0, -1, 2, 1],
            [1, 2, 1, -2],
            [-2, 2, 0, -2],
        ],
        "prm+": [[0, 2, -2, -1], [2, -1, -2, 2], [-2, 0, 2, -2], [-2, 2, 2, -1], [-1, 0, 0, 0]],
    }
    losses = np.array(sequences[rule_name], dtype=float)
    rule = RULES[rule_name]()
    rm = scaled_extension(simplex(2, rule), simplex(2, rule), [0.0, 1.0])  # h* = 1, h_min = 0
    rec = run_scaled(rm, lambda t, z: losses[t], len(losses))
    r_z = regret(rm, rec["lz"], rec["z"])
    r_x = regret(rm.rm_x, rec["lx"], rec["x"])
    r_y = regret(rm.rm_y, rec["ly"], rec["y"])
    assert r_y < 0 and r_z > r_x + 1.0 * r_y + 0.1
    assert r_z <= r_x + 1.0 * max(r_y, 0.0) + 1e-12


def test_scaled_extension_rejects_negative_h():
    with pytest.raises(ValueError, match="negative"):
        scaled_extension(simplex(2, RegretMatching()), simplex(2, RegretMatching()), [1.0, -1.0])
    with pytest.raises(ValueError, match="coefficients"):
        scaled_extension(simplex(2, RegretMatching()), simplex(2, RegretMatching()), [1.0])


def test_scaled_extension_minimize_brute_force():
    rng = np.random.default_rng(3)
    for rm in make_extensions("rm", 4).values():
        xs = list(_vertices(rm.rm_x))
        ys = list(_vertices(rm.rm_y))
        points = [np.concatenate([x, rm.h(x) * y]) for x in xs for y in ys]
        for _ in range(50):
            loss = rng.normal(size=rm.dim)
            value, point = rm.minimize(loss)
            assert value == pytest.approx(brute_min(points, loss), abs=1e-12)
            assert point @ loss == pytest.approx(value, abs=1e-12)
            assert any(np.allclose(point, p, atol=1e-14) for p in points)


def _vertices(rm):
    """Vertices of simplexes and of nested scaled extensions of simplexes."""
    if hasattr(rm, "k"):
        yield from np.eye(rm.k)
    else:
        for x in _vertices(rm.rm_x):
            for y in _vertices(rm.rm_y):
                yield np.concatenate([x, rm.h(x) * y])


@pytest.mark.parametrize("rule_name", sorted(every_rule()))
def test_observe_does_not_mutate_state(rule_name):
    """Purity for every rule of the package and user-defined ones: neither ``recommend`` nor
    ``observe`` touches the caller's state or loss, on a simplex, on Algorithm 1 objects, on both
    chain backends and on the regret circuits; the returned state did move."""
    rng = np.random.default_rng(5)
    rule = every_rule()[rule_name]
    chain = CHAINS["fig2-cp"]
    minimizers = [
        simplex(3, rule),
        simplex(1, rule),
        nested_chain_minimizer(chain, rule),
        chain_minimizer(chain, rule, backend="numpy"),
        convex_hull(simplex(3, rule), simplex(3, rule), rule=rule),
        cartesian_product(simplex(2, rule), singleton(), simplex(4, rule)),
    ]
    if rule.kernel() is not None:
        minimizers.append(chain_minimizer(chain, rule, backend="compiled"))
    for rm in minimizers:
        state = rm.init()
        for _ in range(3):
            state = rm.observe(state, rng.normal(size=rm.dim))
        before = rm.recommend(state)
        frozen = _flatten(state)
        copy = [a.copy() for a in frozen]
        loss = rng.normal(size=rm.dim)
        loss_copy = loss.copy()
        np.testing.assert_array_equal(rm.recommend(state), before)  # recommend is pure
        new = rm.observe(state, loss)
        assert all(np.array_equal(a, b) for a, b in zip(frozen, copy, strict=True)), rm
        np.testing.assert_array_equal(loss, loss_copy)
        np.testing.assert_array_equal(rm.recommend(state), before)
        if rm.dim > 1:
            assert any(not np.array_equal(a, b) for a, b in zip(_flatten(new), copy, strict=True)), rm
        # Donation gives the same next state and point as the pure call.
        donated = rm.observe(copy_state(state), loss.copy(), donate=True)
        assert all(np.array_equal(a, b) for a, b in zip(_flatten(donated), _flatten(new), strict=True)), rm
        np.testing.assert_array_equal(rm.recommend(donated), rm.recommend(new))


def test_simplex_with_blum_mansour_runs():
    """Regression: ``simplex(3, BlumMansour())`` failed at the first recommend after observe
    (the rule wrote into the caller's state and the state copy made an object array)."""
    rm = simplex(3, BlumMansour())
    state = rm.init()
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rm.recommend(state)
        assert x.shape == (3,) and abs(x.sum() - 1) < 1e-12 and x.min() >= 0
        state = rm.observe(state, rng.normal(size=3))
    assert all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in _flatten(state))


def _flatten(tree):
    if isinstance(tree, dict):
        return [a for v in tree.values() for a in _flatten(v)]
    if isinstance(tree, tuple):
        return [a for v in tree for a in _flatten(v)]
    return [tree]


def test_singleton():
    s = singleton()
    assert s.dim == 1 and np.array_equal(s.recommend(s.init()), [1.0])
    assert s.minimize(np.array([-2.0])) == (-2.0, pytest.approx(np.ones(1)))


# ---------------------------------------------------------------------------- chains
@pytest.mark.parametrize("rule_name", sorted(every_rule()))
@pytest.mark.parametrize("chain_name", ["fig2-cp", "fig1-sf1", "fig1-sf2", "sheriff-cp", "fig1-triggers"])
def test_flat_chain_equals_nested_algorithm_1(chain_name, rule_name):
    """Both backends of the chain minimizer (compiled where the rule has a kernel, numpy for
    every rule) against the literal nesting of Algorithm 1: same points, same states."""
    chain = CHAINS[chain_name]
    rule = every_rule()[rule_name]
    nested = nested_chain_minimizer(chain, rule)
    flats = [chain_minimizer(chain, rule, backend="numpy")]
    if rule.kernel() is not None:
        flats.append(chain_minimizer(chain, rule, backend="compiled"))
    assert chain_minimizer(chain, rule).backend == flats[-1].backend  # "auto"
    assert all(rm.dim == nested.dim == chain.num_entries for rm in flats)
    rng = np.random.default_rng(7)
    states, sn = [rm.init() for rm in flats], nested.init()
    for t in range(150):
        x_nested = nested.recommend(sn)
        points = [rm.recommend(s) for rm, s in zip(flats, states, strict=True)]
        for x in points:
            np.testing.assert_allclose(x, x_nested, rtol=0, atol=1e-12)
        # Mixed scales and an occasional loss on the current point (adversarial).
        loss = rng.normal(size=chain.num_entries) * (10.0 if t % 7 == 0 else 1.0)
        if t % 5 == 0:
            loss = x_nested.copy()
        states = [rm.observe(s, loss) for rm, s in zip(flats, states, strict=True)]
        sn = nested.observe(sn, loss)
        for a, b in zip(_flatten(states[0]), _flatten(states[-1]), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        value = nested.minimize(loss)[0]
        for rm in flats:
            assert rm.minimize(loss)[0] == pytest.approx(value, abs=1e-12)


def test_backend_choice():
    chain = CHAINS["fig2-cp"]
    compiled = chain_minimizer(chain, "rm+")
    assert compiled.compiled and compiled.backend.name == "cpu"  # "auto": the CPU backend
    assert chain_minimizer(chain, "rm+", backend="compiled").backend == compiled.backend
    assert chain_minimizer(chain, "rm+", backend="cpu").backend == compiled.backend
    one = CPUBackend(threads=1)
    assert chain_minimizer(chain, "rm+", backend=one).backend is one
    assert chain_minimizer(chain, "rm+", backend="numpy").backend is None
    assert chain_minimizer(chain, DecayedRegretMatching()).backend is None  # numpy
    assert chain_minimizer(chain, BlumMansour()).backend is None
    # A subclass that redefines the arithmetic loses the parent's kernel (never a wrong kernel).
    assert ClippedLossRM().kernel() is None and RegretMatching().kernel() is not None
    assert not chain_minimizer(chain, ClippedLossRM()).compiled
    for backend in ("compiled", "cpu", one):
        with pytest.raises(ValueError, match="has no compiled kernel"):
            chain_minimizer(chain, DecayedRegretMatching(), backend=backend)
    with pytest.raises(ValueError, match="unknown chain-minimizer backend"):
        chain_minimizer(chain, "rm", backend="gpu")
    with pytest.raises(TypeError, match="LocalRule or a rule name"):
        chain_minimizer(chain, 3)


def test_user_subclass_is_not_run_as_plain_rm():
    """Its iterates (equal to the nested reference's: test above) differ from plain RM's."""
    chain = CHAINS["sheriff-cp"]
    sub, plain = chain_minimizer(chain, ClippedLossRM()), chain_minimizer(chain, RegretMatching())
    s_sub, s_plain = sub.init(), plain.init()
    rng = np.random.default_rng(3)
    differs = 0.0
    for _ in range(20):
        differs = max(differs, np.abs(sub.recommend(s_sub) - plain.recommend(s_plain)).max())
        loss = rng.normal(size=chain.num_entries)
        s_sub, s_plain = sub.observe(s_sub, loss), plain.observe(s_plain, loss)
    assert differs > 1e-2


def test_nested_chain_limit():
    n = 201
    chain = Chain(
        kind=np.zeros(n, dtype=np.int8),
        target_ptr=1 + 2 * np.arange(n + 1),
        source_ptr=np.arange(n + 1),
        source=np.zeros(n, dtype=np.int64),
        entry_index=np.arange(1 + 2 * n),
    )
    with pytest.raises(ValueError, match="at most 200"):
        nested_chain_minimizer(chain, RegretMatching())
    rm = chain_minimizer(chain, RegretMatching())  # the flat form has no limit
    assert rm.recommend(rm.init())[1:].sum() == pytest.approx(n)


@pytest.mark.parametrize("backend", ["compiled", "numpy"])
@pytest.mark.parametrize("rule_name", MAIN_RULES)
@pytest.mark.parametrize("chain_name", list(CHAINS))
def test_iterates_feasible(chain_name, rule_name, backend):
    chain = CHAINS[chain_name]
    rm = chain_minimizer(chain, RULES[rule_name](), backend=backend)
    for loss_fn in loss_sequences(rm.dim, 11).values():
        _, points, _ = run(rm, loss_fn, 100)
        for x in points:
            assert chain_feasibility(chain, x) <= 1e-12


def test_iterates_satisfy_definition_3_and_sequence_form():
    """Correlation-plan iterates satisfy the von Stengel–Forges system; sequence-form iterates
    satisfy x[∅] = 1, Σ_a x[(I, a)] = x[σ(I)]."""
    rng = np.random.default_rng(12)
    for game in [games.farina_fig2(), games.sheriff(max_bribe=1, max_items=1, rounds=1)]:
        chain = correlation_plan(game)
        cons = vsf_constraints(game)
        rm = chain_minimizer(chain, RegretMatching(plus=True))
        _, points, _ = run(rm, lambda t, z, dim=rm.dim: rng.normal(size=dim), 60)
        for x in points:
            assert cons.max_violation(chain.to_natural(x, len(cons.pairs))) <= 1e-12
    for space in [games.kuhn(2).sequences(1), games.farina_fig1().sequences(0)]:
        rm = sequence_form_minimizer(space, PredictiveRMPlus())
        _, points, _ = run(rm, lambda t, z, dim=rm.dim: rng.normal(size=dim), 60)
        for x in points:
            assert x[0] == 1.0 and x.min() >= 0
            for i in range(space.num_infosets):
                lo = space.infoset_first_seq[i]
                block = x[lo : lo + space.infoset_num_actions[i]]
                assert abs(block.sum() - x[space.infoset_parent_seq[i]]) <= 1e-12


@pytest.mark.parametrize("chain_name", ["fig2-cp", "fig1-sf1", "fig1-sf2", "sheriff-cp"])
def test_chain_minimize_brute_force(chain_name):
    chain = CHAINS[chain_name]
    vertices = np.array(list(chain_vertices(chain)))
    rm = chain_minimizer(chain, RegretMatching())
    nested = nested_chain_minimizer(chain, RegretMatching())
    rng = np.random.default_rng(13)
    for trial in range(40):
        loss = rng.normal(size=chain.num_entries)
        if trial % 4 == 0:  # ties
            loss = np.round(loss)
        best = float((vertices @ loss).min())
        value, point = rm.minimize(loss)
        assert value == pytest.approx(best, abs=1e-12)
        assert point @ loss == pytest.approx(best, abs=1e-12)
        assert chain_feasibility(chain, point) <= 1e-12
        assert np.min(np.abs(vertices - point).max(axis=1)) <= 1e-12  # a vertex
        assert nested.minimize(loss)[0] == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize("rule_name", MAIN_RULES)
def test_average_regret_vanishes(rule_name):
    chain = CHAINS["sheriff-cp"]
    rm = chain_minimizer(chain, RULES[rule_name]())
    rng = np.random.default_rng(17)
    fixed = rng.uniform(-1, 1, size=(2000, rm.dim))
    _, points, losses = run(rm, lambda t, z: fixed[t], 2000)
    averages = [regret(rm, losses[:T], points[:T]) / T for T in (50, 200, 500, 2000)]
    assert all(b < a for a, b in itertools.pairwise(averages)), averages
    assert averages[-1] < 0.4 * averages[0] and averages[-1] < 0.1, averages


# ---------------------------------------------------------------------------- CFR
def textbook_cfr(game, iterations):
    """Vanilla CFR (simultaneous updates) by walking the tree: per-infoset regret tables,
    counterfactual values weighted by the opponent's and chance's reach.  Returns the
    realization plans of every iterate."""
    spaces = [game.sequences(p) for p in range(2)]
    regrets = [[np.zeros(n) for n in s.infoset_num_actions] for s in spaces]

    def strategy(r):
        pos = np.maximum(r, 0.0)
        total = pos.sum()
        return pos / total if total > 0 else np.full(len(r), 1.0 / len(r))

    def plan(space, strat):
        x = np.zeros(space.num_sequences)
        x[0] = 1.0
        for i in range(space.num_infosets):  # infosets are numbered top-down
            lo = space.infoset_first_seq[i]
            x[lo : lo + space.infoset_num_actions[i]] = x[space.infoset_parent_seq[i]] * strat[i]
        return x

    plans = []
    for _ in range(iterations):
        strat = [[strategy(r) for r in regrets[p]] for p in range(2)]
        plans.append(tuple(plan(spaces[p], strat[p]) for p in range(2)))
        cfv = [[np.zeros(n) for n in s.infoset_num_actions] for s in spaces]

        def walk(node, reach, chance, strat=strat, cfv=cfv):
            if game.terminal_index[node] >= 0:
                return game.payoffs[game.terminal_index[node]]
            kids = game.first_child[node] + np.arange(game.num_children[node])
            if game.player[node] == CHANCE:
                return sum(
                    game.chance_prob[k] * walk(k, reach, chance * game.chance_prob[k], strat, cfv)
                    for k in kids
                )
            p, i = int(game.player[node]), int(game.infoset[node])
            s = strat[p][i]
            values = []
            for a, k in enumerate(kids):
                r = list(reach)
                r[p] *= s[a]
                values.append(walk(k, r, chance, strat, cfv))
            values = np.array(values)
            cfv[p][i] += reach[1 - p] * chance * values[:, p]
            return s @ values

        walk(0, (1.0, 1.0), 1.0)
        for p in range(2):
            for i, v in enumerate(cfv[p]):
                regrets[p][i] += v - strat[p][i] @ v
    return plans


def test_sequence_form_minimizer_with_rm_is_cfr():
    game = games.kuhn(2)
    A1, A2 = sequence_form_payoffs(game)
    T = 50
    expected = textbook_cfr(game, T)
    rms = [sequence_form_minimizer(game.sequences(p), RegretMatching()) for p in range(2)]
    vec = [sequence_form_minimizer(game.sequences(p), RegretMatching(), backend="numpy") for p in range(2)]
    states = [rm.init() for rm in rms]
    vstates = [rm.init() for rm in vec]
    for t in range(T):
        x, y = (rm.recommend(s) for rm, s in zip(rms, states, strict=True))
        np.testing.assert_allclose(x, expected[t][0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(y, expected[t][1], rtol=0, atol=1e-12)
        for rm, s, z in zip(vec, vstates, (x, y), strict=True):
            np.testing.assert_allclose(rm.recommend(s), z, rtol=0, atol=1e-12)
        losses = (-(A1 @ y), -(A2.T @ x))
        states = [rm.observe(s, loss) for rm, s, loss in zip(rms, states, losses, strict=True)]
        vstates = [rm.observe(s, loss) for rm, s, loss in zip(vec, vstates, losses, strict=True)]
    # Not a degenerate run: the strategies moved away from uniform.
    assert np.abs(expected[-1][0] - expected[0][0]).max() > 0.1


# ---------------------------------------------------------------------------- regret circuits
@pytest.mark.parametrize("rule_name", MAIN_RULES)
def test_convex_hull_and_cartesian_product_bounds(rule_name):
    rule = RULES[rule_name]()
    chain = CHAINS["fig1-sf2"]
    children = [
        chain_minimizer(chain, rule),
        chain_minimizer(chain, RegretMatching(plus=True)),
        nested_chain_minimizer(chain, Hedge(eta=0.3)),
    ]
    hull = convex_hull(*children, rule=rule)
    prod = cartesian_product(simplex(3, rule), *children, singleton())
    vertices = list(chain_vertices(chain))
    rng = np.random.default_rng(23)
    for T in (30, 300):
        for kind, loss_fn in loss_sequences(hull.dim, T).items():
            state = hull.init()
            rec = {"z": [], "l": [], "lam": [], "llam": [], "zi": [[] for _ in children]}
            for t in range(T):
                z = hull.recommend(state)
                s_lam, s_children = state
                pts = [rm.recommend(s) for rm, s in zip(children, s_children, strict=True)]
                lam = hull.mixer.recommend(s_lam)
                np.testing.assert_allclose(z, lam @ np.array(pts), atol=1e-14)
                loss = loss_fn(t, z)
                rec["z"].append(z), rec["l"].append(loss), rec["lam"].append(lam)
                rec["llam"].append(np.array([p @ loss for p in pts]))
                for i, p in enumerate(pts):
                    rec["zi"][i].append(p)
                state = hull.observe(state, loss)
            r_hull = regret(hull, rec["l"], rec["z"])
            r_lam = regret(hull.mixer, rec["llam"], rec["lam"])
            r_children = [regret(rm, rec["l"], zi) for rm, zi in zip(children, rec["zi"], strict=True)]
            assert r_hull <= r_lam + max(r_children) + 1e-9, (kind, r_hull, r_lam, r_children)
        # Product: regret is exactly the sum of the factors' regrets.
        losses = rng.normal(size=(T, prod.dim))
        state, points, _ = run(prod, lambda t, z, losses=losses: losses[t], T)
        total = regret(prod, losses, points)
        bounds = np.cumsum([0] + [rm.dim for rm in prod.rms])
        parts = [
            regret(rm, losses[:, lo:hi], points[:, lo:hi])
            for rm, lo, hi in zip(prod.rms, bounds[:-1], bounds[1:], strict=True)
        ]
        assert total == pytest.approx(sum(parts), abs=1e-9)
    # Oracles agree with brute force (the hull of identical sets is the set itself).
    for _ in range(20):
        loss = rng.normal(size=hull.dim)
        assert hull.minimize(loss)[0] == pytest.approx(brute_min(vertices, loss), abs=1e-12)
        loss = rng.normal(size=prod.dim)
        vp = prod.minimize(loss)
        assert vp[1] @ loss == pytest.approx(vp[0], abs=1e-12)
        expected = (
            loss[:3].min()
            + brute_min(vertices, loss[3 : 3 + chain.num_entries])
            + brute_min(vertices, loss[3 + chain.num_entries : 3 + 2 * chain.num_entries])
            + brute_min(vertices, loss[3 + 2 * chain.num_entries : -1])
            + loss[-1]
        )
        assert vp[0] == pytest.approx(expected, abs=1e-12)


def test_convex_hull_of_different_sets():
    """Hull of two different polytopes in R^4 (two nested chains with different h)."""
    rule = RegretMatching()
    z1 = scaled_extension(simplex(2, rule), simplex(2, rule), [1.0, 0.0])
    z2 = scaled_extension(simplex(2, rule), simplex(2, rule), [0.0, 2.0], 0.5)
    hull = convex_hull(z1, z2, rule=PredictiveRMPlus())
    points = list(_vertices(z1)) + list(_vertices(z2))
    rng = np.random.default_rng(29)
    for _ in range(30):
        loss = rng.normal(size=4)
        value, point = hull.minimize(loss)
        assert value == pytest.approx(brute_min(points, loss), abs=1e-12)
    with pytest.raises(ValueError, match="same space"):
        convex_hull(simplex(2, rule), simplex(3, rule), rule=rule)


# ---------------------------------------------------------------------------- protocol
def test_every_minimizer_implements_the_protocol():
    rule = RegretMatching()
    chain = CHAINS["fig1-sf1"]
    minimizers = [
        simplex(2, rule),
        singleton(),
        scaled_extension(simplex(2, rule), simplex(2, rule), [1, 0]),
        cartesian_product(simplex(2, rule), singleton()),
        convex_hull(simplex(2, rule), simplex(2, rule), rule=rule),
        chain_minimizer(chain, rule),
        chain_minimizer(chain, BlumMansour()),
        nested_chain_minimizer(chain, rule),
        sequence_form_minimizer(games.kuhn(2).sequences(0), rule),
    ]
    for rm in minimizers:
        assert isinstance(rm, RegretMinimizer) and isinstance(rm, LinearOracle), rm
    assert not isinstance(RegretMatching(), RegretMinimizer)  # a local rule is per segment


def test_copy_state():
    state = ({"a": np.arange(3.0), "t": np.zeros(1)}, (), (np.ones(2), 3, None))
    copy = copy_state(state)
    assert copy is not state and copy[0]["a"] is not state[0]["a"]
    copy[0]["a"][0] = 7.0
    copy[2][0][1] = 5.0
    assert state[0]["a"][0] == 0.0 and state[2][0][1] == 1.0 and copy[2][1:] == (3, None)
    with pytest.raises(TypeError, match="numpy arrays, dicts and tuples"):
        copy_state({"a": [object()]})


class _NoOracle:
    """A regret minimizer over ``Δ_2`` (it delegates to a simplex) without ``minimize``."""

    def __init__(self):
        self._inner = simplex(2, "rm")
        self.dim = 2

    def init(self):
        return self._inner.init()

    def recommend(self, state):
        return self._inner.recommend(state)

    def observe(self, state, loss, *, donate=False):
        return self._inner.observe(state, loss, donate=donate)


def test_exact_minimize_of_a_composite_needs_an_oracle_in_every_part():
    with_oracle, without = simplex(2, "rm"), _NoOracle()
    loss = np.array([0.5, -1.0, 2.0, 0.25])
    # Every composite plays (its recommend/observe work) but names the part its minimize lacks.
    for composite in (
        cartesian_product(with_oracle, without),
        convex_hull(with_oracle, without, rule="rm"),
        scaled_extension(singleton(), without, np.ones(1), check=False),
    ):
        state = composite.observe(composite.init(), loss[: composite.dim])
        assert composite.recommend(state).shape == (composite.dim,)
        with pytest.raises(TypeError, match="_NoOracle has no linear minimization oracle"):
            composite.minimize(loss[: composite.dim])
    with pytest.raises(TypeError, match="_NoOracle has no linear minimization oracle"):
        regret(without, [loss[:2]], [np.array([0.5, 0.5])])
    # With oracles everywhere the exact minimum is unchanged: the product's is the sum of its parts'.
    both = cartesian_product(with_oracle, simplex(2, "rm"))
    assert both.minimize(loss)[0] == pytest.approx(-1.0 + 0.25)


def test_blum_mansour_is_named_after_its_base_rule():
    assert BlumMansour().name == "bm(rm)" and BlumMansour(Hedge()).name == f"bm({Hedge().name})"
