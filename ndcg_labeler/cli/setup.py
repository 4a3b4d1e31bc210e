"""`flask bootstrap`: first admin (and demo data) on an empty database; used by `make run`."""

from __future__ import annotations

import click
from flask import current_app
from flask.cli import with_appcontext

from ndcg_labeler.cli._common import cli_errors
from ndcg_labeler.services import accounts, demo


@click.command("bootstrap")
@with_appcontext
@cli_errors
def bootstrap() -> None:
    """Create the first admin when there is none, and load the demo set unless NDCG_DEMO=0."""
    user, generated = accounts.ensure_first_admin(current_app.config["NDCG_ADMIN_PASSWORD"])
    if generated:
        click.echo("=" * 64)
        click.echo(f"First admin created. Username: {user.username}  Password: {generated}")
        click.echo("This password is shown only once; change it under Account.")
        click.echo("=" * 64)
    if current_app.config["NDCG_DEMO"]:
        loaded = demo.load_demo()
        if loaded is not None:
            click.echo(f"Loaded the demo test set '{loaded[0].name}' (NDCG_DEMO=0 skips it).")
        demo_set = demo.demo_test_set()
        if demo_set is not None:
            # The two retrievers' rankings, through the ordinary upload service (idempotent).
            added = demo.load_demo_runs(demo_set)
            if added:
                click.echo(f"Uploaded the demo runs: {', '.join(r.name for r in added)}.")
