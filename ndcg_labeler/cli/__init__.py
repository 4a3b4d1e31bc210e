"""`flask ...` command groups; each calls the same services as the web views.

Every command module imports the services, the models and SQLAlchemy (about 0.5 s of start-up
on a 2-core machine). `flask --help` needs none of that: the app's CLI holds a light stand-in
per command, carrying the command's one-line help, and the module is imported only when that
command runs (`tests/cli/test_lazy_commands.py` keeps the help lines equal to the real ones).
"""

from __future__ import annotations

import atexit
import gc
import importlib
from typing import TYPE_CHECKING, Any

import click
from flask import Flask
from flask.cli import ScriptInfo

from ndcg_labeler import runtime

if TYPE_CHECKING:
    from ndcg_labeler import LabelerApp

# Command name: (module under ndcg_labeler.cli, attribute, the command's first help paragraph).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "agreement": (
        "team",
        "agreement",
        "Inter-annotator agreement of test set NAME (graded judgments only).",
    ),
    "audit": ("maintenance", "audit_group", "The audit trail of admin actions."),
    "backup": (
        "maintenance",
        "backup",
        "Copy the SQLite database to FILE while the app runs (PostgreSQL: use pg_dump).",
    ),
    "bootstrap": (
        "setup",
        "bootstrap",
        "Create the first admin when there is none, and load the demo set unless NDCG_DEMO=0.",
    ),
    "db": (
        "database",
        "db_group",
        "Database migrations (Flask-Migrate, Alembic): `flask db upgrade` and friends.",
    ),
    "endpoints": (
        "endpoints",
        "endpoints_group",
        "Live retriever endpoints of a test set: define, try, fetch a run.",
    ),
    "gate": (
        "evaluation",
        "gate_command",
        "Fail (exit 1) when CANDIDATE significantly regresses against BASELINE on TESTSET.",
    ),
    "jobs": (
        "jobs",
        "jobs_group",
        "Run the job worker (large imports and uploads) and look at jobs.",
    ),
    "judge": (
        "judging",
        "judge",
        "Set USER's grade of one query-chunk pair of test set NAME (history is kept).",
    ),
    "judges": (
        "judges",
        "judges_group",
        "Machine judges (LLMs behind an OpenAI-compatible endpoint).",
    ),
    "judgments": ("team", "judgments_group", "Every annotator's judgments."),
    "pool": (
        "dashboard",
        "pool",
        "Add the unjudged chunks of the runs' top DEPTH to TESTSET's labeling queue.",
    ),
    "qrels": ("judging", "qrels_group", "Relevance judgments in TREC qrels format."),
    "restore": (
        "maintenance",
        "restore",
        "Replace the SQLite database with the backup FILE (stop the server first).",
    ),
    "run": (
        "runs",
        "run_group",
        "Upload and score retriever runs: `flask run upload|score|list|delete ...`.",
    ),
    "testset": (
        "testsets",
        "testset_group",
        "Create test sets, import their files and choose their annotators.",
    ),
    "user": ("users", "user_group", "Manage user accounts."),
}
# Every command module (the tests hold each one's `commands` list to COMMANDS).
CLI_MODULES = tuple(sorted({module for module, _attr, _help in COMMANDS.values()}))


class LazyCommand(click.Command):
    """Stands in for a command until it runs: `--help` lists it without importing its module.

    When the command is invoked, its module is imported, the app gets its database layer
    (`LabelerApp.attach_database`), and the real command parses the arguments and runs; its
    own `--help` is the real one.
    """

    def __init__(self, name: str) -> None:
        module, attribute, help_text = COMMANDS[name]
        super().__init__(name, help=help_text, add_help_option=False)
        self.target = (f"ndcg_labeler.cli.{module}", attribute)

    def load(self) -> click.Command:
        """The real command."""
        module, attribute = self.target
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """The real command's context, on an app whose database layer is attached.

        The imports run with the cyclic garbage collector paused: they allocate hundreds of
        thousands of objects, none of them garbage, and the collections that set off took
        ~0.15 s of a command's start-up here (median of 12 processes: 1.02 -> 0.83 s to import
        Flask-SQLAlchemy, numpy and the models). They are then frozen (gc.freeze), so that
        the collections the command's own work sets off do not traverse them every time.
        """
        runtime.apply()  # the command line's entry: before the command's modules load numpy
        collecting = gc.isenabled()
        gc.disable()
        attached = None  # the app, once its database layer is attached
        try:
            command = self.load()
            if parent is not None:
                app = parent.ensure_object(ScriptInfo).load_app()
                attach = getattr(app, "attach_database", None)
                if attach is not None:
                    attach()
                    attached = app
        finally:
            gc.freeze()
            if collecting:
                gc.enable()
        atexit.unregister(_no_collections_at_exit)
        atexit.register(_no_collections_at_exit)
        if attached is not None:
            atexit.register(_close_connections, attached)
        return command.make_context(info_name, args, parent=parent, **extra)


def _no_collections_at_exit() -> None:
    """Let the interpreter exit without traversing every object the command made.

    Tearing the modules down set off full collections over the hundreds of thousands of
    objects SQLAlchemy, numpy and the models create: 0.2-0.4 s of a command's wall time here
    (`run list`, median of 8: 1.17 -> 0.81 s). Frozen objects are skipped by those
    collections; the exit handlers and the teardown still run, and the OS takes the memory.
    """
    gc.disable()
    gc.freeze()


def _close_connections(app: LabelerApp) -> None:
    """Close the command's pooled database connections before the process ends.

    With collections off at exit nothing else closes them, and SQLite copies its write-ahead
    log into the database file (and removes the log) only when the last connection closes: a
    command's writes would stay in the `-wal` file beside the database, and a copy of the
    database file alone (a backup made with `cp` once the app is stopped) would miss them.
    """
    from ndcg_labeler.extensions import db

    with app.helper_context():  # the app as the command built it, nothing added at exit
        for engine in db.engines.values():
            engine.dispose()


# `flask run ...` replaces Flask's own `run` through the `flask.commands` entry point
# (pyproject.toml); Flask loads those in every `flask` process, so it is a stand-in too.
run_command = LazyCommand("run")


def register_cli(app: Flask) -> None:
    """Attach a stand-in for every command group to the app's CLI."""
    for name in COMMANDS:
        app.cli.add_command(LazyCommand(name))
