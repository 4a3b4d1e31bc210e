"""user.session_token: part of every login cookie, so changing it ends a person's sessions

Revision ID: 0012_session_token
Revises: 0011_figures_cache
Create Date: 2026-11-26 17:30:00

Every existing user gets their own random token. Cookies made before this revision carry
only the user id and no longer load anyone: everybody logs in once more after the upgrade.
"""

import secrets

import sqlalchemy as sa
from alembic import op

revision = "0012_session_token"
down_revision = "0011_figures_cache"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("user") as batch_op:
        batch_op.add_column(sa.Column("session_token", sa.String(length=64), nullable=True))
    users = sa.table("user", sa.column("id", sa.Integer()), sa.column("session_token"))
    conn = op.get_bind()
    for (user_id,) in conn.execute(sa.select(users.c.id)).all():
        conn.execute(
            users.update()
            .where(users.c.id == user_id)
            .values(session_token=secrets.token_urlsafe(24))
        )
    with op.batch_alter_table("user") as batch_op:
        batch_op.alter_column("session_token", existing_type=sa.String(length=64), nullable=False)


def downgrade():
    with op.batch_alter_table("user") as batch_op:
        batch_op.drop_column("session_token")
