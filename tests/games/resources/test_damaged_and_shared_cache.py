"""numba's compiled-code cache, damaged or shared (:class:`efce.games.resources.numba_cache.CheckedCache`):
an index (``.nbi``) truncated or emptied, or a code file (``.nbc``) truncated — what an
interrupted first run, a full disk or a network file system leaves — is discarded and recompiled
with one line on stderr, never ends the command; a cache that cannot be written is said once and
the run goes on; processes sharing one cache folder never take one entry's code for another's,
and four of them compiling into one fresh folder all succeed, after which a second wave compiles
nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

#: A run that compiles a handful of kernels (CFR+ on Kuhn: its warm-up, the game's builders).
COMMAND = ["solve", "kuhn", "--method", "cfr+", "--iterations", "20", "--json"]

#: ``efce ARGS`` with numba's compile events counted: the count goes to stderr as its last line.
COUNTING = (
    "import os, sys\n"
    "if os.environ.get('FULL_DISK'):  # every cache write fails as on a full disk\n"
    "    from numba.core import caching\n"
    "    def full(*args): raise OSError(28, 'No space left on device')\n"
    "    caching.IndexDataCacheFile._save_data = full\n"
    "from numba.core import event\n"
    "class Count(event.Listener):\n"
    "    n = 0\n"
    "    def on_start(self, e): Count.n += 1\n"
    "    def on_end(self, e): pass\n"
    "event.register('numba:compile', Count())\n"
    "from efce.experiments.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print(f'compile events: {Count.n}', file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _efce(cache: Path, *args: str, wait: bool = True, full_disk: bool = False):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), EFCE_KERNELS="compiled")
    if full_disk:
        env["FULL_DISK"] = "1"
    command = [sys.executable, "-c", COUNTING, *(args or COMMAND)]
    child = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    return _finish(child) if wait else child


def _finish(child: subprocess.Popen) -> tuple[int, dict, list[str], int]:
    stdout, stderr = child.communicate(timeout=600)
    lines = [line for line in stderr.splitlines() if line.strip()]
    compiles = int(lines[-1].rsplit(":", 1)[1]) if lines and lines[-1].startswith("compile events") else -1
    payload = json.loads(stdout.splitlines()[-1]) if stdout.strip() else {}
    return child.returncode, payload, lines[:-1], compiles


def _damage_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if "numba's compiled-code cache" in line]


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> Path:
    """A cache folder filled by one run (copied by each test before it damages the copy)."""
    folder = tmp_path_factory.mktemp("filled")
    code, payload, _lines, compiles = _efce(folder)
    assert code == 0 and payload["status"] == "iteration_limit" and compiles > 0
    return folder


def _copy(filled: Path, tmp_path: Path) -> Path:
    import shutil

    cache = tmp_path / "cache"
    shutil.copytree(filled, cache)
    return cache


@pytest.mark.parametrize(
    "suffix, damage",
    [
        (".nbi", lambda data: data[: len(data) // 2]),  # index truncated
        (".nbi", lambda data: b""),  # index emptied
        (".nbc", lambda data: data[: len(data) // 2]),  # code truncated
    ],
    ids=["index-truncated", "index-emptied", "code-truncated"],
)
def test_a_damaged_entry_is_discarded_and_recompiled_with_one_line(filled, tmp_path, suffix, damage):
    cache = _copy(filled, tmp_path)
    files = sorted(cache.rglob(f"*{suffix}"))
    assert files
    for path in files:
        path.write_bytes(damage(path.read_bytes()))
    code, payload, lines, compiles = _efce(cache)
    assert code == 0, lines
    assert payload["status"] == "iteration_limit"
    damaged = _damage_lines(lines)
    assert len(damaged) == 1 and "discarded and is recompiled" in damaged[0], lines
    assert compiles > 0
    # What was recompiled is cached again: the next run loads everything.
    code, _payload, lines, compiles = _efce(cache)
    assert code == 0 and compiles == 0 and not _damage_lines(lines)


def test_a_full_disk_is_said_once_and_the_run_goes_on(tmp_path):
    code, payload, lines, compiles = _efce(tmp_path / "cache", full_disk=True)
    assert code == 0 and payload["status"] == "iteration_limit" and compiles > 0
    full = [line for line in lines if "cannot write" in line]
    assert len(full) == 1 and "No space left on device" in full[0], lines


def test_a_code_file_never_answers_for_another_entry(tmp_path):
    # Two processes naming their new entries alike (numba numbers a code file by the index's
    # length): the file one of them wrote last must not be loaded as the other's code.
    from efce.games.resources.numba_cache import CheckedCacheFile

    one = CheckedCacheFile(str(tmp_path), "kernel-1.py311", "stamp")
    other = CheckedCacheFile(str(tmp_path), "kernel-1.py311", "stamp")
    one.save(("signature A",), "code of A")
    other.save(("signature B",), "code of B")
    assert one.load(("signature A",)) == "code of A"
    assert one.load(("signature B",)) == "code of B"
    index = {key: name for key, name in one._load_index().items()}
    assert len(set(index.values())) == 2  # one file per entry, named after its key
    # A file overwritten with another entry's code (or by numba's own cache) is a miss.
    os.replace(tmp_path / index[("signature B",)], tmp_path / index[("signature A",)])
    assert one.load(("signature A",)) is None


def test_four_processes_share_one_fresh_cache_and_a_second_wave_compiles_nothing(tmp_path):
    cache = tmp_path / "shared"
    commands = [
        COMMAND,
        ["solve", "kuhn", "--method", "cfr", "--iterations", "20", "--json"],
        ["solve", "sheriff:max_bribe=1,max_items=1,rounds=1", "--method", "cfr+", "--iterations", "20"],
        COMMAND,
    ]
    commands = [[*c, "--json"] if "--json" not in c else c for c in commands]
    first = [_finish(child) for child in [_efce(cache, *c, wait=False) for c in commands]]
    assert [f[0] for f in first] == [0, 0, 0, 0], [f[2] for f in first]
    assert all(f[1]["status"] == "iteration_limit" for f in first)
    second = [_finish(child) for child in [_efce(cache, *c, wait=False) for c in commands]]
    assert [s[0] for s in second] == [0, 0, 0, 0], [s[2] for s in second]
    assert [s[3] for s in second] == [0, 0, 0, 0], "the second wave compiled"
    assert max(s[1]["compile_seconds"] for s in second) < min(f[1]["compile_seconds"] for f in first)
    assert not any(_damage_lines(s[2]) for s in first + second)
