"""`flask user create|list|edit`: people's accounts from the shell, as on the Users page."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import click
from flask.cli import AppGroup

from ndcg_labeler.cli._common import cli_errors, read_password
from ndcg_labeler.models import User, aware
from ndcg_labeler.services import ServiceError, accounts


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


def _iso(value: datetime | None) -> str | None:
    """A stored time as ISO 8601 UTC, None as null."""
    moment = aware(value)
    return None if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _token(user: User) -> str:
    """The API token column: no, never-used, or used-DATE (the day it was last used)."""
    if user.api_token_hash is None:
        return "no"
    if user.api_token_used_at is not None:
        return f"used-{user.api_token_used_at:%Y-%m-%d}"
    return "never-used" if user.api_token_created_at is not None else "yes"


@user_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON array.")
@cli_errors
def list_users(as_json: bool) -> None:
    """Everyone who can log in, by name: role, active, how they sign in, API token."""
    people = accounts.list_people()
    if as_json:
        rows = [
            {
                "username": p.username,
                "role": p.role,
                "active": p.active,
                "password": p.password_hash is not None,
                "sso": p.oidc_subject is not None,
                "sign_in": p.sign_in,
                "sso_issuer": p.oidc_issuer if p.oidc_subject is not None else None,
                "api_token": p.api_token_hash is not None,
                "api_token_created_at": _iso(p.api_token_created_at),
                "api_token_used_at": _iso(p.api_token_used_at),
                "created_at": _iso(p.created_at),
            }
            for p in people
        ]
        click.echo(json.dumps(rows, indent=1))
        return
    width = max([len("username"), *(len(p.username) for p in people)])
    click.echo(
        f"{'username':<{width}}  role       active  sign-in        {'api-token':<15}  created"
    )
    for p in people:
        click.echo(
            f"{p.username:<{width}}  {p.role:<9}  {'yes' if p.active else 'no':<6}  "
            f"{p.sign_in:<13}  {_token(p):<15}  "
            f"{p.created_at:%Y-%m-%d}"
        )


@user_group.command("edit")
@click.argument("name")
@click.option("--role", type=click.Choice(["admin", "annotator"]), default=None)
@click.option("--active/--inactive", "active", default=None, help="Let them log in, or not.")
@click.option(
    "--password",
    "new_password",
    is_flag=True,
    help="Set a new password, from a prompt or standard input (a lost admin password too).",
)
@click.option(
    "--revoke-token", is_flag=True, help="Remove their API token (a leaked one); nothing else."
)
@cli_errors
def edit(
    name: str, role: str | None, active: bool | None, new_password: bool, revoke_token: bool
) -> None:
    """Change a user's role, activity or password, as the Users page does (audited as cli).

    A new password, a new role or deactivation ends the user's sessions; deactivation also
    revokes their API token. The last active admin cannot be demoted or deactivated.
    """
    if role is None and active is None and not new_password and not revoke_token:
        raise ServiceError(
            "nothing to change: give --role, --active/--inactive, --password or --revoke-token"
        )
    user = accounts.get_by_username(name.strip())
    if user is None or user.is_import_source:
        raise ServiceError(f"no user '{name}'")
    old_role, old_active = user.role, user.active
    password = read_password("New password") if new_password else None
    if new_password and not password:
        raise ServiceError("the new password must not be empty")
    accounts.update_user(
        None,
        user,
        role=role or old_role,
        active=old_active if active is None else active,
        password=password,
    )
    # After the other changes: a refused one (a weak password) leaves the token too.
    revoked = revoke_token and accounts.revoke_token(user, by_cli=True)
    changes = []
    if user.role != old_role:
        changes.append(f"role {user.role}")
    if user.active != old_active:
        changes.append("activated" if user.active else "deactivated")
    if password:
        changes.append("password set")
    if revoked:
        changes.append("API token revoked")
    ended = bool(password) or user.role != old_role or (old_active and not user.active)
    summary = ", ".join(changes) or "nothing changed"
    if revoke_token and not revoked and not changes:
        summary += " (no API token to revoke)"
    click.echo(
        f"Saved {user.username}: {summary}" + ("; their sessions were ended." if ended else ".")
    )
