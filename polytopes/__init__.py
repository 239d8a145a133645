"""Polytopes as chains of scaled extensions (Farina, Ling, Fang, Sandholm 2019).

* :class:`~efce.polytopes.chain.Chain` — ``{1} ◁h1 X1 ◁h2 … ◁hn Xn`` as flat arrays;
* :func:`~efce.polytopes.sequence_form` — one player's sequence-form polytope (section 3.1);
* :func:`~efce.polytopes.decompose.correlation_plan` — Ξ by ``DECOMPOSE`` (section 4.3);
* :func:`~efce.polytopes.vsf.vsf_constraints` — the explicit system of Definition 3 (shared with
  the LP baselines);
* :func:`~efce.polytopes.verify` — checks (a)–(d) that a chain describes exactly Ξ;
* :mod:`polytopes.render` — text, fill-in grid and DAG views for teaching.
"""

from efce.errors import ChainError

from .chain import SIMPLEX, SINGLETON, Chain
from .decompose import check_decomposable, correlation_plan
from .sequence_form import sequence_form
from .verification import VerificationReport, verify
from .vsf import VSFConstraints, vsf_constraints

__all__ = [
    "SIMPLEX",
    "SINGLETON",
    "Chain",
    "ChainError",
    "VSFConstraints",
    "VerificationReport",
    "check_decomposable",
    "correlation_plan",
    "sequence_form",
    "verify",
    "vsf_constraints",
]
