"""``efce --help`` lists every subcommand with a one-line description (each command's ``run``
docstring), and each subcommand lives in its own ``cmd_*.py`` module."""

from __future__ import annotations

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
