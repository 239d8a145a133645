"""A stop that arrives while numba compiles (or while any code swallows the interrupt) still ends
a command within 2 s, with one error and no traceback (:mod:`efce.interrupts`).

A compilation runs numba's compiler in Python and LLVM in C, which calls back into Python
through ctypes: a :class:`KeyboardInterrupt` raised in such a callback is printed ("Exception
ignored") and dropped, and one raised elsewhere in the compiler can leave LLVM half-changed.  So
inside the compiler's modules the signal handler raises nothing and the watchdog ends the process
itself; and an abort the main thread took over but swallowed is ended by the watchdog too.  The
child processes here imitate a compilation with a ctypes callback that busy-waits (the signal
handler then runs inside the callback, where LLVM's would), and the last tests stop a real first
run on an empty numba cache."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tests.experiments.signals import signal_and_wait
from tests.paths import ROOT

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")

ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
#: Seconds from the first signal to the exit: the contract's 2 s.
STOP_SECONDS = 2.0

#: A child that keeps the signal contract (an abort writes one line and exits 130) while its main
#: thread runs, for ever, Python code called back from C through ctypes, in a module named as
#: the first argument says.
CHILD = textwrap.dedent(
    """
    import ctypes, os, sys, time
    from efce.interrupts import graceful, stop_on_signals

    def abort():
        os.write(1, b'{"error": "aborted", "status": "interrupted"}\\n')

    def busy():  # what LLVM calls back while it compiles
        end = time.monotonic() + 0.05
        while time.monotonic() < end:
            sum(range(100))

    callback = ctypes.CFUNCTYPE(None)(busy)
    # "ready" is printed inside the loop's module: a signal sent on reading it finds the main
    # thread there.
    LOOP = (
        "def compile_forever(callback):\\n    print('ready', flush=True)\\n"
        "    while True:\\n        callback()\\n"
    )
    namespace = {"__name__": sys.argv[1]}
    exec(compile(LOOP, sys.argv[1], "exec"), namespace)
    try:
        with stop_on_signals(abort), graceful():
            namespace["compile_forever"](callback)
    except KeyboardInterrupt:  # taken over between two callbacks: the command line's own catch
        abort()
        sys.exit(130)
    """
)


def _start(module: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, module],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n", proc.communicate()
    return proc


def _stop(proc: subprocess.Popen, *signals: int) -> tuple[str, str, float]:
    try:
        return signal_and_wait(proc, *signals, timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"still running 30 s after the signal; stderr {err[-1500:]!r}") from None


def test_a_stop_that_the_running_code_swallows_still_ends_the_process_within_two_seconds():
    # The grace period ends, the main thread is asked to abort and raises KeyboardInterrupt
    # inside a ctypes callback, where Python prints it and goes on: the watchdog, seeing no
    # end to the command, ends the process itself.
    proc = _start("some.library")
    out, _err, took = _stop(proc, signal.SIGINT)
    assert proc.returncode == 130
    assert took < STOP_SECONDS, f"took {took:.2f} s to stop"
    assert json.loads(out)["status"] == "interrupted"


@pytest.mark.parametrize("signals", [(signal.SIGTERM,), (signal.SIGINT, signal.SIGTERM)], ids=["one", "two"])
def test_a_stop_inside_the_compiler_ends_the_process_without_raising_there(signals):
    # Inside numba's compiler nothing is raised (no "Exception ignored", no half-changed LLVM):
    # the watchdog writes the one error and ends the process, after the grace period for one
    # signal, at once for a second.
    proc = _start("numba.core.compiler_imitation")
    out, err, took = _stop(proc, *signals)
    assert proc.returncode == 130
    assert took < (STOP_SECONDS if len(signals) == 1 else 0.5), f"took {took:.2f} s to stop"
    assert out.count("\n") == 1 and json.loads(out)["status"] == "interrupted"
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_compiler_frames_are_told_by_their_module():
    from efce.interrupts import COMPILER_MODULES, in_compiler

    namespace = {"__name__": COMPILER_MODULES[0] + "imitation"}
    exec(compile("import sys\ndef here():\n    return sys._getframe()\n", "imitation", "exec"), namespace)
    assert in_compiler(namespace["here"]())
    assert not in_compiler(sys._getframe())
    assert not in_compiler(None)


# ----------------------------------------------------------------------------- a real first run
@pytest.mark.parametrize(
    ("after", "signals"),
    [
        (0.0, (signal.SIGINT,)),
        (3.0, (signal.SIGTERM,)),
        (6.0, (signal.SIGINT,)),
        (3.0, (signal.SIGTERM, signal.SIGINT)),
    ],
    ids=["at-once-int", "3s-term", "6s-int", "3s-twice"],
)
def test_a_stop_during_the_first_compilation_on_an_empty_cache_ends_rm_within_two_seconds(
    tmp_path, after, signals
):
    # rm's kernels compile for tens of seconds on an empty numba cache: the signal lands in
    # the middle of the compilation, at several moments.
    env = {**ENV, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "efce", "solve", "farina-fig2", "--method", "rm", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # "rm: compiling its kernels ..." (or "loading ...")
        assert first.startswith("rm: "), first
        time.sleep(after)
        out, err, took = _stop(proc, *signals)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, (out, err)
    assert took < STOP_SECONDS, f"took {took:.2f} s to stop"
    assert out.count("\n") == 1 and json.loads(out)["status"] == "interrupted", out
    assert "Traceback" not in err and "Exception ignored" not in err, err
