"""`flask ...` command groups; each calls the same services as the web views."""

from __future__ import annotations

import importlib

from flask import Flask

# One module per area, each exposing `commands`: a list of click commands/groups.
CLI_MODULES = ("database", "users", "setup", "testsets", "runs", "judging")
# Dashboards: `flask run compare` (attached to the run group) and `flask pool`.
CLI_MODULES += ("dashboard",)
# Team judging: `flask agreement` and `flask judgments export`.
CLI_MODULES += ("team",)
# The evaluation loop: `flask gate` and `flask run fuse`.
CLI_MODULES += ("evaluation",)
# Machine judges: `flask judges add|run|agreement`.
CLI_MODULES += ("judges",)
# Live retriever endpoints: `flask endpoints add|try|fetch`.
CLI_MODULES += ("endpoints",)
# Background jobs: `flask jobs worker`.
CLI_MODULES += ("jobs",)
# Backups, restores and the audit trail.
CLI_MODULES += ("maintenance",)


def register_cli(app: Flask) -> None:
    """Attach every command group to the app's CLI."""
    for name in CLI_MODULES:
        for command in importlib.import_module(f"ndcg_labeler.cli.{name}").commands:
            app.cli.add_command(command)
