"""The command line's stand-ins and the app built in two steps (ndcg_labeler.LabelerApp).

`flask --help` lists every command from light stand-ins; a command imports its module and
gets the database layer when it runs; a request, a test request context, an app context in a
script and `flask routes` see the whole app.
"""

from __future__ import annotations

import gc
import importlib
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
import sqlalchemy as sa
from flask import Flask, url_for

from ndcg_labeler import create_app
from ndcg_labeler.cli import CLI_MODULES, COMMANDS, LazyCommand, run_command
from ndcg_labeler.extensions import db
from ndcg_labeler.models import User
from tests.factory import make_app

ROOT = Path(__file__).resolve().parents[2]
FLASK = str(Path(sys.executable).parent / "flask")


def _real_commands() -> dict[str, click.Command]:
    """Every top-level command the CLI modules declare in their `commands` lists."""
    found: dict[str, click.Command] = {}
    for module in CLI_MODULES:
        for command in importlib.import_module(f"ndcg_labeler.cli.{module}").commands:
            assert command.name not in found, command.name
            found[str(command.name)] = command
    return found


def test_every_command_has_a_stand_in_with_its_own_help_line() -> None:
    real = _real_commands()
    assert sorted(real) == sorted(COMMANDS)
    for name, command in real.items():
        stand_in = LazyCommand(name)
        assert stand_in.load() is command
        # `flask --help` shortens each line to what is left of its terminal's width.
        for limit in (30, 45, 62, 200):
            assert stand_in.get_short_help_str(limit) == command.get_short_help_str(limit), name
    assert run_command.load() is real["run"]


def _deferred(tmp_path: Path) -> Flask:
    return create_app(
        {
            "TESTING": True,
            "SECRET_KEY": "test-only-secret",
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "NDCG_DEMO": False,
            "INSTANCE_PATH": str(tmp_path),
            "NDCG_SECURE_COOKIES": False,
        },
        defer=True,
    )


def test_a_command_on_a_light_app_gets_the_database_and_not_the_views(tmp_path: Path) -> None:
    eager = make_app(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite3'}")
    with eager.app_context():
        db.create_all()
    app = _deferred(tmp_path)
    assert "auth.login" not in app.view_functions
    result = app.test_cli_runner().invoke(
        args=["user", "create", "ada", "--role", "admin"], input="a-long-password-1\n"
    )
    assert result.exit_code == 0, result.output
    assert result.output == "Created admin ada.\n"
    with eager.app_context():
        assert db.session.scalars(sa.select(User.role).where(User.username == "ada")).all() == [
            "admin"
        ]
    # Only what the command needed: no blueprint was registered.
    assert "auth.login" not in app.view_functions


def test_a_light_app_is_whole_for_requests_and_scripts(tmp_path: Path) -> None:
    app = _deferred(tmp_path)
    with app.test_request_context("/"):
        assert url_for("auth.login") == "/login"
    other = _deferred(tmp_path)
    response = other.test_client().get("/login")
    assert response.status_code == 200
    assert b"csrf_token" in response.data
    script = _deferred(tmp_path)
    with script.app_context():
        db.create_all()  # an app context outside a command line has the database
    assert "auth.login" in script.view_functions


@pytest.mark.parametrize(
    ("args", "expected"),
    [(["routes"], "auth.login"), (["--help"], "Upload and score retriever runs")],
)
def test_flask_routes_and_help_from_the_shell(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    env = {
        **os.environ,
        "NDCG_INSTANCE_PATH": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    done = subprocess.run(
        [FLASK, "--app", "app", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout


def test_a_wsgi_server_gets_the_whole_app_at_import(tmp_path: Path) -> None:
    env = {**os.environ, "NDCG_INSTANCE_PATH": str(tmp_path)}
    code = "import app; print('auth.login' in app.app.view_functions)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.stdout.strip() == "True", done.stderr


def test_a_command_runs_with_the_garbage_collector_on(app: Flask) -> None:
    # Start-up pauses it while importing; a long command must not run without it.
    seen: list[bool] = []

    @click.command("probe")
    def probe() -> None:
        seen.append(gc.isenabled())

    stand_in = LazyCommand("user")
    stand_in.load = lambda: probe  # type: ignore[method-assign]
    app.cli.add_command(stand_in, "probe")
    result = app.test_cli_runner().invoke(args=["probe"])
    assert result.exit_code == 0, result.output
    assert seen == [True]


def test_the_run_group_knows_the_module_of_each_subcommand_others_attach() -> None:
    from ndcg_labeler.cli.runs import RunGroup, run_group

    for module in CLI_MODULES:
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
