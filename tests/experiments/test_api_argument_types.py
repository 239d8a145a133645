"""The Python entries ``efce.solve``, ``efce.compare`` and ``efce.sweep`` refuse arguments of the
wrong type with one exception type (``OptionError``) and a message naming the argument, and
accept numbers of any numeric type (NumPy scalars included), but not bools."""

from __future__ import annotations

import numpy as np
import pytest

import efce
from efce.experiments.sweep import MAX_RUNS, SweepError, load_sweep


@pytest.mark.parametrize(
    "game, method, fragment",
    [
        (3, "rm", "game must be a Game, a spec string such as 'kuhn:players=3' or a .efg path, got int 3"),
        (None, "rm", "got NoneType None"),
        ("", "rm", "got an empty string"),
        ("farina-fig2", ["rm"], "method must be a method name (one of rm, "),
        ("farina-fig2", None, "got NoneType None"),
    ],
)
def test_solve_refuses_wrong_types_at_the_entry(game, method, fragment):
    with pytest.raises(efce.OptionError) as info:
        efce.solve(game, method)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    "options, fragment",
    [
        ({"iterations": True}, "--iterations must be an integer, got bool True"),
        ({"iterations": np.bool_(True)}, "--iterations must be an integer, got bool"),
        ({"iterations": "10"}, "--iterations must be an integer, got the string '10'"),
        ({"time_limit": 10**400}, "--time-limit must be a finite number, got an integer of 401 digits"),
    ],
)
def test_solve_option_types_are_named(options, fragment):
    with pytest.raises(efce.OptionError) as info:
        efce.solve("farina-fig2", "cfr", **options)
    assert fragment in str(info.value)


def test_numpy_scalars_are_numbers():
    result = efce.solve(
        "farina-fig2",
        "subgradient",
        iterations=np.int32(3),
        step_size=np.float32(1e-3),
        seed=np.uint8(1),
        time_limit=np.float64(30),
    )
    assert result.iterations == 3
    result = efce.solve("farina-fig2", "icfr", iterations=np.int64(4), seed=np.int16(2))
    assert result.iterations == 4


@pytest.mark.parametrize(
    "args, kwargs, fragment",
    [
        ((3,), {}, "the game must be a spec string"),
        ((None,), {}, "got NoneType None"),
        (
            ("farina-fig2", "rm"),
            {},
            "methods must be a list of names such as ['rm', 'lp-highs'], got the string 'rm' (write ['rm'])",
        ),
        (("farina-fig2", [1]), {}, "methods must be a list of names"),
        (("farina-fig2", ["cfr"]), {"out_dir": None}, "output folder (out_dir) must be a folder path"),
        (
            ("farina-fig2", ["cfr"]),
            {"time_limit": "5"},
            "--time-limit must be a positive number, got the string '5'",
        ),
        (("farina-fig2", ["cfr"]), {"time_limit": True}, "--time-limit must be a positive number, got bool"),
        (("farina-fig2", ["cfr"]), {"options": {"cfr": 3}}, "the options of cfr must be a dict"),
        (("farina-fig2", ["cfr"]), {"options": [1]}, "options must be a dict of method"),
    ],
)
def test_compare_refuses_wrong_types_before_running(args, kwargs, fragment, tmp_path):
    kwargs.setdefault("out_dir", str(tmp_path / "out"))
    with pytest.raises(efce.OptionError) as info:
        efce.compare(*args, **kwargs)
    assert fragment in str(info.value)
    assert not (tmp_path / "out").exists()


def test_compare_takes_a_game_object_nowhere():
    from efce.games import make_game

    with pytest.raises(efce.OptionError, match="spec string .* own process"):
        efce.compare(make_game("farina-fig2"), ["cfr"])


@pytest.mark.parametrize(
    "args, kwargs, fragment",
    [
        ((3, "out"), {}, "the sweep must be a .toml path or a dict of its content, got int 3"),
        (({"games": ["kuhn"], "methods": ["cfr"]}, None), {}, "out_dir) must be a folder path"),
        (("x.toml", 5), {}, "got int 5"),
        (({"games": ["kuhn"], "methods": ["cfr"]}, "out"), {"resume": "yes"}, "resume must be True or False"),
        (
            ({"games": ["kuhn"], "methods": ["cfr"]}, "out"),
            {"scheduler": 8786},
            "--scheduler must be an address",
        ),
    ],
)
def test_sweep_refuses_wrong_types(args, kwargs, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(efce.OptionError) as info:
        efce.sweep(*args, **kwargs)
    assert fragment in str(info.value)


def test_sweep_numbers_of_any_type_and_its_run_limit():
    sweep = load_sweep(
        {
            "games": ["farina-fig2"],
            "methods": ["icfr"],
            "seeds": np.int64(2),
            "limits": {"time": np.float32(2), "iterations": np.int16(5)},
        }
    )
    assert [r.seed for r in sweep.runs] == [0, 1]
    assert sweep.runs[0].options == {"iterations": 5, "time_limit": 2.0}
    with pytest.raises(SweepError, match=r"a count of 100,000,000 seeds is more than the 100,000"):
        load_sweep({"games": ["farina-fig2"], "methods": ["icfr"], "seeds": 10**8})
    axes = {"step_size": [0.1 * (i + 1) for i in range(400)], "iterations": list(range(1, 400))}
    with pytest.raises(SweepError, match=r"the grid has 159,600 runs, more than the 100,000"):
        load_sweep({"games": ["farina-fig2"], "methods": ["subgradient"], "options": {"subgradient": axes}})
    assert MAX_RUNS == 100_000
    assert issubclass(SweepError, efce.OptionError)
