"""Sphinx configuration of the documentation site.

It lives outside ``docs/`` so that ``docs/`` holds pages and results only (no code); build with::

    sphinx-build -c .sphinx -W --keep-going -n -b html docs build/docs

``-W -n`` makes every warning and every unresolved cross-reference an error (strict mode, as CI
runs it).  Pages are Markdown (MyST); the API reference is generated from the NumPy-style
docstrings (autodoc + napoleon) of every module under ``efce``.
"""

from __future__ import annotations

import importlib
import inspect
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
        r"(numpy|np|scipy|sp|collections|typing|types|pathlib|os|io|argparse|contextlib|threading|"
        r"concurrent|enum|dataclasses|numbers|matplotlib|numba|distributed|dask|cvxpy|highspy|ortools|"
        r"nx|networkx|Axes|Figure|SubFigure)(\..*)?",
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


_REPOSITORY_FOLDERS = ("games", "polytopes", "solvers", "baselines", "experiments")


def _import_object(dotted: str):
    """The object a dotted name reaches by importing its longest importable module prefix and
    following attributes; None when it reaches nothing."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        try:
            for attribute in parts[split:]:
                obj = getattr(obj, attribute)
        except AttributeError:
            return None
        return obj
    return None


def _defining_name(obj) -> str | None:
    """Where ``obj`` is documented: its module and qualified name (a module: its name)."""
    if inspect.ismodule(obj):
        return obj.__name__
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    return f"{module}.{qualname}"


def _resolve_toolkit_names(app, env, node, contnode):
    """Resolve the names docstrings give the toolkit's objects when Sphinx's own lookup fails:

    * a repository path: ``solvers.x.y`` is ``efce.solvers.x.y`` (also ``games.``,
      ``polytopes.``, ``baselines.``, ``experiments.``);
    * a name as the module that writes it sees it (``ModelTooLarge`` in a module that imports
      it, ``efce.solve``, ``polytopes.Chain``: re-exports) — imported, then looked up where
      the object is defined and documented.

    A name that reaches no documented object stays unresolved (an error in strict mode)."""
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "").lstrip("~.")
    if target.split(".")[0] in _REPOSITORY_FOLDERS:
        target = "efce." + target
    module, cls = node.get("py:module"), node.get("py:class")
    candidates = [target]
    if module:
        if cls:
            candidates.append(f"{module}.{cls}.{target}")
        candidates.append(f"{module}.{target}")
    domain = env.get_domain("py")
    for candidate in candidates:
        names = [candidate]
        defining = _defining_name(_import_object(candidate)) if candidate.startswith("efce") else None
        if defining and defining != candidate:
            names.append(defining)
        for name in names:
            new = node.deepcopy()
            new["reftarget"] = name
            resolved = domain.resolve_xref(
                env, node["refdoc"], app.builder, node["reftype"], name, new, contnode
            )
            if resolved is not None:
                return resolved
    return None


def _public_bases(app, name, obj, options, bases):
    """Show a class's public ancestors, not the private helper classes between (a rule derived
    from ``local._CompiledRule`` shows ``LocalRule``): private classes are not documented."""
    public = []
    for base in bases:
        todo = [base]
        while todo:
            current = todo.pop(0)
            if getattr(current, "__name__", "").startswith("_") and getattr(
                current, "__module__", ""
            ).startswith("efce"):
                todo.extend(b for b in current.__bases__ if b is not object)
            elif current not in public:
                public.append(current)
    bases[:] = public


def setup(app):
    app.connect("missing-reference", _resolve_toolkit_names)
    app.connect("autodoc-process-bases", _public_bases)
