"""One error root: every public error derives from :class:`efce.errors.EFCEError`, each has its
right parent, the old homes still export them, and the command line tells user errors (EFCEError)
from bugs (anything else, e.g. a stray KeyError)."""

import importlib
import inspect
import json
import pkgutil

import pytest

import efce
from efce import errors
from efce.errors import (
    BackendError,
    ChainError,
    EFCEError,
    GameError,
    Interrupted,
    MemoryBudgetExceeded,
    OptionError,
    SweepError,
)


def _package_modules():
    for sub in ("games", "polytopes", "solvers", "baselines", "experiments"):
        package = importlib.import_module(f"efce.{sub}")
        for info in pkgutil.walk_packages(package.__path__, prefix=f"efce.{sub}."):
            if info.name.endswith(("openspiel", "_worker", "__main__")):
                continue
            yield importlib.import_module(info.name)


def test_every_public_error_derives_from_the_root():
    found = set()
    for module in [errors, *_package_modules()]:
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, Exception)
                and not name.startswith("_")
                and value.__module__.startswith("efce")
            ):
                found.add(value)
    found.discard(EFCEError)
    # Interrupted is control flow, not an error of the user: deliberately outside the root, so
    # that no ``except EFCEError`` taking refusals swallows a stop request.
    assert Interrupted in found and not issubclass(Interrupted, EFCEError)
    found.discard(Interrupted)
    bad = sorted(c.__qualname__ for c in found if not issubclass(c, EFCEError))
    assert not bad, f"public errors outside EFCEError: {bad}"
    assert {GameError, OptionError, SweepError, BackendError, MemoryBudgetExceeded} <= found


def _is_exception_name(name: str) -> bool:
    import builtins

    builtin = getattr(builtins, name, None)
    return name in errors.__all__ or (inspect.isclass(builtin) and issubclass(builtin, BaseException))


def test_every_exception_class_is_defined_in_the_error_module():
    """No module but efce/errors.py defines an exception class, at any depth (a class local to a
    function included), so the hierarchy in its docstring is the whole of them."""
    import ast

    from tests.paths import ROOT

    offenders = []
    for folder in ("efce", "games", "polytopes", "solvers", "baselines", "experiments"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "efce" / "errors.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ClassDef):
                    continue
                bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
                if any(_is_exception_name(b) for b in bases):
                    offenders.append(f"{path.relative_to(ROOT)}: {node.name}")
    assert not offenders, offenders
    for name in errors.__all__:
        assert getattr(errors, name).__module__ == "efce.errors"
        assert name in errors.__doc__, f"{name} is missing from the hierarchy in efce.errors"


def test_each_error_has_its_right_parent():
    assert not issubclass(OptionError, GameError)
    assert not issubclass(SweepError, GameError)
    assert issubclass(SweepError, OptionError)
    for cls in (BackendError, ChainError):
        assert not issubclass(cls, GameError), cls
    assert issubclass(MemoryBudgetExceeded, GameError)  # a game too large for the algorithm
    for cls in (GameError, OptionError, SweepError, BackendError, MemoryBudgetExceeded, ChainError):
        assert issubclass(cls, EFCEError) and issubclass(cls, ValueError), cls


def test_old_homes_still_export_the_errors():
    from efce.baselines import ModelTooLarge as baselines_model_too_large
    from efce.baselines.backends import BackendError as backends_error
    from efce.experiments.solve import OptionError as solve_error
    from efce.experiments.sweep import SweepError as sweep_error
    from efce.games.game import GameError as game_error
    from efce.games.resources.memory import MemoryBudgetExceeded as memory_error
    from efce.polytopes.chain import ChainError as chain_error

    assert (backends_error, solve_error, sweep_error, game_error, memory_error, chain_error) == (
        BackendError,
        OptionError,
        SweepError,
        GameError,
        MemoryBudgetExceeded,
        ChainError,
    )
    assert efce.EFCEError is EFCEError and efce.OptionError is OptionError
    assert baselines_model_too_large is errors.ModelTooLarge


def test_a_user_error_is_one_line_with_exit_2(capfd):
    from efce.experiments.cli import main

    code = main(["info", "poker", "--json"])
    out, _ = capfd.readouterr()
    assert code == 2
    message = json.loads(out)["error"]
    assert "unknown game 'poker'" in message and "internal error" not in message


@pytest.mark.parametrize(
    "exception", [KeyError("players"), TypeError("bad operand"), ValueError("a bug, not a refusal")]
)
def test_a_bug_is_an_internal_error(monkeypatch, capfd, exception):
    from efce.experiments import cli, cmd_info

    def broken(spec):
        raise exception

    monkeypatch.delenv("EFCE_DEBUG", raising=False)
    monkeypatch.setattr(cmd_info, "load_game", broken)
    code = cli.main(["info", "kuhn", "--json"])
    out, _ = capfd.readouterr()
    assert code != 0
    message = json.loads(out)["error"]
    assert message.startswith(f"internal error {type(exception).__name__}")
    code = cli.main(["info", "kuhn"])
    _, err = capfd.readouterr()
    assert code != 0 and "internal error" in err
