"""`flask db ...`: Flask-Migrate's commands, loaded only when one of them runs.

Importing Alembic takes about 0.4 s; every other command (and `flask --help`) skips it.
"""

from __future__ import annotations

import click
from flask.cli import ScriptInfo


class LazyDbGroup(click.Group):
    """Stands in for Flask-Migrate's `db` group until a subcommand is asked for."""

    def _real(self, ctx: click.Context) -> click.Group:
        from flask_migrate.cli import db

        from ndcg_labeler.extensions import ensure_migrate

        ensure_migrate(ctx.ensure_object(ScriptInfo).load_app())

        return db

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        """Flask-Migrate's group options (--directory, -x)."""
        return self._real(ctx).get_params(ctx)

    def invoke(self, ctx: click.Context) -> object:
        """Run Flask-Migrate's group callback (it stores the options in `g`), then the command."""
        self.callback = self._real(ctx).callback
        return super().invoke(ctx)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Flask-Migrate's subcommands (upgrade, downgrade, revision, current...)."""
        return self._real(ctx).list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """One of Flask-Migrate's subcommands."""
        return self._real(ctx).get_command(ctx, cmd_name)


db_group = LazyDbGroup(
    "db", help="Database migrations (Flask-Migrate, Alembic): `flask db upgrade` and friends."
)
