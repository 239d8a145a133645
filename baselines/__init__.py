"""Baselines of section 5 of Farina, Ling, Fang, Sandholm 2019 ("Efficient Regret Minimization
Algorithm for Extensive-Form Correlated Equilibrium", NeurIPS).

* :func:`build_efce_lp` — the EFCE linear program of von Stengel and Forges (2008): ξ over the
  relevant sequence pairs constrained by Definition 3 (:func:`polytopes.vsf_constraints`) plus
  the trigger-agent incentive constraints of the saddle-point formulation (section 2.1; Farina
  et al. 2019c), the inner best response dualized by backward induction.  One sparse model,
  size estimated and checked against a memory budget before it is built (:class:`ModelTooLarge`).
* :func:`solve_lp_highs` — that LP solved by HiGHS through highspy (the paper used Gurobi's
  barrier method; it solved the small Battleship instance only, the medium and large ones ran
  out of memory).
* :func:`solve_lp_pdlp` — the same model solved by OR-Tools PDLP (first-order primal-dual hybrid
  gradient; no factorization), in stages of tightening tolerance for an anytime trace.
* :func:`solve_lp_cvxpy` — the same matrices as a cvxpy problem (HIGHS, CLARABEL, ...).
* :func:`solve_lp_colgen` — the optimal EFCE, EFCCE or NFCCE of any game (n players, chance) by
  column generation: a master LP over joint reduced plans, pricing by best responses and a MILP,
  a certified interval around the optimum (not a baseline of the paper: the exact side where the
  LPs above do not apply).
* :func:`solve_subgradient` — the subgradient method of Farina et al. (2019c) with the
  incremental constraint projection of Wang and Bertsekas (2013); infeasible iterates, step size
  to tune (1e-3 small, 1e-6 medium Battleship in the paper).

All return :class:`solvers.result.SolveResult`, with ``point`` = ξ in relevant-pair order (the
column generation: the distribution as a device).
"""

from efce.errors import ModelTooLarge  # documented here before efce.errors held every class

from .efce_lp import EFCELP, ModelSize, build_efce_lp, estimate_efce_lp
from .lp_colgen import solve_lp_colgen
from .lp_cvxpy import solve_lp_cvxpy
from .lp_highs import solve_lp_highs
from .lp_pdlp import estimate_pdlp_bytes, solve_lp_pdlp
from .subgradient import solve_subgradient

__all__ = [
    "EFCELP",
    "ModelSize",
    "ModelTooLarge",
    "build_efce_lp",
    "estimate_efce_lp",
    "estimate_pdlp_bytes",
    "solve_lp_colgen",
    "solve_lp_cvxpy",
    "solve_lp_highs",
    "solve_lp_pdlp",
    "solve_subgradient",
]
