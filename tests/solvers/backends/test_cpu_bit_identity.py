"""The CPU backend computes, bit for bit, what the toolkit computed before its kernels moved into
:mod:`efce.solvers.backends` (commit 2d62a93): the iterates of ``rm`` (every built-in rule, both
update orders, the welfare column, float32 state and running sum), CFR and CFR+, the
trigger-regret dynamics and ICFR, on one thread and on two, serial and parallel kernels.

Each case's fingerprint is the first 16 hex digits of the SHA-256 of the bytes of its result's
point (float64; a device's ids, probabilities and plan tables) — the iterates — and of its trace's
``(iteration, gap, infeasibility)`` rows — what the checkpoints computed.  The values below were
printed by this module's cases run on 2d62a93 (where the parallel kernels were forced by setting
``efce.solvers.regret.engine.PARALLEL_MIN_ENTRIES`` and
``efce.solvers.evaluation.payoff_operator.PARALLEL_MIN_ROWS`` to 1, and the thread count by its
``thread_count``), the same on 1 and 2 threads; running this module
(``python -m tests.solvers.backends.test_cpu_bit_identity``) prints them.  The test also passes
with ``NUMBA_CPU_NAME=generic`` (the kernels compiled for a baseline x86-64 CPU, without AVX or
FMA): numba contracts no multiply-add and reassociates no sum here, so the iterates do not depend
on the CPU's vector extensions.

One deliberate exception: the EFCE gap evaluator's following values are now summed by the one
subtree sum of the package (every sequence into its parent, the trigger dynamics' order; it used to
add each infoset's actions first), so a report read from the evaluator — the final ``efce_gap``,
and the checkpoints of a run with a welfare threshold — may differ in its last bits: those gaps
are compared to 1e-12 relative, and that case's checkpoints are not fingerprinted.

A second: CFR's checkpoints (the ``cfr``/``cfr+`` cases' second value) were recorded again on the
commit that made :func:`~efce.solvers.methods.cfr.exploitability` sum the utilities ``x1ᵀ A_i x2``
exactly (:func:`math.fsum`) in place of a BLAS dot product, whose last bits depend on the kernel
OpenBLAS picks for the CPU: 2d62a93's values were not reproducible from one machine to the next
(``OPENBLAS_CORETYPE=Sandybridge`` and ``Haswell`` gave different gaps).  The new values are the
same under every ``OPENBLAS_CORETYPE``; the iterates are still 2d62a93's.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from efce.games.spec import make_game
from efce.solvers.backends import available_threads
from efce.solvers.backends.cpu import CPUBackend
from efce.solvers.methods.cfr import solve_cfr
from efce.solvers.methods.efce import solve_efce
from efce.solvers.methods.icfr import solve_icfr
from efce.solvers.methods.trigger import solve_trigger
from efce.solvers.regret import local

SHERIFF = "sheriff:max_bribe=2,max_items=2,rounds=2"
BATTLESHIP = "battleship:rows=2,cols=2,ship_sizes=[1],shots=2"
TWO = min(2, available_threads())

#: case → (iterates, checkpoints or None, final EFCE gap or None), recorded on 2d62a93.
BASE = {
    "cfr leduc": ("a36af3485ed448b3", "a4b9886d815ee8bc", None),
    "cfr+ leduc": ("708844b6062036e5", "6d73fce921a3814a", None),
    "coarse-trigger kuhn3": ("9b0dd5b1e4fdb46a", "f4cade8ce9c091ea", 0.005984071775097929),
    "icfr kuhn3": ("3282921fbc419b8d", "60cc043b6519ca70", 0.027083333333333383),
    "rm dcfr sheriff parallel=False": ("0bb8157132a07bf0", "b74d2fad2094ea43", 0.06038945105266896),
    "rm dcfr sheriff parallel=True": ("0bb8157132a07bf0", "b74d2fad2094ea43", 0.06038945105266896),
    "rm hedge sheriff parallel=False": ("f62e5b61ba0a3a9d", "11955b15038a371f", 0.14307089649189642),
    "rm hedge sheriff parallel=True": ("f62e5b61ba0a3a9d", "11955b15038a371f", 0.14307089649189642),
    "rm prm+ battleship parallel=False": ("079591d05554120f", "938eead3610ad9f2", 0.0069220960205680915),
    "rm prm+ battleship parallel=True": ("079591d05554120f", "938eead3610ad9f2", 0.0069220960205680915),
    "rm prm+ float32 battleship parallel=False": (
        "877eaaf2d6b72d18",
        "0576702ada7b76cf",
        0.004903483651836432,
    ),
    "rm prm+ float32 battleship parallel=True": (
        "9219f5279443d020",
        "e3b97a09782a436b",
        0.004903497818623037,
    ),
    "rm prm+ sheriff parallel=False": ("d1f5c4f9802cf15c", "e36a67a196555e9f", 0.1244637944551426),
    "rm prm+ sheriff parallel=True": ("d1f5c4f9802cf15c", "e36a67a196555e9f", 0.1244637944551426),
    "rm prm+ welfare sheriff parallel=False": ("4a72ded87c6c35c7", None, 0.07662403554939085),
    "rm prm+ welfare sheriff parallel=True": ("4a72ded87c6c35c7", None, 0.07662403554939085),
    "rm rm+ float32 battleship parallel=False": (
        "81b8f15efc3a3ced",
        "78f78253f526f0e1",
        0.008657080159895858,
    ),
    "rm rm+ float32 battleship parallel=True": ("a9a3a13766f8e557", "cd2da41b2c222b4e", 0.008657063974444504),
    "rm rm+ sheriff parallel=False": ("d73c54d6f4e4efaf", "278fd3ca9b59e1df", 0.05480875764506293),
    "rm rm+ sheriff parallel=True": ("d73c54d6f4e4efaf", "278fd3ca9b59e1df", 0.05480875764506293),
    "rm rm+ simultaneous quadratic sheriff parallel=False": (
        "61d89c2150a45461",
        "ebc223b4cd5cddec",
        0.1506675348883535,
    ),
    "rm rm+ simultaneous quadratic sheriff parallel=True": (
        "61d89c2150a45461",
        "ebc223b4cd5cddec",
        0.1506675348883535,
    ),
    "trigger kuhn3": ("396a803097412773", "69f7fcb0fbbd6b95", 0.0029213752564332084),
    "trigger kuhn3 device": ("52dfb2747179a69e", "ee96de10b24e21a6", 0.03342638817877258),
}


def digest(*arrays) -> str:
    hasher = hashlib.sha256()
    for a in arrays:
        hasher.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    return hasher.hexdigest()[:16]


def fingerprint(result) -> tuple[str, str, float | None]:
    point = result.point
    if hasattr(point, "probs"):  # a device over joint plans
        arrays = [point.ids.astype(np.float64), point.probs] + [
            t.astype(np.float64).ravel() for t in point.tables
        ]
    elif isinstance(point, (list, tuple)):
        arrays = list(point)
    else:
        arrays = [point]
    trace = np.array([(r.iteration, r.gap, r.infeasibility) for r in result.trace], dtype=np.float64)
    return digest(*arrays), digest(trace.ravel()), result.info.get("efce_gap")


def run_case(name: str, threads: int, monkeypatch=None):
    """The solve of case ``name`` on ``threads`` threads (the iterations as recorded)."""
    words = name.split()
    method = words[0]
    if method in ("cfr", "cfr+"):
        return solve_cfr(make_game("leduc"), iterations=60, variant=method, check_every=9, threads=threads)
    kuhn3 = make_game("kuhn:players=3")
    if method in ("trigger", "coarse-trigger"):
        device = "device" in words
        return solve_trigger(
            kuhn3,
            12 if device else 60,
            coarse=method == "coarse-trigger",
            check_every=3 if device else 9,
            device=device,
        )
    if method == "icfr":
        return solve_icfr(kuhn3, 60, check_every=9)
    parallel = words[-1] == "parallel=True"
    backend = CPUBackend(threads=threads, parallel_min_size=1 if parallel else None)
    game = make_game(BATTLESHIP if "battleship" in words else SHERIFF)
    options = dict(iterations=40, target_gap=None, rule=words[1], backend=backend, check_every=7)
    if "simultaneous" in words:
        options.update(alternating=False, averaging="quadratic")
    if "welfare" in words:
        options["welfare_threshold"] = 0.5
    if "float32" in words:
        monkeypatch.setattr(local, "FLOAT32_STATE_MIN_ENTRIES", 1)
    return solve_efce(game, **options)


@pytest.mark.parametrize("threads", sorted({1, TWO}))
@pytest.mark.parametrize("name", sorted(BASE))
def test_the_iterates_are_those_of_the_code_before_the_backends(name, threads, monkeypatch):
    iterates, checkpoints, gap = fingerprint(run_case(name, threads, monkeypatch))
    base_iterates, base_checkpoints, base_gap = BASE[name]
    assert iterates == base_iterates
    if base_checkpoints is not None:
        assert checkpoints == base_checkpoints
    if base_gap is not None:
        assert gap == pytest.approx(base_gap, rel=1e-12, abs=0)


if __name__ == "__main__":
    pytest_monkeypatch = pytest.MonkeyPatch()
    out = {}
    for case in sorted(BASE):
        with pytest_monkeypatch.context() as patch:
            out[case] = fingerprint(run_case(case, TWO, patch))
    print(json.dumps(out, indent=1))
