"""`flask bootstrap`: first admin (and demo data) on an empty database; used by `make run`."""

from __future__ import annotations

import click
from flask import current_app

from ndcg_labeler.cli._common import cli_errors
from ndcg_labeler.services import users as user_service


@click.command("bootstrap")
@cli_errors
def bootstrap() -> None:
    """Create the first admin when there is none, and load the demo set unless NDCG_DEMO=0."""
    user, generated = user_service.ensure_first_admin(current_app.config["NDCG_ADMIN_PASSWORD"])
    if generated:
        click.echo("=" * 64)
        click.echo(f"First admin created. Username: {user.username}  Password: {generated}")
        click.echo("This password is shown only once; change it under Account.")
        click.echo("=" * 64)


commands = [bootstrap]
