"""efce-toolkit: correlation in extensive-form games.

The library's entry points, one per job (the ``efce`` command line is a thin layer over them):

* :func:`solve` — solve a game with any method (regret minimization on the EFCE saddle point,
  CFR/CFR+, ICFR, CFR-S, the EFCE LPs, the subgradient baseline);
* :func:`compare` — run several methods on one game, each in its own process, and write traces,
  a summary and a convergence plot;
* :func:`sweep` — run a grid of solves (games × methods × seeds × options) on Dask distributed,
  resumable, aggregated into a table and plots.

``python -m efce`` runs the command line.  The building blocks live in the subpackages
:mod:`efce.games`, :mod:`efce.polytopes`, :mod:`efce.solvers`, :mod:`efce.baselines` and
:mod:`efce.experiments` (the repository's top-level folders of those names); errors derive from
the one root :class:`efce.errors.EFCEError` (module :mod:`efce.errors`).

The entries are imported on first use, so that ``import efce.games`` does not load the
experiment runner and its dependencies.
"""

_ENTRIES = {
    "solve": "efce.experiments.solve",
    "METHODS": "efce.experiments.solve",
    "OPTIONS": "efce.experiments.solve",
    "OptionError": "efce.experiments.solve",
    "compare": "efce.experiments.compare",
    "sweep": "efce.experiments.sweep",
    "SweepError": "efce.experiments.sweep",
    "EFCEError": "efce.errors",
    "GameError": "efce.errors",
}

__all__ = list(_ENTRIES)


def __getattr__(name: str):
    if name not in _ENTRIES:
        raise AttributeError(f"module 'efce' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_ENTRIES[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + __all__)
