"""The command line: a lazy group that loads each command's module when the command is needed.

`flask --help` lists every command with the help the command itself carries; `flask run`
is still the development server as well as `flask run upload|score|...`.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from flask import Flask

from ndcg_labeler.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
FLASK = str(Path(sys.executable).parent / "flask")


def _defined(target: str) -> click.Command:
    """The click command at "module.attribute"."""
    module, attribute = target.rsplit(".", 1)
    command: click.Command = getattr(importlib.import_module(module), attribute)
    return command


def test_the_cli_finds_each_command_where_it_is_defined(app: Flask) -> None:
    with click.Context(app.cli) as ctx:
        assert app.cli.list_commands(ctx) == sorted(COMMANDS)
        for name, target in COMMANDS.items():
            command = app.cli.get_command(ctx, name)
            assert command is _defined(target)
            assert command.name == name


def test_the_flask_run_plugin_is_the_run_group() -> None:
    from ndcg_labeler.cli import run_command

    assert run_command is _defined(COMMANDS["run"])


def _shell(tmp_path: Path, *args: str) -> str:
    """What `flask --app app ARGS` prints, on an 80-column terminal."""
    env = {
        **os.environ,
        "NDCG_INSTANCE_PATH": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "COLUMNS": "80",
    }
    done = subprocess.run(
        [FLASK, "--app", "app", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_flask_help_lists_every_command_with_its_own_help(tmp_path: Path) -> None:
    listing = _shell(tmp_path, "--help").split("Commands:\n", 1)[1]
    shown = dict(line.strip().split(maxsplit=1) for line in listing.splitlines() if line.strip())
    # Click shortens each help line to what the longest name leaves of the 78 columns it uses.
    limit = 78 - 6 - max(len(name) for name in shown)
    for name, target in COMMANDS.items():
        assert shown.get(name) == _defined(target).get_short_help_str(limit), name


@pytest.mark.parametrize(
    ("args", "expected"),
    [(["routes"], "auth.login"), (["--help"], "Upload and score retriever runs")],
)
def test_flask_routes_and_help_from_the_shell(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    assert expected in _shell(tmp_path, *args)


def test_a_wsgi_server_gets_the_whole_app_at_import(tmp_path: Path) -> None:
    env = {**os.environ, "NDCG_INSTANCE_PATH": str(tmp_path)}
    code = "import app; print('auth.login' in app.app.view_functions)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.stdout.strip() == "True", done.stderr


def test_the_run_group_knows_the_module_of_each_subcommand_others_attach() -> None:
    from ndcg_labeler.cli.runs import RunGroup, run_group

    for target in COMMANDS.values():
        _defined(target)
    for module in set(RunGroup.ATTACHED.values()):  # modules that only attach run subcommands
        importlib.import_module(f"ndcg_labeler.cli.{module}")
    attached = {
        name: str(command.callback.__module__).rsplit(".", 1)[-1]
        for name, command in run_group.commands.items()
        if command.callback is not None
        and command.callback.__module__.startswith("ndcg_labeler.cli.")
        and command.callback.__module__ != "ndcg_labeler.cli.runs"
    }
    # `flask run compare` in a new process imports only the module that defines it.
    assert attached == RunGroup.ATTACHED
