"""`flask user create NAME --role admin|annotator`."""

from __future__ import annotations

import click
from flask.cli import AppGroup

from ndcg_labeler.cli._common import cli_errors, read_password
from ndcg_labeler.services import accounts


@click.group("user", cls=AppGroup)
def user_group() -> None:
    """Manage user accounts."""


@user_group.command("create")
@click.argument("name")
@click.option("--role", type=click.Choice(["admin", "annotator"]), default="annotator")
@cli_errors
def create(name: str, role: str) -> None:
    """Create a user; the password comes from a prompt or standard input."""
    password = read_password()
    user = accounts.create_user(name, password, role)
    click.echo(f"Created {user.role} {user.username}.")
