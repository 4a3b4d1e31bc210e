"""`flask backup FILE`, `flask restore FILE [--force]` and `flask audit export [--json]`."""

from __future__ import annotations

import difflib
from datetime import datetime
from pathlib import Path

import click
from flask.cli import AppGroup, with_appcontext

from ndcg_labeler.cli._common import cli_errors
from ndcg_labeler.services import ServiceError, audit, backups


@click.command("backup")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
@with_appcontext
@cli_errors
def backup(file: Path, force: bool) -> None:
    """Copy the SQLite database to FILE while the app runs (PostgreSQL: use pg_dump)."""
    size = backups.backup(file, force=force)
    click.echo(f"Backed up to {file} ({size} bytes).")


@click.command("restore")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--force",
    is_flag=True,
    help="Overwrite a database that already holds data (a copy of it is kept beside it first).",
)
@with_appcontext
@cli_errors
def restore(file: Path, force: bool) -> None:
    """Replace the SQLite database with the backup FILE (stop the server first)."""
    restored = backups.restore(file, force=force)
    click.echo(f"Restored {file} (schema revision {restored.revision}).")
    if restored.kept is not None:
        click.echo(f"The database as it was is kept in {restored.kept}.")
    click.echo("Run `flask --app app db upgrade` if the backup is older than this version.")


# AppGroup: subcommands run inside the app context, also under FlaskCliRunner.
@click.group("audit", cls=AppGroup)
def audit_group() -> None:
    """The audit trail of admin actions."""


@audit_group.command("export")
@click.option("--json", "as_json", is_flag=True, help="One JSON array instead of CSV.")
@click.option("--action", default=None, help="Only this action, e.g. user.role.")
@click.option("--user", "actor", default=None, help="Only this actor's events (cli: commands).")
@click.option(
    "--since", type=click.DateTime(["%Y-%m-%d"]), default=None, help="From this UTC day on."
)
@click.option(
    "--until", type=click.DateTime(["%Y-%m-%d"]), default=None, help="Up to this UTC day, included."
)
@cli_errors
def audit_export(
    as_json: bool,
    action: str | None,
    actor: str | None,
    since: datetime | None,
    until: datetime | None,
) -> None:
    """Print the audit trail, newest first, as CSV (formula-safe) or JSON."""
    if action and action not in audit.ACTIONS:
        # Else a typo prints the header alone, as if no such event had ever happened.
        close = difflib.get_close_matches(action, list(audit.ACTIONS), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ServiceError(
            f"the audit trail has no action '{action}'{hint}; it has: {', '.join(audit.ACTIONS)}"
        )
    days = (since.date() if since else None, until.date() if until else None)
    write = audit.events_json if as_json else audit.events_csv
    for piece in write(action, actor, *days):  # written as read: a year is ~100 MB of JSON
        click.echo(piece, nl=False)
    if as_json:
        click.echo()
