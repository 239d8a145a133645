"""The local rules (solvers/regret/local.py) and their registry (solvers/regret/registry.py)."""

import numpy as np
import pytest

from efce.solvers.regret import local
from efce.solvers.regret.local import LocalRule, Segments
from efce.solvers.regret.registry import RULE_NAMES, RULES, as_rule, make_rule


def test_one_registry_names_every_rule_and_the_cli_uses_it():
    from efce.experiments.solve import OPTIONS

    assert RULE_NAMES == tuple(RULES) == ("rm", "rm+", "hedge", "prm+", "dcfr")
    assert tuple(OPTIONS["local"].choices) == RULE_NAMES
    assert local.make_rule is make_rule and local.as_rule is as_rule  # one place


@pytest.mark.parametrize("name", RULE_NAMES)
def test_every_rule_recommends_distributions_and_moves_away_from_loss(name):
    rule = make_rule(name)
    assert isinstance(rule, LocalRule) and rule.name.startswith(name.replace("dcfr", "rm"))
    seg = Segments.from_sizes([2, 3, 1])
    state = rule.init(seg)
    x = rule.recommend(state, seg)
    assert np.all(x >= 0)
    assert np.allclose(np.add.reduceat(x, seg.ptr[:-1]), 1.0)
    loss = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 5.0])
    for _ in range(3):
        rule.observe(state, loss, seg)
    y = rule.recommend(state, seg)
    assert np.allclose(np.add.reduceat(y, seg.ptr[:-1]), 1.0)
    assert y[0] < y[1] and y[2] > y[3] and y[5] == pytest.approx(1.0)


def test_make_rule_gives_fresh_rules_and_refuses_unknown_names():
    assert make_rule("rm+") == make_rule("rm+") and make_rule("rm+") is not make_rule("rm+")
    with pytest.raises(ValueError, match="unknown local regret minimizer 'rmx'; valid: rm, rm\\+"):
        make_rule("rmx")
    rule = make_rule("hedge")
    assert as_rule(rule) is rule
    with pytest.raises(TypeError, match="LocalRule or a rule name"):
        as_rule(3)
