"""`flask ...` command groups; each calls the same services as the web views.

The app's CLI is a lazy group (click's "Lazily Loading Subcommands"): it knows each command
by the module and attribute that define it, and imports a module when its command is asked
for, so each command's help is the command's own.
"""

from __future__ import annotations

import importlib
from typing import Any

import click
from flask import Flask
from flask.cli import AppGroup

from ndcg_labeler import entry, runtime

# Command name: "module.attribute" of the click command that implements it.
COMMANDS = {
    "agreement": "ndcg_labeler.cli.team.agreement",
    "audit": "ndcg_labeler.cli.maintenance.audit_group",
    "backup": "ndcg_labeler.cli.maintenance.backup",
    "bootstrap": "ndcg_labeler.cli.setup.bootstrap",
    "db": "ndcg_labeler.cli.database.db_group",
    "endpoints": "ndcg_labeler.cli.endpoints.endpoints_group",
    "gate": "ndcg_labeler.cli.evaluation.gate_command",
    "jobs": "ndcg_labeler.cli.jobs.jobs_group",
    "judge": "ndcg_labeler.cli.judging.judge",
    "judges": "ndcg_labeler.cli.judges.judges_group",
    "judgments": "ndcg_labeler.cli.team.judgments_group",
    "pool": "ndcg_labeler.cli.dashboard.pool",
    "qrels": "ndcg_labeler.cli.judging.qrels_group",
    "restore": "ndcg_labeler.cli.maintenance.restore",
    "run": "ndcg_labeler.cli.runs.run_group",
    "testset": "ndcg_labeler.cli.testsets.testset_group",
    "user": "ndcg_labeler.cli.users.user_group",
}


class LazyGroup(AppGroup):
    """A command group that imports each subcommand's module when the subcommand is needed."""

    def __init__(
        self, *args: Any, lazy_subcommands: dict[str, str] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_subcommands = lazy_subcommands or {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The commands added to the group and the lazy ones, by name."""
        return sorted({*super().list_commands(ctx), *self.lazy_subcommands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """A command by name, importing its module if it is a lazy one."""
        if cmd_name in self.lazy_subcommands:
            return self._lazy_load(cmd_name)
        return super().get_command(ctx, cmd_name)

    def _lazy_load(self, cmd_name: str) -> click.Command:
        module_name, attribute = self.lazy_subcommands[cmd_name].rsplit(".", 1)
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.lazy_subcommands[cmd_name]} is not a click command")
        return command


def register_cli(app: Flask) -> None:
    """Give the app a CLI that holds every command of ours, each loaded when needed."""
    # In place of the empty AppGroup Flask gives every app: `flask` asks `app.cli` for the
    # app's commands, by name and for the list `flask --help` prints.
    app.cli = LazyGroup(app.name, lazy_subcommands=COMMANDS)


def __getattr__(name: str) -> click.Command:
    """`run_command`: the `flask run` plugin (pyproject.toml), which replaces Flask's own `run`.

    Flask loads its plugins before the app in every `flask` process: this is the command
    line's entry, so it sets the runtime knobs before the command's modules load numpy, and
    says that the app is for a command: its web layer waits for a first need (entry).
    """
    if name != "run_command":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    runtime.apply()
    entry.commands_first()
    from ndcg_labeler.cli.runs import run_group

    return run_group
