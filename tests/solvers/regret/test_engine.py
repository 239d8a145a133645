"""The chain minimizer's backends and ChainEngine against the object-level algebra (identical
iterates), the compiled rules against textbook formulas, and rules/minimizers in the solvers."""

import numpy as np
import pytest

from efce import games
from efce.polytopes import correlation_plan, sequence_form
from efce.polytopes.triggers import trigger_deviations
from efce.solvers.methods.cfr import solve_cfr
from efce.solvers.methods.efce import build_efce_model, solve_efce
from efce.solvers.regret import algebra
from efce.solvers.regret.engine import ChainEngine, chain_minimum, minimizer_factory
from efce.solvers.regret.local import Hedge, PredictiveRMPlus, RegretMatching, Segments

from .rules import DecayedRegretMatching, every_rule, reference_step

RULES = {
    "rm": RegretMatching(),
    "rm+": RegretMatching(plus=True),
    "hedge": Hedge(eta=0.7),
    "prm+": PredictiveRMPlus(),
    "dcfr": RegretMatching(alpha=1.5, beta=0.0),
}


def _chains():
    fig1, fig2 = games.farina_fig1(), games.farina_fig2()
    sheriff = games.sheriff(max_bribe=1, max_items=1, rounds=2)
    return {
        "fig2 Ξ": correlation_plan(fig2),
        "fig1 sequence form": sequence_form(fig1.sequences(0)),
        "sheriff Ξ": correlation_plan(sheriff),
        "fig1 triggers": trigger_deviations(fig1).chain,
        "sheriff triggers": trigger_deviations(sheriff, welfare=True).chain,
    }


CHAINS = _chains()


def _assert_engine_tracks(engine, minimizer, *, rounds, seed, atol):
    """The engine and the pure ``minimizer`` (its own state) recommend the same points to ``atol``
    while both observe the same random losses."""
    state = minimizer.init()
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        np.testing.assert_allclose(engine.recommend(), minimizer.recommend(state), rtol=0, atol=atol)
        loss = rng.normal(size=engine.chain.num_entries)
        engine.observe(loss)
        state = minimizer.observe(state, loss)


@pytest.mark.parametrize("rule_name", sorted(RULES))
@pytest.mark.parametrize("chain_name", sorted(CHAINS))
def test_engine_and_algebra_give_identical_iterates(chain_name, rule_name):
    """ChainEngine (compiled backend, state donated) against the literal nesting of Algorithm 1,
    on chains whose steps are in level order (Ξ, sequence form) and not (triggers)."""
    chain, rule = CHAINS[chain_name], RULES[rule_name]
    engine = ChainEngine(chain, rule)
    assert engine.minimizer.compiled
    reference = algebra.nested_chain_minimizer(chain, rule)
    state = reference.init()
    rng = np.random.default_rng(11)
    for t in range(60):
        x = engine.recommend()
        z = reference.recommend(state)
        np.testing.assert_allclose(x, z, rtol=0, atol=1e-12)
        # Half random losses, half adversarial ones that punish the current point.
        loss = rng.normal(size=chain.num_entries) if t % 2 else x + 0.1 * rng.normal(size=chain.num_entries)
        state = reference.observe(state, loss)
        engine.observe(loss, overwrite=bool(t % 3 == 0))  # may overwrite loss: last


@pytest.mark.parametrize("chain_name", sorted(CHAINS))
def test_chain_minimum_matches_the_algebra_oracle(chain_name):
    chain = CHAINS[chain_name]
    reference = algebra.chain_minimizer(chain, RegretMatching())
    rng = np.random.default_rng(5)
    for _ in range(5):
        loss = rng.normal(size=chain.num_entries)
        assert chain_minimum(chain, loss) == pytest.approx(reference.minimize(loss)[0], abs=1e-12)


def test_engine_iterates_are_feasible_correlation_plans():
    from efce.polytopes import vsf_constraints

    game = games.sheriff(max_bribe=2, max_items=1, rounds=2)
    chain = correlation_plan(game)
    constraints = vsf_constraints(game)
    engine = ChainEngine(chain, RegretMatching(plus=True))
    rng = np.random.default_rng(0)
    for _ in range(30):
        x = engine.recommend()
        assert constraints.max_violation(chain.to_natural(x, chain.num_entries)) <= 1e-12
        engine.observe(rng.normal(size=chain.num_entries))


def test_engine_runs_rules_without_kernel():
    """A rule without compiled kernel (user-defined, Blum–Mansour, a subclass redefining the
    arithmetic) runs on the numpy path of the chain minimizer instead of failing."""
    chain = CHAINS["sheriff Ξ"]
    for name in ("user", "user-subclass", "blum-mansour"):
        rule = every_rule()[name]
        engine = ChainEngine(chain, rule)
        assert not engine.minimizer.compiled
        _assert_engine_tracks(
            engine, algebra.nested_chain_minimizer(chain, rule), rounds=30, seed=2, atol=1e-12
        )


@pytest.mark.parametrize("rule_name", ["rm", "rm+", "dcfr", "hedge", "prm+"])
def test_compiled_rules_equal_textbook_formulas(rule_name):
    """The one definition of every built-in rule (efce.solvers.backends.cpu.rules) against plain per-simplex
    formulas, over many random and adversarial rounds on segments of sizes 1 to 6."""
    rule = every_rule()[rule_name]
    seg = Segments.from_sizes([3, 1, 2, 6, 4, 2, 5])
    state, reference = rule.init(seg), rule.init(seg)
    rng = np.random.default_rng(17)
    for t in range(500):
        x = rule.recommend(state, seg)
        np.testing.assert_allclose(x, reference_step(rule, reference, None, seg), rtol=0, atol=1e-12)
        loss = rng.normal(size=seg.total) * (5.0 if t % 11 == 0 else 1.0)
        if t % 3 == 0:
            loss = x + 0.1 * loss  # punish the current point
        rule.observe(state, loss, seg)
        reference_step(rule, reference, loss, seg)
        for key in state:
            np.testing.assert_allclose(state[key], reference[key], rtol=1e-12, atol=1e-12)


def test_observe_overwrite_and_out():
    chain = CHAINS["sheriff Ξ"]
    kept, overwritten = ChainEngine(chain, "rm+"), ChainEngine(chain, "rm+")
    rng = np.random.default_rng(4)
    out = np.empty(chain.num_entries)
    for _ in range(10):
        x = kept.recommend()
        assert overwritten.recommend(out=out) is out
        np.testing.assert_array_equal(out, x)
        loss = rng.normal(size=chain.num_entries)
        copy = loss.copy()
        kept.observe(loss)
        np.testing.assert_array_equal(loss, copy)  # overwrite=False: untouched
        overwritten.observe(loss, overwrite=True)  # the buffer is work space
        assert not np.array_equal(loss, copy)
    assert kept.iterations == overwritten.iterations == 10
    with pytest.raises(ValueError, match="expected"):
        kept.observe(np.zeros(3))


@pytest.mark.parametrize("kind", ["compiled", "compiled, parallel passes", "numpy", "composite"])
def test_recommend_adds_the_point_into_a_running_sum_exactly(kind):
    # recommend(out, accumulate=(total, w)) must leave total exactly as total += w * point would.
    from efce.solvers.backends.cpu import CPUBackend

    chain = CHAINS["sheriff Ξ"]
    backend = CPUBackend(parallel_min_size=1) if kind == "compiled, parallel passes" else None

    def make() -> ChainEngine:
        if kind == "numpy":
            return ChainEngine(chain, minimizer=algebra.chain_minimizer(chain, "rm+", backend="numpy"))
        if kind == "composite":
            hull = algebra.convex_hull(
                algebra.chain_minimizer(chain, "rm+"), algebra.chain_minimizer(chain, "hedge"), rule="rm"
            )
            return ChainEngine(chain, minimizer=hull)
        return ChainEngine(chain, "prm+", backend=backend)

    fused, plain = make(), make()
    if kind == "compiled, parallel passes":
        assert fused.minimizer._passes.parallel
    rng = np.random.default_rng(8)
    n = chain.num_entries
    total, expected = rng.random(n), None
    expected = total.copy()
    out, point = np.empty(n), np.empty(n)
    for t in range(1, 8):
        w = float(t) ** 2
        assert fused.recommend(out=out, accumulate=(total, w)) is out
        plain.recommend(out=point)
        expected += w * point
        np.testing.assert_array_equal(out, point)
        np.testing.assert_array_equal(total, expected)
        loss = rng.normal(size=n)
        fused.observe(loss)
        plain.observe(loss)
    with pytest.raises(ValueError, match="accumulate"):
        fused.recommend(out=out, accumulate=(np.zeros(3), 1.0))


def test_engine_of_a_composite_minimizer():
    """ChainEngine drives any RegretMinimizer of the chain's dimension, e.g. the convex hull of
    two chain minimizers with different rules."""
    chain = CHAINS["fig2 Ξ"]
    hull = algebra.convex_hull(
        algebra.chain_minimizer(chain, "rm+"),
        algebra.chain_minimizer(chain, DecayedRegretMatching()),
        rule="hedge",
    )
    _assert_engine_tracks(ChainEngine(chain, minimizer=hull), hull, rounds=20, seed=6, atol=1e-15)
    with pytest.raises(ValueError, match="exactly one"):
        ChainEngine(chain)
    with pytest.raises(ValueError, match="R\\^3"):
        ChainEngine(chain, minimizer=algebra.simplex(3, "rm"))
    with pytest.raises(TypeError, match="RegretMinimizer"):
        ChainEngine(chain, minimizer=object())


def test_minimizer_factory_validates_options():
    chain = CHAINS["fig2 Ξ"]
    default = RegretMatching(plus=True)
    assert minimizer_factory(None, None, default)(chain).rule is default
    assert minimizer_factory("hedge", None, default)(chain).rule.name == "hedge"
    custom = lambda c: algebra.chain_minimizer(c, "prm+")  # noqa: E731
    assert minimizer_factory(None, custom, default) is custom
    with pytest.raises(ValueError, match="not both"):
        minimizer_factory("rm", custom, default)
    with pytest.raises(ValueError, match="unknown local regret minimizer"):
        minimizer_factory("rmm", None, default)
    with pytest.raises(TypeError, match="chain -> regret minimizer"):
        minimizer_factory(None, algebra.chain_minimizer(chain, "rm"), default)
    with pytest.raises(TypeError, match="LocalRule"):
        minimizer_factory(RegretMatching, None, default)


def _reference_saddle_point(model, make, iterations):
    """solve_efce's dynamics (alternating updates, linear averaging) written with pure
    minimizers of the algebra: the average plan in Ξ's entry order."""
    xi_rm, y_rm = make(model.xi_chain), make(model.triggers.chain)
    sx, sy = xi_rm.init(), y_rm.init()
    y = y_rm.recommend(sy)
    total, weight = np.zeros(xi_rm.dim), 0.0
    for t in range(1, iterations + 1):
        sx = xi_rm.observe(sx, model.operator @ y)
        x = xi_rm.recommend(sx)
        sy = y_rm.observe(sy, -model.operator.transpose_matmul(x))
        y = y_rm.recommend(sy)
        total += t * x
        weight += t
    return total / weight


@pytest.mark.parametrize(
    "game", [games.farina_fig2(), games.sheriff(max_bribe=1, max_items=1, rounds=1)], ids=["fig2", "sheriff"]
)
def test_user_rule_in_the_efce_solver_matches_the_object_algebra(game):
    """A local rule the engine does not know, handed to solve_efce, gives the iterates of the
    literal nesting of Algorithm 1 (compared through the average plan after 1, 2 and 40
    iterations, which determines every iterate)."""
    model = build_efce_model(game)
    assert max(model.xi_chain.num_steps, model.triggers.chain.num_steps) <= algebra.MAX_NESTED_STEPS
    rule = DecayedRegretMatching()
    for iterations in (1, 2, 40):
        result = solve_efce(game, iterations=iterations, target_gap=None, rule=rule, model=model)
        expected = _reference_saddle_point(
            model, lambda chain: algebra.nested_chain_minimizer(chain, rule), iterations
        )
        got = model.xi_chain.from_natural(result.point)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    # A composite minimizer through minimizer=: the convex hull of two chain minimizers of the
    # same chain (with different rules) is a regret minimizer over it, and the solver runs it.
    made = []

    def composite(chain):
        made.append(chain.num_entries)
        return algebra.convex_hull(
            algebra.chain_minimizer(chain, "rm+"), algebra.chain_minimizer(chain, rule), rule="rm+"
        )

    result = solve_efce(game, iterations=40, target_gap=None, minimizer=composite, model=model)
    assert made == [model.xi_chain.num_entries, model.triggers.chain.num_entries]
    expected = _reference_saddle_point(model, composite, 40)
    np.testing.assert_allclose(model.xi_chain.from_natural(result.point), expected, rtol=0, atol=1e-12)
    assert result.info["feasible_iterates"]


def test_solvers_validate_minimizer_options_before_building():
    game = games.sheriff(max_bribe=1, max_items=1, rounds=1)
    with pytest.raises(ValueError, match="not both"):
        solve_efce(game, rule="rm", minimizer=lambda c: algebra.chain_minimizer(c, "rm"))
    with pytest.raises(ValueError, match="not both"):
        solve_cfr(games.kuhn(2), rule="rm", minimizer=lambda c: algebra.chain_minimizer(c, "rm"))


def test_cfr_with_a_user_rule_and_a_minimizer():
    """solve_cfr with rule=RM equals minimizer=(numpy chain minimizer with RM) exactly in
    value, and a user rule runs to a small exploitability."""
    kuhn = games.kuhn(2)
    a = solve_cfr(kuhn, iterations=200, variant="cfr", rule=RegretMatching())
    b = solve_cfr(
        kuhn,
        iterations=200,
        variant="cfr",
        minimizer=lambda c: algebra.chain_minimizer(c, RegretMatching(), backend="numpy"),
    )
    for pa, pb in zip(a.point, b.point, strict=True):
        np.testing.assert_allclose(pa, pb, rtol=0, atol=1e-12)
    user = solve_cfr(kuhn, iterations=300, variant="cfr+", rule=DecayedRegretMatching(gamma=0.99, floor=0.0))
    assert user.info["exploitability"] < 0.05
