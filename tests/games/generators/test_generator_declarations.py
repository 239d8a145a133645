"""A game declares itself in its generator's module (``GAMES``: name, function, parameters, size
estimate) and :mod:`efce.games.spec` collects every such module: a new game is one new file."""

from __future__ import annotations

import sys
import textwrap

import pytest

from efce.errors import MemoryBudgetExceeded
from efce.games import generators, spec
from efce.games.generators.params import GameGenerator
from efce.games.spec import GENERATORS, PARAMETERS, estimate_spec, make_game

BUILT_IN = {"kuhn", "leduc", "goofspiel", "battleship", "sheriff", "farina-fig1", "farina-fig2"}


def test_the_built_in_games_are_collected_from_their_modules():
    assert set(GENERATORS) == BUILT_IN
    for name, declared in GENERATORS.items():
        assert isinstance(declared, GameGenerator) and declared.name == name
        module = sys.modules[declared.function.__module__]
        assert declared in module.GAMES  # declared beside the function it names
        assert PARAMETERS[name] is module.PARAMETERS
        assert declared.estimate is not None and declared.estimate.__module__ == module.__name__


TOY = """
from efce.games.generators.figures import farina_fig2
from efce.games.generators.params import GameGenerator, Param
from efce.games.resources.estimate import SizeEstimate

PARAMETERS = {"depth": Param("int", 1, 100)}


def toy(depth: int = 1):
    return farina_fig2()


def toy_size(depth: int) -> SizeEstimate:
    return SizeEstimate(7 * 10**depth, 4, 2)


GAMES = (GameGenerator("toy", toy, PARAMETERS, estimate=toy_size),)
"""


@pytest.fixture
def toy_module(tmp_path, monkeypatch):
    """A generator module dropped beside the built-in ones (and nothing else changed)."""
    (tmp_path / "toy.py").write_text(textwrap.dedent(TOY))
    monkeypatch.setattr(generators, "__path__", [*generators.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "efce.games.generators.toy", raising=False)
    collected = spec._declared_games()
    monkeypatch.setattr(spec, "GENERATORS", collected)
    yield collected
    sys.modules.pop("efce.games.generators.toy", None)


def test_a_new_generator_module_is_a_new_game(toy_module):
    assert set(toy_module) == BUILT_IN | {"toy"}
    assert make_game("toy:depth=2").num_terminals == 4
    assert estimate_spec("toy").nodes == 70  # the default depth, from the function's signature
    assert estimate_spec("toy:depth=3").nodes == 7_000
    with pytest.raises(MemoryBudgetExceeded, match="game toy:depth=90"):
        make_game("toy:depth=90")  # refused by the module's own estimate, before building
    with pytest.raises(spec.GameError, match="parameter 'depth' must be an integer, from 1 to 100"):
        make_game("toy:depth=101")  # and range-checked by its own PARAMETERS


def test_two_modules_declaring_one_name_is_a_programming_error(tmp_path, monkeypatch):
    (tmp_path / "kuhn_again.py").write_text(
        "from efce.games.generators.kuhn import GAMES as _KUHN\nGAMES = _KUHN\n"
    )
    monkeypatch.setattr(generators, "__path__", [*generators.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "efce.games.generators.kuhn_again", raising=False)
    with pytest.raises(RuntimeError, match="two generator modules declare the game 'kuhn'"):
        spec._declared_games()
    sys.modules.pop("efce.games.generators.kuhn_again", None)
