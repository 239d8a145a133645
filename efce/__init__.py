"""efce-toolkit: correlation in extensive-form games.

The library's entry points, one per job (the ``efce`` command line is a thin layer over them):

* :func:`solve` — solve a game with any method (regret minimization on the EFCE saddle point,
  CFR/CFR+, ICFR, CFR-S, the EFCE LPs, the subgradient baseline);
* :func:`compare` — run several methods on one game, each in its own process, and write traces,
  a summary and a convergence plot;
* :func:`sweep` — run a grid of solves (games × methods × seeds × options) on Dask distributed,
  resumable, aggregated into a table and plots.

``python -m efce`` runs the command line.  The building blocks live in the packages ``games``,
``polytopes``, ``solvers``, ``baselines`` and ``experiments``.
"""

from efce.experiments.compare import compare
from efce.experiments.solve import METHODS, OPTIONS, OptionError, solve
from efce.experiments.sweep import SweepError, sweep

__all__ = ["solve", "compare", "sweep", "METHODS", "OPTIONS", "OptionError", "SweepError"]
