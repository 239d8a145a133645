"""Local regret minimizers by name: the one registry of rule names, and the one place that turns
a name into a rule.

The ``efce`` command line (``--local``), :func:`efce.solve` (``local=``) and every solver that
takes ``rule="..."`` read :data:`RULES`; adding a rule is one line here (its class lives in
:mod:`efce.solvers.regret.local`).  This module imports nothing heavy, so option checking can
list the names without loading the compiled kernels.

>>> RULE_NAMES
('rm', 'rm+', 'hedge', 'prm+', 'dcfr')
>>> make_rule("rm+")
RegretMatching(plus=True, alpha=None, beta=None)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .local import LocalRule

#: Rule name → (class in :mod:`efce.solvers.regret.local`, constructor arguments).
RULES: dict[str, tuple[str, dict[str, Any]]] = {
    "rm": ("RegretMatching", {}),
    "rm+": ("RegretMatching", {"plus": True}),
    "hedge": ("Hedge", {}),
    "prm+": ("PredictiveRMPlus", {}),
    "dcfr": ("RegretMatching", {"alpha": 1.5, "beta": 0.0}),
}

#: The valid names, in the registry's order.
RULE_NAMES: tuple[str, ...] = tuple(RULES)


def make_rule(name: str) -> LocalRule:
    """A fresh local rule by name.

    Parameters
    ----------
    name : str
        One of :data:`RULE_NAMES`: ``rm``, ``rm+``, ``hedge``, ``prm+`` or ``dcfr``.

    Returns
    -------
    LocalRule

    Raises
    ------
    ValueError
        ``name`` is not in the registry (the message lists the valid names).
    """
    if name not in RULES:
        raise ValueError(f"unknown local regret minimizer '{name}'; valid: {', '.join(RULES)}")
    from . import local

    cls, kwargs = RULES[name]
    return getattr(local, cls)(**kwargs)


def as_rule(rule: LocalRule | str) -> LocalRule:
    """``rule`` itself, or the rule of that name (:func:`make_rule`).

    Parameters
    ----------
    rule : LocalRule or str

    Returns
    -------
    LocalRule

    Raises
    ------
    TypeError
        ``rule`` is neither a :class:`~efce.solvers.regret.local.LocalRule` nor a name.
    """
    if isinstance(rule, str):
        return make_rule(rule)
    from .local import LocalRule

    if not isinstance(rule, LocalRule):
        raise TypeError(
            f"expected a solvers.regret.local.LocalRule or a rule name, got {type(rule).__name__}"
        )
    return rule
