"""The solution concepts: which correlated equilibrium a method computes.

All three are defined by *trigger agents* (Celli, Marchesi, Farina, Gatti 2020, section 3;
Farina, Bianchi, Sandholm 2020): a mediator draws a joint plan and reveals recommendations; a
player may deviate, and a distribution is an equilibrium when no trigger agent gains.  They
differ in when the deviating agent decides, i.e. in what it knows when it does:

* ``efce`` — extensive-form correlated equilibrium (von Stengel & Forges 2008): trigger ``(I, a)``
  fires when the player reaches ``I`` *and is recommended* ``a``; it then plays anything from
  ``I`` on;
* ``efcce`` — extensive-form coarse correlated equilibrium: trigger ``I`` fires when the player
  reaches ``I``, *before* the recommendation at ``I`` is revealed;
* ``nfcce`` — normal-form coarse correlated equilibrium (Moulin & Vial 1978): the player decides
  at the root, before any recommendation, whether to follow.

Each agent of a coarser concept knows less, so it can gain less: EFCE ⊆ EFCCE ⊆ NFCCE, and the
optimal welfare over each set grows along that order.  Gaps are reported in raw payoff units: the
largest gain of any of the concept's trigger agents, clipped below at 0.
"""

from __future__ import annotations

#: Concept name → when its trigger agents deviate (the ``--concept`` choices, in order of
#: inclusion of their equilibrium sets).
CONCEPTS = {
    "efce": "a trigger (I, a) fires on reaching infoset I and being recommended a",
    "efcce": "a trigger I fires on reaching infoset I, before its recommendation is revealed",
    "nfcce": "each player commits at the root, before any recommendation",
}

#: The concept a method computes when none is given.
DEFAULT_CONCEPT = "efce"


def gap_key(concept: str) -> str:
    """The result key of ``concept``'s gap: ``efce_gap``, ``efcce_gap`` or ``nfcce_gap``.

    Raises
    ------
    ValueError
        ``concept`` is not one of :data:`CONCEPTS`.
    """
    check_concept(concept)
    return f"{concept}_gap"


def check_concept(concept: str) -> str:
    """``concept`` itself when it is one of :data:`CONCEPTS`.

    Raises
    ------
    ValueError
        Naming the valid concepts.
    """
    if concept not in CONCEPTS:
        raise ValueError(f"concept must be one of {', '.join(CONCEPTS)}, got {concept!r}")
    return concept
