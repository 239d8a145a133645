"""``efce --help`` lists every subcommand with a one-line description (each command's ``run``
docstring), each subcommand lives in its own ``cmd_*.py`` module, and no help text shows the
reStructuredText markup of the docstrings it may come from."""

from __future__ import annotations

import re

import pytest

from efce.experiments import cli

COMMANDS = ("info", "decompose", "solve", "compare", "gap", "sweep")


def test_every_subcommand_has_a_help_line(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    listing = text[text.index("positional arguments") :].splitlines()
    described = {}
    for i, line in enumerate(listing):
        words = line.split(maxsplit=1)
        if line.startswith("    ") and words and words[0] in COMMANDS:
            # argparse puts the help beside a short name, or on the next line
            described[words[0]] = words[1] if len(words) > 1 else listing[i + 1].strip()
    assert set(described) == set(COMMANDS)
    assert described["info"].startswith("Sizes of a game")
    assert all(described.values()), described


def test_each_subcommand_is_defined_in_its_own_module():
    cli._import_commands()
    for name in COMMANDS:
        _, run = cli._COMMANDS[name]
        assert run.__module__ == f"efce.experiments.cmd_{name}", (name, run.__module__)


#: What reStructuredText leaves in a text that was not rendered: literals and Sphinx roles.
RST_MARKUP = re.compile(r"``|:(func|class|meth|mod|attr|data|exc|obj|ref|doc|math):`")


def help_text(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 0, argv
    return capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--help"]] + [[name, "--help"] for name in COMMANDS])
def test_help_shows_no_rst_markup(capsys, argv):
    text = help_text(capsys, argv)
    assert text.startswith("usage: efce"), text[:80]
    found = [line for line in text.splitlines() if RST_MARKUP.search(line)]
    assert not found, f"efce {' '.join(argv)} shows reStructuredText markup: {found}"


def test_the_markup_pattern_finds_literals_and_roles():
    assert RST_MARKUP.search("The ``efce`` command line")
    assert RST_MARKUP.search("see :func:`efce.solve`")
    assert RST_MARKUP.search("a :class:`Game`")
    assert not RST_MARKUP.search("The efce command line: info, solve (`--json`: one object)")
