"""`flask bootstrap`: first admin (and demo data) on an empty database; used by `make run`."""

from __future__ import annotations

import click
from flask import current_app
from flask.cli import with_appcontext

from ndcg_labeler.cli._common import cli_errors
from ndcg_labeler.services import accounts as accounts_service
from ndcg_labeler.services import testsets as testsets_service
from ndcg_labeler.services.testsets import load_demo_runs


@click.command("bootstrap")
@with_appcontext
@cli_errors
def bootstrap() -> None:
    """Create the first admin when there is none, and load the demo set unless NDCG_DEMO=0."""
    user, generated = accounts_service.ensure_first_admin(current_app.config["NDCG_ADMIN_PASSWORD"])
    if generated:
        click.echo("=" * 64)
        click.echo(f"First admin created. Username: {user.username}  Password: {generated}")
        click.echo("This password is shown only once; change it under Account.")
        click.echo("=" * 64)
    if current_app.config["NDCG_DEMO"]:
        loaded = testsets_service.load_demo()
        if loaded is not None:
            click.echo(f"Loaded the demo test set '{loaded[0].name}' (NDCG_DEMO=0 skips it).")
        demo = testsets_service.demo_test_set()
        if demo is not None:
            # The two retrievers' rankings, through the ordinary upload service (idempotent).
            added = load_demo_runs(demo)
            if added:
                click.echo(f"Uploaded the demo runs: {', '.join(r.name for r in added)}.")
