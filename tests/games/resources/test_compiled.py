"""Every numba function of the package runs compiled or as its Python twin, by the calling
context's mode (:mod:`efce.games.resources.compiled`): a call that runs the twin compiles
nothing, gives what the compiled code gives (as Python numbers), and ``auto`` mode compiles a
large call, or a function whose twin has run long enough; an interpreted attempt ends at a call
too large or after its seconds."""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest
from numba.core import event
from numba.core.dispatcher import Dispatcher

from efce.errors import InterpretationEnded, OptionError
from efce.games.resources import compiled as tiers
from efce.games.resources.compiled import (
    INTERPRET_MAX_ELEMENTS,
    TieredDispatcher,
    claimed_compiles,
    compiled,
    interpreted_attempt,
    kernel_mode,
    python_twin,
)


@compiled(inline="always")
def _shifted(value, shift):
    return value + shift


def _fresh_kernel():
    """A kernel no call has compiled yet (a new dispatcher each time), which calls a compiled
    helper: ``out[i] = x[i] + 1`` and the sum of ``x``."""

    @compiled
    def add_one(x, out):
        total = 0.0
        for i in range(len(x)):
            out[i] = _shifted(x[i], 1.0)
            total += x[i]
        return total

    return add_one


class _Compiles(event.Listener):
    """Counts numba's compile events (a variant compiled; loading one from the cache is none)."""

    def __init__(self):
        self.count = 0

    def on_start(self, _event):
        self.count += 1

    def on_end(self, _event):
        pass


def _call(kernel, n):
    x = np.arange(n, dtype=np.float64)
    out = np.empty(n)
    with event.install_listener("numba:compile", _Compiles()) as listener:
        total = kernel(x, out)
    assert np.array_equal(out, x + 1.0) and total == x.sum()
    return total, listener.count


def test_interpreted_calls_compile_nothing_and_return_python_numbers():
    kernel = _fresh_kernel()
    with kernel_mode("interpreted"):
        total, compiles = _call(kernel, 50)
    assert compiles == 0 and not kernel.overloads and not _shifted.overloads
    assert type(total) is float  # as the compiled code returns it, not a NumPy scalar


def test_compiled_calls_compile_and_then_run_compiled_in_every_mode():
    kernel = _fresh_kernel()
    with kernel_mode("compiled"):
        assert _call(kernel, 50)[1] > 0
    with kernel_mode("interpreted"):  # a compiled variant is used wherever it exists
        assert _call(kernel, 50)[1] == 0
    assert len(kernel.overloads) == 1


def test_a_claimed_call_compiles_the_variant_it_claims_first(tmp_path):
    kernel = _fresh_kernel()
    with claimed_compiles(str(tmp_path)):
        assert _call(kernel, 50)[1] > 0
    assert len(kernel.overloads) == 1
    assert len(list(tmp_path.iterdir())) == 1  # the claim, left for the other processes


def test_a_variant_another_process_claimed_runs_as_python_here(tmp_path):
    kernel = _fresh_kernel()
    x = np.arange(50, dtype=np.float64)
    assert tiers._claim(kernel, (x, np.empty(50)), str(tmp_path))  # as another process does
    calls = tiers.twin_calls()
    with claimed_compiles(str(tmp_path)):
        total, compiles = _call(kernel, 50)
    assert compiles == 0 and not kernel.overloads and tiers.twin_calls() == calls + 1
    assert type(total) is float
    with claimed_compiles(str(tmp_path)):  # another variant (float32 arrays) is unclaimed
        out = np.empty(50, np.float32)
        kernel(x.astype(np.float32), out)
    assert len(kernel.overloads) == 1


def test_once_the_claims_folder_is_gone_a_claimed_call_compiles_nothing(tmp_path):
    kernel = _fresh_kernel()
    with claimed_compiles(str(tmp_path / "removed by an aborted command")):
        assert _call(kernel, 50)[1] == 0
    assert not kernel.overloads


def test_auto_mode_interprets_small_calls_and_compiles_large_ones():
    kernel = _fresh_kernel()
    with kernel_mode("auto"):
        assert _call(kernel, INTERPRET_MAX_ELEMENTS // 2)[1] == 0
        assert not kernel.overloads
        assert _call(kernel, INTERPRET_MAX_ELEMENTS)[1] > 0  # x and out: twice the elements
    assert len(kernel.overloads) == 1


def test_auto_mode_compiles_a_function_once_its_twin_has_run_long_enough(monkeypatch):
    monkeypatch.setattr(tiers, "KERNEL_INTERPRET_SECONDS", 1e-9)
    kernel = _fresh_kernel()
    with kernel_mode("auto"):
        assert _call(kernel, 10)[1] == 0
        assert kernel.interpreted_seconds > 0
        assert _call(kernel, 10)[1] > 0


def test_the_default_mode_is_read_from_the_environment(monkeypatch):
    cases = (("compiled", "compiled"), (" Interpreted", "interpreted"), ("", "auto"))
    for value, mode in cases:
        monkeypatch.setenv("EFCE_KERNELS", value)
        assert tiers.current_mode() == mode
    monkeypatch.setenv("EFCE_KERNELS", "compield")
    with pytest.raises(OptionError, match="must be one of compiled, auto, interpreted, got 'compield'"):
        tiers.current_mode()
    monkeypatch.setenv("EFCE_KERNELS", "compiled")
    with kernel_mode("compiled"):
        assert tiers.current_mode() == "compiled"
    with pytest.raises(ValueError, match="kernel mode"):
        kernel_mode("fast").__enter__()


def test_an_interpreted_attempt_ends_at_a_call_too_large_for_python():
    kernel = _fresh_kernel()
    with interpreted_attempt(60.0):
        assert _call(kernel, 10)[1] == 0
        with pytest.raises(InterpretationEnded, match="elements"):
            _call(kernel, INTERPRET_MAX_ELEMENTS)
    assert not kernel.overloads


def test_an_interpreted_attempt_ends_once_its_seconds_are_spent():
    kernel = _fresh_kernel()
    with interpreted_attempt(0.0), pytest.raises(InterpretationEnded, match="seconds"):
        _call(kernel, 10)


def test_a_twin_calls_the_twins_of_the_functions_it_names():
    kernel = _fresh_kernel()
    twin = python_twin(kernel)
    assert twin.__globals__["_shifted"] is python_twin(_shifted)
    assert not isinstance(twin, Dispatcher) and twin.__code__ is kernel.py_func.__code__


def _package_dispatchers():
    for package_name in ("games", "polytopes", "solvers", "baselines"):
        package = importlib.import_module(f"efce.{package_name}")
        for info in pkgutil.walk_packages(package.__path__, prefix=f"efce.{package_name}."):
            if info.name.endswith(("cuda.kernels", "cuda.saddle")):  # numba-cuda's kernels
                continue
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if isinstance(value, Dispatcher) and value.py_func.__module__ == module.__name__:
                    yield f"{module.__name__}.{name}", value


def test_every_numba_function_of_the_package_is_declared_with_compiled():
    dispatchers = dict(_package_dispatchers())
    assert len(dispatchers) > 50 and any(".cuda.layouts." in name for name in dispatchers)
    plain = sorted(name for name, d in dispatchers.items() if not isinstance(d, TieredDispatcher))
    assert not plain, f"declared with numba.njit, not compiled(): {plain}"


#: Cases of the CPU bit-identity test (every rule, both update orders, the welfare column,
#: serial and parallel kernels, CFR, the trigger dynamics, ICFR, a device) run both ways.  The
#: Battleship cases are left out, as they take a minute each as Python; run once, their iterates
#: matched too, and so did their checkpoints but where the running sum is float32 and the passes
#: parallel: there NumPy keeps ``float32 * float`` in float32 where numba widens it (the module
#: docstring of efce.games.resources.compiled).
ORACLE_CASES = [
    "cfr+ leduc",
    "coarse-trigger kuhn3",
    "icfr kuhn3",
    "rm dcfr sheriff parallel=True",
    "rm hedge sheriff parallel=False",
    "rm prm+ sheriff parallel=True",
    "rm prm+ welfare sheriff parallel=False",
    "rm rm+ simultaneous quadratic sheriff parallel=False",
    "trigger kuhn3 device",
]

_ORACLE_CHILD = (
    "import json, sys, pytest\n"
    "from tests.solvers.backends.test_cpu_bit_identity import TWO, fingerprint, run_case\n"
    "out = {}\n"
    "for case in json.loads(sys.argv[1]):\n"
    "    with pytest.MonkeyPatch().context() as patch:\n"
    "        out[case] = fingerprint(run_case(case, TWO, patch))\n"
    "print(json.dumps(out))\n"
)


def test_the_python_twins_reproduce_the_compiled_kernels_bit_for_bit(monkeypatch):
    """The twins as the oracle of the compiled kernels: a fresh process running every kernel as
    Python gives the compiled runs' iterates and checkpoints, bit for bit."""
    import json
    import os
    import subprocess
    import sys

    from tests.paths import ROOT
    from tests.solvers.backends.test_cpu_bit_identity import TWO, fingerprint, run_case

    child = subprocess.run(
        [sys.executable, "-c", _ORACLE_CHILD, json.dumps(ORACLE_CASES)],
        cwd=ROOT,
        env=dict(os.environ, EFCE_KERNELS="interpreted"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    twins = json.loads(child.stdout.splitlines()[-1])
    for case in ORACLE_CASES:
        compiled_run = fingerprint(run_case(case, TWO, monkeypatch))
        assert tuple(twins[case][:2]) == compiled_run[:2], case
        if compiled_run[2] is not None:
            assert twins[case][2] == pytest.approx(compiled_run[2], rel=1e-12, abs=0), case
