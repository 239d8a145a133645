"""The compiled chain engine against the object-level algebra: identical iterates."""

import numpy as np
import pytest

import games
from polytopes import correlation_plan, sequence_form
from polytopes.triggers import trigger_deviations
from solvers import algebra
from solvers.engine import ChainEngine, chain_minimum
from solvers.local import Hedge, PredictiveRMPlus, RegretMatching

RULES = {"rm": RegretMatching(), "rm+": RegretMatching(plus=True), "hedge": Hedge(eta=0.7),
         "prm+": PredictiveRMPlus(), "dcfr": RegretMatching(alpha=1.5, beta=0.0)}


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


@pytest.mark.parametrize("rule_name", sorted(RULES))
@pytest.mark.parametrize("chain_name", sorted(CHAINS))
def test_engine_and_algebra_give_identical_iterates(chain_name, rule_name):
    chain, rule = CHAINS[chain_name], RULES[rule_name]
    engine = ChainEngine(chain, rule)
    reference = algebra.chain_minimizer(chain, rule)
    state = reference.init()
    rng = np.random.default_rng(11)
    for t in range(60):
        x = engine.recommend()
        z = reference.recommend(state)
        np.testing.assert_allclose(x, z, rtol=0, atol=1e-12)
        # Half random losses, half adversarial ones that punish the current point.
        loss = rng.normal(size=chain.num_entries) if t % 2 else x + 0.1 * rng.normal(size=chain.num_entries)
        engine.observe(loss)
        state = reference.observe(state, loss)


@pytest.mark.parametrize("chain_name", sorted(CHAINS))
def test_chain_minimum_matches_the_algebra_oracle(chain_name):
    chain = CHAINS[chain_name]
    reference = algebra.chain_minimizer(chain, RegretMatching())
    rng = np.random.default_rng(5)
    for _ in range(5):
        loss = rng.normal(size=chain.num_entries)
        assert chain_minimum(chain, loss) == pytest.approx(reference.minimize(loss)[0], abs=1e-12)


def test_engine_iterates_are_feasible_correlation_plans():
    from polytopes import vsf_constraints
    game = games.sheriff(max_bribe=2, max_items=1, rounds=2)
    chain = correlation_plan(game)
    constraints = vsf_constraints(game)
    engine = ChainEngine(chain, RegretMatching(plus=True))
    rng = np.random.default_rng(0)
    for _ in range(30):
        x = engine.recommend()
        assert constraints.max_violation(chain.to_natural(x, chain.num_entries)) <= 1e-12
        engine.observe(rng.normal(size=chain.num_entries))


def test_engine_refuses_unknown_rules():
    class Custom(RegretMatching.__mro__[1]):  # a LocalRule without a compiled kernel
        pass
    with pytest.raises(TypeError, match="no kernel"):
        ChainEngine(CHAINS["fig2 Ξ"], Custom())
