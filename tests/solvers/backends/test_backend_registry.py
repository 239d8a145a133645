"""The registry of compute backends: names, lazily imported entries, objects passed through, and
the CPU backend implementing the interface every backend implements."""

from __future__ import annotations

import numpy as np
import pytest

from efce.errors import OptionError
from efce.games.spec import make_game
from efce.solvers import backends
from efce.solvers.backends import ComputeBackend, get_backend, register_backend
from efce.solvers.backends.cpu import CPUBackend
from efce.solvers.methods.efce import build_efce_model, solve_efce


def test_cpu_is_the_default_and_implements_the_interface():
    backend = get_backend()
    assert isinstance(backend, CPUBackend) and isinstance(backend, ComputeBackend)
    assert backend.name == "cpu" and get_backend("cpu", threads=1) == CPUBackend(threads=1)
    assert get_backend(backend) is backend  # an object is used as it is
    members = [m for m in vars(ComputeBackend) if not m.startswith("_")]
    assert {"chain_passes", "payoff_products", "gap_sweeps", "chain_minimum", "to_host"} <= set(members)
    assert all(hasattr(backend, m) for m in members)


def test_the_cpu_backend_arrays_are_numpy_arrays_in_place():
    backend = get_backend()
    host = np.arange(3.0)
    assert backend.to_device(host) is host and backend.to_host(host) is host
    assert backend.zeros(4, np.float32).dtype == np.float32 and not backend.zeros(4).any()
    assert backend.empty(5).shape == (5,)


def test_a_registered_backend_is_built_on_first_use(monkeypatch):
    built = []

    class Recording(CPUBackend):
        pass

    def factory(**options):
        built.append(options)
        return Recording(**options)

    monkeypatch.setitem(backends.BACKENDS, "recording", factory)
    assert built == []
    backend = get_backend("recording", threads=1)
    assert isinstance(backend, Recording) and built == [{"threads": 1}]
    # ... and a solver runs on it: every pass and sweep through its objects.
    game = make_game("farina-fig2")
    model = build_efce_model(game)
    result = solve_efce(game, model=model, iterations=30, target_gap=None, backend="recording")
    assert np.array_equal(result.point, solve_efce(game, model=model, iterations=30, target_gap=None).point)


def test_an_entry_names_a_module_attribute_imported_on_first_use(monkeypatch):
    monkeypatch.setitem(backends.BACKENDS, "late", "efce.solvers.backends.cpu:CPUBackend")
    assert get_backend("late", threads=1) == CPUBackend(threads=1)
    assert backends.BACKENDS["late"] is CPUBackend  # resolved once
    register_backend("late", "no_such_module_here:Backend")
    with pytest.raises(OptionError, match="^compute backend 'late' is not available: No module named"):
        get_backend("late")


def test_unknown_names_are_refused_with_the_valid_ones():
    with pytest.raises(OptionError, match=r"unknown compute backend 'gpu'; valid: cpu"):
        get_backend("gpu")


def test_cpu_only_kernels_take_the_cpu_backend_and_refuse_another_one(monkeypatch):
    from efce.solvers.backends.protocol import cpu_backend
    from efce.solvers.evaluation.best_response import best_response

    threaded = CPUBackend(threads=1)
    assert cpu_backend(threaded) is threaded and isinstance(cpu_backend(), CPUBackend)

    class NotTheCPU:
        """A backend object of another kind: it has none of the CPU-only kernels."""

        name = "elsewhere"

    monkeypatch.setitem(backends.BACKENDS, "elsewhere", lambda **options: NotTheCPU())
    for other in (NotTheCPU(), "elsewhere"):
        with pytest.raises(OptionError, match="CPU backend only, got backend 'elsewhere'"):
            cpu_backend(other)
    space = make_game("kuhn").sequences(0)
    utility = np.arange(space.num_sequences, dtype=np.float64)
    with pytest.raises(OptionError, match="CPU backend only"):
        best_response(space, utility, backend=NotTheCPU())  # the wrong kind of backend, on purpose
    value, x = best_response(space, utility, backend=threaded)
    assert value == pytest.approx(float(utility @ x)) and set(np.unique(x)) <= {0.0, 1.0}
