"""Sphinx configuration of the documentation site.

It lives outside ``docs/`` so that ``docs/`` holds pages and results only (no code); build with::

    sphinx-build -c .sphinx -W --keep-going -n -b html docs build/docs

``-W -n`` makes every warning and every unresolved cross-reference an error (strict mode, as CI
runs it).  Pages are Markdown (MyST); the API reference is generated from the NumPy-style
docstrings (autodoc + napoleon) of every module under ``efce``.
"""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version

project = "efce-toolkit"
author = "efce-toolkit contributors"
copyright = "2026, efce-toolkit contributors"
try:
    release = installed_version("efce-toolkit")
except PackageNotFoundError:  # building from a checkout that is not installed
    release = "unknown"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx.ext.mathjax",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
templates_path = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "_templates")]
# Tables a sweep writes (results/*/table.md) are data the pages link to, not pages.
exclude_patterns = ["results/*/table.md"]

# Markdown pages: `$…$` math, headings as link targets, GitHub-style fenced blocks.
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3
# Relative links to results files (CSV, JSON, PNG) that are not pages.
suppress_warnings = ["myst.xref_missing"]

# API reference: one page per module, generated at build time from the docstrings.
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
# Type hints shown in the signatures; the names of other libraries in them are not checked (the
# build is offline: no inventories of numpy or the standard library).
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
# numpydoc renders "Parameters", "Returns", "Attributes"... as written; their type words stay text
# ("int64[N]", "LocalRule or str"): the explicit roles (:func:, :class:, ...) are what is checked.
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()


html_theme = "pydata_sphinx_theme"
html_title = "efce-toolkit"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}

# Nitpicky mode (-n) checks every cross-reference.  Docstrings name the toolkit's objects by their
# path in the repository (``solvers.regret.algebra.chain_minimizer``: the folder ``solvers/`` is
# the package ``efce.solvers``); such a name resolves to ``efce.`` + the name.  Anything else that
# does not resolve is an error.
nitpick_ignore_regex = [
    (
        "py:(class|obj|data)",
        r"(numpy|np|scipy|sp|collections|typing|types|pathlib|os|io|argparse|contextlib|"
        r"concurrent|enum|dataclasses|numbers|matplotlib|numba|distributed|dask|cvxpy|highspy|ortools|"
        r"nx|networkx|Axes|Figure)(\..*)?",
    ),
    # Annotations autodoc shows as text it could not evaluate (``'dict[str, Any]'``): type
    # expressions, not references anyone wrote.
    ("py:class", r".*[\[\]'].*"),
    (
        "py:(class|obj)",
        r"(int|float|bool|str|bytes|complex|object|type|list|dict|tuple|set|frozenset|None|"
        r"Ellipsis|Exception|ValueError|TypeError|KeyError|RuntimeError|OSError|MemoryError|"
        r"KeyboardInterrupt|BaseException|Any|Callable|Iterator|Iterable|Sequence|Mapping|NamedTuple)",
    ),
]


def _resolve_repository_names(app, env, node, contnode):
    """``solvers.x.y`` → ``efce.solvers.x.y`` (and ``games.``, ``polytopes.``, ``baselines.``,
    ``experiments.``), the way the docstrings name the toolkit's own objects."""
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or target.split(".")[0] not in (
        "games",
        "polytopes",
        "solvers",
        "baselines",
        "experiments",
    ):
        return None
    domain = env.get_domain("py")
    node = node.deepcopy()
    node["reftarget"] = "efce." + target
    return domain.resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], node["reftarget"], node, contnode
    )


def setup(app):
    app.connect("missing-reference", _resolve_repository_names)
