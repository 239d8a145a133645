"""Options and arguments are never accepted and then ignored: an option a method does not use in
the configuration given is refused in every entry (``solve``, ``compare`` configurations, sweep
files), ``compare`` recognizes one configuration however its options are written, and every
argument of the Python entries is type-checked with an :class:`OptionError` naming it."""

import json
import time

import pytest

import efce
from efce.errors import OptionError
from efce.experiments.cli import main


def _refused(argv, capsys, *fragments):
    started = time.monotonic()
    code = main([*argv, "--json"])
    message = json.loads(capsys.readouterr().out)["error"]
    assert code == 2 and all(f in message for f in fragments), message
    assert time.monotonic() - started < 30
    return message


def test_an_option_unused_in_this_configuration_is_refused_everywhere(tmp_path, capsys):
    argv = ["solve", "farina-fig1", "--method", "rm", "--objective", "welfare", "--target-gap", "1e-4"]
    _refused(argv, capsys, "rm does not use --target-gap here", "--objective welfare")
    with pytest.raises(OptionError, match="does not use --target-gap"):
        efce.solve("farina-fig1", "rm", objective="welfare", target_gap=1e-4)
    out = tmp_path / "cmp"
    entry = "rm[objective=welfare,target_gap=1e-4]"
    _refused(["compare", "farina-fig1", "--methods", entry, "--out", str(out)], capsys, "--target-gap")
    sweep = tmp_path / "s.sweep.toml"
    sweep.write_text(
        'games = ["farina-fig1"]\nmethods = ["rm"]\n[options.rm]\nobjective = "welfare"\ntarget_gap = 1e-4\n'
    )
    _refused(["sweep", str(sweep), "--out", str(out)], capsys, "--target-gap")
    assert not out.exists()
    # Without welfare the same option is used, and accepted.
    assert efce.solve("farina-fig1", "rm", target_gap=1e-2, iterations=50).status in (
        "converged",
        "iteration_limit",
    )


@pytest.mark.parametrize(
    "first, second",
    [
        ("rm[local=rm+,averaging=linear]", "rm[averaging=linear,local=rm+]"),
        ("rm", "rm[local=prm+]"),  # a default spelled out
        ("subgradient[step_size=0.001]", "subgradient[step_size=1e-3]"),
    ],
)
def test_compare_runs_one_configuration_once_however_it_is_written(tmp_path, capsys, first, second):
    out = tmp_path / "cmp"
    message = _refused(
        ["compare", "farina-fig1", "--methods", f"{first},{second}", "--out", str(out)],
        capsys,
        "lists a run twice",
    )
    assert first in message and second in message
    assert not out.exists()


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: efce.solve("farina-fig1", "rm", progress=5), "progress"),
        (lambda: efce.solve("farina-fig1", "rm", progress="bar"), "progress"),
        (lambda: efce.solve("farina-fig1", "icfr", device="no"), "device"),
        (lambda: efce.solve("farina-fig1", "icfr", device=1), "device"),
        (lambda: efce.compare("farina-fig1", ["cfr"], log=print.__name__), "log"),
        (lambda: efce.sweep({"games": ["kuhn"], "methods": ["cfr"]}, "out", progress="yes"), "progress"),
    ],
)
def test_every_argument_of_the_entries_is_checked_with_its_name(call, name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OptionError) as info:
        call()
    assert str(info.value).startswith(name) and "\n" not in str(info.value)
    assert list(tmp_path.iterdir()) == []  # refused before anything was built or written
