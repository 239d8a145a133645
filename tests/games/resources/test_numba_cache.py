"""Importing the kernels works when numba has no writable cache location (read-only install,
unwritable home): caching falls back to a temporary folder, or off."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT


def _read_only_copy(tmp_path: Path) -> tuple[Path, dict]:
    """The source packages copied with every ``__pycache__`` a plain file (so no folder can be
    made there even by root), and every cache location numba knows pointed below a file."""
    tree = tmp_path / "src"
    for package in ("games", "polytopes", "solvers", "baselines"):
        shutil.copytree(ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__"))
        (tree / package / "__pycache__").write_text("")
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    env = dict(
        os.environ,
        PYTHONPATH=str(tree),
        PYTHONDONTWRITEBYTECODE="1",
        NUMBA_CACHE_DIR=str(blocker / "numba"),
        HOME=str(blocker / "home"),
        XDG_CACHE_HOME=str(blocker / "xdg"),
    )
    return tree, env


def _run(code: str, tree: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True, timeout=120
    )


def test_no_writable_cache_location_falls_back_to_a_temporary_folder(tmp_path):
    tree, env = _read_only_copy(tmp_path)
    # What numba itself does here: refuses to import the kernels.
    bare = _run(
        "import numba\n@numba.njit(cache=True)\ndef f(x):\n    return x\n", tree, dict(env, PYTHONPATH="")
    )
    assert "cannot cache function" in bare.stderr
    done = _run(
        "import games, solvers.regret.engine, os\n"
        "assert games.__file__.startswith(os.getcwd()), games.__file__\n"
        "print(games.resources.numba_cache.mode, os.environ['NUMBA_CACHE_DIR'])\n"
        "print(games.count_relevant_pairs(games.kuhn()))\n",
        tree,
        env,
    )
    assert done.returncode == 0, done.stderr
    mode, folder = done.stdout.split()[:2]
    assert mode == "temporary"
    assert done.stdout.split()[2] == "97"
    assert not os.path.exists(folder)  # removed at exit


def test_caching_is_turned_off_when_not_even_a_temporary_folder_can_be_made(tmp_path):
    tree, env = _read_only_copy(tmp_path)
    done = _run(
        "import tempfile\n"
        "def refuse(*a, **k):\n    raise PermissionError('read-only')\n"
        "tempfile.mkdtemp = refuse\n"
        "import games\n"
        "print(games.resources.numba_cache.mode, games.count_relevant_pairs(games.kuhn()))\n",
        tree,
        env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["disabled", "97"]


def test_default_locations_are_kept_when_writable():
    from efce import games

    assert games.resources.numba_cache.mode == "default"
